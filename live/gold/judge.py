"""The load-time gold check of one task, in an evaluator worker (worker side).

``gold_check_in_worker`` builds the task and judges its k0 with the very checks the evaluator
applies to every candidate (``CandidateRunner``, ``check_only``: no timing), so a k0 that
passes at load time passes the evaluator. A task source reaches it through a worker function
of its own that names what the source keeps of a checked task (``describe``, e.g.
``live.tasks.tritonbench.gold_check``); `live.gold.load` runs those in parallel workers.
Every gold-vs-gold check runs in a worker, never in the loading process.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from live.evaluator.autotune import install_first_config_autotune, install_quick_autotune
from live.evaluator.failures import exception_kind
from live.evaluator.messages import GoldCheckRequest
from live.evaluator.settings import worker_settings
from live.tasks.findings import TaskFindings

#: statuses of a load-time gold check that mean the gold code disagrees with itself
NONDETERMINISTIC = "nondeterministic"

#: rounds of a gold check in one worker: each round may add shapes where the gold code
#: disagrees with itself (unchecked) or that do not fit (dropped); the last must pass cleanly
MAX_ROUNDS = 4


def gold_check_in_worker(runner: Any, workdir: Path, task_spec: str, task_name: str,
                         describe: Callable[[Any], Any] | None = None,
                         findings: Callable[[Any], TaskFindings] | None = None,
                         verdicts: dict[str, dict[str, str]] | None = None,
                         drop_out_of_memory: bool = False,
                         shape_budget_s: float | None = None, shape_floor_s: float = 0.0,
                         shape_cap_s: float | None = None) -> dict[str, Any]:
    """Worker side: build the task, then judge its k0 as the evaluator judges any candidate.

    Returns ``status`` (``ok``, ``build_error``, ``nondeterministic``, ``retry`` or the
    evaluator's failure status), ``error``, ``recycle``, ``meta`` (``describe(task)``: what the
    source caches to rebuild the task without running it), ``shape_verdicts`` and
    ``shape_peaks``. `findings(task)`: what the source knows of the task's perf shapes before
    the check (``TaskFindings``: each one's input bytes, so a dropped shape takes every larger
    one with it; none: by index).

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
    meta = describe(task) if describe is not None else None
    known = {int(k): dict(v) for k, v in (verdicts or {}).items()}
    budget = None if shape_budget_s is None else ShapeBudget(
        started, float(shape_budget_s), float(shape_floor_s),
        None if shape_cap_s is None else float(shape_cap_s))
    try:
        sizes = findings(task).shape_bytes if findings is not None else None
        judgement = Judgement(runner, workdir, task, task_spec, task_name, meta, known,
                              drop_out_of_memory, budget, sizes)
        return {**judgement.run(), "build_s": build_s}
    finally:  # this worker's next check is another task's: its inputs are of no more use
        with contextlib.suppress(Exception):  # a sticky CUDA fault: the worker is replaced
            runner.release_inputs()
        if task.hooks.release is not None:
            task.hooks.release()


class ShapeBudget:
    """NOTE (D82): how long a check may go on checking performance inputs (see
    `gold_check_in_worker`): `share_s` from `started`, `floor_s` from a round's first input,
    never past `cap_s` from `started` (None: no cap)."""

    def __init__(self, started: float, share_s: float, floor_s: float,
                 cap_s: float | None) -> None:
        self.started, self.share_s, self.floor_s, self.cap_s = started, share_s, floor_s, cap_s

    def limits(self) -> dict[str, float]:
        """The request's limits, as seconds from now."""
        now = time.perf_counter()
        limit = {"shape_budget_s": max(0.0, self.started + self.share_s - now),
                 "shape_floor_s": self.floor_s}
        if self.cap_s is not None:
            limit["shape_cap_s"] = max(0.0, self.started + self.cap_s - now)
        return limit


def _larger_or_equal(task: Any, sizes: Sequence[int] | None, index: int) -> list[int]:
    """`index` and every perf shape at least as big (by input bytes, `sizes`; by index
    without sizes)."""
    if not sizes:
        return list(range(index, len(task.perf_shapes)))
    return [i for i in range(len(task.perf_shapes)) if sizes[i] >= sizes[index]]


class Judgement:
    """One gold check's rounds in a worker: the per-shape verdicts found so far, each shape's
    peak memory, and the time spent over every round."""

    def __init__(self, runner: Any, workdir: Path, task: Any, task_spec: str, task_name: str,
                 meta: Any, verdicts: dict[int, dict[str, str]], drop_out_of_memory: bool,
                 budget: ShapeBudget | None = None, sizes: Sequence[int] | None = None) -> None:
        self.runner, self.workdir, self.task = runner, workdir, task
        self.task_spec, self.task_name, self.meta = task_spec, task_name, meta
        self.verdicts = verdicts
        self.drop_out_of_memory = drop_out_of_memory
        self.budget = budget
        self.sizes = sizes  # each perf shape's input bytes (None: unknown)
        self.peaks: dict[int, int] = {}
        self.spent = {"rounds": 0, "compile_s": 0.0, "check_s": 0.0}  # every round's, added up

    def evaluate(self, request: GoldCheckRequest) -> dict[str, Any]:
        """One round: k0 judged by the worker's candidate runner."""
        response = self.runner.evaluate(request, self.workdir,
                                        on_compiled=lambda: None).as_dict()
        self.spent["rounds"] += 1
        for phase in ("compile_s", "check_s"):
            self.spent[phase] += float(response.get(phase) or 0.0)
        return response

    def request(self) -> GoldCheckRequest:
        """The next round's request: k0, checked only, every shape's verdict so far."""
        limit = self.budget.limits() if self.budget is not None else {}
        verdicts = self.verdicts
        return GoldCheckRequest(
            **limit, task_spec=self.task_spec, task_name=self.task_name, code=self.task.k0,
            seed=0, n_seeds=1, keep_going=True, measure_peaks=True,
            drop_shapes=tuple(sorted(i for i, v in verdicts.items() if v["kind"] == "dropped")),
            unchecked_shapes=tuple(sorted(i for i, v in verdicts.items()
                                          if v["kind"] == "unchecked")))

    def result(self, response: dict[str, Any], **extra: Any) -> dict[str, Any]:
        """What goes back to the parent: `response`'s outcome with the check's findings."""
        return {"status": response["status"], "error": response.get("error"),
                "failure_kind": response.get("failure_kind"),
                "recycle": bool(response.get("recycle")), "meta": self.meta, **self.spent,
                "shape_verdicts": {str(k): v for k, v in sorted(self.verdicts.items())},
                "shape_peaks": {str(k): v for k, v in sorted(self.peaks.items())},
                "source_note": response.get("source_note"), **extra}

    def drop(self, index: int, why: str) -> None:
        """Perf shape `index` and every larger one dropped (neither checked nor timed)."""
        for i in _larger_or_equal(self.task, self.sizes, index):
            if self.verdicts.get(i, {}).get("kind") != "dropped":
                reason = why if i == index else f"larger than perf shape {index}, which {why}"
                self.verdicts[i] = {"kind": "dropped", "reason": reason[:300]}

    def run(self) -> dict[str, Any]:
        """Rounds until one passes with every remaining shape compared, or a verdict."""
        task, verdicts = self.task, self.verdicts
        response: dict[str, Any] = {}
        for _ in range(MAX_ROUNDS):
            dropped = [i for i, v in verdicts.items() if v["kind"] == "dropped"]
            compared = len(task.perf_shapes) - len(verdicts)
            if task.perf_shapes and (len(dropped) == len(task.perf_shapes) or (
                    compared == 0 and task.hooks.source_check is None)):
                first = min(verdicts)
                return self.result({"status": "incorrect", "recycle": False, "error": (
                    f"no performance input left to {'time' if dropped else 'check'}: perf "
                    f"shape {first} {verdicts[first]['kind']}: {verdicts[first]['reason']}")})
            response = self.evaluate(self.request())
            self.peaks.update({int(k): int(v)
                               for k, v in (response.get("shape_peaks") or {}).items()})
            for index in response.get("not_reached") or ():
                verdicts[int(index)] = {"kind": "dropped", "reason": (
                    "not checked: the gold check's time for performance inputs ran out before "
                    "it on this machine")}
            if response["status"] == "ok":
                return self.result(response)
            failed = response.get("failed_shape")
            if response.get("recycle"):  # a sticky fault: this worker is done, a fresh one
                if failed is None:       # retries
                    return self.result(response)
                self.drop(int(failed), f"makes the gold code fail: "
                          f"{response.get('status')}: {response.get('error')}")
                return self.result(response, status="retry")
            failures = {int(k): v for k, v in (response.get("shape_failures") or {}).items()}
            if not failures:  # not a perf shape: the test code, or a failure ending the check
                if response["status"] != "incorrect" or failed is not None:
                    return self.result(response)
                return self.second_opinion(response)
            for index, failure in sorted(failures.items()):
                if failure["status"] == "incorrect":
                    verdicts[index] = {"kind": "unchecked", "reason": (
                        f"the gold code disagrees with itself under the same seed: "
                        f"{failure['error']}")[:300]}
                elif self.drop_out_of_memory:
                    self.drop(index, f"runs out of memory in the gold check: "
                              f"{failure['error']}")
                else:  # out of memory beside other checks: the parent retries it alone
                    return self.result({**response, "status": failure["status"],
                                        "error": failure["error"],
                                        "failure_kind": failure["failure_kind"]})
        return self.result(response, status=NONDETERMINISTIC, error=(
            f"nondeterministic: the gold code disagreed with itself on new shapes in each of "
            f"{MAX_ROUNDS} checks: {response.get('error')}"))

    def second_opinion(self, first: dict[str, Any]) -> dict[str, Any]:
        """k0 judged incorrect by the operator's own test code: gold against gold under the
        same seeds can only differ when the operator is nondeterministic; a second check says
        whether that happens every time."""
        second = self.evaluate(self.request())
        times = "in both of two checks" if second["status"] == "incorrect" else \
            "in one of two checks"
        return self.result({**first, "recycle": bool(second.get("recycle"))},
                           status=NONDETERMINISTIC,
                           error=f"nondeterministic: the gold code disagrees with itself under "
                                 f"the same seeds {times} (atomics, races, or memory it does not "
                                 f"own: uninitialised or out of bounds): {first.get('error')}")
