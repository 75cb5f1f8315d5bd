#!/usr/bin/env bash
# TritonBench-G end to end on one GPU, in resumable pieces (each at most MAX_SECONDS seconds):
#   PHASE=load: a cold-cache load of every operator (gold-vs-gold in parallel sandboxed
#     workers), then two cached loads; then, with what is left of MAX_SECONDS, the live run below;
#   PHASE=live: the live run (mutate proposer, explore, 4 steps per operator, over every
#     operator that passed), continued with --resume when a trace is already there.
# DRAIN_S: seconds between --max-wall and the outer limit, for evaluations in flight to end (a
# TritonBench-G evaluation can take minutes under load; those still running then are lost).
# State (caches, the live trace) lives in STATE_DIR, default .gpu-run/ of the checkout
# (git-ignored), kept between pieces. DATA_DIR is a checkout of the authors' corrected
# TritonBench-G; run from the repository root on a GPU host:
#
#   PHASE=load MAX_SECONDS=560 bash benchmarks/gpu/tritonbench_load_and_live.sh DATA_DIR OUT_DIR
#   PHASE=live MAX_SECONDS=560 bash benchmarks/gpu/tritonbench_load_and_live.sh DATA_DIR OUT_DIR
#
# Other settings (environment): CHECK_WALL (400 s for the cold load), DRAIN_S (80),
# IN_FLIGHT (16), EVAL_WORKERS (12), FRESH=1 (a load starts a new live trace), KB_COMMIT (the
# tree's name for run.txt). Leaves under OUT_DIR: run.txt (machine, versions, times), check_cold.json / check_warm.json
# (`kernelband tasks check --json`), check_cold.err (both loads' stderr), tb-cache.tgz (the check cache), live.log,
# host_available_mib.txt (the host's available memory every 2 s), oom_adj.txt (D93's ranks), and after the live run
# tb-live.tar.gz (the trace).
set -uo pipefail
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
data=$1; out_dir=$2; mkdir -p "$out_dir"
max_seconds=${MAX_SECONDS:-560}
phase=${PHASE:-load}
start=$(date +%s)
state=${STATE_DIR:-$PWD/.gpu-run}
. "$(dirname "$0")/gpu_run_env.sh"
# the host's available memory every 2 s (epoch seconds, MiB): what D84's admission works with
( while :; do echo "$(date +%s) $(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo)"
  sleep 2; done ) > "$out_dir/host_available_mib.txt" 2>/dev/null &
sampler=$!
# how many processes the out-of-memory killer is steered away from / towards (D93), every 2 s:
# epoch seconds, processes with a raised oom_score_adj, the highest
( while :; do echo "$(date +%s) $(cat /proc/[0-9]*/oom_score_adj 2>/dev/null \
    | awk '$1 > 0 {n++; if ($1 > m) m = $1} END {print n + 0, m + 0}')"
  sleep 2; done ) > "$out_dir/oom_adj.txt" 2>/dev/null &
adj_sampler=$!
trap 'kill $sampler $adj_sampler 2>/dev/null' EXIT
if [ "$phase" = load ]; then
  # the cold load (both caches empty); a live trace there is resumed (FRESH=1: not)
  rm -rf "$state/kb-cache" "$state/triton-cache"
  [ "${FRESH:-0}" = 1 ] && rm -rf "$state/tb-live"
  t=$(date +%s%N)
  timeout "${CHECK_WALL:-400}" python3 -m kernelband.cli tasks check --tasks "tritonbench:$data" \
    --device cuda --json > "$out_dir/check_cold.json" 2> "$out_dir/check_cold.err"
  rc=$?
  echo "cold load (tasks check, empty cache): $(ms "$t") ms, rc $rc" >> "$out_dir/run.txt"
  tar -czf "$out_dir/tb-cache.tgz" -C "$state" kb-cache
  if [ "$rc" -ne 124 ]; then
    for i in 1 2; do
      t=$(date +%s%N)
      timeout 60 python3 -m kernelband.cli tasks check --tasks "tritonbench:$data" --device cuda \
        --json > "$out_dir/check_warm.json" 2>> "$out_dir/check_cold.err"
      rc=$?
      echo "cached load $i (tasks check, again): $(ms "$t") ms, rc $rc" >> "$out_dir/run.txt"
    done
  fi
fi
left=$(( max_seconds - ($(date +%s) - start) ))
if [ "$left" -gt 120 ]; then
  resume=(); [ -d "$state/tb-live" ] && resume=(--resume)
  t=$(date +%s%N)
  # --max-wall stops starting attempts; those in flight still end, hence the outer limit
  timeout -s INT -k 20 $(( left - 30 )) python3 -m kernelband.cli live \
    --tasks "tritonbench:$data" --proposer mutate --policy explore --steps 4 --device cuda \
    --in-flight "${IN_FLIGHT:-16}" --eval-workers "${EVAL_WORKERS:-12}" --quiet \
    --max-wall $(( left - 30 - ${DRAIN_S:-80} )) --out "$state/tb-live" "${resume[@]}" >> "$out_dir/live.log" 2>&1
  rc=$?
  echo "live run ${resume[*]}: rc $rc, $(ms "$t") ms (max-wall $(( left - 30 - ${DRAIN_S:-80} )) s)" >> "$out_dir/run.txt"
  python3 -m kernelband.cli traces validate "$state/tb-live" >> "$out_dir/live.log" 2>&1
  echo "traces validate: rc $?" >> "$out_dir/run.txt"
  tar -czf "$out_dir/tb-live.tar.gz" -C "$state" tb-live
fi
cat "$out_dir/run.txt"
