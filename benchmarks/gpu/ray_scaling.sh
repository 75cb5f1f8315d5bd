#!/usr/bin/env bash
# One call on a 2-GPU machine (nvidia-h200-x2): live collection throughput on Ray, 1 vs 2 GPU
# actors, over fixed windows in which every built-in task stays busy (bench_ray_live.py's
# --max-wall mode); first with 8 evaluator workers per actor (what `kernelband live --backend
# ray --in-flight 15` picks), then with one worker per actor (the earlier actor design).
#
#   WINDOW=100 WINDOW_W1=60 bash benchmarks/gpu/ray_scaling.sh
set -uo pipefail
: "${OUT:?}"; : "${WINDOW:=100}"; : "${WINDOW_W1:=60}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version --format=csv | tee "$OUT/x2.gpu.txt"
timeout $(( 2 * WINDOW + 150 )) python3 benchmarks/bench_ray_live.py --actors 1,2 --workers 8 \
  --steps 400 --max-wall "$WINDOW" --in-flight 15 --json "$OUT/ray_live_w8_h200x2.json" 2>&1 \
  | grep -v "^\s*$" | tee "$OUT/ray_w8.log"
timeout $(( 2 * WINDOW_W1 + 110 )) python3 benchmarks/bench_ray_live.py --actors 1,2 --workers 1 \
  --steps 400 --max-wall "$WINDOW_W1" --in-flight 15 --json "$OUT/ray_live_w1_h200x2.json" 2>&1 \
  | grep -v "^\s*$" | tee "$OUT/ray_w1.log"
