"""``kernelband tasks k0`` out of memory: a problem that ran out of room beside the others is
made again alone (and again on a resumed run), the worker frees what the compile left on the
device before the check, and the reasons say what failed.

The pool is replaced by a stand-in (``run_calls``), so these run on a CPU without torch.compile.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from live.evaluator import isolated
from live.gold.load import RETRY_MEMORY_MB, RETRY_WORKERS
from live.tasks.kernelbench import k0_extract, k0_report
from live.tasks.kernelbench.k0 import NoK0

MINI = Path(__file__).parent / "fixtures" / "kernelbench_mini"
SPEC = f"kernelbench:{MINI}"
RELU, MATMUL, SUM = "level1/1_ReLU", "level1/2_Matmul", "level1/3_Sum_over_a_dimension"
OOM = "CUDA out of memory. Tried to allocate 6.00 GiB."


class Pools:
    """Stands in for `run_calls`: answers each pool from `answers` (one dict per pool, by
    problem) and records the calls and settings of each."""

    def __init__(self, *answers: dict[str, dict[str, Any]]):
        self.answers = list(answers)
        self.asked: list[dict[str, Any]] = []

    def __call__(self, calls, on_result=None, **kwargs):
        answer = self.answers[len(self.asked)]
        self.asked.append({"keys": sorted(c.key for c in calls), **kwargs})
        results = {}
        for call in calls:
            results[call.key] = answer[call.key]
            on_result(call, results[call.key])
        return results


def no_kernel(reason: str = "inductor generated no Triton kernel") -> dict[str, Any]:
    return {"status": "no_k0", "reason": reason}


def test_problems_out_of_memory_are_made_again_alone(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pools = Pools(
        {RELU: {**no_kernel(f"torch.compile failed: OutOfMemoryError: {OOM}"),
                "failure_kind": "out_of_memory"},
         MATMUL: {"status": "error", "error": f"torch.OutOfMemoryError: {OOM}",
                  "failure_kind": "out_of_memory"},
         SUM: no_kernel()},
        {RELU: no_kernel("inductor generated no Triton kernel (it calls aten.relu)"),
         MATMUL: no_kernel("inductor generated no Triton kernel (it calls extern_kernels.mm)")})
    monkeypatch.setattr(isolated, "run_calls", pools)
    report = k0_report.build_k0s(f"{SPEC}@level1", tmp_path, device="cpu")
    assert [a["keys"] for a in pools.asked] == [sorted([RELU, MATMUL, SUM]),
                                                sorted([RELU, MATMUL])]
    alone = pools.asked[1]
    assert alone["workers"] == RETRY_WORKERS == alone["settings"].gpu_workers
    assert alone["memory_limit_mb"] == RETRY_MEMORY_MB
    assert report["problems"][RELU]["reason"].endswith("(it calls aten.relu)")
    assert report["problems"][MATMUL]["outcome"] == "no_k0"
    assert "torch.compile failed" not in json.dumps(report["levels"])
    kept = json.loads((tmp_path / "worker-results" / "level1__1_ReLU.json").read_text())
    assert kept["reason"].endswith("(it calls aten.relu)")


def test_a_check_out_of_memory_is_made_again(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A k0 made whose check ran out of device memory is made (and checked) again alone."""
    out_of_room = {"status": "ok", "code": "x = 1\n", "check_status": "runtime_error",
                   "check_error": f"OutOfMemoryError: {OOM}",
                   "check_failure_kind": "out_of_memory"}
    pools = Pools({RELU: out_of_room, MATMUL: no_kernel(), SUM: no_kernel()},
                  {RELU: no_kernel("alone")})
    monkeypatch.setattr(isolated, "run_calls", pools)
    report = k0_report.build_k0s(f"{SPEC}@level1", tmp_path, device="cpu")
    assert pools.asked[1]["keys"] == [RELU]
    assert report["problems"][RELU]["reason"] == "alone"


def test_a_resumed_run_makes_the_problems_out_of_memory_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = tmp_path / "worker-results"
    kept.mkdir()
    (kept / "level1__1_ReLU.json").write_text(json.dumps(
        {**no_kernel(f"torch.compile failed: OutOfMemoryError: {OOM}"),
         "failure_kind": "out_of_memory"}))
    (kept / "level1__2_Matmul.json").write_text(json.dumps(no_kernel()))
    pools = Pools({RELU: no_kernel("made"), SUM: no_kernel("made")})
    monkeypatch.setattr(isolated, "run_calls", pools)
    report = k0_report.build_k0s(f"{SPEC}@level1", tmp_path, device="cpu")
    assert pools.asked[0]["keys"] == sorted([RELU, SUM])
    assert report["problems"][RELU]["reason"] == "made"


def test_a_compile_out_of_memory_says_so_and_its_kind() -> None:
    import torch

    failed = k0_extract._failed("torch.compile failed", torch.OutOfMemoryError(OOM))
    assert str(failed) == f"torch.compile failed: OutOfMemoryError: {OOM}"
    assert failed.failure_kind == "out_of_memory"
    other = k0_extract._failed("torch.compile failed", ValueError("no\n  such   op"))
    assert str(other) == "torch.compile failed: ValueError: no such op"
    assert other.failure_kind is None
    cublas = k0_extract._failed("torch.compile failed", RuntimeError(
        "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"))
    assert cublas.failure_kind == "out_of_memory"


class FakeRunner:
    def __init__(self, device: str, events: list[str]):
        self.device = device
        self.events = events

    def evaluate(self, request, workdir, on_compiled):
        self.events.append("check")

        class Response:
            status, error, failure_kind = "ok", None, None
        return Response()


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_the_worker_frees_the_compile_before_the_check(device: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr(k0_extract, "k0_for", lambda problem, device_: events.append("compile")
                        or "x = 1\n")
    monkeypatch.setattr(k0_extract, "release_device_memory", lambda: events.append("release"))
    result = k0_extract.k0_in_worker(FakeRunner(device, events), tmp_path, SPEC,
                                     f"kernelbench/{RELU}")
    assert result["status"] == "ok" and result["check_status"] == "ok"
    assert events == (["compile", "release", "check"] if device == "cuda"
                      else ["compile", "check"])


def test_the_worker_passes_an_out_of_memory_kind_on(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def out_of_memory(problem, device):
        raise NoK0(f"torch.compile failed: OutOfMemoryError: {OOM}", "out_of_memory")

    monkeypatch.setattr(k0_extract, "k0_for", out_of_memory)
    result = k0_extract.k0_in_worker(FakeRunner("cpu", []), tmp_path, SPEC,
                                     f"kernelbench/{RELU}")
    assert result["status"] == "no_k0" and result["failure_kind"] == "out_of_memory"
    assert k0_report.out_of_room(result)


@pytest.mark.parametrize(("result", "reason", "counted"), [
    ({"status": "error", "error": "torch.AcceleratorError: CUDA error: out of memory\nSearch for "
      "`cudaErrorMemoryAllocation' in the CUDA documentation"},
     "worker error: torch.AcceleratorError: CUDA error: out of memory",
     "worker error: AcceleratorError"),
    ({"status": "error", "error": f"torch.OutOfMemoryError: {OOM}"},
     f"worker error: torch.OutOfMemoryError: {OOM}", "worker error: OutOfMemoryError"),
    ({"status": "timeout", "error": "ran past 600 s"}, "worker timeout: ran past 600 s",
     "worker timeout"),
    ({"status": "crashed"}, "worker crashed: no error given", "worker crashed"),
])
def test_a_worker_failure_says_what_failed(result: dict[str, Any], reason: str,
                                           counted: str) -> None:
    outcome, code = k0_report.judge(RELU, SPEC, f"kernelbench/{RELU}", result,
                                    lambda c, s, n: None)
    assert (outcome.outcome, outcome.reason, code) == ("error", reason, None)
    assert k0_report.reason_class(outcome) == counted


def test_a_reference_that_cannot_be_built_is_counted_by_its_exception() -> None:
    outcome = k0_report.K0Outcome(RELU, "no_k0", "making the reference model and its inputs "
                                  f"failed: OutOfMemoryError: {OOM}")
    assert k0_report.reason_class(outcome) == \
        "making the reference model and its inputs failed: OutOfMemoryError"
    compiled = k0_report.K0Outcome(RELU, "no_k0", f"torch.compile failed: Unsupported: {OOM}")
    assert k0_report.reason_class(compiled) == "torch.compile failed: Unsupported"


def test_a_reference_that_warns_compiles_in_one_graph() -> None:
    """``nn.InstanceNorm`` warns when the input's size is not its ``num_features``: with the
    warning reordered after the graph, ``fullgraph=True`` still compiles (and it still warns)."""
    import warnings

    import torch
    import torch._dynamo

    def forward(x):
        if x.shape[0] != 3:
            warnings.warn("input's size at dim=1 does not match num_features", stacklevel=2)
        return x * 2

    reorderable = torch._dynamo.config.reorderable_logging_functions
    saved = set(reorderable)
    reorderable.discard(warnings.warn)
    try:
        torch._dynamo.reset()
        with pytest.raises(Exception, match="warn"):
            torch.compile(forward, backend="eager", fullgraph=True)(torch.ones(4))
        torch._dynamo.reset()
        k0_extract.reorder_warnings()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = torch.compile(forward, backend="eager", fullgraph=True)(torch.ones(4))
    finally:
        torch._dynamo.reset()
        reorderable.clear()
        reorderable.update(saved)
    assert out.tolist() == [2.0] * 4
    assert [str(w.message) for w in caught] == [
        "input's size at dim=1 does not match num_features"]


STATEFUL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Keeps a hidden tensor as a plain attribute and replaces it at each call."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.hidden = torch.zeros(2, 4)

    def forward(self, x):
        self.hidden = self.hidden.to(x.device) + 1
        return self.fc(x) + self.hidden


def get_inputs():
    return [torch.rand(2, 4)]


def get_init_inputs():
    return []
'''


def test_the_compile_sees_the_model_as_built(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph is traced from the reference model's state before any call, the state the
    check's ModelNew starts from (an earlier eager call had replaced ``self.hidden``, and the
    k0 compiled from that state read a tensor its fresh model does not hold)."""
    import torch
    import torch._dynamo
    import torch._inductor.compile_fx
    import torch._inductor.utils

    from live.tasks.kernelbench import task
    from live.tasks.kernelbench.problems import Problem

    (tmp_path / "level3").mkdir()
    path = tmp_path / "level3" / "33_Stateful.py"
    path.write_text(STATEFUL)
    problem = Problem("level3", 33, "33_Stateful", path)
    seen: list[list[torch.Tensor]] = []
    relu = json.loads((Path(__file__).parent / "fixtures" / "kernelbench_k0" / "relu.json")
                      .read_text())

    def graph_as_is(gm, example_inputs):
        seen.append([t.clone() for t in example_inputs])
        return gm.forward

    build, inputs = task.ProblemRuntime.reference_model, task.make_inputs
    monkeypatch.setattr(task.ProblemRuntime, "reference_model",
                        lambda self, device: build(self, "cpu"))
    monkeypatch.setattr(task, "make_inputs", lambda runtime, shape, seed, device:
                        inputs(runtime, shape, seed, "cpu"))
    monkeypatch.setattr(torch._inductor.compile_fx, "compile_fx", graph_as_is)
    monkeypatch.setattr(torch._inductor.utils, "run_and_get_code",
                        lambda fn, *args: (fn(*args), [relu["output_code"]]))
    reorderable = torch._dynamo.config.reorderable_logging_functions
    saved = set(reorderable)
    try:
        compiled = k0_extract.compile_problem(problem, "cuda")
    finally:
        torch._dynamo.reset()
        reorderable.clear()
        reorderable.update(saved)
    assert "self.hidden" in compiled["graph_inputs"]
    (example,) = seen
    hidden = example[compiled["graph_inputs"].index("self.hidden")]
    assert torch.equal(hidden, torch.zeros(2, 4))
    assert compiled["n_outputs"] is None


def test_freeing_a_failed_device_does_not_hide_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """After CUDA's out-of-memory error the device may refuse every call: emptying the cache
    then raises, and the problem's reason (already made) must still come back."""
    import torch

    def failed() -> None:
        raise torch.AcceleratorError("CUDA error: out of memory")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", failed)
    k0_extract.release_device_memory()
