#!/usr/bin/env bash
# Land a piece that came back from the device: replace benchmarks/runs/NAME/ with the run in
# NAME.tar.gz (as benchmarks/gpu/live_run.sh or tb19_piece.sh packed it), check it, and say how
# far it is. Commit afterwards.
#
#   PYTHON=.venv/bin/python bash benchmarks/runs/land.sh PATH/NAME.tar.gz [TARGET]
set -euo pipefail
tarball=$1
target=${2:-}
name=$(basename "$tarball" .tar.gz)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$tarball" -C "$tmp"
[ -f "$tmp/$name/manifest.json" ] || { echo "$tarball holds no run $name" >&2; exit 2; }
"${PYTHON:-python3}" -m kernelband.cli traces validate "$tmp/$name"
rm -rf "${here:?}/$name"
mv "$tmp/$name" "$here/$name"
rm -f "$here/$name/.writer.lock"
if [ -z "$target" ]; then
  case $name in *explore*) target=60 ;; *) target=40 ;; esac
fi
"${PYTHON:-python3}" "$here/../live_progress.py" "$here/$name" --target "$target" | tail -1 || true
