#!/usr/bin/env bash
# The live loop under GPU memory caps and with profiling on, on one GPU of any host (the script
# takes at most MAX_SECONDS seconds, default 540; phases that would not fit are left out):
#   A. `kernelband tasks check` with --gpu-memory 24, 40 and the whole card (side by side: pass
#      or fail does not depend on timing; each plans for its own cap);
#   B. live runs, 15 built-in tasks x 8 steps, KernelBand v2 + mutate + --profile reps, with
#      --gpu-memory 24 and 40 (side by side, each inside its cap);
#   C. throughput windows, alone on the GPU, alternating: explore with profiling off against v2
#      with --profile reps (15 tasks in flight, every task busy: --steps 400 --max-wall WINDOW);
#   D. v2 --profile reps 15 x 8 on the whole card, if time is left.
# GPU memory is polled throughout (benchmarks/gpu/gpu_memory_poll.py: total and per run).
# Run from the repository root with kernelband installed:
#
#   bash benchmarks/gpu/live_memory_profiling.sh OUT_DIR                  # A, B, C, D
#   PHASES=AB LIVE_WALL=230 bash benchmarks/gpu/live_memory_profiling.sh OUT_DIR
#   PHASES=C ROUNDS=2 WINDOW=80 bash benchmarks/gpu/live_memory_profiling.sh OUT_DIR
#
# Settings (environment): PHASES (ABCD), MAX_SECONDS (540), WINDOW (60 s), ROUNDS (2),
# WINDOW_MEMORY (GiB cap for the windows; none), STEPS (8), LIVE_WALL (110 s), TASKS (builtin),
# DEVICE (cuda), RUNS_DIR (where the runs' traces go; default a new temporary folder).
# Writes OUT_DIR/live_runs.json (per run: attempts/s, OOM failures, tasks lost, profiles,
# waits), OUT_DIR/memory.json, OUT_DIR/checks.txt, OUT_DIR/gpu.txt and OUT_DIR/logs.tar.gz.
set -uo pipefail
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 1 ] || { usage >&2; exit 2; }
out_dir=$1; mkdir -p "$out_dir"
: "${MAX_SECONDS:=540}"; : "${WINDOW:=60}"; : "${DEVICE:=cuda}"; : "${TASKS:=builtin}"
: "${STEPS:=8}"; : "${LIVE_WALL:=110}"; : "${PHASES:=ABCD}"; : "${ROUNDS:=2}"
: "${WINDOW_MEMORY:=}"
window_mem=(); [ -n "$WINDOW_MEMORY" ] && window_mem=(--gpu-memory "$WINDOW_MEMORY")
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
start=$(date +%s)
left() { echo $(( MAX_SECONDS - ($(date +%s) - start) )); }
runs=${RUNS_DIR:-$(mktemp -d)}; mkdir -p "$runs"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out_dir/gpu.txt" 2>&1
python3 benchmarks/gpu/gpu_memory_poll.py "$out_dir/memory.json" & poller=$!

check() {  # check LABEL [--gpu-memory N]
  local label=$1; shift
  KB_RUN_LABEL=$label timeout 170 python3 -m kernelband.cli tasks check --tasks "$TASKS" \
    --device "$DEVICE" "$@" > "$runs/$label.txt" 2>&1
  echo "$label exit $?" >> "$runs/$label.txt"
}
live() {  # live LABEL POLICY PROFILE STEPS WALL [more options]
  local label=$1 policy=$2 profile=$3 steps=$4 wall=$5; shift 5
  local t0 t1
  t0=$(date +%s.%N)
  # SIGINT, not SIGTERM: the runner's finally blocks stop its workers and its ncu session
  KB_RUN_LABEL=$label timeout -s INT -k 20 $(( ${wall%.*} + 60 )) python3 -m kernelband.cli live \
    --out "$runs/$label" --tasks "$TASKS" --policy "$policy" --proposer mutate --steps "$steps" \
    --seed 0 --device "$DEVICE" --profile "$profile" --in-flight 15 --max-wall "$wall" --quiet \
    "$@" > "$runs/$label.log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  python3 -c "import json,sys; json.dump({'wall_s': $t1 - $t0, 'exit': $rc}, open(sys.argv[1], 'w'))" \
    "$runs/$label.time.json"
  echo "$label: exit $rc, $(python3 -c "print(round($t1 - $t0, 1))") s"
}

if [[ $PHASES == *A* ]]; then
echo "== A: tasks check at 24, 40 GiB and the whole card (side by side)"
check check-24 --gpu-memory 24 & a=$!
check check-40 --gpu-memory 40 & b=$!
check check-full & c=$!
wait $a $b $c
for f in check-24 check-40 check-full; do echo "--- $f"; cat "$runs/$f.txt"; done | tee "$out_dir/checks.txt"
echo "left: $(left) s"
fi

if [[ $PHASES == *B* ]]; then
echo "== B: v2 --profile reps, 15 x $STEPS, --gpu-memory 24 and 40 (side by side)"
live v2-reps-24 kernelband-v2 reps "$STEPS" "$LIVE_WALL" --gpu-memory 24 & a=$!
live v2-reps-40 kernelband-v2 reps "$STEPS" "$LIVE_WALL" --gpu-memory 40 & b=$!
wait $a $b
echo "left: $(left) s"
fi

if [[ $PHASES == *C* ]]; then
echo "== C: throughput windows of $WINDOW s, alternating"
# numba compiles each policy once (cached), outside the windows
live warm-explore explore off 1 20 --tasks add >/dev/null & a=$!
live warm-v2 kernelband-v2 off 1 20 --tasks add >/dev/null & b=$!
wait $a $b
rm -rf "$runs"/warm-*
round=1
while [ "$(left)" -gt $(( 2 * (WINDOW + 25) + 10 )) ] && [ $round -le "$ROUNDS" ]; do
  if [ $round -eq 1 ]; then
    live "explore-off-$round" explore off 400 "$WINDOW" "${window_mem[@]}"
    live "v2-reps-$round" kernelband-v2 reps 400 "$WINDOW" "${window_mem[@]}"
  else
    live "v2-reps-$round" kernelband-v2 reps 400 "$WINDOW" "${window_mem[@]}"
    live "explore-off-$round" explore off 400 "$WINDOW" "${window_mem[@]}"
  fi
  round=$((round + 1))
done
echo "left: $(left) s"
fi

if [[ $PHASES == *D* ]] && [ "$(left)" -gt $(( LIVE_WALL + 30 )) ]; then
  echo "== D: v2 --profile reps, 15 x $STEPS, the whole card"
  live v2-reps-full kernelband-v2 reps "$STEPS" "$LIVE_WALL"
fi

kill $poller; sleep 1
python3 benchmarks/gpu/live_runs_summary.py "$runs" "$out_dir/live_runs.json"
cat "$out_dir/memory.json"
tar -czf "$out_dir/logs.tar.gz" -C "$runs" $(cd "$runs" && ls | grep -E '\.(log|txt|json)$')
echo "total $(( $(date +%s) - start )) s"
