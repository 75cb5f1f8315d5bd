"""Acceptance: SIGKILL a writer at random instants >= 20 times, resuming the same dataset each time.

After every kill the dataset validates, holds every step whose `append_step` had returned (the
child prints a step number only after that), and holds no step twice. Compaction runs every few
writes in the child, so kills land during compactions and resume-time cleanups as well.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from kbsim.trace.layout import scan_parts
from kbsim.trace.reader import TraceError, load_trace

N_KILLS = 22

CHILD = r"""
import sys
from datetime import datetime, timezone

from kbsim.trace.writer import TraceWriter

path = sys.argv[1]
writer = TraceWriter(path, {"hardware": {"gpu_name": "test"}}, resume=True, compact_every=6)
done = writer.existing_steps().column("step").to_pylist()
step = max(done, default=-1) + 1
while True:
    kernel_id = f"k{step}"
    writer.append_kernel({
        "run_id": "kill", "task_id": "t", "kernel_id": kernel_id, "code": "x" * 200,
        "strategy_chain": ["tiling"], "correct": True, "ms": 1.0 + step,
        "timing_backend": "cpu-interpreter", "profiled": False,
    })
    writer.append_step({
        "run_id": "kill", "task_id": "t", "step": step, "time": datetime.now(timezone.utc),
        "policy": "explore", "seed": 0, "cluster": -1, "parent_id": "k0",
        "strategy": "tiling", "child_id": kernel_id, "status": "ok",
        "child_ms": 1.0 + step, "reward": 0.0,
    })
    print(step, flush=True)
    step += 1
"""


def _acknowledged(output: bytes) -> list[int]:
    """Step numbers printed in full (a line cut by the kill has no newline and does not count)."""
    text = output.decode()
    complete = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
    return [int(line) for line in complete.splitlines() if line.strip()]


def test_sigkill_at_random_instants_never_loses_acknowledged_steps(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    dataset = tmp_path / "trace"
    rng = random.Random(20261121)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    acknowledged: list[int] = []
    kills_while_writing = 0
    leftovers_seen = 0
    for kill_number in range(N_KILLS):
        child = subprocess.Popen(
            [sys.executable, str(script), str(dataset)], stdout=subprocess.PIPE, env=env
        )
        assert child.stdout is not None
        early = b""
        if kill_number == 0 or rng.random() < 0.75:
            # mid-run: once the child has acknowledged its first step, at a random instant
            # (the very first run must record a step: an empty dataset is rightly invalid)
            early = child.stdout.readline()
            time.sleep(rng.uniform(0.0, 0.6))
        else:
            # while starting: importing, opening, cleaning up after the previous kill
            time.sleep(rng.uniform(0.0, 0.6))
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        new = _acknowledged(early + child.stdout.read())
        child.stdout.close()
        kills_while_writing += bool(new)
        acknowledged += new

        for table in ("steps", "kernels"):
            leftovers_seen += bool(scan_parts(dataset / table)[1])
        # one read with every check of `validate_trace` (a second read doubled the cost)
        try:
            steps = load_trace(dataset).steps.column("step").to_pylist()
        except TraceError as error:
            raise AssertionError(f"invalid after kill {kill_number}: {error.problems}") from None
        assert len(steps) == len(set(steps)), f"duplicated steps after kill {kill_number}"
        assert set(acknowledged) <= set(steps), f"lost acknowledged steps at kill {kill_number}"
        # each run resumes after the last durable step, so the steps are exactly 0..n-1
        assert sorted(steps) == list(range(len(steps)))
    assert kills_while_writing >= N_KILLS // 2 and len(acknowledged) > N_KILLS
    print(f"{len(acknowledged)} acknowledged steps, {leftovers_seen} kill(s) mid-compaction")
