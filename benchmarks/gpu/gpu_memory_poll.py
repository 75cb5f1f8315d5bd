"""Poll GPU memory while runs go on: total ``memory.used`` and, per run label, the memory of the
processes whose environment holds ``KB_RUN_LABEL=<label>`` (the runs' workers inherit it).

    python benchmarks/gpu/gpu_memory_poll.py OUT_DIR/memory.json &   # SIGTERM writes it and exits

OUT.json: {"total_max_mib": ..., "runs_max_mib": {label: max summed MiB}, "samples": n}.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path


def _label(pid: str) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"KB_RUN_LABEL="):
            return item.split(b"=", 1)[1].decode()
    return None


def _query(args: list[str]) -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="JSON file written on SIGTERM")
    out = parser.parse_args().out
    state = {"total_max_mib": 0.0, "runs_max_mib": {}, "samples": 0}

    def write(*_: object) -> None:
        out.write_text(json.dumps(state, indent=2))
        sys.exit(0)

    signal.signal(signal.SIGTERM, write)
    while True:
        total = _query(["--query-gpu=memory.used"])
        if total:
            state["total_max_mib"] = max(state["total_max_mib"], float(total[0]))
        per: dict[str, float] = {}
        for line in _query(["--query-compute-apps=pid,used_memory"]):
            pid, _, mib = (x.strip() for x in line.partition(","))
            label = _label(pid)
            if label is not None and mib.replace(".", "").isdigit():
                per[label] = per.get(label, 0.0) + float(mib)
        for label, mib in per.items():
            state["runs_max_mib"][label] = max(state["runs_max_mib"].get(label, 0.0), mib)
        state["samples"] += 1
        time.sleep(0.5)


if __name__ == "__main__":
    main()
