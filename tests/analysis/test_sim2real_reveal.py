"""Issue 15: sim-to-real predicts a ``--profile reps`` run with the signature timing it ran
under (delays drawn from its ``signature-reveals.jsonl``), and says when it cannot."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from analysis.sim2real import run_sim2real, write_sim2real
from kbsim.envs.recorded import load_tables
from kbsim.envs.synthetic import build_synthetic
from kbsim.envs.tape import build_tape
from kbsim.replay.record import record_trace
from kbsim.trace.reveals import load_reveals

SEED = 3


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An exploration trace with roofline signatures and a v2 run recorded under a lag."""
    root = tmp_path_factory.mktemp("reveal")
    record_trace(root / "world", build_synthetic("default,tasks=2,fail=0.2,seed=2"), "explore",
                 seed=SEED, steps=120)
    steps, kernels = load_tables(root / "world")
    roof = [None if hw is None else [hw[0], 100.0 - hw[1], 100.0 - hw[2]]
            for hw in kernels.column("hw_sig").to_pylist()]
    i = kernels.schema.get_field_index("roofline_sig")
    kernels = kernels.set_column(i, kernels.schema.field(i),
                                 pa.array(roof, kernels.schema.field(i).type))
    record_trace(root / "explore", build_tape(steps, kernels), "explore", seed=SEED, steps=100)
    record_trace(root / "v2", build_tape(steps, kernels, reveal="lag:3"),
                 "kernelband-v2:K=2,tau=4", seed=SEED, steps=30)
    record_trace(root / "v2_at_once", build_tape(steps, kernels), "kernelband-v2:K=2,tau=4",
                 seed=SEED, steps=30)
    return {"explore": root / "explore", "v2": root / "v2", "v2_at_once": root / "v2_at_once",
            "bare": root / "world"}


def test_a_reps_run_is_predicted_with_its_recorded_delays(traces, tmp_path) -> None:
    assert {r.delay_steps for r in load_reveals(traces["v2"])} == {3}
    result = run_sim2real(traces["explore"], traces["v2"], seeds=[0, 1], envs=["tape"])
    assert result.signature_timing == {"tape": f"delays (n={len(load_reveals(traces['v2']))})"}
    assert any("signature timing of the replay (delays asked for)" in n for n in result.notes)
    at_once = run_sim2real(traces["explore"], traces["v2"], seeds=[0, 1], envs=["tape"],
                           reveal="at-once")
    assert at_once.signature_timing == {"tape": "at-once"}
    write_sim2real(result, tmp_path)
    saved = json.loads((tmp_path / "sim2real.json").read_text())
    assert saved["signature_timing"] == result.signature_timing


def test_a_run_without_reveals_is_predicted_at_once_and_says_why(traces) -> None:
    result = run_sim2real(traces["explore"], traces["v2_at_once"], seeds=[0], envs=["tape"])
    assert result.signature_timing == {"tape": "at-once"}
    assert any("records no signature timing" in n for n in result.notes)


def test_an_exploration_trace_without_roofline_signatures_falls_back(traces) -> None:
    result = run_sim2real(traces["bare"], traces["v2"], seeds=[0], envs=["tape", "fitted"])
    assert all(how.startswith("at-once (delays asked for: the trace has no roofline_sig")
               for how in result.signature_timing.values())
