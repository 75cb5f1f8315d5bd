"""The environment registry: one name -> builder map for the CLI, the demo and sim-to-real."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbsim.envs.data import ENV_KINDS, Env
from kbsim.envs.fitted import build_fitted
from kbsim.envs.registry import ENVIRONMENTS, TRACE_ENVS, build_env, build_envs, env_entry
from kbsim.envs.synthetic import build_synthetic
from kbsim.envs.tape import build_tape
from kbsim.trace.reader import load_trace
from kbsim.trace.synthetic_trace import synthetic_tables

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tables():
    return synthetic_tables(n_steps=300, n_tasks=3, seed=4)


def _same(a: Env, b: Env) -> None:
    assert (a.name, a.kind, a.task_ids, a.n_init, a.grows, a.description) == (
        b.name, b.kind, b.task_ids, b.n_init, b.grows, b.description)
    for field, x, y in zip(a.data._fields, a.data, b.data, strict=True):
        assert np.array_equal(x, y, equal_nan=True), field


def test_registry_builds_what_the_builders_build(tables) -> None:
    steps, kernels = tables
    tasks = ["task001", "task002"]
    _same(build_env("tape", tables, on_exhaust="nearest", tasks=tasks, description="d"),
          build_tape(steps, kernels, on_exhaust="nearest", tasks=tasks, description="d"))
    _same(build_env("fitted", tables, knn=3, description="d"),
          build_fitted(steps, kernels, knn=3, description="d"))
    _same(build_env("synthetic", "default,tasks=2"), build_synthetic("default,tasks=2"))


def test_options_an_env_does_not_take_are_ignored(tables) -> None:
    # one option set builds every trace env: knn is fitted's, on_exhaust tape's
    tape, fitted = build_envs(TRACE_ENVS, tables, on_exhaust="stop", knn=2)
    _same(tape, build_tape(*tables, on_exhaust="stop"))
    _same(fitted, build_fitted(*tables, knn=2))


def test_trace_envs_take_a_loaded_trace() -> None:
    data = load_trace(ROOT / "traces" / "explore-h200")
    env = build_env("tape", data, tasks=["softmax"], description="shipped")
    _same(env, build_tape(data.steps, data.kernels, tasks=["softmax"], description="shipped"))


@pytest.mark.parametrize(
    ("name", "source", "message"),
    [
        ("tapes", None, "unknown replay environment 'tapes'; expected one of tape, fitted, "
                        "synthetic."),
        ("synthetic", (1, 2), "the synthetic environment is built from a spec text, not tuple."),
    ],
)
def test_bad_names_and_sources_are_one_sentence(name, source, message) -> None:
    with pytest.raises(ValueError) as err:
        build_env(name, source)
    assert str(err.value) == message


def test_registry_covers_every_compiled_env_kind() -> None:
    assert {n: e.kind for n, e in ENVIRONMENTS.items()} == ENV_KINDS
    assert TRACE_ENVS == ("tape", "fitted")
    # issue 15: both trace envs take the signature timing (reveals, reveal) too
    assert env_entry("fitted").options == ("knn", "not_applicable", "reveals", "reveal")
    assert env_entry("tape").options == ("on_exhaust", "not_applicable", "reveals", "reveal")


def test_not_applicable_rule_passes_through_to_both_trace_envs(tables) -> None:
    # sim2real replays a trace recorded before issue #18 under the old rule through the registry
    tape, fitted = build_envs(TRACE_ENVS, tables, not_applicable="failure")
    _same(tape, build_tape(*tables, not_applicable="failure"))
    _same(fitted, build_fitted(*tables, not_applicable="failure"))


def test_cli_and_sim2real_take_their_env_names_from_the_registry() -> None:
    from analysis.sim2real import ENVS
    from kernelband.cli.replay import replay

    assert ENVS == TRACE_ENVS
    env_option = next(p for p in replay.params if p.name == "env_name")
    assert tuple(env_option.type.choices) == tuple(ENVIRONMENTS)
