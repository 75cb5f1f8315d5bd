"""Issue 15: replay models when v2 sees Nsight Compute signatures (`kbsim.envs.reveal`).

A trace's kernels get a roofline signature unlike their recorded one; the compiled replay loop
and the Python step (`record_trace`) then agree step for step under every timing, a run
recorded under a timing replays exactly on its own tape with its recorded reveals, the timing
changes what v2 chooses, and a trace without roofline signatures falls back to at-once."""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pytest

from kbsim.envs.recorded import load_tables
from kbsim.envs.reveal import parse_reveal
from kbsim.envs.synthetic import build_synthetic
from kbsim.envs.tape import build_tape
from kbsim.replay.record import record_trace
from kbsim.replay.sweep import run_sweep
from kbsim.strategies import STRATEGIES
from kbsim.trace.reveals import REVEALS_NAME, Reveal, load_reveals

SEED, STEPS = 11, 40
POLICY = "kernelband-v2:K=2,tau=4"


@pytest.fixture(scope="module")
def explore(tmp_path_factory):
    """An exploration trace whose kernels carry a roofline signature that saturates DRAM and
    L2 where the recorded (Nsight) one does not, and the other way round."""
    path = tmp_path_factory.mktemp("explore") / "t"
    record_trace(path, build_synthetic("default,tasks=2,fail=0.2,seed=3"), "explore",
                 seed=SEED, steps=80)
    steps, kernels = load_tables(path)
    roof = [None if hw is None else [hw[0], 100.0 - hw[1], 100.0 - hw[2]]
            for hw in kernels.column("hw_sig").to_pylist()]
    index = kernels.schema.get_field_index("roofline_sig")
    kernels = kernels.set_column(index, kernels.schema.field(index),
                                 pa.array(roof, kernels.schema.field(index).type))
    return steps, kernels


def _decisions(frame):
    frame = frame.sort_values(["task_id", "step"])[
        ["task_id", "step", "cluster", "strategy", "parent", "reward"]].reset_index(drop=True)
    return frame.astype({"task_id": str, "step": np.int64, "cluster": np.int64,
                         "strategy": np.int64, "parent": np.int64})


def _compiled(env, policy=POLICY, seed=SEED, steps=STEPS):
    return _decisions(run_sweep([policy], env, [seed], steps).results.to_pandas())


def _python(tmp_path, env, policy=POLICY, seed=SEED, steps=STEPS):
    """The same episodes through `Episode.run` (record_trace), as replay result columns."""
    record_trace(tmp_path, env, policy, seed=seed, steps=steps)
    logged, kernels = load_tables(tmp_path)
    logged = logged.to_pandas()
    logged = logged[logged.status != "not_applicable"].sort_values(["task_id", "step"])
    rows = []
    for task_id, part in logged.groupby("task_id"):
        pool = [part["parent_id"].iloc[0]]
        for t, row in enumerate(part.itertuples()):
            rows.append({"task_id": task_id, "step": t, "cluster": row.cluster,
                         "strategy": STRATEGIES.index(row.strategy),
                         "parent": pool.index(row.parent_id), "reward": row.reward})
            if row.status == "ok":
                pool.append(row.child_id)
    frame = _decisions(pa.Table.from_pylist(rows).to_pandas())
    return frame, load_reveals(tmp_path)


@pytest.mark.parametrize("reveal", ["lag:3", "delays", "recorded"])
def test_compiled_loop_and_python_step_agree_under_signature_timing(explore, tmp_path, reveal):
    steps, kernels = explore
    reveals = [Reveal("r", "syn-000", "syn-000-k3", 0, 4),
               Reveal("r", "syn-001", "syn-001-k1", 2, 3),
               Reveal("r", "syn-000", "syn-000-k0", 1, 7)]
    env = build_tape(steps, kernels, on_exhaust="resample", reveals=reveals, reveal=reveal)
    assert env.reveal.startswith(reveal.split(":")[0])
    compiled = _compiled(env)
    python, _ = _python(tmp_path / "t", env)
    assert len(compiled) == 2 * STEPS
    assert compiled.equals(python)


def test_signature_timing_changes_what_v2_chooses(explore):
    steps, kernels = explore
    at_once = _compiled(build_tape(steps, kernels, reveal="at-once"))
    lagged = _compiled(build_tape(steps, kernels, reveal="lag:5"))
    never = _compiled(build_tape(steps, kernels, reveals=[], reveal="delays"))
    assert not at_once.equals(lagged)
    assert not lagged.equals(never)
    # a lag longer than the episode is the roofline signature for ever
    assert _compiled(build_tape(steps, kernels, reveal=f"lag:{STEPS}")).equals(never)


def test_a_run_recorded_under_a_timing_replays_exactly_with_its_reveals(explore, tmp_path):
    steps, kernels = explore
    env = build_tape(steps, kernels, on_exhaust="resample", reveals=[
        Reveal("r", "syn-000", "x", 0, 2), Reveal("r", "syn-001", "y", 0, 5)], reveal="delays")
    logged, reveals = _python(tmp_path / "run", env)
    assert reveals and all(r.shown_step >= r.asked_step for r in reveals)
    assert (tmp_path / "run" / REVEALS_NAME).is_file()
    own_steps, own_kernels = load_tables(tmp_path / "run")
    assert own_kernels.column("roofline_sig").null_count < own_kernels.num_rows
    tape = build_tape(own_steps, own_kernels, on_exhaust="stop", reveals=reveals)
    assert tape.reveal == "recorded"
    assert _compiled(tape).equals(logged)
    # without the recorded timing the replay departs from the run
    assert not _compiled(build_tape(own_steps, own_kernels, on_exhaust="stop",
                                    reveal="at-once")).equals(logged)


def test_a_trace_without_roofline_signatures_reveals_at_once_and_says_so(explore, caplog):
    steps, kernels = explore
    index = kernels.schema.get_field_index("roofline_sig")
    bare = kernels.remove_column(index)
    with caplog.at_level(logging.WARNING):
        env = build_tape(steps, bare, reveals=[Reveal("r", "syn-000", "syn-000-k1", 0, 2)])
    assert env.reveal.startswith("at-once (recorded asked for")
    assert len([r for r in caplog.records if "roofline_sig" in r.getMessage()]) == 1
    assert _compiled(env).equals(_compiled(build_tape(steps, bare)))


@pytest.mark.parametrize(("text", "message"), [
    ("soon", "unknown signature timing"), ("lag", "unknown signature timing"),
    ("lag:x", "whole number"), ("recorded:2", "unknown signature timing")])
def test_bad_timings_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_reveal(text)


def test_recorded_timing_needs_the_reveals_file(explore):
    steps, kernels = explore
    with pytest.raises(ValueError, match="signature-reveals.jsonl"):
        build_tape(steps, kernels, reveal="recorded")
    assert np.array_equal(parse_reveal("lag:4"), (3, 4))
