#!/usr/bin/env bash
# TritonBench-G end to end on a lent GPU machine (issue #14): a cold-cache load of every
# operator (gold-vs-gold in parallel sandboxed workers), a cached load, then a live run with the
# mutate proposer over every operator that passed, for what is left of BUDGET_S seconds.
#
#   OUT=... bash benchmarks/gpu/tritonbench_g.sh [DATA_DIR]
#
# Leaves under $OUT: run.txt (machine, versions, load times), check_cold.json / check_warm.json
# (`kernelband tasks check --json`), check_cold.err, tb-cache.tgz (the check cache), live.log and
# tb-live.tar.gz (the live trace).
set -uo pipefail
: "${OUT:?OUT must be set}"
data=${1:-../.gpu-data/tritonbench-g}
budget=${BUDGET_S:-560}
start=$(date +%s)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 KERNELBAND_CACHE_DIR=/tmp/kb-cache
rm -rf /tmp/kb-cache /tmp/kb-live
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  # D66 relies on Triton reading this variable: say whether this Triton does
  TRITON_CACHE_AUTOTUNING=1 python3 -c "from triton import knobs
print('TRITON_CACHE_AUTOTUNING=1 -> knobs.autotuning.cache =', knobs.autotuning.cache)"
} > "$OUT/run.txt" 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
t=$(date +%s%N)
timeout "${CHECK_WALL:-360}" python3 -m kernelband.cli tasks check --tasks "tritonbench:$data" \
  --device cuda --json > "$OUT/check_cold.json" 2> "$OUT/check_cold.err"
rc=$?
echo "cold load (tasks check, empty cache): $(ms "$t") ms, rc $rc" >> "$OUT/run.txt"
tar -czf "$OUT/tb-cache.tgz" -C /tmp kb-cache  # per-operator records, written as each ends
if [ "$rc" -ne 124 ]; then
  t=$(date +%s%N)
  timeout 60 python3 -m kernelband.cli tasks check --tasks "tritonbench:$data" --device cuda \
    --json > "$OUT/check_warm.json" 2>> "$OUT/check_cold.err"
  echo "cached load (tasks check, second run): $(ms "$t") ms" >> "$OUT/run.txt"
fi
left=$(( budget - ($(date +%s) - start) ))
if [ "$left" -gt 100 ]; then
  t=$(date +%s%N)
  # --max-wall stops starting attempts; those in flight still end, hence the outer limit
  timeout $(( left - 25 )) python3 -m kernelband.cli live --tasks "tritonbench:$data" \
    --proposer mutate --policy explore --steps 4 --device cuda --in-flight 8 \
    --eval-timeout 180 --quiet --max-wall $(( left - 100 )) \
    --out /tmp/kb-live/tb-live > "$OUT/live.log" 2>&1
  echo "live run: rc $?, $(ms "$t") ms (max-wall $(( left - 100 )) s)" >> "$OUT/run.txt"
  python3 -m kernelband.cli traces validate /tmp/kb-live/tb-live >> "$OUT/live.log" 2>&1
  echo "traces validate: rc $?" >> "$OUT/run.txt"
  tar -czf "$OUT/tb-live.tar.gz" -C /tmp/kb-live tb-live
fi
cat "$OUT/run.txt"
