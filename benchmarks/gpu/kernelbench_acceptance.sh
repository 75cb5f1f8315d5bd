#!/usr/bin/env bash
# KernelBench on one GPU: loading, k0 coverage and eager timings, one phase per run:
#   PHASE=check: a cold-cache load of every problem (gold vs gold in parallel sandboxed workers,
#     `kernelband tasks check --json`), then a cached one; their wall times go to run.txt.
#   PHASE=k0: `kernelband tasks k0` on the problems SELECT picks (default level1; level2,
#     level3, level1:1-50, ...): the torch.compile k0 of each, checked; k0-SELECT/ holds the k0
#     files, k0.json and k0-report.json, and k0-SELECT.txt the per-level table.
#   PHASE=timing: `kernelband tasks check --out --resume --parallel` on the problems SELECT
#     picks: our eager reference timings (ref-SELECT.json, rewritten after every problem, so a
#     stopped phase run again goes on; PARALLEL problems at once, default 1: each timing
#     runs alone under the GPU lock either way, and 8 at once were no faster on level 1;
#     with COMPILE=1 also torch.compile's, --compile-timing),
#     then benchmarks/kernelbench_published.py over every ref-*.json of OUT_DIR against the
#     authors' H100 timings (published.txt, published.json; DATA_DIR needs changelog/ and
#     results/timing/ beside the levels).
# DATA_DIR is a KernelBench folder (level1/ level2/ level3/); run from the repository root:
#
#   PHASE=check bash benchmarks/gpu/kernelbench_acceptance.sh DATA_DIR OUT_DIR
#   PHASE=k0 SELECT=level1 bash benchmarks/gpu/kernelbench_acceptance.sh DATA_DIR OUT_DIR
#   PHASE=timing SELECT=level1:1-50 bash benchmarks/gpu/kernelbench_acceptance.sh DATA_DIR OUT_DIR
#
# Other settings (environment): STATE_DIR (caches, default .gpu-run/ of the checkout),
# CHECK_WALL (330 s for the cold load), PHASE_WALL (seconds after which the k0 and timing phases
# are stopped; none by default: a stopped k0 or timing phase, run again with the same OUT_DIR,
# goes on where it stopped), PARALLEL (1), K0_TIMEOUT (300 s per problem), KB_COMMIT (the tree's
# name for run.txt).
set -uo pipefail
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
data=$1; out_dir=$2; mkdir -p "$out_dir"
phase_wall=${PHASE_WALL:-0}  # 0: no limit (timeout 0 never stops)
phase=${PHASE:-check}
state=${STATE_DIR:-$PWD/.gpu-run}
. "$(dirname "$0")/gpu_run_env.sh"
if [ "$phase" = check ]; then
  rm -rf "$state/kb-cache" "$state/triton-cache"
  t=$(date +%s%N)
  timeout "${CHECK_WALL:-330}" python3 -m kernelband.cli tasks check --tasks "kernelbench:$data" \
    --device cuda --json > "$out_dir/check_cold.json" 2> "$out_dir/check_cold.err"
  rc=$?
  echo "cold load (tasks check, empty cache): $(ms "$t") ms, rc $rc" >> "$out_dir/run.txt"
  t=$(date +%s%N)
  python3 -m kernelband.cli tasks check --tasks "kernelbench:$data" --device cuda --json \
    > "$out_dir/check_warm.json" 2>> "$out_dir/check_cold.err"
  rc=$?
  echo "cached load (tasks check): $(ms "$t") ms, rc $rc" >> "$out_dir/run.txt"
  python3 - "$out_dir/check_warm.json" >> "$out_dir/run.txt" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
stats = record["stats"]
print(f"{stats['passed']}/{stats['operators']} problems passed gold-vs-gold on "
      f"{stats['device_name']}; skipped {len(record['skipped'])}:")
for s in record["skipped"]:
    print(f"  {s['op']}: {' '.join(s['reason'].split())[:160]} [plain run: {s['plain_script']}]")
PY
elif [ "$phase" = k0 ]; then
  select=${SELECT:-level1}
  name=$(echo "$select" | tr ':/' '--')
  timeout "$phase_wall" python3 -m kernelband.cli tasks k0 --tasks "kernelbench:$data@$select" \
    --device cuda --timeout "${K0_TIMEOUT:-300}" --out "$out_dir/k0-$name" \
    > "$out_dir/k0-$name.txt" 2> "$out_dir/k0-$name.err"
  echo "k0 $select: rc $?" >> "$out_dir/run.txt"
  cat "$out_dir/k0-$name.txt"
elif [ "$phase" = timing ]; then
  select=${SELECT:-level1}
  name=$(echo "$select" | tr ':/' '--')
  extra=(); [ "${COMPILE:-0}" = 1 ] && extra=(--compile-timing)
  timeout "$phase_wall" python3 -m kernelband.cli tasks check \
    --tasks "kernelbench:$data@$select" --device cuda --timeout "${K0_TIMEOUT:-300}" \
    --out "$out_dir/ref-$name.json" --resume --parallel "${PARALLEL:-1}" "${extra[@]}" \
    > "$out_dir/ref-$name.txt" \
    2> "$out_dir/ref-$name.err"
  echo "timing $select: rc $?" >> "$out_dir/run.txt"
  python3 benchmarks/kernelbench_published.py --ours "$out_dir"/ref-*.json \
    --kernelbench "$data" --json "$out_dir/published.json" > "$out_dir/published.txt"
  head -8 "$out_dir/published.txt"
else
  echo "PHASE must be check, k0 or timing" >&2; exit 2
fi
cat "$out_dir/run.txt"
