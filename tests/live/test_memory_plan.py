"""The evaluator's GPU memory plan (issue 15): never past the cap, shapes dropped with a note."""

from __future__ import annotations

import os
import random
import threading
import time

import pytest

from live.evaluator.memory_plan import (
    CONTEXT_BYTES,
    GIB,
    MemoryPool,
    ShapeNeed,
    TaskMemory,
    estimate_task,
    plan_memory,
)
from live.tasks.base import TaskHooks
from live.tasks.registry import resolve_loaded, resolve_task, resolve_tasks


@pytest.fixture(scope="module")
def builtin_estimates() -> dict[str, TaskMemory]:
    return {t.name: estimate_task(t) for t in resolve_tasks("builtin")}


def test_estimates_count_inputs_outputs_and_the_comparators_work(builtin_estimates):
    # bias_gelu 16384 x 11008 fp16: x (0.34 GiB) + bias; the output 0.34 GiB; the comparator's
    # float64 work is bounded by its chunk (56 bytes per element of at most CHUNK_ELEMENTS)
    from live.evaluator.checks import CHUNK_ELEMENTS
    from live.evaluator.memory_plan import COMPARE_BYTES_PER_ELEMENT

    biggest = builtin_estimates["bias_gelu"].perf[2]
    elements = 16384 * 11008
    assert elements > CHUNK_ELEMENTS
    assert biggest.inputs == 2 * elements + 2 * 11008
    assert biggest.outputs == 2 * elements
    chunk_work = COMPARE_BYTES_PER_ELEMENT * CHUNK_ELEMENTS
    assert biggest.peak >= 2 * biggest.inputs + 2 * biggest.outputs + chunk_work
    assert biggest.peak < 2 * biggest.inputs + 4 * biggest.outputs + chunk_work + 2**28
    assert all(n is not None for m in builtin_estimates.values() for n in (*m.perf, *m.test))


@pytest.mark.parametrize("cap_gib", [24, 40, 80])
def test_plan_on_a_simulated_card_never_schedules_past_the_cap(builtin_estimates, cap_gib):
    plan = plan_memory(builtin_estimates, cap_gib * GIB, workers=8)
    assert plan.committed_bytes() <= plan.usable_bytes <= plan.cap_bytes
    assert plan.dropped_shapes("bias_gelu") == []  # every built-in shape fits a 24 GB card
    pool = MemoryPool(plan.pool_bytes)
    fixed = plan.workers * (CONTEXT_BYTES + plan.cache_bytes)
    names = sorted(builtin_estimates)
    worst = [0]
    lock = threading.Lock()

    def worker(seed: int) -> None:  # a worker checking candidates of random tasks
        rng = random.Random(seed)
        for _ in range(40):
            need = plan.need(rng.choice(names))
            assert need <= plan.pool_bytes
            got = pool.acquire(need)
            with lock:
                worst[0] = max(worst[0], fixed + pool.out)
            time.sleep(rng.random() * 1e-3)
            pool.release(got)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(plan.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 0 < worst[0] <= plan.usable_bytes < cap_gib * GIB
    assert pool.peak_out <= plan.pool_bytes and pool.out == 0


def test_a_lone_worker_may_use_all_that_is_usable(builtin_estimates):
    """One worker shares the card with nothing: its allocator's cap is the usable memory, not
    the biggest need estimated from the checks; several workers keep their bounded caps."""
    alone = plan_memory(builtin_estimates, 80 * GIB, workers=1)
    assert alone.workers == 1
    assert alone.worker_cap_bytes == alone.usable_bytes
    shared = plan_memory(builtin_estimates, 80 * GIB, workers=8)
    assert shared.workers > 1
    assert shared.worker_cap_bytes < shared.usable_bytes / 2


def test_a_small_card_gets_fewer_workers_and_smaller_caches(builtin_estimates):
    small = plan_memory(builtin_estimates, 12 * GIB, workers=8)
    big = plan_memory(builtin_estimates, 80 * GIB, workers=8)
    assert small.workers <= big.workers == 8
    assert small.cache_bytes < big.cache_bytes
    assert small.committed_bytes() <= small.usable_bytes


def test_a_shape_that_cannot_fit_is_dropped_with_a_note_not_the_task(builtin_estimates):
    plan = plan_memory(builtin_estimates, 3 * GIB, workers=8)
    # 16384 x 11008 needs ~3 GiB to check (chunked comparator), 2 GiB fit one worker
    assert plan.dropped_shapes("bias_gelu") == [2]
    notes = plan.notes()["bias_gelu"]
    assert len(notes) == 1 and "perf shape 2 dropped" in notes[0]
    assert plan.need("bias_gelu") <= plan.pool_bytes  # its other shapes still run
    assert plan.describe()["dropped_shapes"]["bias_gelu"] == [2]
    assert "softmax" not in plan.notes()


def test_memory_pool_is_first_come_first_served_and_capped():
    pool = MemoryPool(10)
    assert pool.acquire(25) == 10  # a need above the pool takes the whole pool
    order: list[str] = []

    def take(name: str, n: int) -> None:
        got = pool.acquire(n)
        order.append(name)
        pool.release(got)

    big = threading.Thread(target=take, args=("big", 8))
    big.start()
    time.sleep(0.05)
    small = threading.Thread(target=take, args=("small", 1))
    small.start()
    time.sleep(0.05)
    assert order == []  # the small one queues behind the big one
    pool.release(10)
    big.join()
    small.join()
    assert order == ["big", "small"]
    with pytest.raises(RuntimeError):
        pool.release(1)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="needs TRITON_INTERPRET=1")
def test_live_run_with_a_dropped_shape_keeps_the_task(tmp_path):
    from kbsim.trace.reader import load_trace
    from live.evaluator import Evaluator, EvaluatorConfig
    from live.proposers import make_proposer
    from live.runner import RunConfig
    from live.runner.runner import LiveRunner

    task = resolve_task("builtin", "add")
    assert len(task.cpu_shapes) >= 2
    small = ShapeNeed(inputs=1 << 20, outputs=1 << 20, peak=8 << 20)
    huge = ShapeNeed(inputs=1 << 20, outputs=1 << 20, peak=100 * GIB)
    # on CPU the timed shapes are the cpu shapes: the plan drops the second one
    memory = {"add": TaskMemory("add", [small, huge] + [small] * (len(task.cpu_shapes) - 2),
                                [small])}
    plan = plan_memory(memory, 4 * GIB, workers=1)
    assert plan.dropped_shapes("add") == [1]
    config = RunConfig(out=str(tmp_path / "t"), tasks="add", policy="kernelband-v2", steps=2,
                       device="cpu", profile="off", in_flight=1)
    with Evaluator(EvaluatorConfig("add", device="cpu", workers=1, timeout_s=60),
                   memory_plan=plan) as ev:
        result = LiveRunner(config, make_proposer("mutate"), show_progress=False,
                            evaluator=ev).run()
    summary = result.tasks[0]
    assert summary.k0_ms is not None and summary.steps == 2
    assert len(summary.notes) == 1 and "perf shape 1 dropped" in summary.notes[0]
    data = load_trace(tmp_path / "t")
    assert data.manifests[0]["memory_plan"]["dropped_shapes"] == {"add": [1]}
    assert data.manifests[0]["memory_plan"]["notes"]["add"] == summary.notes
    kernels = data.kernels_df()
    correct = kernels[kernels["correct"]]
    assert len(correct) >= 1
    assert {len(s) for s in correct["shape_ms"]} == {len(task.cpu_shapes) - 1}


def test_input_cache_does_not_make_ahead_what_it_cannot_keep():
    import torch

    from live.evaluator.run_candidate import InputCache

    cache = InputCache(max_bytes=1024)
    made = []

    def make() -> tuple:
        made.append(1)
        return (torch.zeros(1024),)  # 4 KiB > the cache

    cache.ensure(("big",), make)
    cache.ensure(("big",), make)  # known too big: not made again ahead of the lock
    assert len(made) == 1 and cache.held == 0
    assert cache.get(("big",), make)[0].numel() == 1024  # made when needed
    assert len(made) == 2


def test_tasks_that_run_their_own_code_get_the_unknown_need(builtin_estimates):
    import dataclasses

    softmax = resolve_task("builtin", "softmax")
    foreign = dataclasses.replace(softmax, name="tb/op", call_style="returns",
                                  hooks=TaskHooks(run=lambda module, inputs: ()))
    memory = estimate_task(foreign)
    assert all(n is None for n in (*memory.perf, *memory.test))
    plan = plan_memory({**builtin_estimates, "tb/op": memory}, 40 * GIB, workers=8)
    assert plan.need("tb/op") == min(plan.unknown_need, plan.pool_bytes)
    assert plan.unknown_need >= max(plan.need(n) for n in builtin_estimates)


def test_a_task_s_share_leaves_its_largest_shapes_out_of_live_checks():
    """NOTE (D78): shapes whose check needs more than the task's share of the usable bytes are
    left out with a note; the smallest stays even when it is over too; other tasks keep all."""
    def shapes(*gib: float) -> list[ShapeNeed]:
        return [ShapeNeed(inputs=int(g * GIB / 2), outputs=0, peak=int(g * GIB)) for g in gib]

    estimates = {
        "big": TaskMemory("big", shapes(1, 4, 20, 45), [], max_share=1 / 8),
        "huge": TaskMemory("huge", shapes(30, 40), [], max_share=1 / 8),
        "plain": TaskMemory("plain", shapes(1, 45), []),
    }
    plan = plan_memory(estimates, 140 * GIB, workers=8)
    limit = plan.usable_bytes / 8
    assert plan.dropped_shapes("big") == [2, 3] and plan.need("big") <= limit
    assert plan.dropped_shapes("huge") == [1] and plan.need("huge") == 30 * GIB
    assert plan.dropped_shapes("plain") == []
    notes = plan.notes()["big"]
    assert len(notes) == 2 and all("left out of live checks" in n for n in notes)
    # the copies the plan made: the estimates given are not changed
    assert estimates["big"].dropped == []


def test_tritonbench_operators_ask_for_a_share_of_the_card():
    """The plan picks the share up from the task's findings (an operator of the CPU fixture,
    run here)."""
    from pathlib import Path

    from live.tasks.findings import NO_FINDINGS
    from live.tasks.tritonbench.operator import (
        CHECK_SHARE,
        operator_meta,
        tritonbench_findings,
        tritonbench_task,
    )

    mini = Path(__file__).parent / "fixtures" / "tritonbench_mini"
    meta = operator_meta(mini, "add")
    task, findings = tritonbench_task(mini, "add", meta), tritonbench_findings(meta)
    assert findings.max_check_share == CHECK_SHARE and 0 < CHECK_SHARE < 1
    assert estimate_task(task, findings).max_share == CHECK_SHARE
    builtin = resolve_loaded("builtin")
    assert builtin.findings_of("softmax").max_check_share is None
    assert NO_FINDINGS.max_check_share is None
