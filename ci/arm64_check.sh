#!/usr/bin/env bash
# The tile kernel on arm64: ci/tile_check.c built for this machine (every instruction-set
# variant it runs) and, when an aarch64 cross compiler and qemu-aarch64 are installed
# (Debian: gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user), for aarch64 with the
# flags setup.py uses, run under qemu.  Every output must be bit-identical; the aarch64
# build must use NEON vector instructions (Advanced SIMD, mandatory on arm64, so the
# baseline build vectorizes without any dispatch).
set -euo pipefail
cd "$(dirname "$0")/.."
FLAGS="-O3 -fno-fast-math -fno-strict-aliasing -ffp-contract=off -fno-math-errno"
FLAGS="$FLAGS -fno-trapping-math -Ihdist/_kernels"
# the AVX2 and AVX-512 variants are files of their own (empty on other architectures)
VARIANTS="hdist/_kernels/isa/tile_avx2.c hdist/_kernels/isa/tile_avx512.c"
TMP=$(mktemp -d)
cc $FLAGS ci/tile_check.c $VARIANTS -o "$TMP/host" -lm
"$TMP/host" 0 > "$TMP/host0.txt"
echo "host baseline: $(wc -l < "$TMP/host0.txt") reduced distances"
for isa in 1 2; do
  if "$TMP/host" "$isa" > "$TMP/host$isa.txt" 2> /dev/null; then
    cmp "$TMP/host0.txt" "$TMP/host$isa.txt"
    echo "host variant $isa: identical to baseline"
  fi
done
if ! command -v aarch64-linux-gnu-gcc > /dev/null || ! command -v qemu-aarch64 > /dev/null; then
  echo "arm64: no aarch64-linux-gnu-gcc / qemu-aarch64 here; cross-architecture part not run"
  exit 0
fi
aarch64-linux-gnu-gcc $FLAGS ci/tile_check.c $VARIANTS -o "$TMP/arm" -lm
qemu-aarch64 -L /usr/aarch64-linux-gnu "$TMP/arm" 0 > "$TMP/arm.txt"
cmp "$TMP/host0.txt" "$TMP/arm.txt"
echo "arm64 (qemu): identical to the host's baseline"
aarch64-linux-gnu-gcc $FLAGS -S ci/tile_check.c -o "$TMP/arm.s"
simd=$(grep -cE '^\s+(fadd|fmul|fabd|fsqrt|fcmgt|fcmeq|fmax|fdiv)\s+v[0-9]+\.2d' "$TMP/arm.s" || true)
echo "arm64: $simd NEON float64x2 arithmetic instructions in the tile kernel"
[ "$simd" -gt 20 ]
