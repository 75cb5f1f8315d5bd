#!/usr/bin/env bash
# One call on a single-GPU machine that finishes the shipped traces, in order:
#   1. resumes the KernelBand v2 policy trace for POLICY_WALL seconds (0 skips it);
#   2. spends what is left of BUDGET seconds on a profiling pass over the exploration trace.
# Both traces come from .gpu-runs/NAME.tar.gz (carried) or, on a warm machine, from what the
# previous call left under /tmp; both go back as $OUT/NAME.tar.gz after every call.
#
#   POLICY_WALL=330 BUDGET=560 WHL_DIR=.whl-min bash benchmarks/gpu/h200_session.sh
set -uo pipefail
: "${OUT:?}"; : "${BUDGET:=560}"; : "${POLICY_WALL:=0}"
start=$(date +%s)
whl=${WHL_DIR:-.whl}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site "$whl"/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
if [ "$POLICY_WALL" -gt 0 ]; then
  MAX_WALL=$POLICY_WALL bash benchmarks/gpu/live_run.sh policy-v2-h200 --tasks builtin \
    --policy kernelband-v2 --proposer mutate --steps 40 --seed 0 --device cuda \
    --profile reps --in-flight 15 2>&1 | tail -25
fi
ex=/tmp/kb-runs/explore-h200
if [ ! -d "$ex" ]; then mkdir -p /tmp/kb-runs && tar -xzf .gpu-runs/explore-h200.tar.gz -C /tmp/kb-runs; fi
# A batch of 48 takes about 70 s; start none that would end after the budget.
left=$(( BUDGET - ($(date +%s) - start) - 100 ))
echo "profiling budget: $left s"
if [ "$left" -gt 30 ]; then
  python3 -m kernelband.cli traces profile "$ex" --batch-size 48 --max-wall "$left" --quiet \
    2>&1 | tee "$OUT/profile_pass.log"
fi
python3 -m kernelband.cli traces validate "$ex" | tail -3
tar -czf "$OUT/explore-h200.tar.gz" -C /tmp/kb-runs explore-h200
echo "total $(( $(date +%s) - start )) s"
