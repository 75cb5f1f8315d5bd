#!/usr/bin/env bash
# Live collection throughput on Ray, 1 against 2 GPU actors, on a host with two GPUs, over fixed
# windows in which every built-in task stays busy (bench_ray_live.py's --max-wall mode): first
# with 8 evaluator workers per actor (what `kernelband live --backend ray --in-flight 15` picks),
# then with one worker per actor (the earlier actor design). Run from the repository root with
# kernelband's `live` and `ray` extras installed:
#
#   WINDOW=100 WINDOW_W1=60 bash benchmarks/gpu/ray_scaling.sh OUT_DIR
#
# Settings (environment): WINDOW (100 s, the 8-worker windows), WINDOW_W1 (60 s). Writes
# OUT_DIR/gpus.txt, OUT_DIR/ray_live_w8.json and ray_live_w1.json (bench_ray_live.py's JSON) and
# the two consoles (ray_w8.log, ray_w1.log).
set -uo pipefail
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 1 ] || { usage >&2; exit 2; }
: "${WINDOW:=100}"; : "${WINDOW_W1:=60}"
out_dir=$1; mkdir -p "$out_dir"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version --format=csv | tee "$out_dir/gpus.txt"
timeout $(( 2 * WINDOW + 150 )) python3 benchmarks/bench_ray_live.py --actors 1,2 --workers 8 \
  --steps 400 --max-wall "$WINDOW" --in-flight 15 --json "$out_dir/ray_live_w8.json" 2>&1 \
  | grep -v "^\s*$" | tee "$out_dir/ray_w8.log"
timeout $(( 2 * WINDOW_W1 + 110 )) python3 benchmarks/bench_ray_live.py --actors 1,2 --workers 1 \
  --steps 400 --max-wall "$WINDOW_W1" --in-flight 15 --json "$out_dir/ray_live_w1.json" 2>&1 \
  | grep -v "^\s*$" | tee "$out_dir/ray_w1.log"
