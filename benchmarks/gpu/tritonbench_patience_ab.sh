#!/usr/bin/env bash
# TritonBench-G live runs side by side on one GPU: the GPU lock's timing patience (D81) off and
# on, each a fresh run of the same command from the same check cache (operators start in the
# same alphabetical order), alternating. The check cache is completed first (`tasks check`,
# whose output is the load's record), then timed again from the cache. DATA_DIR is a checkout
# of the authors' corrected TritonBench-G; run from the repository root on a GPU host:
#
#   WINDOW=140 bash benchmarks/gpu/tritonbench_patience_ab.sh DATA_DIR OUT_DIR
#
# Settings (environment): WINDOW (140 s of --max-wall per run), PATIENCES ("0 15"),
# CHECK_WALL (170 s), IN_FLIGHT (24), EVAL_WORKERS (16), STATE_DIR (the check cache and the
# runs' traces, kept between runs; default .gpu-run/ of the checkout). Writes OUT_DIR/run.txt,
# check_N.json, live_pP.log and evaluations_pP.jsonl (each run's evaluation records).
set -uo pipefail
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
data=$1; out_dir=$2; mkdir -p "$out_dir"
state=${STATE_DIR:-$PWD/.gpu-run}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 KERNELBAND_CACHE_DIR=$state/kb-cache
window=${WINDOW:-140}
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
for i in 1 2; do
  t=$(date +%s%N)
  timeout "${CHECK_WALL:-170}" python3 -m kernelband.cli tasks check --tasks "tritonbench:$data" \
    --device cuda --json > "$out_dir/check_$i.json" 2> "$out_dir/check_$i.err"
  echo "tasks check $i (cache): $(ms "$t") ms, rc $?" >> "$out_dir/run.txt"
done
for patience in ${PATIENCES:-0 15}; do
  run=$state/ab-p$patience
  rm -rf "$run"
  t=$(date +%s%N)
  timeout -s INT -k 15 $(( window + 45 )) python3 -m kernelband.cli live \
    --tasks "tritonbench:$data" --proposer mutate --policy explore --steps 4 --device cuda \
    --in-flight "${IN_FLIGHT:-24}" --eval-workers "${EVAL_WORKERS:-16}" --quiet \
    --timing-patience "$patience" --max-wall "$window" --out "$run" > "$out_dir/live_p$patience.log" 2>&1
  echo "live patience $patience: rc $?, $(ms "$t") ms" >> "$out_dir/run.txt"
  cp "$run/evaluations.jsonl" "$out_dir/evaluations_p$patience.jsonl" 2>/dev/null
  python3 -m kernelband.cli traces validate "$run" >> "$out_dir/run.txt" 2>&1
done
cat "$out_dir/run.txt"
