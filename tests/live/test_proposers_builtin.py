"""The mutate proposer on every built-in task's k0: valid Python for every strategy, and still
correct under TRITON_INTERPRET=1 on the task's cpu_shapes."""

from __future__ import annotations

import ast

import pytest

from kbsim.strategies import STRATEGIES
from live.proposers.mutate import mutate_source
from live.tasks.registry import resolve_tasks
from live.tasks.selfcheck import selfcheck

TASKS = resolve_tasks("builtin")


#: (task, source) pairs that passed `selfcheck`: samples often repeat a source (286 distinct of
#: 480 in the many-samples test), and the same source on the same inputs checks the same
_PASSED: set[tuple[str, str]] = set()


def _check(task, strategy: str, seed: int, samples: int, max_edits: int) -> int:
    changed = 0
    for sample_index in range(samples):
        code, detail = mutate_source(task.k0, strategy, seed=seed, sample_index=sample_index,
                                     max_edits=max_edits)
        if code is None:
            assert detail  # not_applicable always says why
            continue
        ast.parse(code)
        changed += 1
        if (task.name, code) in _PASSED:
            continue
        result = selfcheck(task, "cpu", source=code)
        assert result.error is None, (detail, result.error)
        failures = [c.error for c in result.checks if not c.ok]
        assert not failures, (detail, failures)
        _PASSED.add((task.name, code))
    return changed


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_every_strategy_keeps_builtin_k0_valid_and_correct(task):
    applicable = {s: _check(task, s, seed=len(task.name), samples=1, max_edits=1)
                  for s in STRATEGIES}
    assert applicable["fusion"] == 0
    # every built-in k0 has a tunable launch (num_warps) and at least one tl.load
    assert applicable["vectorization"] == 1 and applicable["access_layout"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_many_samples_with_several_edits_stay_correct(task):
    for strategy in STRATEGIES:
        _check(task, strategy, seed=11, samples=8, max_edits=3)


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU (the compiled path: hints, "
                                         "cache modifiers and num_stages are ignored on CPU)")
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_mutations_compile_and_stay_correct_on_a_gpu(task):
    failures = []
    for strategy in STRATEGIES:
        for sample_index in range(2):
            code, detail = mutate_source(task.k0, strategy, seed=23, sample_index=sample_index,
                                         max_edits=2)
            if code is None:
                continue
            result = selfcheck(task, "cuda", source=code)
            bad = result.error or next((c.error for c in result.checks if not c.ok), None)
            if bad:
                failures.append(f"{detail}: {bad}")
    assert not failures, failures
