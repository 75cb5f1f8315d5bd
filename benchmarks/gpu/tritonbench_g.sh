#!/usr/bin/env bash
# TritonBench-G end to end on a lent GPU machine (issue #14), in resumable pieces:
#   PHASE=load: a cold-cache load of every operator (gold-vs-gold in parallel sandboxed
#     workers), then a cached load; then, with what is left of BUDGET_S, the live run below;
#   PHASE=live: the live run (mutate proposer, explore, 4 steps per operator, over every
#     operator that passed), continued with --resume when a trace is already there.
# DRAIN_S: seconds between --max-wall and the outer limit, for evaluations in flight to end (a
# TritonBench-G evaluation can take minutes under load; those still running then are lost).
# State lives in .gpu-run/ of the checkout (git-ignored, kept between calls on a warm machine).
#
#   OUT=... PHASE=load BUDGET_S=560 bash benchmarks/gpu/tritonbench_g.sh [DATA_DIR]
#
# Leaves under $OUT: run.txt (machine, versions, times), check_cold.json / check_warm.json
# (`kernelband tasks check --json`), check_cold.err (both loads' stderr), tb-cache.tgz (the check cache), live.log,
# host_available_mib.txt (the host's available memory every 2 s), oom_adj.txt (D93's ranks), and after the live run
# tb-live.tar.gz (the trace).
set -uo pipefail
: "${OUT:?OUT must be set}"
data=${1:-../.gpu-data/tritonbench-g}
[ -d "$data" ] || data=.gpu-data/tritonbench-g
budget=${BUDGET_S:-560}
phase=${PHASE:-load}
start=$(date +%s)
state=$PWD/.gpu-run
mkdir -p "$state"
# Triton's compile cache lives beside kernelband's, so that a cold load is cold for both
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 KERNELBAND_CACHE_DIR=$state/kb-cache \
  TRITON_CACHE_DIR=$state/triton-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "commit ${KB_COMMIT:-$(git log --oneline -1 2>/dev/null)}"
} >> "$OUT/run.txt" 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
# the host's available memory every 2 s (epoch seconds, MiB): what D84's admission works with
( while :; do echo "$(date +%s) $(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo)"
  sleep 2; done ) > "$OUT/host_available_mib.txt" 2>/dev/null &
sampler=$!
# how many processes the out-of-memory killer is steered away from / towards (D93), every 2 s:
# epoch seconds, processes with a raised oom_score_adj, the highest
( while :; do echo "$(date +%s) $(cat /proc/[0-9]*/oom_score_adj 2>/dev/null \
    | awk '$1 > 0 {n++; if ($1 > m) m = $1} END {print n + 0, m + 0}')"
  sleep 2; done ) > "$OUT/oom_adj.txt" 2>/dev/null &
adj_sampler=$!
trap 'kill $sampler $adj_sampler 2>/dev/null' EXIT
if [ "$phase" = load ]; then
  # the cold load (both caches empty); a live trace there is resumed (FRESH=1: not)
  rm -rf "$state/kb-cache" "$state/triton-cache"
  [ "${FRESH:-0}" = 1 ] && rm -rf "$state/tb-live"
  t=$(date +%s%N)
  timeout "${CHECK_WALL:-400}" python3 -m kernelband.cli tasks check --tasks "tritonbench:$data" \
    --device cuda --json > "$OUT/check_cold.json" 2> "$OUT/check_cold.err"
  rc=$?
  echo "cold load (tasks check, empty cache): $(ms "$t") ms, rc $rc" >> "$OUT/run.txt"
  tar -czf "$OUT/tb-cache.tgz" -C "$state" kb-cache
  if [ "$rc" -ne 124 ]; then
    for i in 1 2; do
      t=$(date +%s%N)
      timeout 60 python3 -m kernelband.cli tasks check --tasks "tritonbench:$data" --device cuda \
        --json > "$OUT/check_warm.json" 2>> "$OUT/check_cold.err"
      rc=$?
      echo "cached load $i (tasks check, again): $(ms "$t") ms, rc $rc" >> "$OUT/run.txt"
    done
  fi
fi
left=$(( budget - ($(date +%s) - start) ))
if [ "$left" -gt 120 ]; then
  resume=(); [ -d "$state/tb-live" ] && resume=(--resume)
  t=$(date +%s%N)
  # --max-wall stops starting attempts; those in flight still end, hence the outer limit
  timeout -s INT -k 20 $(( left - 30 )) python3 -m kernelband.cli live \
    --tasks "tritonbench:$data" --proposer mutate --policy explore --steps 4 --device cuda \
    --in-flight "${IN_FLIGHT:-16}" --eval-workers "${EVAL_WORKERS:-12}" --quiet \
    --max-wall $(( left - 30 - ${DRAIN_S:-80} )) --out "$state/tb-live" "${resume[@]}" >> "$OUT/live.log" 2>&1
  rc=$?
  echo "live run ${resume[*]}: rc $rc, $(ms "$t") ms (max-wall $(( left - 30 - ${DRAIN_S:-80} )) s)" >> "$OUT/run.txt"
  python3 -m kernelband.cli traces validate "$state/tb-live" >> "$OUT/live.log" 2>&1
  echo "traces validate: rc $?" >> "$OUT/run.txt"
  tar -czf "$OUT/tb-live.tar.gz" -C "$state" tb-live
fi
cat "$OUT/run.txt"
