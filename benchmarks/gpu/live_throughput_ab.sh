#!/usr/bin/env bash
# Live-loop throughput on one GPU, an older tree against this one: alternately, each over a
# fixed window in which every built-in task stays busy (explore + mutate, profiling off, 15
# tasks in flight, EVAL_WORKERS workers). Run from the repository root of the newer tree, with
# kernelband's dependencies installed; OLD_TREE is a `git archive` tarball of the older commit:
#
#   git archive COMMIT | gzip > old.tar.gz
#   WINDOW=90 ROUNDS=2 bash benchmarks/gpu/live_throughput_ab.sh old.tar.gz OUT_DIR
#
# Settings (environment): WINDOW (90 s), ROUNDS (2), TASKS (builtin), DEVICE (cuda),
# EVAL_WORKERS (8). Prints and writes OUT_DIR/live_ab.json: attempts, evaluations, wall and
# attempts/s per run; the runs' traces go to OUT_DIR/runs/.
set -uo pipefail
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
: "${WINDOW:=90}"; : "${ROUNDS:=2}"; : "${TASKS:=builtin}"; : "${DEVICE:=cuda}"
: "${EVAL_WORKERS:=8}"
old_tar=$1; mkdir -p "$2" && out_dir=$(cd "$2" && pwd)  # absolute: runs start in either tree
old_tree=$(mktemp -d); runs=$out_dir/runs
mkdir -p "$runs" && tar -xzf "$old_tar" -C "$old_tree" || exit 1
export PYTHONUNBUFFERED=1
run() {  # run LABEL TREE
  local out=$runs/$1
  rm -rf "$out"
  local start end
  start=$(date +%s.%N)
  (cd "$2" && PYTHONPATH=$2 python3 -m kernelband.cli live --out "$out" --tasks "$TASKS" \
    --policy explore --proposer mutate --steps 400 --seed 0 --device "$DEVICE" --profile off \
    --in-flight 15 --eval-workers "$EVAL_WORKERS" --max-wall "$WINDOW" --quiet > "$out.log" 2>&1)
  end=$(date +%s.%N)
  PYTHONPATH=$PWD python3 - "$1" "$out" "$start" "$end" <<'PY'
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
# warm-up, not reported: numba compiles (and caches) each tree's policy kernels, Triton its
# launchers; otherwise the first window of each tree loses half a minute to compiling
WINDOW_SAVED=$WINDOW; WINDOW=5
run warm-old "$old_tree" >/dev/null; run warm-new "$PWD" >/dev/null
WINDOW=$WINDOW_SAVED
for r in $(seq "$ROUNDS"); do
  run "old-$r" "$old_tree"
  run "new-$r" "$PWD"
done
python3 - "$runs" "$out_dir/live_ab.json" <<'PY'
import glob, json, sys
runs, out = sys.argv[1], sys.argv[2]
rows = [json.load(open(p)) for p in sorted(glob.glob(f"{runs}/old-*.json"))
        + sorted(glob.glob(f"{runs}/new-*.json"))]
json.dump(rows, open(out, "w"), indent=2)
PY
