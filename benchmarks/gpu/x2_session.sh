#!/usr/bin/env bash
# One call on a 2-GPU machine (nvidia-h200-x2): the Ray live-throughput benchmark (1 vs 2 GPU
# actors), then, side by side, a resumed piece of a live run on GPU 0 and a profiling pass over
# the exploration trace on GPU 1 (two GPUs: neither disturbs the other's timings).
#
#   BUDGET=420 bash benchmarks/gpu/x2_session.sh
set -uo pipefail
: "${OUT:?}"; : "${BUDGET:=420}"
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version --format=csv | tee "$OUT/x2.gpu.txt"
timeout 240 python3 benchmarks/bench_ray_live.py --actors 1,2 --steps "${RAY_STEPS:-4}" \
  --in-flight 8 --json "$OUT/ray_live_h200x2.json" 2>&1 | tail -15
left=$(( BUDGET - ($(date +%s) - start) - 25 ))
echo "side-by-side budget: $left s"
mkdir -p /tmp/ex && tar -xzf .gpu-runs/explore-h200.tar.gz -C /tmp/ex
CUDA_VISIBLE_DEVICES=1 python3 -m kernelband.cli traces profile /tmp/ex/explore-h200 \
  --batch-size 48 --max-wall $(( left - 40 )) --quiet > "$OUT/profile_pass.log" 2>&1 &
prof=$!
CUDA_VISIBLE_DEVICES=0 MAX_WALL=$(( left - 20 )) bash benchmarks/gpu/live_run.sh policy-v2-h200 \
  --tasks builtin --policy kernelband-v2 --proposer mutate --steps 40 --seed 0 --device cuda \
  --profile reps --in-flight 15 2>&1 | tail -22
wait $prof; tail -8 "$OUT/profile_pass.log"
python3 -m kernelband.cli traces validate /tmp/ex/explore-h200
tar -czf "$OUT/explore-h200.tar.gz" -C /tmp/ex explore-h200
echo "total $(( $(date +%s) - start )) s"
