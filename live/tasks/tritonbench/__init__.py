"""TritonBench-G adapter: a TritonBench-G checkout (or the KernelBand authors' corrected copy) as
kernelband tasks.

Split by role:

- ``format``: the file format (operator files, performance scripts, discovery, retargeting);
- ``operator``: one operator as a ``Task`` (inputs via ``to_cuda``, seeded test code, the
  reference, ``result_gold`` comparison, the metadata a cached load builds from);
- ``script``: running an operator file as a plain script, in a worker;
- this module: loading a folder behind gold-vs-gold checks, through the format-independent
  ``live.gold.load`` (checks in parallel sandboxed workers, on-disk cache, skip report), each
  operator checked in a worker by ``gold_check``.

``load_tritonbench(path)`` returns the operators that pass their gold-vs-gold check on this
machine (GPU if available, else the CPU interpreter on the two smallest inputs) and, as
``skipped``, each failure with its reason (and whether the operator also fails as a plain script)
instead of silently counting them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from live.evaluator.isolated import Call
from live.gold.judge import gold_check_in_worker
from live.gold.load import CheckItem, checked_load, worker_function_name
from live.tasks.base import Task
from live.tasks.findings import TaskFindings
from live.tasks.skips import Loaded
from live.tasks.tritonbench.format import (
    NAME_PREFIX,
    PERF_SUFFIX,
    SEPARATOR,
    OperatorSource,
    discover,
    performance_utils_path,
    retarget,
    split_operator_file,
)
from live.tasks.tritonbench.operator import (
    OperatorMeta,
    code_part,
    compare_results,
    flatten_outputs,
    make_inputs,
    move_entry,
    operator_meta,
    seeded_rng,
    tritonbench_findings,
    tritonbench_task,
)
from live.tasks.tritonbench.script import run_plain_script

__all__ = ["NAME_PREFIX", "PERF_SUFFIX", "SEPARATOR", "OperatorMeta", "OperatorSource",
           "code_part", "compare_results", "describe_task", "discover", "flatten_outputs",
           "gold_check",
           "load_checked", "load_tritonbench", "make_inputs", "move_entry", "operator_meta",
           "task_findings", "tritonbench_findings",
           "retarget", "seeded_rng", "split_operator_file", "tritonbench_task"]

#: part of the check-cache key of an operator whose test code does not bind ``result_gold``:
#: bump when what a check of such an operator does here changes (2: results kept under another
#: name). An operator that binds it is checked as before, so its key, and the verdicts kept
#: for it (a recording's seeded check cache), stay as they were.
ADAPTER_VERSION = b"tritonbench-adapter-2"
_BINDS_RESULT_GOLD = re.compile(r"^\s*result_gold\s*[:=]", re.MULTILINE)
#: seconds a plain-script run may take (the benchmark's own scripts took 4-30 s on an H200)
PLAIN_SCRIPT_TIMEOUT_S = 60.0


def describe_task(task: Task) -> dict[str, Any]:
    """Worker side: the ``OperatorMeta`` a parent builds ``task`` from, as a dict."""
    path = task.source.removeprefix("tritonbench:")
    return operator_meta(path, task.name.removeprefix(NAME_PREFIX)).to_dict()


def task_findings(task: Task) -> TaskFindings:
    """Worker side: what is known of ``task``'s perf inputs before its check (their bytes)."""
    return tritonbench_findings(OperatorMeta.from_dict(describe_task(task)))


def gold_check(runner: Any, workdir: Path, **request: Any) -> dict[str, Any]:
    """Worker side: one operator's gold check (`gold_check_in_worker`), keeping what
    `describe_task` says a parent needs to build the task."""
    return gold_check_in_worker(runner, workdir, describe=describe_task,
                                findings=task_findings, **request)


def _item(source: OperatorSource) -> CheckItem:
    contents = [source.operator_path.read_bytes()]
    if source.perf_path is not None:
        contents.append(source.perf_path.read_bytes())
        utils = performance_utils_path(source.perf_path.parent)
        contents.append(utils.read_bytes() if utils is not None else b"")
    if not _BINDS_RESULT_GOLD.search(source.test_code):
        contents.append(ADAPTER_VERSION)
    plain = Call(f"{source.op}", worker_function_name(run_plain_script),
                 {"operator_path": str(source.operator_path)}, PLAIN_SCRIPT_TIMEOUT_S)
    return CheckItem(source.op, NAME_PREFIX + source.op, tuple(contents), plain,
                     cost_hint=check_cost_hint(contents[0].decode("utf-8", "replace")))


def remember_hollow(path: Path, op: str, device: str, hollow: str) -> bool:
    """Keep `hollow` (why operator `op`'s passing plain script, or its passing gold check,
    proves nothing, from `live.tasks.tritonbench.sanitize`) in its cached check record, so that
    every later load on this machine shows it with the skip (a passing check with it is a skip:
    `live.gold.load.checked_load`); False when there is no record to keep it in."""
    from live.gold import cache

    source = next((s for s in discover(Path(path).resolve()) if s.op == op), None)
    if source is None:
        return False
    key = cache.entry_key(list(_item(source).contents), cache.environment(device))
    record = cache.read(key)
    if record is None:
        return False
    cache.write(key, {**record, "hollow": hollow})
    return True


def check_cost_hint(operator_code: str) -> float:
    """How slow an operator's gold check is likely to be, to start the slow ones first.

    NOTE (D88): its source's length in thousands of characters (more and longer kernels to
    compile, more test cases), plus, for an autotuned kernel (benchmarked on every
    configuration for every performance input), 1 and a quarter per written-out configuration.
    On four H200 cold loads' measured check times, a 16-worker pool that takes checks in this
    order ends in 283-312 s, against 302-353 s by configurations alone and 267-296 s by the
    measured times themselves (`benchmarks/tritonbench_check_order.py`, a model)."""
    hint = len(operator_code) / 1000
    if "autotune" in operator_code:
        hint += 1.0 + 0.25 * operator_code.count("Config(")
    return hint


def load_checked(path: Path, options: Any = None, ops: Sequence[str] | None = None) -> Loaded:
    """Every operator under ``path`` (or only those named in ``ops``: a name not under
    ``path`` is an error) behind its gold-vs-gold check (``LoadOptions``: device, cache,
    progress, workers, timeout)."""
    from live.tasks.sources import LoadOptions

    path = Path(path).resolve()
    found = discover(path)
    if ops is not None:
        known = {source.op for source in found}
        unknown = [op for op in ops if op not in known]
        if unknown:
            raise ValueError(f"{len(unknown)} of the {len(ops)} operators asked for are not in "
                             f"{path}: {', '.join(unknown[:10])}"
                             f"{', ...' if len(unknown) > 10 else ''}")
    sources = [s for s in found if ops is None or s.op in ops]
    items = [_item(source) for source in sources]

    def build(item: CheckItem, meta: dict[str, Any]) -> tuple[Task, TaskFindings]:
        operator = OperatorMeta.from_dict(meta)
        return tritonbench_task(path, item.name, operator), tritonbench_findings(operator)

    return checked_load(f"tritonbench:{path}", items, options or LoadOptions(),
                        check=gold_check, build=build)


def load_tritonbench(
    path: Path | str, device: str | None = None, ops: Sequence[str] | None = None,
    *, use_cache: bool = True, workers: int | None = None,
) -> tuple[list[Task], list[tuple[str, str]]]:
    """Every operator under ``path`` that passes its gold-vs-gold check on ``device`` (default:
    cuda when available, else cpu), and ``skipped``: ``(op, reason)`` for each one that does not
    (no performance script, a script or test that fails, gold outputs that disagree with
    themselves, a crash), the reason ending with the plain-script outcome. ``ops`` restricts
    loading to those operators."""
    from live.tasks.sources import LoadOptions

    options = LoadOptions(device=device or "auto", use_cache=use_cache, workers=workers)
    loaded = load_checked(Path(path), options, ops)
    return loaded.tasks, loaded.skipped_pairs
