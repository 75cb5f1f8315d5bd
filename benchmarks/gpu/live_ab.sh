#!/usr/bin/env bash
# A/B of the local live loop's throughput on one GPU: an older tree (OLD, a `git archive` tarball
# carried in .gpu-runs/) against this one, alternately, each over a fixed window in which every
# built-in task stays busy (explore + mutate, profiling off, 15 tasks in flight, 8 workers).
# Written to check NOTE D61 (timed inputs made before the GPU lock) and the input-cache change:
#
#   here:  git archive 8e50ccf | gzip > .gpu-runs/old.tar.gz
#   GPU:   WINDOW=90 ROUNDS=2 bash benchmarks/gpu/live_ab.sh .gpu-runs/old.tar.gz
#
# Prints and writes $OUT/live_ab.json: attempts, evaluations and attempts/s per run.
set -uo pipefail
: "${OUT:?}"; : "${WINDOW:=90}"; : "${ROUNDS:=2}"; : "${TASKS:=builtin}"; : "${DEVICE:=cuda}"
: "${EVAL_WORKERS:=8}"
old=$1
rm -rf /tmp/ab-old && mkdir -p /tmp/ab-old && tar -xzf "$old" -C /tmp/ab-old
export PYTHONUNBUFFERED=1
if ls .whl-min/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl-min/*.whl || exit 1
fi
run() {  # run LABEL TREE
  local out=/tmp/ab-runs/$1
  rm -rf "$out"
  local start end
  start=$(date +%s.%N)
  (cd "$2" && PYTHONPATH=/tmp/site:$2 python3 -m kernelband.cli live --out "$out" --tasks "$TASKS" \
    --policy explore --proposer mutate --steps 400 --seed 0 --device "$DEVICE" --profile off \
    --in-flight 15 --eval-workers "$EVAL_WORKERS" --max-wall "$WINDOW" --quiet > "$out.log" 2>&1)
  end=$(date +%s.%N)
  PYTHONPATH=/tmp/site:$PWD python3 - "$1" "$out" "$start" "$end" <<'PY'
import json, sys
from kbsim.trace.reader import load_trace
label, out, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
steps = load_trace(out).steps_df()
evals = int((steps["status"] != "not_applicable").sum())
row = {"label": label, "attempts": len(steps), "evaluations": evals, "wall_s": end - start,
       "attempts_per_s": len(steps) / (end - start),
       "eval_latency_median_s": float(steps["eval_latency_s"].median())}
print(json.dumps(row))
with open(f"{sys.argv[2]}.json", "w") as f:
    json.dump(row, f)
PY
}
mkdir -p /tmp/ab-runs
# warm-up, not reported: numba compiles (and caches) each tree's policy kernels, Triton its
# launchers; otherwise the first window of each tree loses half a minute to compiling
WINDOW_SAVED=$WINDOW; WINDOW=5
run warm-old /tmp/ab-old >/dev/null; run warm-new "$PWD" >/dev/null
WINDOW=$WINDOW_SAVED
for r in $(seq "$ROUNDS"); do
  run "old-$r" /tmp/ab-old
  run "new-$r" "$PWD"
done
python3 -c "import glob, json; rows=[json.load(open(p)) for p in sorted(glob.glob('/tmp/ab-runs/old-*.json') + glob.glob('/tmp/ab-runs/new-*.json'))]; json.dump(rows, open('$OUT/live_ab.json', 'w'), indent=2)"
