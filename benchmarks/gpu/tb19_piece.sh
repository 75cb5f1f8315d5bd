#!/usr/bin/env bash
# One piece of issue #19's recording on a lent GPU machine: continues the first of the three
# TritonBench-G runs that is not complete, in this order, then profiles the exploration trace:
#
#   tb-explore-h200   explore        60 evaluated attempts per operator, --profile off
#   tb-v2-h200        kernelband-v2  40, --profile reps (the policy reads Nsight Compute signatures)
#   tb-greedy-h200    greedy         40, --profile off (greedy reads no signature)
#   profile           `kernelband traces profile` on tb-explore-h200 (every correct kernel)
#
#   OUT=... [STAGE=NAME|profile] [MAX_WALL=400] [STOP_S=520] [DRY=1] bash benchmarks/gpu/tb19_piece.sh
#
# STAGE=sessions-check measures SESSIONS (default 3) profiling sessions against 1 on copies of
# the exploration trace (benchmarks/gpu/profile_sessions_check.py; MAX_WALL per pass, default 60).
# The profile stage takes SESSIONS=N (default 1): Nsight Compute sessions at once, their
# measured calls in turn (`kernelband traces profile --sessions`, NOTE D96); BATCH (default 48).
#
# Each run resumes from /tmp/kb-runs/NAME (a warm machine), else the committed
# benchmarks/runs/NAME/ (see benchmarks/runs/README.md); needs .gpu-data/tritonbench-g (carried).
# Smoke test on a CPU, in a scratch clone without benchmarks/runs/tb-*-h200 (TRITON_INTERPRET=1):
#   OUT=/tmp/o TB_TASKS=tritonbench:$PWD/tests/live/fixtures/tritonbench_mini TB_DEVICE=cpu \
#     MAX_WALL=40 STOP_S=150 bash benchmarks/gpu/tb19_piece.sh
# Leaves $OUT/NAME.tar.gz, NAME.log, NAME.command.txt and progress-NAME.md; land them with
# benchmarks/runs/land.sh and commit after every call.
set -uo pipefail
: "${OUT:?OUT must be set}"
export KERNELBAND_CACHE_DIR=$PWD/.gpu-run/kb-cache TRITON_CACHE_DIR=/tmp/triton-cache \
  SEED_CACHE=benchmarks/runs/tb-check-cache-h200 PYTHONPATH=$PWD PYTHONUNBUFFERED=1
# TB_TASKS / TB_DEVICE: only for a smoke test of this script on a CPU (a mini benchmark)
tasks=${TB_TASKS:-"tritonbench:.gpu-data/tritonbench-g@paper_subset_50.json"}
device=${TB_DEVICE:-cuda}
if [ -z "${TB_TASKS:-}" ] && [ ! -d .gpu-data/tritonbench-g ]; then
  echo "no .gpu-data/tritonbench-g: carry it" >&2; exit 2
fi

where() {  # the newest copy of run $1
  if [ -d "/tmp/kb-runs/$1" ]; then echo "/tmp/kb-runs/$1"; else echo "benchmarks/runs/$1"; fi
}
complete() {  # run $1 has $2 evaluated attempts on every operator that can run
  local dir
  dir=$(where "$1")
  [ -f "$dir/manifest.json" ] || return 1
  python3 benchmarks/live_progress.py "$dir" --target "$2" > "$OUT/progress-$1.md"
}

stage=${STAGE:-}
if [ -z "$stage" ]; then
  for spec in "tb-explore-h200 60" "tb-v2-h200 40" "tb-greedy-h200 40"; do
    set -- $spec
    if ! complete "$1" "$2"; then stage=$1; break; fi
  done
  stage=${stage:-profile}
fi
echo "stage: $stage"
[ -n "${DRY:-}" ] && exit 0  # DRY=1: say which stage would run, run nothing
case $stage in
  tb-explore-h200) policy=explore steps=60 profile=off ;;
  tb-v2-h200) policy=kernelband-v2 steps=40 profile=reps ;;
  tb-greedy-h200) policy=greedy steps=40 profile=off ;;
  profile)
    dir=$(where tb-explore-h200)
    if [ "$dir" = benchmarks/runs/tb-explore-h200 ]; then
      mkdir -p /tmp/kb-runs && cp -r "$dir" /tmp/kb-runs/ && dir=/tmp/kb-runs/tb-explore-h200
    fi
    mkdir -p "$KERNELBAND_CACHE_DIR" && cp -rn "$SEED_CACHE"/. "$KERNELBAND_CACHE_DIR"/
    nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/profile.gpu.txt"
    timeout -s INT -k 30 "${STOP_S:-520}" python3 -m kernelband.cli traces profile "$dir" \
      --batch-size "${BATCH:-48}" --sessions "${SESSIONS:-1}" --max-wall "${MAX_WALL:-400}" \
      --quiet 2>&1 | tee "$OUT/profile.log"
    rc=${PIPESTATUS[0]}
    python3 -m kernelband.cli traces validate "$dir" 2>&1 | tee -a "$OUT/profile.log"
    tar -czf "$OUT/tb-explore-h200.tar.gz" -C /tmp/kb-runs tb-explore-h200
    echo "profile rc=$rc"
    exit "$rc" ;;
  sessions-check)  # D96 measured: SESSIONS (3) profiling sessions against 1, side by side
    mkdir -p "$KERNELBAND_CACHE_DIR" && cp -rn "$SEED_CACHE"/. "$KERNELBAND_CACHE_DIR"/
    python3 benchmarks/gpu/profile_sessions_check.py "$(where tb-explore-h200)" \
      --tasks "${CHECK_TASKS:-tritonbench/cosine_compute,tritonbench/kldiv_triton,tritonbench/logsumexp_fwd}" \
      --sessions "${SESSIONS:-3}" --max-wall "${MAX_WALL:-60}" --json "$OUT/profile_sessions.json" \
      2>&1 | tee "$OUT/profile_sessions.log"
    exit "${PIPESTATUS[0]}" ;;
  *) echo "unknown stage $stage" >&2; exit 2 ;;
esac
args=(--tasks "$tasks" --policy "$policy" --proposer mutate --steps "$steps" --seed 0
      --device "$device" --profile "$profile" --in-flight 12 --eval-workers 12 --timing-patience 2)
started=$(date -u '+%Y-%m-%d %H:%M')
MAX_WALL=${MAX_WALL:-400} STOP_S=${STOP_S:-520} bash benchmarks/gpu/live_run.sh "$stage" \
  "${args[@]}" > /dev/null 2>&1
rc=$?
# the piece's command as benchmarks/runs/NAME.commands keeps it (land.sh appends this line)
steps_after=$(python3 -m kernelband.cli traces validate "/tmp/kb-runs/$stage" 2>/dev/null \
  | sed -n 's/^valid: \([0-9]*\) steps.*/\1/p')
echo "SEED_CACHE=$SEED_CACHE KERNELBAND_CACHE_DIR=\$PWD/.gpu-run/kb-cache" \
  "TRITON_CACHE_DIR=/tmp/triton-cache MAX_WALL=${MAX_WALL:-400} STOP_S=${STOP_S:-520}" \
  "bash benchmarks/gpu/live_run.sh $stage $(printf '%q ' "${args[@]}")  #" \
  "$started, ${KB_COMMIT:-$(git log -1 --format=%h 2>/dev/null || echo unknown)};" \
  "${steps_after:-?} steps" > "$OUT/$stage.command.txt"
cp "/tmp/kb-runs/$stage/evaluations.jsonl" "$OUT/" 2>/dev/null
python3 benchmarks/live_progress.py "/tmp/kb-runs/$stage" --target "$steps" \
  > "$OUT/progress-$stage.md"
tail -1 "$OUT/progress-$stage.md"
echo "killed by the system: $(grep -c 'system killed' "$OUT/$stage.log")"
tail -2 "$OUT/$stage.log"
echo "live rc=$rc"
