#!/usr/bin/env bash
# TritonBench-G live runs side by side on one GPU: the GPU lock's timing patience (D81) off and
# on, each a fresh run of the same command from the same check cache (operators start in the
# same alphabetical order), alternating. The check cache is completed first (`tasks check`,
# whose output is the load's record), then timed again from the cache.
#
#   OUT=... WINDOW=140 bash benchmarks/gpu/tritonbench_patience_ab.sh [DATA_DIR]
set -uo pipefail
: "${OUT:?OUT must be set}"
data=${1:-.gpu-data/tritonbench-g}
state=$PWD/.gpu-run
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 KERNELBAND_CACHE_DIR=$state/kb-cache
window=${WINDOW:-140}
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
for i in 1 2; do
  t=$(date +%s%N)
  timeout "${CHECK_WALL:-170}" python3 -m kernelband.cli tasks check --tasks "tritonbench:$data" \
    --device cuda --json > "$OUT/check_$i.json" 2> "$OUT/check_$i.err"
  echo "tasks check $i (cache): $(ms "$t") ms, rc $?" >> "$OUT/run.txt"
done
for patience in ${PATIENCES:-0 15}; do
  run=$state/ab-p$patience
  rm -rf "$run"
  t=$(date +%s%N)
  timeout -s INT -k 15 $(( window + 45 )) python3 -m kernelband.cli live \
    --tasks "tritonbench:$data" --proposer mutate --policy explore --steps 4 --device cuda \
    --in-flight "${IN_FLIGHT:-24}" --eval-workers "${EVAL_WORKERS:-16}" --quiet \
    --timing-patience "$patience" --max-wall "$window" --out "$run" > "$OUT/live_p$patience.log" 2>&1
  echo "live patience $patience: rc $?, $(ms "$t") ms" >> "$OUT/run.txt"
  cp "$run/evaluations.jsonl" "$OUT/evaluations_p$patience.jsonl" 2>/dev/null
  python3 -m kernelband.cli traces validate "$run" >> "$OUT/run.txt" 2>&1
done
cat "$OUT/run.txt"
