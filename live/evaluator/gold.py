"""Gold-vs-gold check of a task suite: each task's k0 against its reference, in the real evaluator.

``check_tasks`` records per task the reference and k0 timings on this machine (the machine's
baseline), and whether k0 passed. ``gold_check_in_worker`` is the load-time check a task source
runs in the evaluator's workers (``live.evaluator.isolated``): the very checks the evaluator
applies to every candidate (``CandidateRunner``, ``check_only``: no timing), with k0 as the
candidate, so a k0 that passes at load time passes the evaluator. Every gold-vs-gold check runs
in a worker, never in the loading process. ``kernelband tasks check`` is a thin wrapper.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbsim.trace.layout import atomic_write_bytes
from live.evaluator.evaluator import Evaluator
from live.evaluator.failures import exception_kind
from live.evaluator.messages import GoldCheckRequest
from live.evaluator.result import EvalResult
from live.evaluator.settings import worker_settings
from live.evaluator.task_source import resolve_tasks

#: statuses of a load-time gold check that mean the gold code disagrees with itself
NONDETERMINISTIC = "nondeterministic"


@dataclass(frozen=True)
class GoldCheck:
    """One task's gold-vs-gold outcome."""

    task_id: str
    result: EvalResult

    @property
    def passed(self) -> bool:
        return self.result.status == "ok"


#: NOTE (D71): in a load-time check worker (``WorkerSettings.quick_autotune``) Triton's autotuner
#: benchmarks each configuration for about this many milliseconds (warm-up and timed runs)
#: instead of 25 + 100: the check needs a configuration that runs, not the fastest one, and on
#: an H200 every operator autotuned on all its performance inputs took 50-180 s (13 of them past
#: the 180 s limit) with full benchmarks. k0 reuses the reference's choice (D66).
QUICK_AUTOTUNE_MS = 1


def install_quick_autotune() -> bool:
    """Make ``triton.testing.do_bench`` (the benchmarker Triton's autotuner asks its driver for
    at tuning time, and the one the deprecated ``warmup=``/``rep=`` interface calls) run for
    ``QUICK_AUTOTUNE_MS`` whatever it is asked; True once installed. For load-time check
    workers (D71) and live evaluator workers that check beside others (D79): nothing in them
    is timed with it (timing uses CUDA events, `live.evaluator.timing`)."""
    try:
        import triton.testing
    except ImportError:
        return False
    original = triton.testing.do_bench
    if getattr(original, "_kb_quick", False):
        return True
    names = ("warmup", "rep", "grad_to_none", "quantiles", "return_mode")

    def quick_do_bench(fn: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.update(zip(names[:len(args)], args, strict=True))
        kwargs.update(warmup=QUICK_AUTOTUNE_MS, rep=QUICK_AUTOTUNE_MS)
        return original(fn, **kwargs)

    quick_do_bench._kb_quick = True  # type: ignore[attr-defined]
    quick_do_bench._kb_original = original  # type: ignore[attr-defined]
    triton.testing.do_bench = quick_do_bench
    return True


def install_first_config_autotune() -> bool:
    """NOTE (D89): in a load-time check worker (``WorkerSettings.first_config``) Triton's autotuner
    runs the first of its (pruned) configurations that compiles and runs, instead of compiling
    and benchmarking every one: a gold check needs a configuration that runs, the same one for
    the gold code and k0, not the fastest. The others are reported to the autotuner as not
    running (infinite time), so it picks the first; nothing is read from or written to Triton's
    on-disk autotuning cache (a choice made this way is no tuning result). The live evaluator
    still tunes in full. True once installed."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return False
    if getattr(Autotuner.run, "_kb_first", False):
        return True
    original_run, original_bench = Autotuner.run, Autotuner._bench

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.cache_results = False
        self._kb_ran = None  # a new key may benchmark: no configuration has run for it yet
        return original_run(self, *args, **kwargs)

    def bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        ran = getattr(self, "_kb_ran", None)
        if ran is not None:  # one configuration ran for this key: the rest are not tried
            return [float("inf")] * len(ran) if isinstance(ran, list | tuple) else float("inf")
        timing = original_bench(self, *args, config=config, **meta)
        values = timing if isinstance(timing, list | tuple) else [timing]
        if all(math.isfinite(float(v)) for v in values):
            self._kb_ran = timing
        return timing

    run._kb_first = True  # type: ignore[attr-defined]
    run._kb_original = original_run, original_bench  # type: ignore[attr-defined]
    Autotuner.run, Autotuner._bench = run, bench
    return True


def restore_autotuning() -> None:
    """Undo `install_quick_autotune` and `install_first_config_autotune` in this process: a
    plain-script run (``live.tasks.tritonbench.script``) in a worker that checked an operator
    before must tune as the benchmark's own script does."""
    try:
        import triton.testing
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return
    original = getattr(triton.testing.do_bench, "_kb_original", None)
    if original is not None:
        triton.testing.do_bench = original
    originals = getattr(Autotuner.run, "_kb_original", None)
    if originals is not None:
        Autotuner.run, Autotuner._bench = originals


#: rounds of a gold check in one worker: each round may add shapes where the gold code
#: disagrees with itself (unchecked) or that do not fit (dropped); the last must pass cleanly
MAX_ROUNDS = 4


def gold_check_in_worker(runner: Any, workdir: Path, task_spec: str, task_name: str,
                         describe: str | None = None,
                         verdicts: dict[str, dict[str, str]] | None = None,
                         drop_out_of_memory: bool = False,
                         shape_budget_s: float | None = None, shape_floor_s: float = 0.0,
                         shape_cap_s: float | None = None) -> dict[str, Any]:
    """Worker side: build the task, then judge its k0 as the evaluator judges any candidate.

    Returns ``status`` (``ok``, ``build_error``, ``nondeterministic``, ``retry`` or the
    evaluator's failure status), ``error``, ``recycle``, ``meta`` (``describe(task)``: a
    ``live.`` function returning what the source caches to rebuild the task without running
    it), ``shape_verdicts`` and ``shape_peaks``.

    NOTE (D73): the verdict is per performance shape, not only per task. Checks go on past a
    failing perf shape; a shape where k0 disagrees with the gold code (the same code under the
    same seeds: only racing writes, atomics or memory it does not own can make them differ) is
    marked ``unchecked`` (timed, not compared), and the check is repeated until a round passes
    with every remaining shape compared (each then agreed twice) or `MAX_ROUNDS` run out. A
    shape that runs out of memory is, with `drop_out_of_memory` (a retry with the device to
    itself), ``dropped`` with every larger one; a fault that ends the worker (illegal memory
    access) on a shape drops it and every larger one, and the check comes back as ``retry``
    for the parent to run again in a fresh worker. A k0 judged ``incorrect`` outside the perf
    shapes (the operator's own test code) is checked a second time, as before: the operator
    is ``nondeterministic``.

    NOTE (D82): with `shape_budget_s`, the perf shapes are checked (in order) until that many
    seconds after the start of this check, all rounds together, or for `shape_floor_s` from the
    first shape checked in a round if that ends later (making inputs can take a minute), but
    never past `shape_cap_s` after the start; the shapes not reached in time are ``dropped``
    (not checked, so not timed either), the operator's own test code still runs, and the
    operator passes on the shapes checked.
    """
    started = time.perf_counter()
    settings = worker_settings()
    if settings is not None and settings.quick_autotune:
        install_quick_autotune()
    if settings is not None and settings.first_config:
        install_first_config_autotune()
    # nothing is timed in a check worker and its next check is another task's: inputs are
    # made, used and dropped, never kept beside the check's own copies
    runner._inputs.max_bytes = 0
    try:
        task = runner._task(task_spec, task_name)
    except Exception as exc:  # noqa: BLE001 - a script that fails to build is a result
        return {"status": "build_error", "recycle": True,
                "error": f"could not build the task: {type(exc).__name__}: {exc}"[:2000],
                "failure_kind": exception_kind(exc).value}
    build_s = time.perf_counter() - started
    meta = None
    if describe is not None:
        from live.evaluator.isolated import CALLABLE_PREFIX

        if not describe.startswith(CALLABLE_PREFIX):
            raise ValueError(f"describe {describe!r} is not a kernelband function")
        module_name, _, function = describe.rpartition(".")
        meta = getattr(__import__(module_name, fromlist=[function]), function)(task)
    known = {int(k): dict(v) for k, v in (verdicts or {}).items()}
    try:
        return {**_judge(runner, workdir, task, task_spec, task_name, meta, known,
                         drop_out_of_memory,
                         None if shape_budget_s is None else
                         (started, float(shape_budget_s), float(shape_floor_s),
                          None if shape_cap_s is None else float(shape_cap_s))),
                "build_s": build_s}
    finally:  # this worker's next check is another task's: its inputs are of no more use
        with contextlib.suppress(Exception):  # a sticky CUDA fault: the worker is replaced
            runner.release_inputs()
        if task.release is not None:
            task.release()


def _larger_or_equal(task: Any, index: int) -> list[int]:
    """`index` and every perf shape at least as big (by input bytes; by index without sizes)."""
    sizes = task.shape_bytes
    if sizes is None:
        return list(range(index, len(task.perf_shapes)))
    return [i for i in range(len(task.perf_shapes)) if sizes[i] >= sizes[index]]


def _drop(task: Any, verdicts: dict[int, dict[str, str]], index: int, why: str) -> None:
    for i in _larger_or_equal(task, index):
        if verdicts.get(i, {}).get("kind") != "dropped":
            reason = why if i == index else f"larger than perf shape {index}, which {why}"
            verdicts[i] = {"kind": "dropped", "reason": reason[:300]}


def _judge(runner: Any, workdir: Path, task: Any, task_spec: str, task_name: str, meta: Any,
           verdicts: dict[int, dict[str, str]], drop_out_of_memory: bool,
           budget: tuple[float, float, float, float | None] | None = None
           ) -> dict[str, Any]:
    peaks: dict[int, int] = {}
    spent = {"rounds": 0, "compile_s": 0.0, "check_s": 0.0}  # every round's, added up

    def evaluate(request: GoldCheckRequest) -> dict[str, Any]:
        response = runner.evaluate(request, workdir, on_compiled=lambda: None).as_dict()
        spent["rounds"] += 1
        for phase in ("compile_s", "check_s"):
            spent[phase] += float(response.get(phase) or 0.0)
        return response

    def request() -> GoldCheckRequest:
        limit: dict[str, Any] = {}
        if budget is not None:
            started, share, floor, cap = budget
            limit = {"shape_budget_s": max(0.0, started + share - time.perf_counter()),
                     "shape_floor_s": floor}
            if cap is not None:
                limit["shape_cap_s"] = max(0.0, started + cap - time.perf_counter())
        return GoldCheckRequest(
            **limit, task_spec=task_spec, task_name=task_name, code=task.k0, seed=0, n_seeds=1,
            keep_going=True, measure_peaks=True,
            drop_shapes=tuple(sorted(i for i, v in verdicts.items() if v["kind"] == "dropped")),
            unchecked_shapes=tuple(sorted(i for i, v in verdicts.items()
                                          if v["kind"] == "unchecked")))

    def result(response: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"status": response["status"], "error": response.get("error"),
                "failure_kind": response.get("failure_kind"),
                "recycle": bool(response.get("recycle")), "meta": meta, **spent,
                "shape_verdicts": {str(k): v for k, v in sorted(verdicts.items())},
                "shape_peaks": {str(k): v for k, v in sorted(peaks.items())},
                "source_note": response.get("source_note"), **extra}

    response: dict[str, Any] = {}
    for _ in range(MAX_ROUNDS):
        dropped = [i for i, v in verdicts.items() if v["kind"] == "dropped"]
        compared = len(task.perf_shapes) - len(verdicts)
        if task.perf_shapes and (len(dropped) == len(task.perf_shapes) or (
                compared == 0 and getattr(task, "source_check", None) is None)):
            first = min(verdicts)
            return result({"status": "incorrect", "recycle": False, "error": (
                f"no performance input left to {'time' if dropped else 'check'}: perf shape "
                f"{first} {verdicts[first]['kind']}: {verdicts[first]['reason']}")})
        response = evaluate(request())
        peaks.update({int(k): int(v) for k, v in (response.get("shape_peaks") or {}).items()})
        for index in response.get("not_reached") or ():
            verdicts[int(index)] = {"kind": "dropped", "reason": (
                "not checked: the gold check's time for performance inputs ran out before it "
                "on this machine")}
        if response["status"] == "ok":
            return result(response)
        failed = response.get("failed_shape")
        if response.get("recycle"):  # a sticky fault: this worker is done, a fresh one retries
            if failed is None:
                return result(response)
            _drop(task, verdicts, int(failed), f"makes the gold code fail: "
                  f"{response.get('status')}: {response.get('error')}")
            return result(response, status="retry")
        failures = {int(k): v for k, v in (response.get("shape_failures") or {}).items()}
        if not failures:  # not a perf shape: the test code, or a failure that ends the check
            if response["status"] != "incorrect" or failed is not None:
                return result(response)
            return _second_opinion(evaluate, request(), response, result)
        for index, failure in sorted(failures.items()):
            if failure["status"] == "incorrect":
                verdicts[index] = {"kind": "unchecked", "reason": (
                    f"the gold code disagrees with itself under the same seed: "
                    f"{failure['error']}")[:300]}
            elif drop_out_of_memory:
                _drop(task, verdicts, index, f"runs out of memory in the gold check: "
                      f"{failure['error']}")
            else:  # out of memory beside other checks: the parent retries it alone
                return result({**response, "status": failure["status"],
                               "error": failure["error"],
                               "failure_kind": failure["failure_kind"]})
    return result(response, status=NONDETERMINISTIC, error=(
        f"nondeterministic: the gold code disagreed with itself on new shapes in each of "
        f"{MAX_ROUNDS} checks: {response.get('error')}"))


def _second_opinion(evaluate: Callable[[GoldCheckRequest], dict[str, Any]],
                    request: GoldCheckRequest, first: dict[str, Any],
                    result: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """k0 judged incorrect by the operator's own test code: gold against gold under the same
    seeds can only differ when the operator is nondeterministic; a second check says whether
    that happens every time."""
    second = evaluate(request)
    times = "in both of two checks" if second["status"] == "incorrect" else \
        "in one of two checks"
    return result({**first, "recycle": bool(second.get("recycle"))}, status=NONDETERMINISTIC,
                  error=f"nondeterministic: the gold code disagrees with itself under the "
                        f"same seeds {times} (atomics, races, or memory it does not own: "
                        f"uninitialised or out of bounds): {first.get('error')}")


def check_tasks(
    task_spec: str,
    *,
    device: str = "auto",
    names: Sequence[str] | None = None,
    timeout_s: float = 300.0,
    on_result: Callable[[GoldCheck], None] | None = None,
    evaluator: Evaluator | None = None,
    tasks: Sequence[Any] | None = None,
) -> tuple[list[GoldCheck], dict[str, Any]]:
    """Evaluate every task's k0 against its reference; returns the checks and the device info.
    `tasks`: the spec's tasks when the caller has loaded them already."""
    tasks = list(tasks) if tasks is not None else resolve_tasks(task_spec)
    if names:
        wanted = set(names)
        tasks = [t for t in tasks if t.name in wanted]
    own = evaluator is None
    ev = evaluator or Evaluator(task_spec, device=device, timeout_s=timeout_s,
                                compile_timeout_s=timeout_s)
    checks: list[GoldCheck] = []
    try:
        info = ev.device_info
        for task in tasks:
            check = GoldCheck(task.name, ev.evaluate(task.name, task.k0, seed=0))
            checks.append(check)
            if on_result is not None:
                on_result(check)
    finally:
        if own:
            ev.close()
    return checks, info


def write_reference_timings(path: str | Path, task_spec: str, checks: Sequence[GoldCheck],
                            info: dict[str, Any]) -> None:
    """The machine's reference and k0 timings as JSON (atomically: temp file + rename)."""
    record = {
        "task_spec": task_spec,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(),
        "device": info,
        "tasks": {
            c.task_id: {
                "passed": c.passed,
                "status": c.result.status,
                "error": c.result.error,
                "timing_backend": c.result.timing_backend,
                "shapes": list(c.result.shapes),
                "ref_ms": c.result.ref_ms,
                "ref_shape_ms": c.result.ref_shape_ms,
                "k0_ms": c.result.ms,
                "k0_shape_ms": c.result.shape_ms,
                "speedup": c.result.speedup,
                "timing_cv": c.result.timing_cv,
            }
            for c in checks
        },
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(record, indent=2, default=list).encode())
