"""device="cuda" throughput against its peers, in one process.

Jobs (census-like rows of benchmarks/make_census_like.py: 30 nominal columns with 2 to 50
values and 10 continuous ones, 5 % of the cells missing), each under HEOM, Gower and HVDM:

- ``census``: 2·10^5 reference rows x 4·10^3 queries, 10-NN;
- ``stream``: 10^7 reference rows x 10^4 queries, 10-NN (the rows uploaded once; the
  upload's time is reported on its own).

Peers on the same jobs:

- hdist ``device="cuda"`` (:class:`hdist._search.cuda.CudaSearcher`): exact, the CPU's
  bits; the whole call from encoded query rows to the finished lists, and the time in
  its kernels alone (CUDA events);
- torch: the one-hot matrix product on the GPU in float32 (continuous columns scaled by
  their range, a missing cell a zero vector: not HEOM's, Gower's or HVDM's answer for
  missing values, and no VDM tables) and ``topk``, also with TF32 matrix products;
- faiss' GPU flat index with ``METRIC_GOWER`` where the installed faiss has it (columns
  pre-scaled to [0, 1], categories coded as negative numbers, float32);
- hdist on every CPU core (``algorithm="brute"``), on a sample of the queries.

Pairs per second and each peer's ratio to hdist's device are printed with the GPU's name
and driver.  A peer that is not installed (torch, faiss, a GPU) is reported as skipped
with the reason.  ``--emulate`` runs hdist's part on the emulated device
(``HDIST_CUDA_EMULATE=1``) at a thousandth of the sizes: a check that the script runs, not
a measurement.

Run: ``python benchmarks/bench_gpu.py [--quick] [--emulate] [--jobs census,stream]``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from make_census_like import LEVELS, N_CONTINUOUS, N_NOMINAL, codes  # noqa: E402

import hdist  # noqa: E402

K = 10
JOBS = {"census": (200_000, 4_000), "stream": (10_000_000, 10_000)}
METRICS = ("heom", "gower", "hvdm")


def fit_index(metric, Xr, yr):
    nominal = list(range(N_NOMINAL))
    continuous = list(range(N_NOMINAL, N_NOMINAL + N_CONTINUOUS))
    m = hdist.Metric(metric, nominal=nominal, continuous=continuous)
    m.fit(Xr, yr if metric == "hvdm" else None)
    return hdist.NeighborsIndex(m, algorithm="brute").fit(Xr)


def run_cuda(idx, Xq):
    from hdist._search.cuda import CudaSearcher
    s = CudaSearcher(idx.metric_.plan_, idx._rows)
    t0 = time.perf_counter()
    s.build()
    build = time.perf_counter() - t0
    rows = idx._query_rows(Xq, False)
    s.knn(rows.block(0, min(rows.n, 64)), K, 1)          # compile and warm up
    t0 = time.perf_counter()
    f = s.knn(rows, K, 1)
    dt = time.perf_counter() - t0
    return dt, build, s.upload_time_, s.device_name, f, f.extra["kernel_seconds"]


def run_cpu(idx, Xq, sample):
    Xs = Xq[:sample]
    t0 = time.perf_counter()
    idx.kneighbors(Xs, K)
    return (time.perf_counter() - t0) * len(Xq) / len(Xs)


def one_hot(X, lo, span):
    """The rows as float32 features: one column per nominal value, continuous values
    scaled by their range; a missing cell is a zero vector."""
    cols = []
    for a in range(N_NOMINAL):
        v = X[:, a]
        oh = np.zeros((len(X), LEVELS[a]), dtype=np.float32)
        ok = ~np.isnan(v)
        oh[np.flatnonzero(ok), v[ok].astype(int)] = 1.0
        cols.append(oh)
    c = (X[:, N_NOMINAL:] - lo) / span
    cols.append(np.nan_to_num(c, nan=0.0).astype(np.float32))
    return np.hstack(cols)


def run_torch(Xr, Xq, tf32):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA GPU")
    lo = np.nanmin(Xr[:, N_NOMINAL:], axis=0)
    span = np.maximum(np.nanmax(Xr[:, N_NOMINAL:], axis=0) - lo, 1e-300)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    R = torch.from_numpy(one_hot(Xr, lo, span)).cuda()
    rn = (R * R).sum(1)
    Q = torch.from_numpy(one_hot(Xq, lo, span)).cuda()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for q0 in range(0, len(Xq), 1024):
        B = Q[q0:q0 + 1024]
        D = rn[None, :] - 2.0 * (B @ R.T)
        torch.topk(D, K, dim=1, largest=False)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def run_faiss(Xr, Xq):
    import faiss
    if not hasattr(faiss, "METRIC_GOWER"):
        raise RuntimeError("this faiss has no METRIC_GOWER")
    if not hasattr(faiss, "StandardGpuResources"):
        raise RuntimeError("this faiss has no GPU support")
    lo = np.nanmin(Xr[:, N_NOMINAL:], axis=0)
    span = np.maximum(np.nanmax(Xr[:, N_NOMINAL:], axis=0) - lo, 1e-300)

    def enc(X):
        out = np.empty(X.shape, dtype=np.float32)
        out[:, :N_NOMINAL] = -1.0 - np.nan_to_num(X[:, :N_NOMINAL], nan=0.0)
        out[:, N_NOMINAL:] = np.nan_to_num((X[:, N_NOMINAL:] - lo) / span, nan=0.0)
        return out
    index = faiss.IndexFlat(Xr.shape[1], faiss.METRIC_GOWER)
    gpu = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
    gpu.add(enc(Xr))
    q = enc(Xq)
    t0 = time.perf_counter()
    gpu.search(q, K)
    return time.perf_counter() - t0


def peer(label, fn, pairs, base, rows):
    try:
        dt = fn()
    except Exception as e:      # not installed, no GPU, no such metric
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        if isinstance(e, ImportError):
            reason = "not installed (%s)" % e.name
        rows.append((label, None, None, "skipped: " + reason))
        return
    rows.append((label, pairs / dt, (pairs / dt) / base if base else None, "%.2f s" % dt))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    ap.add_argument("--emulate", action="store_true",
                    help="the emulated device at a thousandth of the sizes (no GPU)")
    ap.add_argument("--jobs", default="census,stream")
    ap.add_argument("--metrics", default=",".join(METRICS))
    ap.add_argument("--cpu-queries", type=int, default=400,
                    help="queries of the CPU's sample (its rate is extrapolated)")
    args = ap.parse_args(argv)
    scale = 1000 if args.emulate else (10 if args.quick else 1)
    if args.emulate:
        os.environ["HDIST_CUDA_EMULATE"] = "1"
    threads = os.cpu_count()
    print("hdist", hdist.__version__, "| CPU cores:", threads,
          "| device:", "emulated" if args.emulate else "CUDA (CuPy)")
    for job in args.jobs.split(","):
        n_ref, n_q = (max(200, v // scale) for v in JOBS[job])
        X, y = codes(n_ref + n_q, seed=1)
        Xr, Xq, yr = X[:n_ref], X[n_ref:], y[:n_ref]
        pairs = float(n_ref) * n_q
        print("\n== %s: %d reference rows x %d queries, %d-NN" % (job, n_ref, n_q, K))
        for metric in args.metrics.split(","):
            idx = fit_index(metric, Xr, yr)
            rows = []
            try:
                dt, build, upload, dev, _, kernel = run_cuda(idx, Xq)
                base = pairs / dt
                rows.append(("hdist cuda", base, 1.0,
                             "%.2f s; upload %.2f s (%s)" % (dt, upload, dev)))
                rows.append(("hdist cuda kernels", pairs / kernel, pairs / kernel / base,
                             "%.3f s in the kernels alone" % kernel))
            except Exception as e:      # no CuPy or no GPU: the others still run
                base = None
                rows.append(("hdist cuda", None, None, "skipped: %s" % e))
            if metric == "heom" and not args.emulate:
                peer("torch one-hot fp32", lambda: run_torch(Xr, Xq, False), pairs, base, rows)
                peer("torch one-hot tf32", lambda: run_torch(Xr, Xq, True), pairs, base, rows)
            if metric == "gower" and not args.emulate:
                peer("faiss GPU gower", lambda: run_faiss(Xr, Xq), pairs, base, rows)
            sample = min(n_q, args.cpu_queries)
            peer("hdist CPU x%d" % threads, lambda: run_cpu(idx, Xq, sample), pairs, base,
                 rows)
            print("-- %s" % metric)
            for label, rate, ratio, note in rows:
                print("  %-22s %12s %10s  %s" % (
                    label, "%.3g pairs/s" % rate if rate else "-",
                    "x%.2f" % ratio if ratio else "-", note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
