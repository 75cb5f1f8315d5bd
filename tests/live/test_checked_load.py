"""The format-independent gold-check loader: order of checks, out-of-memory retries, plain
scripts (the worker pool replaced by a recording fake, so no worker starts)."""

from __future__ import annotations

from typing import Any

import pytest

from live.evaluator.isolated import Call
from live.gold import load as cl
from live.gold.judge import gold_check_in_worker
from live.tasks.findings import NO_FINDINGS
from live.tasks.sources import LoadOptions
from live.tasks.tritonbench import check_cost_hint


class FakePool:
    """Stands in for ``run_calls``: records each pool's calls and arguments, answers from
    ``outcomes[pass][key]`` (default ok), and runs follow-ups as the real pool does."""

    def __init__(self, outcomes: list[dict[str, dict[str, Any]]], overrun: bool = False):
        self.outcomes = outcomes
        self.overrun = overrun
        self.pools: list[dict[str, Any]] = []

    def __call__(self, calls, *, device, workers=None, memory_limit_mb=None, on_result=None,
                 settings=None, follow_up=None, overtime=None,
                 **_: Any) -> dict[str, dict[str, Any]]:
        answers = self.outcomes[len(self.pools)] if len(self.pools) < len(self.outcomes) else {}
        pool = {"keys": [], "workers": workers, "memory_limit_mb": memory_limit_mb,
                "settings": settings}
        self.pools.append(pool)
        results: dict[str, dict[str, Any]] = {}
        queue = list(calls)
        while queue:
            call = queue.pop(0)
            if self.overrun and call.overtime_s is not None and overtime is not None:
                extra = overtime(call)  # every call with an overtime runs past it
                if extra is not None:
                    queue.insert(0, extra)  # ... and its extra call ends first
                    queue.insert(1, call)
                    continue
            pool["keys"].append(("tail:" if call.tail else "") + call.key)
            if call.fresh:
                pool.setdefault("fresh", []).append(call.key)
            if call.front:
                pool.setdefault("front", []).append(call.key)
            pool.setdefault("limits", {})[call.key] = call.timeout_s
            if call.tail:
                pool.setdefault("tails", {})[call.key] = (call.memory_limit_mb,
                                                          call.gpu_workers)
            result = dict(answers.get(("tail:" if call.tail else "") + call.key,
                                      {"status": "ok", "meta": {"n": 1}}))
            results[call.key] = result
            on_result(call, result)
            then = follow_up(call, result) if follow_up is not None else None
            if then is not None:
                queue.extend([then] if isinstance(then, Call) else then)
        return results


def _by_name(item: cl.CheckItem, meta: Any) -> tuple[str, Any]:
    """A fake source's build: the item's name stands for its task, with no findings."""
    return item.name, NO_FINDINGS


def _items(hints: dict[str, float]) -> list[cl.CheckItem]:
    return [cl.CheckItem(name, f"t/{name}", (name.encode(),),
                         Call(name, "live.x.plain", {}, 1.0), cost_hint=hint)
            for name, hint in hints.items()]


def _load(monkeypatch, tmp_path, pool: FakePool, hints: dict[str, float],
          options: LoadOptions | None = None):
    monkeypatch.setenv("KERNELBAND_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cl, "run_calls", pool)
    return cl.checked_load("fake:spec", _items(hints), options or LoadOptions(device="cpu"),
                           check=gold_check_in_worker, build=_by_name)


def test_slow_looking_checks_start_first(monkeypatch, tmp_path) -> None:
    pool = FakePool([])
    loaded = _load(monkeypatch, tmp_path, pool, {"a": 1.0, "tuned": 12.0, "b": 1.0, "c": 3.0})
    # biggest hint first, equal hints in the source's order; the tasks keep the source's order
    assert pool.pools[0]["keys"] == ["tuned", "c", "a", "b"]
    assert loaded.tasks == ["a", "tuned", "b", "c"]


def test_the_first_wave_of_checks_gets_more_time(monkeypatch, tmp_path) -> None:
    """NOTE (D85): the checks that start first (as many as there are workers) run beside
    the whole queue: their limit is longer; the plain scripts keep theirs."""
    pool = FakePool([{"a": {"status": "timeout", "error": "exceeded"}}])
    _load(monkeypatch, tmp_path, pool, {"a": 1.0, "tuned": 12.0, "b": 1.0, "c": 3.0},
          LoadOptions(device="cpu", workers=2, timeout_s=100.0))
    longer = 100.0 * cl.FIRST_WAVE_LIMIT_SHARE
    assert longer > 100.0
    assert pool.pools[0]["limits"] == {"tuned": longer, "c": longer, "a": 100.0, "b": 100.0,
                                       cl.PLAIN_KEY + "a": 1.0}


def test_a_first_wave_check_past_the_base_limit_starts_its_plain_script_beside_it(
        monkeypatch, tmp_path) -> None:
    """NOTE (D85): the plain script of a first-wave check starts at its overtime (the base
    limit), not after it fails at the longer one; it is kept only if the check fails."""
    pool = FakePool([{"tuned": {"status": "timeout", "error": "exceeded 140 s"},
                      "b": {"status": "incorrect", "error": "differ"},
                      cl.SECOND_KEY + "b": {"status": "incorrect", "error": "differ"},
                      cl.PLAIN_KEY + "tuned": {"status": "timeout", "error": "exceeded 1 s"}}],
                    overrun=True)
    loaded = _load(monkeypatch, tmp_path, pool, {"a": 1.0, "tuned": 12.0, "b": 1.0, "c": 3.0},
                   LoadOptions(device="cpu", workers=2, timeout_s=100.0))
    # both first-wave checks ran past 100 s: their plain scripts ran then, once each; b's
    # (not first wave) after its check failed, beside its second check (D87); the timeout
    # is not checked again
    assert pool.pools[0]["keys"] == [cl.PLAIN_KEY + "tuned", "tuned", cl.PLAIN_KEY + "c", "c",
                                     "a", "b", cl.SECOND_KEY + "b", cl.PLAIN_KEY + "b"]
    assert loaded.tasks == ["a", "c"]  # c passed: its plain script's outcome is not used
    # a plain script started at a check's overtime goes ahead of the checks queued
    assert pool.pools[0]["front"] == [cl.PLAIN_KEY + "tuned", cl.PLAIN_KEY + "c"]
    plain = {s.op: s.plain_script for s in loaded.skipped}
    assert plain == {"tuned": "fails: timeout: exceeded 1 s", "b": "passes"}


def test_out_of_memory_is_retried_with_room_then_explained(monkeypatch, tmp_path) -> None:
    # as the worker and the pool report them: the failure kind set where each was caught
    oom = {"status": "runtime_error", "error": "shape 3: OutOfMemoryError: CUDA out of memory",
           "failure_kind": "out_of_memory"}
    host = {"status": "crashed", "error": "memory limit exceeded: host memory 33087 MB > limit",
            "failure_kind": "memory_limit"}
    pool = FakePool([{"big": oom, "host": host, "bad": {"status": "incorrect", "error": "no"},
                      cl.SECOND_KEY + "bad": {"status": "incorrect", "error": "no"},
                      "crowded": oom, "tail:host": {**oom, "beside": 0},
                      "tail:crowded": {**oom, "beside": 2}},
                     {"crowded": oom}])
    loaded = _load(monkeypatch, tmp_path, pool, {"ok": 1.0, "big": 1.0, "host": 1.0,
                                                 "bad": 1.0, "crowded": 1.0})
    first, alone = pool.pools
    # in the first pool: the real failure's plain script right after its check, and each
    # memory failure again as a tail call (after everything queued), with more room
    assert first["keys"][:5] == ["ok", "big", "host", "bad", "crowded"]
    assert sorted(first["keys"][5:]) == sorted([
        "tail:big", "tail:host", "tail:crowded", cl.PLAIN_KEY + "bad", cl.SECOND_KEY + "bad",
        cl.PLAIN_KEY + "host"])
    assert first["tails"]["big"] == (cl.RETRY_MEMORY_MB, cl.RETRY_WORKERS)
    assert first["memory_limit_mb"] == cl.CHECK_MEMORY_MB < cl.RETRY_MEMORY_MB
    # out of memory in the tail with the machine to itself: the operator's verdict, explained
    # by its plain script; out of memory beside the last checks: alone once more, after them
    assert alone["keys"][0] == "crowded" and alone["workers"] == cl.RETRY_WORKERS
    assert alone["memory_limit_mb"] == cl.RETRY_MEMORY_MB
    assert alone["settings"].gpu_workers == cl.RETRY_WORKERS
    assert alone["settings"].first_config
    assert alone["keys"][1:] == [cl.PLAIN_KEY + "crowded"]
    assert sorted(loaded.tasks) == ["big", "ok"]
    reasons = {s.op: s for s in loaded.skipped}
    assert "out of memory" in reasons["host"].reason
    assert "out of memory" in reasons["crowded"].reason
    assert reasons["host"].plain_script == "passes" and reasons["bad"].plain_script == "passes"


def test_a_failure_a_worker_may_explain_is_checked_again_in_a_fresh_worker(
        monkeypatch, tmp_path) -> None:
    """NOTE (D87): a fault or a gold code that disagrees with itself is checked once more,
    from the start, in a fresh worker, beside its plain script; the operator passes if that
    check does, and the load says so. A timeout and a script that does not build are not."""
    fault = {"status": "runtime_error", "error": "source check: illegal memory access"}
    pool = FakePool([{"flaky": fault, "twice": {"status": "nondeterministic", "error": "differ"},
                      cl.SECOND_KEY + "twice": {"status": "incorrect", "error": "again"},
                      "slow": {"status": "timeout", "error": "exceeded 100 s"},
                      "broken": {"status": "build_error", "error": "NameError"}}])
    loaded = _load(monkeypatch, tmp_path, pool, {"flaky": 9.0, "twice": 1.0, "slow": 1.0,
                                                 "broken": 1.0},
                   LoadOptions(device="cpu", workers=1, timeout_s=100.0))
    keys = pool.pools[0]["keys"]
    assert sorted(pool.pools[0]["fresh"]) == [cl.SECOND_KEY + "flaky", cl.SECOND_KEY + "twice"]
    assert cl.SECOND_KEY + "slow" not in keys and cl.SECOND_KEY + "broken" not in keys
    # the second check has the base limit (not the first wave's) and starts from scratch
    assert pool.pools[0]["limits"]["flaky"] == 100.0 * cl.FIRST_WAVE_LIMIT_SHARE
    assert pool.pools[0]["limits"][cl.SECOND_KEY + "flaky"] == 100.0
    assert loaded.tasks == ["flaky"]
    assert loaded.stats["passed_on_second_check"] == {
        "flaky": "gold-vs-gold check failed (runtime_error): source check: illegal memory access"}
    twice = {s.op: s for s in loaded.skipped}["twice"]
    assert twice.reason.startswith("gold-vs-gold check failed: differ [checked again in a "
                                   "fresh worker: incorrect: again]")
    assert twice.plain_script == "passes"
    # what the cache keeps is the verdict after both checks: a second load checks nothing
    again = FakePool([])
    cached = _load(monkeypatch, tmp_path, again, {"flaky": 9.0, "twice": 1.0, "slow": 1.0,
                                                  "broken": 1.0})
    assert cached.tasks == ["flaky"] and cached.stats["checked"] == 0
    assert {s.op: s.reason for s in cached.skipped} == {s.op: s.reason for s in loaded.skipped}


def test_a_load_stopped_before_the_second_check_caches_no_verdict(monkeypatch,
                                                                  tmp_path) -> None:
    """A first failure whose second check never ran is not a verdict: the next load checks
    the operator again."""
    fault = {"status": "crashed", "error": "worker died: signal 11 (SIGSEGV)"}

    class Stopped(FakePool):
        def __call__(self, calls, **kwargs: Any):  # noqa: ANN204 - a fake pool
            follow_up = kwargs.pop("follow_up")
            return super().__call__(calls, follow_up=lambda call, result: [
                c for c in (follow_up(call, result) or ())
                if not c.key.startswith(cl.SECOND_KEY)], **kwargs)

    _load(monkeypatch, tmp_path, Stopped([{"flaky": fault}]), {"flaky": 1.0, "ok": 1.0})
    again = FakePool([])
    loaded = _load(monkeypatch, tmp_path, again, {"flaky": 1.0, "ok": 1.0})
    assert again.pools[0]["keys"] == ["flaky"] and loaded.tasks == ["flaky", "ok"]


def test_longer_and_autotuned_operators_look_costlier() -> None:
    """NOTE (D88): source length (kernels to compile) plus autotuned configurations."""
    plain = "@triton.jit\ndef k(x): pass\n"
    tuned = ("@triton.autotune(configs=[triton.Config({'B': 1}), triton.Config({'B': 2})], "
             "key=[])\n" + plain)
    assert check_cost_hint(plain) == pytest.approx(len(plain) / 1000)
    assert check_cost_hint(tuned) == pytest.approx(len(tuned) / 1000 + 1.5)
    assert check_cost_hint(plain * 100) > check_cost_hint(tuned) > check_cost_hint(plain)


def test_a_check_worker_drops_the_operators_inputs_after_its_check(tmp_path, monkeypatch) -> None:
    from pathlib import Path

    from live.evaluator.run_candidate import CandidateRunner
    from live.evaluator.worker import _device_info
    from live.tasks.tritonbench import describe_task, operator

    monkeypatch.setenv("KERNELBAND_CACHE_DIR", str(tmp_path))
    mini = (Path(__file__).parent / "fixtures" / "tritonbench_mini").resolve()
    runner = CandidateRunner("cpu", _device_info("cpu"))
    operator._cpu_inputs.cache_clear()
    result = gold_check_in_worker(runner, tmp_path, f"tritonbench:{mini}", "tritonbench/add",
                                  describe=describe_task)
    assert result["status"] == "ok" and result["meta"]["n_inputs"] >= 2
    # the next check in this worker is another operator's: nothing of this one is kept
    assert operator._cpu_inputs.cache_info().currsize == 0
    assert runner._inputs.held == 0


def test_a_check_killed_by_the_system_goes_again_at_once(monkeypatch, tmp_path) -> None:
    """NOTE (D92): a check the system's out-of-memory killer took (SIGKILL kernelband did not
    send) is queued again at the front, in a fresh worker, with the base limit; killed once
    more, it takes the tail's way (more room, after everything queued)."""
    killed = {"status": "crashed", "error": "worker died: signal 9 (SIGKILL)",
              "failure_kind": "killed_by_system"}
    pool = FakePool([{"huge": killed, "twice": killed, "tail:twice": {"status": "ok",
                                                                      "meta": {"n": 1}}}])
    answers = pool.outcomes[0]
    real_on = pool.__call__

    def second_time(calls, **kwargs):  # "huge" passes when it runs again; "twice" does not
        on_result = kwargs["on_result"]

        def on(call, result):
            if call.front and call.key == "huge":
                result.clear()
                result.update({"status": "ok", "meta": {"n": 1}})
            on_result(call, result)
        return real_on(calls, **{**kwargs, "on_result": on})

    answers["twice"] = killed
    monkeypatch.setenv("KERNELBAND_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cl, "run_calls", second_time)
    loaded = cl.checked_load("fake:spec", _items({"huge": 9.0, "twice": 8.0, "a": 1.0}),
                             LoadOptions(device="cpu", workers=2, timeout_s=100.0),
                             check=gold_check_in_worker, build=_by_name)
    first = pool.pools[0]
    assert first["front"] == ["huge", "twice"] and set(first["fresh"]) >= {"huge", "twice"}
    assert first["limits"]["huge"] == 100.0  # the base limit, not the first wave's
    assert first["keys"].count("huge") == 2 and "tail:huge" not in first["keys"]
    assert "tail:twice" in first["keys"]  # killed twice: the tail, with more room
    assert sorted(loaded.tasks) == ["a", "huge", "twice"]
    # the load's statistics say which checks the system killed (D93's measure)
    kills = loaded.stats["host_memory"]["killed_by_system"]
    assert [kill["check"] for kill in kills] == ["huge", "twice", "twice"]
    assert all(kill["at_s"] >= 0 for kill in kills)


def test_check_workers_autotune_quickly(monkeypatch) -> None:
    import triton.testing

    from live.evaluator.autotune import QUICK_AUTOTUNE_MS, install_quick_autotune

    asked: list[dict[str, Any]] = []

    def recording_do_bench(fn, **kwargs):  # stands in for Triton's benchmarker
        asked.append(kwargs)
        return [1.0, 1.0, 1.0]

    monkeypatch.setattr(triton.testing, "do_bench", recording_do_bench)
    assert install_quick_autotune() and install_quick_autotune()  # idempotent
    # the autotuner's call (driver benchmarker) and the deprecated interface's, positional too
    triton.testing.do_bench(lambda: None, quantiles=(0.5, 0.2, 0.8))
    triton.testing.do_bench(lambda: None, 25, 100, None, (0.5,))
    assert asked == [{"quantiles": (0.5, 0.2, 0.8), "warmup": QUICK_AUTOTUNE_MS,
                      "rep": QUICK_AUTOTUNE_MS},
                     {"grad_to_none": None, "quantiles": (0.5,), "warmup": QUICK_AUTOTUNE_MS,
                      "rep": QUICK_AUTOTUNE_MS}]


def test_check_workers_run_the_first_configuration_that_runs(monkeypatch) -> None:
    """D89: an autotuned kernel in a check worker runs the first of its configurations that
    compiles and runs; the others are never compiled, and nothing goes to Triton's on-disk
    autotuning cache (asked for here: on the CPU, reaching that cache needs a GPU driver)."""
    import torch
    import triton
    import triton.language as tl
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.errors import OutOfResources

    from live.evaluator.autotune import install_first_config_autotune

    for name in ("run", "_bench"):  # the patch is process-wide: undone after this test
        monkeypatch.setattr(Autotuner, name, getattr(Autotuner, name))
    ran: list[int] = []

    def hook(block: int) -> Any:
        def pre_hook(nargs: dict[str, Any]) -> None:
            ran.append(block)
            if block == 16:  # as a configuration past the GPU's shared memory fails
                raise OutOfResources(1 << 20, 1 << 16, "shared memory")
        return pre_hook

    def bench(fn: Any, quantiles: Any) -> list[float]:  # the interpreter has no benchmarker
        fn()
        return [1.0, 1.0, 1.0]

    @triton.autotune(configs=[triton.Config({"BLOCK": b}, pre_hook=hook(b))
                              for b in (16, 32, 64)],
                     key=["n"], do_bench=bench, cache_results=True)
    @triton.jit
    def double(x, y, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)

    assert install_first_config_autotune() and install_first_config_autotune()  # idempotent
    for n in (100, 300):  # a new key: the configurations are tried again, from the first
        x = torch.arange(n, dtype=torch.float32)
        y = torch.empty(n)
        double[lambda meta, n=n: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
        assert torch.equal(y, 2 * x)
        assert double.best_config.kwargs == {"BLOCK": 32}
    # per key: 16 fails, 32 runs (its benchmark, then the call itself); 64 never runs
    assert ran == [16, 32, 32, 16, 32, 32]
    # a plain-script run in the same worker tunes as the benchmark's own script does
    from live.evaluator.autotune import restore_autotuning

    restore_autotuning()
    assert not getattr(Autotuner.run, "_kb_first", False)
    ran.clear()
    double.cache.clear()
    x = torch.arange(50, dtype=torch.float32)
    y = torch.empty(50)
    double.cache_results = False  # on the CPU: no driver for the on-disk cache
    double[lambda meta: (triton.cdiv(50, meta["BLOCK"]),)](x, y, 50)
    assert ran == [16, 32, 64, 32]


def test_a_load_stopped_before_the_memory_retry_caches_no_out_of_memory(monkeypatch,
                                                                        tmp_path) -> None:
    from live.gold import cache as checkcache

    oom = {"status": "runtime_error", "error": "OutOfMemoryError: CUDA out of memory",
           "failure_kind": "out_of_memory"}

    class Stopped(Exception):
        pass

    pool = FakePool([{"big": oom}])
    real = pool.__call__

    def stops_at_the_retry(calls, *, follow_up, **kwargs):  # killed as the retry is queued
        def then(call, result):
            retry = follow_up(call, result)
            if retry is not None and retry.tail:
                raise Stopped
            return retry
        return real(calls, follow_up=then, **kwargs)

    monkeypatch.setenv("KERNELBAND_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cl, "run_calls", stops_at_the_retry)
    items = _items({"ok": 1.0, "big": 1.0})
    with pytest.raises(Stopped):
        cl.checked_load("fake:spec", items, LoadOptions(device="cpu"),
                        check=gold_check_in_worker, build=_by_name)
    env = checkcache.environment("cpu")
    cached = {item.name: checkcache.read(checkcache.entry_key(list(item.contents), env))
              for item in items}
    # the finished check is kept; the one still to be retried is checked again next time
    assert cached["ok"]["passed"] and cached["big"] is None


def test_a_check_out_of_time_for_shapes_passes_on_those_it_checked(tmp_path,
                                                                   monkeypatch) -> None:
    from pathlib import Path

    from live.evaluator.run_candidate import CandidateRunner
    from live.evaluator.worker import _device_info
    from live.tasks.tritonbench import operator

    monkeypatch.setenv("KERNELBAND_CACHE_DIR", str(tmp_path))
    mini = (Path(__file__).parent / "fixtures" / "tritonbench_mini").resolve()
    runner = CandidateRunner("cpu", _device_info("cpu"))
    operator._cpu_inputs.cache_clear()
    spec, name = f"tritonbench:{mini}", "tritonbench/add"
    full = gold_check_in_worker(runner, tmp_path, spec, name, shape_budget_s=600.0)
    # the budget is spent (making inputs, say), but shapes still get their floor...
    floor = gold_check_in_worker(runner, tmp_path, spec, name, shape_budget_s=0.0,
                                 shape_floor_s=600.0, shape_cap_s=900.0)
    # ... unless that would pass the cap
    none_left = gold_check_in_worker(runner, tmp_path, spec, name, shape_budget_s=0.0,
                                     shape_floor_s=600.0, shape_cap_s=0.0)
    assert full["status"] == "ok" and full["shape_verdicts"] == {}
    assert floor["status"] == "ok" and floor["shape_verdicts"] == {}
    # no time left after the first shape: it is checked, the others are dropped, not failed
    assert none_left["status"] == "ok", none_left
    first, *rest = [s["index"] for s in runner._task(spec, name).cpu_shapes]
    dropped = {int(i): v for i, v in none_left["shape_verdicts"].items()}
    assert rest and sorted(dropped) == sorted(rest) and first not in dropped
    assert all(v["kind"] == "dropped" and "ran out before it" in v["reason"]
               for v in dropped.values())


def test_the_kept_h200_check_cache_is_read_as_it_is(monkeypatch) -> None:
    """`benchmarks/runs/tb-check-cache-h200` (seeded into every recorded run) is read without
    a check: its records build the 48 of 50 operators that passed, and skip the other two."""
    import json
    from pathlib import Path

    kept = Path(__file__).resolve().parents[2] / "benchmarks" / "runs" / "tb-check-cache-h200"
    keys = {json.loads(path.read_text())["name"]: path.stem
            for path in (kept / "gold-checks").glob("*.json")}
    monkeypatch.setenv("KERNELBAND_CACHE_DIR", str(kept))
    # the records' keys hash the H200's operator files and versions: named here by operator
    monkeypatch.setattr(cl.cache, "entry_key", lambda contents, env: keys[contents[0].decode()])
    pool = FakePool([])
    monkeypatch.setattr(cl, "run_calls", pool)
    items = [cl.CheckItem(name, f"tritonbench/{name}", (name.encode(),)) for name in keys]
    loaded = cl.checked_load("fake:spec", items, LoadOptions(device="cpu"),
                             check=gold_check_in_worker,
                             build=lambda item, meta: ((item, meta), NO_FINDINGS))
    assert pool.pools == []  # nothing checked again
    assert len(keys) == 50 and len(loaded.tasks) == 48 and len(loaded.skipped) == 2
    assert all(isinstance(meta, dict) and {"verdicts", "peaks"} <= set(meta)
               for _, meta in loaded.tasks)
    assert all(skip.reason for skip in loaded.skipped)
    assert loaded.stats["cached"] == 50 and loaded.stats["checked"] == 0
