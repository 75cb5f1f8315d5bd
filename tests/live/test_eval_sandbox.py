"""The real evaluator on CPU (Triton interpreter): known-good and known-bad candidates.

One evaluator serves the whole module; after every bad candidate it must still judge a good one
correctly (it keeps serving).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from live.evaluator import EvalResult, Evaluator, EvaluatorConfig, kernel_id
from live.evaluator.sandbox import WorkerProcess
from live.evaluator.settings import WorkerSettings
from tests.live.fixtures.candidates.tiny_tasks import SPEC

CANDIDATES = Path(__file__).parent / "fixtures" / "candidates"


def source(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    os.environ["FAKE_API_KEY"] = "sk-planted-for-the-test"
    os.environ["SOME_SERVICE_TOKEN"] = "planted"
    try:
        with Evaluator(EvaluatorConfig(SPEC, device="cpu", timeout_s=5, compile_timeout_s=60,
                                       memory_limit_mb=8192)) as ev:
            yield ev
    finally:
        os.environ.pop("FAKE_API_KEY", None)
        os.environ.pop("SOME_SERVICE_TOKEN", None)


def assert_still_serves(ev: Evaluator) -> None:
    good = ev.evaluate("vadd", source("vadd_good"), seed=1)
    assert good.status == "ok", good.error


def test_good_candidate_is_ok_with_cpu_timings(evaluator: Evaluator) -> None:
    result = evaluator.evaluate("vadd", source("vadd_good"), seed=0)
    assert result.status == "ok", result.error
    assert result.correct and result.error is None
    assert result.timing_backend == "cpu-interpreter"
    assert result.kernel_id == kernel_id(source("vadd_good"))
    assert result.shape_ms is not None and len(result.shape_ms) == 2
    assert result.ms == pytest.approx(sum(result.shape_ms))
    assert result.speedup == pytest.approx(result.ref_ms / result.ms)
    assert result.registers is None  # no compiled kernel under the interpreter
    assert result.phi is not None and len(result.phi) == 5
    assert result.eval_latency_s is not None and result.worker_overhead_s is not None
    assert result.worker_overhead_s < 1.0  # ~5 ms on an idle machine; loose for shared CI
    assert not result.worker_recycled


def test_second_task_good_and_wrong(evaluator: Evaluator) -> None:
    assert evaluator.evaluate("rowsum", source("rowsum_good"), seed=0).status == "ok"
    wrong = evaluator.evaluate("rowsum", source("rowsum_wrong"), seed=0)
    assert wrong.status == "incorrect"
    assert "max abs error" in wrong.error and "shape" in wrong.error


@pytest.mark.parametrize(
    ("name", "status", "message"),
    [
        ("vadd_wrong", "incorrect", "max abs error"),
        ("vadd_unwritten", "incorrect", "NaN"),
        ("vadd_mutates", "incorrect", "input 0 was modified"),
        ("vadd_raises", "runtime_error", "ValueError: candidate gave up"),
        ("vadd_exit", "runtime_error", "worker died: exit code 3"),
        ("vadd_segfault", "runtime_error", "signal 11"),
        ("vadd_hang", "timeout", "exceeded 5 s"),
        ("vadd_hog", "runtime_error", "MemoryError"),
    ],
)
def test_bad_candidates_are_classified_and_evaluator_keeps_serving(
    evaluator: Evaluator, name: str, status: str, message: str
) -> None:
    result = evaluator.evaluate("vadd", source(name), seed=0)
    assert isinstance(result, EvalResult)
    assert result.status == status, result.error
    assert message in result.error
    assert not result.correct and result.ms is None
    assert_still_serves(evaluator)


def test_compile_phase_has_its_own_timeout(evaluator: Evaluator) -> None:
    saved = evaluator.compile_timeout_s
    evaluator.compile_timeout_s = 3.0
    try:
        result = evaluator.evaluate("vadd", source("vadd_slow_import"), seed=0)
    finally:
        evaluator.compile_timeout_s = saved
    assert result.status == "timeout"
    assert "compile exceeded 3 s" in result.error
    assert_still_serves(evaluator)


def test_syntax_error_is_compile_error(evaluator: Evaluator) -> None:
    result = evaluator.evaluate("vadd", "def vadd(x, y, out)\n    pass\n", seed=0)
    assert result.status == "compile_error"
    assert "SyntaxError" in result.error


def test_missing_entry_is_compile_error(evaluator: Evaluator) -> None:
    result = evaluator.evaluate("vadd", "def something_else():\n    pass\n", seed=0)
    assert result.status == "compile_error"
    assert "'vadd'" in result.error


def test_unknown_task_is_rejected_without_recycling(evaluator: Evaluator) -> None:
    before = evaluator.workers_started
    result = evaluator.evaluate("no_such_task", source("vadd_good"), seed=0)
    assert result.status == "rejected" and "no_such_task" in result.error
    assert evaluator.workers_started == before


def test_no_secret_reaches_the_worker(evaluator: Evaluator) -> None:
    assert os.environ["FAKE_API_KEY"]  # planted in the parent
    result = evaluator.evaluate("vadd", source("vadd_env"), seed=0)
    assert result.status == "ok", result.error


def test_faults_replace_the_worker(evaluator: Evaluator) -> None:
    before = evaluator.workers_started
    crashed = evaluator.evaluate("vadd", source("vadd_segfault"), seed=0)
    assert crashed.worker_recycled
    assert evaluator.workers_started == before + 1
    incorrect = evaluator.evaluate("vadd", source("vadd_wrong"), seed=0)
    assert not incorrect.worker_recycled  # a wrong answer does not cost a fresh worker
    assert evaluator.workers_started == before + 1


def test_kernel_row_matches_schema(evaluator: Evaluator) -> None:
    import pyarrow as pa

    from kbsim.trace.schema import KERNELS_SCHEMA
    from live.runner.records import kernel_row

    code = source("vadd_good")
    result = evaluator.evaluate("vadd", code, seed=0)
    row = kernel_row("r0", "vadd", code, result, None, ["tiling"], None)
    table = pa.Table.from_pylist([row], schema=KERNELS_SCHEMA)
    assert table.num_rows == 1
    assert row["profiled"] is False and row["hw_sig"] is None
    assert row["phi"][1] is None  # NaN (unknown registers) stored as null
    assert row["timing_backend"] == "cpu-interpreter"


def test_print_options_a_candidate_sets_do_not_reach_the_next_one() -> None:
    """TritonBench-G's `matrix_reduction` sets torch's print options to 'full' for the whole
    process; the next code in that worker must print (and take) as long as it would alone."""
    leaks = (source("vadd_good") + "\nimport numpy, torch\n"
             "torch.set_printoptions(profile='full')\nnumpy.set_printoptions(threshold=10**9)\n")
    checks = (source("vadd_good") + "\nimport numpy, torch\n"
              "assert torch._tensor_str.PRINT_OPTS.threshold == 1000, 'torch options leaked'\n"
              "assert numpy.get_printoptions()['threshold'] == 1000, 'numpy options leaked'\n")
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=5,
                                   compile_timeout_s=60, memory_limit_mb=8192)) as ev:
        first = ev.evaluate("vadd", leaks, seed=0)
        second = ev.evaluate("vadd", checks, seed=0)
        assert first.status == "ok" and not first.worker_recycled, first.error
        assert second.status == "ok", second.error
        assert ev.workers_started == 1  # both ran in the one worker


@pytest.mark.parametrize("start", ["fork", "exec"])
def test_a_workers_temporary_files_leave_with_it_however_it_ends(
        start: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's folder (its log, and as its TMPDIR its home, its candidates' folders and
    files) is removed with the worker: after a crash, after a hang it is killed for, and at
    close. A forked worker leaves with ``os._exit`` and a killed one runs no clean-up of its
    own, so before, each left its folders in the temp folder."""
    if start == "exec":
        monkeypatch.setenv("KERNELBAND_WORKER_START", "exec")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # this test's own temp folder, to be seen empty
    monkeypatch.setattr(tempfile, "tempdir", None)

    def folders() -> list[Path]:
        return sorted(tmp_path.glob("kb-worker-*"))

    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=2,
                                   compile_timeout_s=60, memory_limit_mb=8192)) as ev:
        assert ev.evaluate("vadd", source("vadd_good"), seed=0).status == "ok"
        (folder,) = folders()
        assert (folder / "worker.log").is_file()
        assert list(folder.glob("home-*")), "the worker's home is not in its own folder"
        crashed = ev.evaluate("vadd", source("vadd_segfault"), seed=0)
        hung = ev.evaluate("vadd", source("vadd_hang"), seed=0)
        assert crashed.worker_recycled and hung.status == "timeout" and hung.worker_recycled
        assert ev.workers_started == 3
        (now,) = folders()  # only the live worker's folder is left
        assert now != folder
    assert folders() == []
    assert list(tmp_path.iterdir()) == []


def test_inductor_keeps_the_machine_s_cache_not_the_worker_s(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's inductor caches under the temp folder by default: a worker's temp folder is its
    own and leaves with it, so workers are pointed at inductor's usual place, shared and kept
    between runs, unless the user chose one."""
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    worker = WorkerProcess(WorkerSettings(device="cpu", memory_limit_mb=4096))
    try:
        cache = Path(worker.env["TORCHINDUCTOR_CACHE_DIR"])
        assert cache.parent == Path(tempfile.gettempdir())
        assert cache.name.startswith("torchinductor_")
        assert worker.env["TMPDIR"] == str(worker.folder)
    finally:
        worker.shutdown()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/chosen/by/the/user")
    worker = WorkerProcess(WorkerSettings(device="cpu", memory_limit_mb=4096))
    try:
        assert worker.env["TORCHINDUCTOR_CACHE_DIR"] == "/chosen/by/the/user"
    finally:
        worker.shutdown()


def test_a_worker_whose_parent_is_gone_removes_its_own_folder() -> None:
    """A run killed with SIGKILL never removes its workers' folders: a worker whose requests
    end (its parent's end of the pipe closed) removes its own before it exits."""
    worker = WorkerProcess(WorkerSettings(device="cpu", memory_limit_mb=4096))
    try:
        worker.wait_ready(120)
        assert worker.folder.is_dir() and list(worker.folder.glob("home-*"))
        worker.proc.stdin.close()  # type: ignore[union-attr] - as when its parent dies
        assert worker.proc.wait(timeout=60) == 0
        assert not worker.folder.exists()
    finally:
        worker.kill()


def test_an_answer_written_just_before_the_worker_ends_is_the_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recycled worker writes its result and exits. If the parent's wait for a message ends
    just before the result arrives, and the worker has exited by the time the parent looks, the
    result in the pipe is the answer, not a death ("worker died: exit code 0" under load)."""
    from types import SimpleNamespace

    from live.evaluator import sandbox

    script = tmp_path / "plain.py"
    script.write_text("x = 1\n")
    worker = WorkerProcess(WorkerSettings(device="cpu", memory_limit_mb=4096))
    try:
        worker.wait_ready(120)
        assert worker.send({"op": "call", "function": "live.tasks.tritonbench.script."
                            "run_plain_script", "kwargs": {"operator_path": str(script)}})
        assert worker.proc.wait(timeout=60) == 0  # answered, then ended (a plain script recycles)
        real = sandbox.select.select
        waits: list[float] = []

        def select(rlist, wlist, xlist, timeout):  # type: ignore[no-untyped-def]
            waits.append(timeout)
            return ([], [], []) if len(waits) == 1 else real(rlist, wlist, xlist, timeout)

        # the first wait ends empty-handed, as if just before the answer came
        monkeypatch.setattr(sandbox, "select", SimpleNamespace(select=select))
        got = worker.receive(10)
        assert got.kind == "message", got.detail
        tag, payload = got.message
        assert tag == "result" and payload["status"] == "ok" and payload["recycle"], payload
        assert len(waits) == 2 and waits[1] == 0  # the look after the exit, not another wait
    finally:
        worker.kill()
