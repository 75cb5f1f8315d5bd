"""What the policy sees of signatures, and when (issue 15): roofline signatures, the lag rule,
background batches, and the fallback when Nsight Compute is missing or refuses."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

import pytest

from live.hardware import gpu_peaks, kernel_roofline_signature, roofline_signature
from live.profiler import NcuProfiler, ProfileResult
from live.profiler.provider import SignatureProvider, SignatureTiming, roofline_of_result
from live.tasks.registry import resolve_task

ADD = resolve_task("builtin", "add")
H100 = "NVIDIA H100 80GB HBM3"


@dataclass
class K:
    kernel_id: str
    code: str
    hw: list | None = None
    prof9: list | None = None


class FakeNcu:
    """Profiles in the background; `gate` holds a batch until the test lets it go."""

    name = "ncu"

    def __init__(self, refuse: bool = False) -> None:
        self.unavailable_reason: str | None = None
        self.refuse = refuse
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()

    @property
    def available(self) -> bool:
        return self.unavailable_reason is None

    def profile(self, task: str, code: str) -> ProfileResult:
        return self.profile_many(task, [code])[0]

    def profile_many(self, task: str, codes: list[str]) -> list[ProfileResult]:
        self.gate.wait(10)
        self.calls.append(list(codes))
        if self.refuse:
            self.unavailable_reason = "ncu refused: ERR_NVGPUCTRPERM"
            return [ProfileResult(c, task, profiled=False) for c in codes]
        return [ProfileResult(c, task, profiled=True, profiler="ncu", hw_sig=(90.0, 1.0, 2.0),
                              profile9=tuple([1.0] * 9)) for c in codes]


def test_roofline_signature_is_bandwidth_and_compute_percent_of_peak():
    peaks = gpu_peaks("h100-sxm")
    shape = {"N": 1 << 24}
    bound_ms = ADD.bytes_moved(shape) / (peaks.dram_gbps * 1e9) * 1e3
    sm, dram, l2 = roofline_signature(ADD, shape, 2 * bound_ms, peaks)
    assert dram == pytest.approx(50.0)
    assert l2 == pytest.approx(70.0)  # L2_PER_DRAM = 1.4
    assert sm == pytest.approx(100 * ADD.flops(shape) / (2 * bound_ms * 1e-3) / 66.9e12)
    assert roofline_signature(ADD, shape, bound_ms / 3, peaks)[1] == 100.0  # capped
    assert roofline_signature(ADD, shape, 0.0, peaks) is None
    # the middle perf shape, the one Nsight Compute profiles
    shape_ms = [1.0, 2 * bound_ms, 3.0]
    assert kernel_roofline_signature(ADD, shape_ms, peaks)[1] == pytest.approx(50.0)
    assert roofline_of_result(ADD, ADD.perf_shapes, shape_ms, peaks)[1] == pytest.approx(50.0)


def _provider(mode: str, profiler, lag: int = 2, batch: int = 8, deadline: float = 60.0,
              share: float = 1.0, on_reveal=None):
    provider = SignatureProvider(mode, {"add": ADD}, gpu_name=H100, profiler=profiler,
                                 timing=SignatureTiming(lag, batch, deadline, share),
                                 on_reveal=on_reveal)
    for kid in ("a", "b"):
        provider.observe("add", kid, f"code-{kid}", ADD.perf_shapes, [0.1, 0.2, 0.4])
    return provider


def _wait_for(cond, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cond()


def test_reps_sees_roofline_until_the_profile_is_back_and_the_lag_passed():
    ncu = FakeNcu()
    reveals = []
    provider = _provider("reps", ncu, lag=2, deadline=0.05,
                         on_reveal=lambda *args: reveals.append(args))
    roofline = provider.roofline("add", "a")
    assert roofline is not None
    kernels = [K("a", "code-a")]
    assert provider.reveal("add", 5, kernels) == [(roofline, None)]  # asked at step 5
    _wait_for(lambda: provider.batches)  # the batch's deadline passed: profiled
    assert provider.reveal("add", 6, kernels) == [(roofline, None)]  # back, but within the lag
    hw, prof9 = provider.reveal("add", 7, kernels)[0]
    assert hw == [90.0, 1.0, 2.0] and prof9 == [1.0] * 9
    assert provider.reveal("add", 30, kernels)[0][0] == [90.0, 1.0, 2.0]
    assert ncu.calls == [["code-a"]]
    assert reveals == [("add", "a", 5, 7)]  # the first showing, recorded once
    provider.close()


def test_reps_never_waits_for_a_slow_profile():
    ncu = FakeNcu()
    ncu.gate.clear()  # the profiler is stuck
    provider = _provider("reps", ncu, lag=1, deadline=0.0)
    started = time.perf_counter()
    for step in range(5):
        hw, _ = provider.reveal("add", step, [K("a", "code-a")])[0]
        assert hw == provider.roofline("add", "a")
    assert time.perf_counter() - started < 1.0
    ncu.gate.set()
    _wait_for(lambda: provider.batches)
    assert provider.reveal("add", 5, [K("a", "code-a")])[0][0] == [90.0, 1.0, 2.0]
    provider.close()


def test_profiling_holds_the_device_at_most_its_share():
    ncu = FakeNcu()
    slow = ncu.profile_many

    def profile_many(task, codes):
        time.sleep(0.2)
        return slow(task, codes)

    ncu.profile_many = profile_many
    provider = _provider("reps", ncu, lag=1, batch=1, deadline=0.0, share=0.5)
    provider.reveal("add", 0, [K("a", "code-a"), K("b", "code-b")])
    _wait_for(lambda: len(provider.batches) == 2)
    first, second = provider.batches
    gap = second["started"] - first["ended"]
    assert gap >= 0.9 * first["seconds"]  # share 0.5: idle at least as long as it held
    provider.close()


def test_lag_zero_waits_for_the_profile_like_before():
    provider = _provider("reps", FakeNcu(), lag=0)
    assert provider.reveal("add", 0, [K("a", "code-a")])[0][0] == [90.0, 1.0, 2.0]
    provider.close()


def test_a_full_batch_starts_without_waiting_for_anyone():
    ncu = FakeNcu()
    provider = _provider("reps", ncu, lag=3, batch=2)
    provider.reveal("add", 0, [K("a", "code-a"), K("b", "code-b")])
    for _ in range(200):
        if provider.batches:
            break
        threading.Event().wait(0.01)
    assert ncu.calls == [["code-a", "code-b"]]
    assert provider.batches[0]["kernels"] == 2
    provider.close()


def test_missing_ncu_switches_v2_to_roofline_with_one_warning(caplog):
    profiler = NcuProfiler("builtin", ncu_path=None, device="cuda", quiet=True)
    profiler.ncu_path = None
    if profiler.available:
        pytest.skip("ncu is installed on this machine")
    with caplog.at_level(logging.WARNING):
        provider = _provider("reps", profiler)
        seen = [provider.reveal("add", step, [K("a", "code-a"), K("b", "code-b")])
                for step in range(6)]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "roofline" in warnings[0].getMessage()
    assert provider.mode == "roofline" and "ncu" in provider.fallback_reason
    assert all(s[0][0] == provider.roofline("add", "a") for s in seen)
    assert provider.describe()["fallback"] == provider.fallback_reason


def test_ncu_that_refuses_mid_run_switches_to_roofline_once(caplog):
    ncu = FakeNcu(refuse=True)
    with caplog.at_level(logging.WARNING):
        provider = _provider("reps", ncu, lag=0)
        hw, _ = provider.reveal("add", 0, [K("a", "code-a")])[0]  # waits, the batch refuses
        assert hw == provider.roofline("add", "a")
        assert provider.reveal("add", 1, [K("b", "code-b")])[0][0] == provider.roofline("add",
                                                                                         "b")
    assert provider.mode == "roofline"
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1
    assert len(ncu.calls) == 1  # nothing is sent to a refusing profiler again
    provider.close()


def test_roofline_mode_and_unknown_gpus():
    provider = SignatureProvider("roofline", {"add": ADD}, gpu_name="Some Future GPU")
    assert provider.observe("add", "a", "x", ADD.perf_shapes, [0.1, 0.2, 0.4]) is None
    assert provider.reveal("add", 0, [K("a", "x")]) == [(None, None)]
    off = SignatureProvider("off", {"add": ADD}, gpu_name=H100)
    assert off.reveal("add", 0, [K("a", "x", hw=[1.0, 2.0, 3.0])]) == [(None, None)]


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="needs TRITON_INTERPRET=1")
def test_live_run_without_ncu_records_the_fallback_once(tmp_path, caplog):
    from kbsim.trace.reader import load_trace
    from live.evaluator import Evaluator, EvaluatorConfig
    from live.proposers import make_proposer
    from live.runner import RunConfig
    from live.runner.runner import LiveRunner

    config = RunConfig(out=str(tmp_path / "t"), tasks="add,softmax", policy="kernelband-v2",
                       steps=3, device="cpu", profile="reps", in_flight=2)
    with caplog.at_level(logging.WARNING), Evaluator(EvaluatorConfig("add,softmax", device="cpu",
                                                                     workers=1,
                                                                     timeout_s=60)) as ev:
        LiveRunner(config, make_proposer("mutate"), show_progress=False, evaluator=ev).run()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
                and "Nsight" in r.getMessage()]
    assert len(warnings) == 1 and "roofline" in warnings[0]
    signatures = load_trace(tmp_path / "t").manifests[0]["signatures"]
    assert signatures["requested"] == "reps" and signatures["mode"] == "roofline"


def test_profile_items_puts_several_tasks_in_one_session(tmp_path):
    """One ncu session for a batch whatever its tasks: the target gets --item TASK=FILE."""
    import sys

    log_path = tmp_path / "args.txt"
    fake = tmp_path / "ncu"
    fake.write_text(f"#!{sys.executable}\nimport sys\n"
                    f"open({str(log_path)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n")
    fake.chmod(0o755)
    profiler = NcuProfiler("builtin", ncu_path=str(fake), timeout_s=30, quiet=True)
    profiler._metrics = ["gpu__time_duration.sum"]
    softmax = resolve_task("builtin", "softmax")
    results = profiler.profile_items([("add", ADD.k0), ("softmax", softmax.k0)])
    sessions = log_path.read_text().splitlines()
    assert "--item add=" in sessions[0] and "--item softmax=" in sessions[0]
    # profiling starts off: the target turns it on for the measured calls (the device gate)
    assert "--profile-from-start off" in sessions[0]
    assert [r.task_id for r in results] == ["add", "softmax"]
    assert not any(r.profiled for r in results)  # the fake printed no CSV


def test_close_with_flush_profiles_what_is_queued_and_plain_close_drops_it():
    ncu = FakeNcu()
    provider = _provider("reps", ncu, lag=1, deadline=600.0)  # no batch would start on its own
    provider.reveal("add", 0, [K("a", "code-a")])
    provider.close(flush=True)
    assert ncu.calls == [["code-a"]]
    dropped = FakeNcu()
    other = _provider("reps", dropped, lag=1, deadline=600.0)
    other.reveal("add", 0, [K("a", "code-a")])
    other.close()
    assert dropped.calls == []


def test_provisional_until_nsight_is_shown_and_roofline_mode_is_final():
    provider = _provider("reps", FakeNcu(), lag=1, deadline=0.0)
    kernels = [K("a", "code-a")]
    provider.reveal("add", 0, kernels)
    assert provider.provisional("add", "a")  # the roofline signature, to be replaced
    _wait_for(lambda: provider.batches)
    assert provider.reveal("add", 1, kernels)[0][0] == [90.0, 1.0, 2.0]
    assert not provider.provisional("add", "a")
    provider.close()
    roofline = _provider("roofline", None)
    roofline.reveal("add", 0, kernels)
    assert not roofline.provisional("add", "a")


def test_a_resumed_run_continues_the_timing_of_the_interrupted_one():
    """What the replay of recorded steps tells the provider: asked steps, recorded profiles,
    first showings (not recorded again); an unprofiled representative is queued again."""
    ncu = FakeNcu()
    reveals = []
    provider = SignatureProvider("reps", {"add": ADD}, gpu_name=H100, profiler=ncu,
                                 timing=SignatureTiming(2, 8, 0.0, 1.0),
                                 on_reveal=lambda *args: reveals.append(args))
    for kid in ("a", "b", "c"):
        provider.remember("add", kid, f"code-{kid}", (1.0, 2.0, 3.0))
    assert provider.roofline("add", "a") == (1.0, 2.0, 3.0)
    provider.resume_asked("add", "a", asked_step=1, shown=True, hw=[5.0, 6.0, 7.0],
                          prof9=None)
    provider.resume_asked("add", "b", asked_step=3, shown=False, hw=[8.0, 9.0, 10.0],
                          prof9=None)
    provider.resume_asked("add", "c", asked_step=3, shown=False, hw=None, prof9=None)
    kernels = [K("a", "code-a"), K("b", "code-b"), K("c", "code-c")]
    assert provider.reveal("add", 4, kernels)[:2] == [([5.0, 6.0, 7.0], None),
                                                      ((1.0, 2.0, 3.0), None)]
    _wait_for(lambda: provider.batches)
    assert ncu.calls == [["code-c"]]  # only the one without a recorded profile
    seen = provider.reveal("add", 5, kernels)
    assert [hw for hw, _ in seen] == [[5.0, 6.0, 7.0], [8.0, 9.0, 10.0], [90.0, 1.0, 2.0]]
    assert reveals == [("add", "b", 3, 5), ("add", "c", 3, 5)]  # "a" was shown before
    provider.close()


@pytest.mark.parametrize("past_deadline", [False, True])
def test_the_end_of_a_run_profiles_what_was_asked_unless_max_wall_passed(past_deadline, caplog):
    """At the end of a run the queued representatives are profiled and recorded; past --max-wall
    they are left (to `kernelband traces profile`) and the run ends at once."""
    from types import SimpleNamespace

    from live.runner.runner import LiveRunner

    ncu = FakeNcu()
    ncu.gate.clear()  # every batch waits for the test
    provider = _provider("reps", ncu, lag=1, batch=8, deadline=60.0)  # nothing is due yet
    provider.reveal("add", 0, [K("a", "code-a"), K("b", "code-b")])
    assert provider.pending() == 2
    runner = LiveRunner.__new__(LiveRunner)
    runner.signatures = provider
    runner.config = SimpleNamespace(out="trace-dir")
    runner._deadline = time.monotonic() + (-1.0 if past_deadline else 600.0)
    if not past_deadline:
        threading.Timer(0.2, ncu.gate.set).start()  # the flush profiles the queue
    started = time.perf_counter()
    with caplog.at_level(logging.INFO, logger="live.runner.runner"):
        runner._close_signatures()
    if past_deadline:
        assert ncu.calls == [] and time.perf_counter() - started < 5.0
        assert "2 representative(s) asked for were not profiled" in caplog.text
        assert "kernelband traces profile trace-dir" in caplog.text
    else:
        assert ncu.calls == [["code-a", "code-b"]]
        assert provider.pending() == 0
    ncu.gate.set()
