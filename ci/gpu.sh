#!/usr/bin/env bash
# device="cuda" on a real GPU: the NVRTC compile check, tests/search/test_cuda.py against
# the GPU through CuPy (HDIST_TEST_CUDA_DEVICE=gpu: not the emulated device), then the GPU
# benchmark (benchmarks/bench_gpu.py).  Run it wherever a machine with an NVIDIA GPU, its
# driver and CuPy (pip install -e ".[cuda,test]") is at hand; CI has no GPU and runs the
# same tests on the emulated device instead (HDIST_CUDA_EMULATE=1).
#
#   bash ci/gpu.sh [--quick]      --quick: the benchmark at a tenth of its sizes
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# shellcheck source=ci/lib.sh
. "$ROOT/ci/lib.sh"
PY=${PYTHON:-python}
data_dir "$ROOT"
unset HDIST_CUDA_EMULATE

"$PY" - <<'PYEOF'
import sys
try:
    import cupy
except ImportError:
    sys.exit("ci/gpu.sh: CuPy is not installed (pip install -e '.[cuda]')")
n = cupy.cuda.runtime.getDeviceCount()
if n < 1:
    sys.exit("ci/gpu.sh: no CUDA GPU visible")
p = cupy.cuda.runtime.getDeviceProperties(0)
print("GPU:", p["name"].decode() if isinstance(p["name"], bytes) else p["name"],
      "| driver", cupy.cuda.runtime.driverGetVersion(), "| CuPy", cupy.__version__)
PYEOF

echo "=== NVRTC: every device kernel for sm_70, sm_80, sm_90"
"$PY" ci/nvrtc_check.py

echo "=== tests/search/test_cuda.py and test_device.py on the GPU"
HDIST_TEST_CUDA_DEVICE=gpu "$PY" -m pytest -q -p no:cacheprovider tests/search/test_cuda.py \
  tests/search/test_device.py

echo "=== benchmarks/bench_gpu.py"
"$PY" benchmarks/bench_gpu.py "$@"
