#!/usr/bin/env bash
# test/gpu/bundle.sh: packs what test/gpu/check.sh needs into
# .gpu-bundle/spmdc-gpu.tar.xz, for a GPU machine that cannot build spmdc.
# A lent GPU machine (the device tool) is bare: no LLVM, MLIR, OpenBLAS or
# MPI, no package registry, and at most 64 MiB travel with the repo. So the
# modules are compiled here, and the runner travels as spmd-run-portable
# (MLIR, LLVM and OpenBLAS linked in statically) with the few shared
# libraries it needs that such a machine lacks; the CUDA driver, cuBLAS and
# NCCL are the machine's own.
#
#   test/gpu/bundle.sh [OUTPUT]   # default .gpu-bundle/spmdc-gpu.tar.xz
#   then, with the device tool: run(command="test/gpu/check.sh",
#                                   carry=[".gpu-bundle"])
# SPMDC_BUILD_DIR names the build (default build/); SPMDC_NO_BUILD=1 packs
# what is built without building (the lit test, inside a build).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
output=$(realpath -m "${1:-$root/.gpu-bundle/spmdc-gpu.tar.xz}")
cd "$root"
build=${SPMDC_BUILD_DIR:-build}
if [ "${SPMDC_NO_BUILD:-0}" != 1 ]; then
  [ -f "$build/build.ninja" ] || scripts/setup.sh
  cmake --build "$build" --target spmdc spmd-run-portable SPMDCRuntimeCUDA
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b=$stage/spmdc
mkdir -p "$b/bin" "$b/lib" "$b/modules"
cp "$build/bin/spmd-run-portable" "$b/bin/spmd-run"
cp "$build/lib/libspmdc_runtime_cuda.so" "$b/lib/"

# The libraries every Linux machine has; all others travel.
base='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libz|libzstd|libtinfo)\.'
# On the GPU machine (CUDA toolkit and PyTorch's NCCL).
gpu='^(libcuda|libcublas|libcublasLt|libnccl)\.'
ldd "$b/bin/spmd-run" | awk '/=> \// {print $1, $3}' |
while read -r name path; do
  if ! [[ $name =~ $base ]]; then cp -L "$path" "$b/lib/$name"; fi
done
# Check the closure: with the bundle's lib/ first, each library resolves
# into the bundle, to the base set or to the GPU machine's CUDA libraries.
for f in "$b/bin/spmd-run" "$b"/lib/*.so*; do
  LD_LIBRARY_PATH=$b/lib ldd "$f" | awk '/=>/ {print $1, $3}' |
  while read -r name path; do
    if [[ $path == "$b"/* || $name =~ $base || $name =~ $gpu ]]; then continue; fi
    echo "bundle.sh: $(basename "$f") needs $name ($path), which is not packed" >&2
    exit 1
  done
done

# The modules check.sh runs: gpt2-mini for the CPU (the reference) and for
# CUDA in f32 and bf16, with their host code compiled here for any x86-64
# with AVX2 (spmd-run there compiles the program instead if its CPU lacks
# one of those features).
model=docs/examples/gpt2-mini.json
aot="--aot --aot-cpu=x86-64-v3"
"$build/bin/spmdc" "$model" $aot -o "$b/modules/cpu.mod"
"$build/bin/spmdc" "$model" $aot --target=cuda -o "$b/modules/cuda.mod" \
  --ptx-dir "$b/modules/ptx"
"$build/bin/spmdc" "$model" $aot --target=cuda --precision=bf16 \
  -o "$b/modules/cuda-bf16.mod"
# Two ranks (check.sh step 5, where the machine has two GPUs and mpirun):
# ddp and zero3, blocking and with --overlap (NCCL on the communication
# stream), one all-reduce per gradient so that many are under way at once.
for spec in ddp zero3; do
  flags="$aot --target=cuda --shard-spec docs/examples/specs/$spec.json --bucket-mb 0"
  "$build/bin/spmdc" "$model" $flags -o "$b/modules/cuda-$spec.mod"
  "$build/bin/spmdc" "$model" $flags --overlap -o "$b/modules/cuda-$spec-overlap.mod"
done

# The packed runner must run the CPU module with nothing of build/ or LLVM
# in reach, and refuse the CUDA one here (no driver) with one message.
env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$b/lib" \
  "$b/bin/spmd-run" "$b/modules/cpu.mod" --steps 2
if ! ldconfig -p | grep -q libcuda.so.1; then
  if env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$b/lib" \
      "$b/bin/spmd-run" "$b/modules/cuda.mod" --steps 1 2>"$stage/err"; then
    echo "bundle.sh: the CUDA module ran without a CUDA driver" >&2; exit 1
  fi
  grep -q "CUDA" "$stage/err" || { cat "$stage/err" >&2; exit 1; }
fi

# Which source the bundle was made from, for check.sh to report.
git describe --always --dirty >"$b/commit" 2>/dev/null || echo unknown >"$b/commit"

mkdir -p "$(dirname "$output")"
tar -C "$stage" -cf - spmdc | xz -9 -T2 >"$output"
size=$(stat -c %s "$output")
echo "bundle.sh: $output, $((size / 1048576)) MiB:"
tar -tJvf "$output" | grep -v /ptx/ | awk '{print "  " $3, $6}'
if [ "$size" -gt $((48 << 20)) ]; then
  echo "bundle.sh: over 48 MiB; the device tool carries 64 MiB with the repo" >&2
  exit 1
fi
