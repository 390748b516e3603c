#!/usr/bin/env bash
# test/gpu/check.sh: the CUDA target on a machine with a GPU (not run by
# ctest; CI has no GPU). Sized to finish in under 8 minutes:
#   1. unpacks the bundle test/gpu/bundle.sh made (the runner, the libraries
#      a bare machine lacks, gpt2-mini compiled for the CPU and for CUDA),
#      or makes it first where this machine can build spmdc;
#   2. measures this GPU's ceilings first: memory bandwidth and cuBLAS SGEMM
#      throughput (ceilings.cu, compiled with nvcc);
#   3. runs gpt2-mini's step on 1 GPU against the CPU target's numbers:
#      losses of 3 AdamW steps and the parameters after them, 1e-4 relative
#      (f32), and in bf16 (--precision=bf16) within 1e-2;
#   4. times the step (median of spmd-run's per-step log over 20 steps) and
#      the largest kernels/GEMMs (SPMD_CUDA_PROFILE=1) against the ceilings;
#   5. where the machine has two GPUs and mpirun: gpt2-mini ddp and zero3
#      on 2 ranks under NCCL, compiled with --overlap (started collectives
#      on NCCL's communication stream), whose losses must equal the
#      blocking module's (1e-5), and both steps' times. NCCL needs a GPU
#      per rank, so one GPU (or no mpirun) skips it with a line saying so.
# On a lent machine (the device tool), from this machine:
#   test/gpu/bundle.sh
#   run(command="test/gpu/check.sh", carry=[".gpu-bundle"], timeout_s=540)
# Results go to $OUT (the device tool's output folder) or /tmp/spmdc-gpu.
# Exits non-zero when a check fails; prints the figures either way.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/spmdc-gpu}
mkdir -p "$out"
cd "$root"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
log() { echo "== $*" | tee -a "$out/summary.txt"; }

log "1. bundle"
[ -f .gpu-bundle/spmdc-gpu.tar.xz ] || test/gpu/bundle.sh >"$out/build.log" 2>&1
b=/tmp/spmdc-gpu-bundle
rm -rf "$b"
# Python's tarfile: a bare machine may lack the xz tool, never python3.
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
  .gpu-bundle/spmdc-gpu.tar.xz "$b"
b=$b/spmdc
made=$(cat "$b/commit" 2>/dev/null || echo unknown)
here=$(git describe --always --dirty 2>/dev/null || echo unknown)
echo "bundle made from $made; this checkout is $here" | tee -a "$out/summary.txt"
[ "$made" = "$here" ] || [ "$here" = unknown ] ||
  echo "warning: the bundle is not from this checkout (run test/gpu/bundle.sh)" |
  tee -a "$out/summary.txt"
# cuBLAS and NCCL: the toolkit's, else the pip wheels PyTorch brought.
libdirs=$b/lib
for lib in libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  found=$( (ls "$CUDA_HOME"/lib64/$lib "$CUDA_HOME"/lib/$lib 2>/dev/null;
            find "$(python3 -c 'import site; print(site.getsitepackages()[0])')/nvidia" \
              -name "$lib" 2>/dev/null; true) | head -1)
  [ -n "$found" ] || { log "no $lib on this machine"; exit 1; }
  libdirs=$libdirs:$(dirname "$found")
done
# The driver: where the loader finds it, or the lent machines' mount.
for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  [ -e "$dir/libcuda.so.1" ] && libdirs=$libdirs:$dir
done
export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH="$b/bin:$CUDA_HOME/bin:$PATH"
echo "libraries: $LD_LIBRARY_PATH" | tee -a "$out/summary.txt"
nvidia-smi -L | tee -a "$out/summary.txt"

log "2. ceilings"
nvcc -O2 -o "$out/ceilings" test/gpu/ceilings.cu -lcublas
"$out/ceilings" | tee "$out/ceilings.txt" | tee -a "$out/summary.txt"
bandwidth=$(awk '/bandwidth_GBps/ {print $2}' "$out/ceilings.txt")
sgemm=$(awk '/sgemm_TFLOPS/ {print $2}' "$out/ceilings.txt")

log "3. gpt2-mini on 1 GPU against the CPU target (3 steps, 1e-4)"
m=$b/modules
spmd-run "$m/cpu.mod" --steps 3 --save-params "$out/cpu.safetensors" \
  >"$out/cpu.loss"
timeout 300 spmd-run "$m/cuda.mod" --steps 3 \
  --save-params "$out/cuda.safetensors" >"$out/cuda.loss"
paste "$out/cpu.loss" "$out/cuda.loss" | tee -a "$out/summary.txt"
python3 test/Inputs/compare-losses.py "$out/cuda.loss" "$out/cpu.loss" \
  --rtol 1e-4 | tee -a "$out/summary.txt"
python3 test/Inputs/compare-safetensors.py "$out/cuda.safetensors" \
  "$out/cpu.safetensors" --rtol 1e-4 --atol 1e-5 \
  --exclude h.0.attn.k_proj.bias --exclude h.1.attn.k_proj.bias \
  | tail -1 | tee -a "$out/summary.txt"

log "3b. bf16 (--precision=bf16) against the CPU target's f32 (3 steps, 1e-2)"
timeout 300 spmd-run "$m/cuda-bf16.mod" --steps 3 >"$out/cuda-bf16.loss"
paste "$out/cpu.loss" "$out/cuda-bf16.loss" | tee -a "$out/summary.txt"
python3 test/Inputs/compare-losses.py "$out/cuda-bf16.loss" "$out/cpu.loss" \
  --rtol 1e-2 | tee -a "$out/summary.txt"

log "4. timing (20 steps; profile of kernels and GEMMs)"
SPMD_CUDA_PROFILE=1 timeout 300 spmd-run "$m/cuda.mod" --steps 20 \
  --log-level info >"$out/time.loss" 2>"$out/time.log"
spmd-run "$m/cpu.mod" --steps 20 --log-level info >/dev/null \
  2>"$out/cpu-time.log"
python3 - "$out" "$bandwidth" "$sgemm" <<'PY' | tee -a "$out/summary.txt"
import re, statistics, sys
out, bandwidth, sgemm = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def step_ms(path):
    times = [float(m.group(2)) for m in
             re.finditer(r"step (\d+) took ([0-9.]+) ms", open(path).read())
             if int(m.group(1)) > 1]
    return statistics.median(times)
gpu, cpu = step_ms(out + "/time.log"), step_ms(out + "/cpu-time.log")
print("step: %.3f ms on the GPU, %.3f ms on one CPU core (%.1fx)"
      % (gpu, cpu, cpu / gpu))
# The model's parameters (from the saved file); AdamW reads p, g, m, v and
# writes p, m, v once: the least traffic a step can have.
import json, struct
with open(out + "/cpu.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
params = 0
for name, entry in header.items():
    if name != "__metadata__":
        size = 1
        for d in entry["shape"]:
            size *= d
        params += size
print("parameters: %d" % params)
floor_ms = 7 * 4 * params / (bandwidth * 1e9) * 1e3
print("bandwidth floor of the optimizer's traffic: %.4f ms (step is %.0fx it)"
      % (floor_ms, gpu / floor_ms))
rows = re.findall(r"spmd-run:\s+([0-9.]+) ms\s+(\d+) x\s+([0-9.]+) MB\s+([0-9.]+) GB/s  (.*)",
                  open(out + "/time.log").read())
print("largest kernels and GEMMs (device time over 20 steps), against the "
      "ceilings (%.0f GB/s, SGEMM %.1f TFLOPS):" % (bandwidth, sgemm))
for ms, calls, mb, gbps, name in rows[:12]:
    ms, calls, gbps = float(ms), int(calls), float(gbps)
    line = "  %9.3f ms %6d x %9.3f MB  %-34s %.4f ms per call" % (
        ms, calls, float(mb), name, ms / calls)
    gemm = re.match(r"cublas[SD]gemm (\d+)x(\d+)x(\d+)x(\d+)", name)
    if gemm:
        b, m, n, k = map(int, gemm.groups())
        tflops = 2 * b * m * n * k / (ms / calls * 1e-3) / 1e12
        line += "  %.3f TFLOPS = %.2f%% of SGEMM" % (tflops, 100 * tflops / sgemm)
    else:
        # A kernel's floor is moving the buffers it touches once.
        line += "  %.1f GB/s = %.2f%% of bandwidth" % (gbps, 100 * gbps / bandwidth)
    print(line)
PY
log "5. --overlap on 2 ranks under NCCL against the blocking run (1e-5)"
gpus=$(nvidia-smi -L | grep -c '^GPU' || true)
if [ "$gpus" -lt 2 ]; then
  log "5. skipped: NCCL needs a GPU per rank; this machine has $gpus"
elif ! command -v mpirun >/dev/null; then
  log "5. skipped: no mpirun on this machine (spmd-run starts ranks with it)"
else
  for spec in ddp zero3; do
    for kind in "" -overlap; do
      timeout 300 spmd-run "$m/cuda-$spec$kind.mod" --nranks 2 --steps 3 \
        --log-level info >"$out/$spec$kind.loss" 2>"$out/$spec$kind.log"
    done
    paste "$out/$spec.loss" "$out/$spec-overlap.loss" | tee -a "$out/summary.txt"
    python3 test/Inputs/compare-losses.py "$out/$spec-overlap.loss" \
      "$out/$spec.loss" --rtol 1e-5 | tee -a "$out/summary.txt"
    { grep -h "step 3 took" "$out/$spec.log" "$out/$spec-overlap.log" || true; } |
      sed "s/^/$spec (blocking, then --overlap): /" | tee -a "$out/summary.txt"
  done
fi
log "done: $out/summary.txt"
