#!/usr/bin/env bash
# A resumable live run on a lent GPU machine, in pieces of at most MAX_WALL seconds.
#
#   bash benchmarks/gpu/live_run.sh NAME [kernelband live options...]
#
# Picks up .gpu-runs/NAME.tar.gz (the trace so far, carried from this machine) if present, else
# benchmarks/runs/NAME/ (the trace so far as committed after each piece, so that a session that
# ends between pieces loses nothing: ignored files do not outlive a checkout), resumes the run
# for MAX_WALL seconds (STOP_S in all), and leaves the trace as $OUT/NAME.tar.gz plus the log
# (which ends with `kernelband traces validate`).
set -uo pipefail
name=$1; shift
: "${OUT:?OUT must be set}"
: "${MAX_WALL:=480}"
whl=${WHL_DIR:-.whl}
if ls "$whl"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$whl"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
# SEED_CACHE: a committed check cache (gold-vs-gold results) copied into KERNELBAND_CACHE_DIR
# before the load, so that every piece, on any machine, runs the same operators: a cold load
# decides a flaky operator (e.g. TritonBench-G's quantize_kv_copy) afresh each time
if [ -n "${SEED_CACHE:-}" ]; then
  : "${KERNELBAND_CACHE_DIR:?SEED_CACHE needs KERNELBAND_CACHE_DIR}"
  mkdir -p "$KERNELBAND_CACHE_DIR" && cp -rn "$SEED_CACHE"/. "$KERNELBAND_CACHE_DIR"/ || exit 1
fi
work=/tmp/kb-runs
mkdir -p "$work"
if [ -d "$work/$name" ]; then
  resume=--resume  # still here from an earlier call on this (warm) machine
elif [ -f ".gpu-runs/$name.tar.gz" ]; then
  tar -xzf ".gpu-runs/$name.tar.gz" -C "$work"
  resume=--resume
elif [ -d "benchmarks/runs/$name" ]; then
  cp -r "benchmarks/runs/$name" "$work/$name"
  resume=--resume
else
  resume=
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/$name.gpu.txt"
# --max-wall counts from when the tasks are loaded and only stops new attempts: those in flight
# still end (a TritonBench-G evaluation can take minutes). So the run gets STOP_S seconds in all
# (default MAX_WALL + 150) and then SIGINT, and the trace is packed below whatever happened
timeout -s INT -k 30 "${STOP_S:-$((MAX_WALL + 150))}" \
  python3 -m kernelband.cli live --out "$work/$name" $resume --max-wall "$MAX_WALL" --quiet "$@" \
  2>&1 | tee "$OUT/$name.log"
rc=${PIPESTATUS[0]}
python3 -m kernelband.cli traces validate "$work/$name" 2>&1 | tee -a "$OUT/$name.log"
tar -czf "$OUT/$name.tar.gz" -C "$work" "$name"
echo "live rc=$rc"
exit "$rc"
