#!/usr/bin/env bash
# Compiles every kernel source of mx-cuda to PTX for the Maven build (exec-maven-plugin, generate-resources):
#   build-ptx.sh SOURCE_DIR OUTPUT_DIR
# PTX for compute_80 (Ampere and newer, H100/H200 included): the driver JIT-compiles it for the device it runs
# on, so the jar carries no machine code. nvcc is taken from $NVCC, then PATH, then $CUDA_HOME and
# /usr/local/cuda*/bin; without it the build fails here, saying so.
set -euo pipefail
src=$1
out=$2
arch=${MX_CUDA_PTX_ARCH:-compute_80}
nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
  nvcc=$(command -v nvcc || true)
fi
if [ -z "$nvcc" ]; then
  for d in "${CUDA_HOME:-/nonexistent}" /usr/local/cuda /usr/local/cuda-*; do
    if [ -x "$d/bin/nvcc" ]; then nvcc="$d/bin/nvcc"; break; fi
  done
fi
if [ -z "$nvcc" ]; then
  echo "mx-cuda: nvcc (the CUDA toolkit's compiler) was not found on PATH, in \$CUDA_HOME/bin or /usr/local/cuda*/bin;" \
       "it is needed to compile mx-cuda/src/main/cuda/*.cu to PTX. Install the CUDA toolkit or set NVCC=/path/to/nvcc." >&2
  exit 1
fi
mkdir -p "$out"
for cu in "$src"/*.cu; do
  name=$(basename "$cu" .cu)
  target="$out/$name.ptx"
  # Rebuild only when a source or header is newer than the PTX.
  if [ -f "$target" ] && [ -z "$(find "$src" -newer "$target" \( -name '*.cu' -o -name '*.cuh' \) | head -1)" ]; then
    continue
  fi
  "$nvcc" -ptx -arch="$arch" -std=c++17 -O3 -I "$src" -o "$target" "$cu"
done
