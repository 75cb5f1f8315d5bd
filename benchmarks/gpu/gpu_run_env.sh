# Sourced by the GPU scripts here (not run on its own): with `state` (a folder for caches) and
# `out_dir` set, it puts kernelband's check cache and Triton's compile cache in `state` (so a
# cold load is cold for both), appends the host's GPU, cores, torch and Triton versions and the
# tree (KB_COMMIT, else git) to OUT_DIR/run.txt, and defines `ms START_NS` (milliseconds since).
mkdir -p "$state"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 KERNELBAND_CACHE_DIR=$state/kb-cache \
  TRITON_CACHE_DIR=$state/triton-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "commit ${KB_COMMIT:-$(git log --oneline -1 2>/dev/null)}"
} >> "$out_dir/run.txt" 2>&1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
