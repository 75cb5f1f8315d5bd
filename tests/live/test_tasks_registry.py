"""Task specs resolve to tasks; bad specs fail with one clear sentence; the Task format holds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from live.tasks.base import Task
from live.tasks.registry import (
    BUILTIN_TASKS,
    builtin_task,
    canonical_spec,
    resolve_task,
    resolve_tasks,
)


def test_builtin_spec_gives_every_task_once() -> None:
    tasks = resolve_tasks("builtin")
    assert [t.name for t in tasks] == list(BUILTIN_TASKS)
    assert len({t.name for t in tasks}) == len(tasks) >= 12
    assert all(t.source == "builtin" and t.call_style == "dps" for t in tasks)


def test_comma_list_keeps_order_and_ignores_spaces() -> None:
    assert [t.name for t in resolve_tasks(" layernorm, softmax ")] == ["layernorm", "softmax"]


def test_resolve_task_rebuilds_the_same_task() -> None:
    assert resolve_task("builtin", "softmax") is builtin_task("softmax")
    assert resolve_task("softmax,layernorm", "layernorm").name == "layernorm"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: resolve_tasks("softmax,softmx"),
         "unknown task 'softmx'; built-in tasks are: add,"),
        (lambda: resolve_tasks(" , "), "empty task spec"),
        (lambda: resolve_task("builtin", "nope"), "unknown task 'nope'"),
        (lambda: resolve_task("softmax,add", "layernorm"), "task 'layernorm' is not in spec"),
        (lambda: resolve_tasks("tritonbench:/no/such/dir"),
         "/no/such/dir is not a TritonBench-G folder: no such directory."),
    ],
)
def test_bad_specs_raise_one_sentence(call, message: str) -> None:
    with pytest.raises(ValueError) as info:
        call()
    text = str(info.value)
    assert message in text
    assert "\n" not in text


def test_unknown_name_lists_every_valid_name() -> None:
    with pytest.raises(ValueError) as info:
        builtin_task("gemm")
    assert all(name in str(info.value) for name in BUILTIN_TASKS)


def test_folder_without_operator_files_is_not_tritonbench(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="is not a TritonBench-G folder: no operator file"):
        resolve_tasks(f"tritonbench:{tmp_path}")


def test_call_style_is_validated() -> None:
    task = builtin_task("add")
    with pytest.raises(ValueError, match="call_style must be one of"):
        dataclasses.replace(task, call_style="inplace")
    with pytest.raises(ValueError, match="needs a run callable"):
        dataclasses.replace(task, call_style="returns")


def test_tolerance_lookup_accepts_torch_names_and_task_overrides() -> None:
    softmax = builtin_task("softmax")
    assert softmax.tolerance("torch.float16") == softmax.tolerance("float16") == (1e-4, 1e-2)
    assert builtin_task("add").tolerance("float32") == (1e-4, 1e-4)
    assert builtin_task("quantize_int8").tolerance("torch.int8") == (1.0, 0.0)
    assert builtin_task("add").tolerance("complex64") == (1e-5, 1e-5)


def test_call_needs_outputs_for_destination_passing() -> None:
    task: Task = builtin_task("add")
    with pytest.raises(ValueError, match="destination-passing"):
        task.call(object(), (), None)  # type: ignore[arg-type]


def test_canonical_spec_makes_tritonbench_paths_absolute(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tb").mkdir()
    assert canonical_spec(" tritonbench:tb ") == f"tritonbench:{tmp_path / 'tb'}"
    assert canonical_spec(" softmax,add ") == "softmax,add"


def test_relative_tritonbench_path_falls_back_to_the_launch_directory(
        tmp_path: Path, monkeypatch) -> None:
    fixture = Path(__file__).parent / "fixtures"
    monkeypatch.setenv("PWD", str(fixture))
    monkeypatch.chdir(tmp_path)  # like an evaluator worker in its temp dir
    task = resolve_task("tritonbench:tritonbench_mini", "add")
    assert task.name == "tritonbench/add"
