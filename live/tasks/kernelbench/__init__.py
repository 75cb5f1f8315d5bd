"""KernelBench (levels 1-3) as kernelband tasks: one ``Task`` per problem file.

Split by role:

- ``problems``: the file format (discovery, selectors, names), no torch;
- ``task``: one problem as a ``Task`` (reference, candidate ``ModelNew``, seeded inputs,
  KernelBench's correctness protocol as check settings);
- ``shortcuts``: the KernelBench part of the static check (a launched Triton kernel on
  ``ModelNew``'s path; none of the reference's torch operators there; no outputs kept across
  calls);
- ``script``: the problem run the benchmark's own way, in a worker;
- ``k0``: ``torch.compile``'s generated Triton code wrapped as ``ModelNew`` (the LLM-free k0);
- this module: loading behind gold-vs-gold checks on a GPU, through the format-independent
  ``live.gold.load`` (isolated parallel checks, on-disk cache, skip table), as
  TritonBench-G does. On the CPU, loading only reads the files (no problem runs), so every
  problem lists, whether or not it could run there.
"""

from __future__ import annotations

from typing import Any

from live.devices import resolve_device
from live.evaluator.isolated import Call
from live.gold.judge import gold_check_in_worker
from live.gold.load import CheckItem, checked_load, worker_function_name
from live.tasks.base import Task
from live.tasks.findings import TaskFindings
from live.tasks.kernelbench.problems import (
    NAME_PREFIX,
    Problem,
    canonical,
    find,
    folder,
    format_problem,
    select,
)
from live.tasks.kernelbench.script import run_problem
from live.tasks.kernelbench.task import describe_task, kernelbench_findings, kernelbench_task
from live.tasks.skips import Loaded, Skipped

__all__ = ["NAME_PREFIX", "Problem", "canonical", "find", "kernelbench_task", "load", "rebuild"]

#: bump when what a gold check of a problem does here changes (part of its cache key)
ADAPTER_VERSION = b"kernelbench-adapter-1"
#: the plain run of a problem, in a worker
PLAIN_RUN_TIMEOUT_S = 120.0


def gold_check(runner: Any, workdir: Any, **request: Any) -> dict[str, Any]:
    """Worker side: one problem's gold check (`gold_check_in_worker`), keeping what
    `describe_task` says a parent needs to build the task."""
    return gold_check_in_worker(runner, workdir, describe=describe_task, **request)


def _spec(arg: str) -> str:
    return f"kernelbench:{canonical(arg)}"


def _item(problem: Problem) -> CheckItem:
    contents = [ADAPTER_VERSION, problem.path.read_bytes()]
    if problem.k0_path is not None:
        contents.append(problem.k0_path.read_bytes())
    plain = Call(problem.name, worker_function_name(run_problem),
                 {"problem_path": str(problem.path)},
                 PLAIN_RUN_TIMEOUT_S)
    # bigger levels first: whole architectures take longest to check
    hint = float(problem.level[-1]) + len(contents[1]) / 10000
    return CheckItem(problem.name, problem.task_name, tuple(contents), plain, cost_hint=hint)


def load(arg: str, options: Any = None) -> Loaded:
    """The problems `arg` selects: on a GPU behind their gold-vs-gold check; elsewhere as read
    (a file that is not a KernelBench problem is skipped with its reason either way)."""
    from live.tasks.sources import LoadOptions

    options = options or LoadOptions()
    spec = _spec(arg)
    problems, skipped = [], []
    for problem in select(arg):
        why = format_problem(problem.path)
        if why is None:
            problems.append(problem)
        else:
            skipped.append(Skipped(problem.name, why))
    if resolve_device(getattr(options, "device", "auto") or "auto") != "cuda":
        return Loaded([kernelbench_task(p, spec) for p in problems], skipped)
    by_name = {p.name: p for p in problems}

    def build(item: CheckItem, meta: Any) -> tuple[Task, TaskFindings]:
        return (kernelbench_task(by_name[item.name], spec),
                kernelbench_findings(meta if isinstance(meta, dict) else {}))

    loaded = checked_load(spec, [_item(p) for p in problems], options,
                          check=gold_check, build=build)
    loaded.skipped[:0] = skipped
    return loaded


def rebuild(arg: str, name: str) -> Task:
    """One problem's task by name (``level1/19_ReLU`` or ``kernelbench/level1/19_ReLU``)."""
    return kernelbench_task(find(arg, name), _spec(arg))


def language_of(arg: str, name: str) -> str:
    return "triton"


def root_of(arg: str) -> str:
    """The folder of a spec argument, absolute."""
    return str(folder(arg).resolve())
