"""Compile every device kernel of hdist with NVRTC, to PTX, for sm_70, sm_80 and sm_90.

Both variants are compiled: 32-bit nominal codes and 16-bit ones (``-DHD_CODE16``).

No GPU and no driver are needed: NVRTC (the ``nvidia-cuda-nvrtc-cu12`` wheel, or a CUDA
toolkit's ``libnvrtc``) compiles the sources that ``device="cuda"`` loads at first use
(``hdist/_kernels/cuda/knn.cu``, which includes the CPU's per-attribute terms,
``hdist/_kernels/terms.h``) with the options the driver uses (``--fmad=false``,
``-default-device``; float64 accumulation is the source's).  It checks that each kernel
the driver launches is in the PTX, that the PTX has no fused multiply-add (``fma.rn``),
and prints the size of each PTX.

Usage::

    python ci/nvrtc_check.py [--lib PATH] [--arch 70,80,90] [--save DIR]

Exit status 1 on a compile error, a missing kernel or a fused multiply-add; 2 when no
NVRTC library is found.
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from hdist._search.cuda import KERNELS, device_source, nvrtc_options  # noqa: E402


def find_nvrtc(path=None):
    """The NVRTC shared library: ``path``, the pip wheel's, or the system's."""
    if path:
        return ctypes.CDLL(path)
    cands = []
    try:
        import nvidia.cuda_nvrtc as pkg
        for d in pkg.__path__:
            cands += sorted(glob.glob(os.path.join(d, "lib", "libnvrtc.so*")))
            cands += sorted(glob.glob(os.path.join(d, "bin", "nvrtc64*.dll")))
    except ImportError:
        pass
    cands = [c for c in cands if "builtins" not in c and ".alt." not in c]
    cands += ["libnvrtc.so.12", "libnvrtc.so"]
    for c in cands:
        try:
            return ctypes.CDLL(c)
        except OSError:
            continue
    return None


def compile_ptx(lib, source, name, options):
    """PTX of ``source`` compiled with ``options``; raises RuntimeError with NVRTC's log."""
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0,
                                None, None)
    if rc != 0:
        raise RuntimeError("nvrtcCreateProgram failed (%d)" % rc)
    try:
        opts = [o.encode() for o in options]
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if rc != 0:
            raise RuntimeError("NVRTC error %d:\n%s" % (rc, log.value.decode(errors="replace")))
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, ptx)
        return ptx.value.decode(), log.value.decode(errors="replace").strip()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", help="path of libnvrtc")
    ap.add_argument("--arch", default="70,80,90", help="compute capabilities, comma-separated")
    ap.add_argument("--save", help="folder to write the PTX files into")
    args = ap.parse_args(argv)
    lib = find_nvrtc(args.lib)
    if lib is None:
        print("nvrtc_check: no NVRTC library (pip install nvidia-cuda-nvrtc-cu12)",
              file=sys.stderr)
        return 2
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    print("NVRTC %d.%d" % (major.value, minor.value))
    source, name = device_source()
    failed = 0
    for arch, code16 in [(a.strip(), c) for a in args.arch.split(",") for c in (False, True)]:
        opts = nvrtc_options("compute_%s" % arch, code16=code16)
        label = "sm_%s%s" % (arch, " (16-bit codes)" if code16 else "")
        try:
            ptx, log = compile_ptx(lib, source, name, opts)
        except RuntimeError as e:
            print("%s: FAILED\n%s" % (label, e))
            failed = 1
            continue
        missing = [k for k in KERNELS if not re.search(r"\.entry\s+%s\b" % k, ptx)]
        fused = len(re.findall(r"\bfma\.rn\.f64\b", ptx))
        print("%s: %d bytes of PTX, kernels %s%s" % (
            label, len(ptx), ", ".join(k for k in KERNELS if k not in missing),
            ("; warnings:\n" + log) if log else ""))
        if missing:
            print("%s: kernels missing from the PTX: %s" % (label, ", ".join(missing)))
            failed = 1
        if fused:
            print("%s: %d fused multiply-adds in the PTX (--fmad=false expected none)"
                  % (label, fused))
            failed = 1
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            fname = "knn_sm%s%s.ptx" % (arch, "_code16" if code16 else "")
            with open(os.path.join(args.save, fname), "w") as f:
                f.write(ptx)
    print("nvrtc_check: %s" % ("FAILED" if failed else "ok"))
    return failed


if __name__ == "__main__":
    sys.exit(main())
