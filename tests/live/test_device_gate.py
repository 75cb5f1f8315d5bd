"""The device gate: an Nsight Compute session holds the GPU lock's exclusive side only while it
measures (live.profiler.gate), and gives it back if its program dies mid-turn."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from live.evaluator.gpu_lock import GpuLock
from live.evaluator.task_source import resolve_task
from live.profiler import NcuProfiler
from live.profiler.target import GATE_ENV

ADD = resolve_task("builtin", "add")

# A stand-in for `ncu ... python -m live.profiler.target`: starts up (STARTUP s), asks the gate for
# the device, "measures" (MEASURE s), says done (unless told to die mid-turn), then winds down.
FAKE = """#!{python}
import os, socket, sys, time
time.sleep({startup})
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ[{env!r}])
for turn in range({turns}):
    s.sendall(b"r")
    assert s.recv(1) == b"g"
    open({log!r}, "a").write(f"go {{time.monotonic()}}\\n")
    time.sleep({measure})
    if {die}:
        os._exit(3)
    s.sendall(b"d")
    time.sleep(0.2)
time.sleep({wind_down})
"""


def _fake_ncu(tmp_path, *, startup=0.8, measure=0.3, turns=2, die=False, wind_down=0.5):
    log = tmp_path / "turns.txt"
    fake = tmp_path / "ncu"
    fake.write_text(FAKE.format(python=sys.executable, startup=startup, env=GATE_ENV,
                                turns=turns, log=str(log), measure=measure, die=die,
                                wind_down=wind_down))
    fake.chmod(0o755)
    profiler = NcuProfiler("builtin", ncu_path=str(fake), timeout_s=30, quiet=True)
    profiler._metrics = ["gpu__time_duration.sum"]
    return profiler, log


def test_a_profiling_session_holds_the_device_only_while_it_measures(tmp_path):
    lock = GpuLock()
    profiler, log = _fake_ncu(tmp_path)
    profiler.device_gate = lock.exclusive
    shared_during_startup: list[float] = []

    def checker() -> None:  # an evaluation's check, while the session starts up
        time.sleep(0.2)
        t0 = time.monotonic()
        with lock.shared():
            shared_during_startup.append(time.monotonic() - t0)

    thread = threading.Thread(target=checker)
    started = time.monotonic()
    thread.start()
    result = profiler.profile("add", ADD.k0)
    took = time.monotonic() - started
    thread.join()
    assert len(log.read_text().splitlines()) == 2  # two turns, each given the device
    # held for the two 0.3 s turns, not the session's 1.5 s+ of start-up and wind-down
    assert 0.5 <= profiler.held_s <= 1.2 < took
    assert shared_during_startup and shared_during_startup[0] < 0.1
    assert lock.state == (0, False)
    assert not result.profiled  # the fake printed no CSV


@pytest.mark.parametrize("settings", [{}, {"batch": 2, "patience_s": 0.3}],
                         ids=["writer-preference", "patient"])
def test_a_turn_waits_for_the_checks_in_flight(tmp_path, settings):
    """The gate asks for the exclusive side like a timing: it waits for shared holders (with
    a patient lock, NOTE D81, its turn is one of the writers a close serves)."""
    lock = GpuLock(**settings)
    profiler, log = _fake_ncu(tmp_path, startup=0.1, turns=1, wind_down=0.0)
    profiler.device_gate = lock.exclusive
    lock.acquire_shared()
    released_at: list[float] = []

    def release_later() -> None:
        time.sleep(1.0)
        released_at.append(time.monotonic())
        lock.release_shared()

    threading.Thread(target=release_later).start()
    profiler.profile("add", ADD.k0)
    go = float(log.read_text().split()[1])
    assert released_at and go >= released_at[0]
    assert lock.state == (0, False)


def test_a_session_that_dies_mid_turn_gives_the_device_back(tmp_path):
    lock = GpuLock()
    profiler, log = _fake_ncu(tmp_path, startup=0.1, turns=1, die=True)
    profiler.device_gate = lock.exclusive
    profiler.profile("add", ADD.k0)
    assert log.read_text().startswith("go ")
    assert lock.state == (0, False)
    t0 = time.monotonic()
    with lock.exclusive():
        pass
    assert time.monotonic() - t0 < 0.5


def test_the_provider_spaces_batches_by_the_time_they_held_the_device(tmp_path):
    """With a gated profiler the provider takes no lock itself and counts only the turns
    against its share of the device."""
    from types import SimpleNamespace

    from live.evaluator.hashing import kernel_id
    from live.profiler.provider import SignatureProvider, SignatureTiming

    lock = GpuLock()
    profiler, _ = _fake_ncu(tmp_path, startup=0.5, turns=1, wind_down=0.5)
    profiler.device_gate = lock.exclusive  # as the runner's wiring makes it
    provider = SignatureProvider("reps", {"add": ADD}, profiler=profiler,
                                 device_alone=lock.exclusive,
                                 timing=SignatureTiming(batch_size=1, deadline_s=0.0))
    assert profiler.device_gate is not None
    kernel = SimpleNamespace(kernel_id=kernel_id(ADD.k0), code=ADD.k0, hw=None, prof9=None)
    provider.observe("add", kernel.kernel_id, ADD.k0, None, None)
    provider.reveal("add", 1, [kernel])
    deadline = time.monotonic() + 30
    while not provider.batches and time.monotonic() < deadline:
        time.sleep(0.05)
    provider.close()
    batch = provider.batches[0]
    assert 0.25 <= batch["held_s"] < 1.0 < batch["seconds"]
    assert lock.state == (0, False)


def test_a_session_reserves_its_program_s_memory_from_the_checks_pool(tmp_path):
    """A session's start-up overlaps checks now, so its program (a CUDA context and one task's
    inputs) holds bytes of the memory plan's pool for the session's whole life."""
    import functools
    from types import SimpleNamespace

    from live.evaluator.memory_plan import CONTEXT_BYTES, GIB, MemoryPool, session_reservation

    pool = MemoryPool(4 * GIB)
    plan = SimpleNamespace(need=lambda name: {"add": 1 * GIB, "softmax": 2 * GIB}[name])
    profiler, _ = _fake_ncu(tmp_path, startup=0.6, turns=1, wind_down=0.3)
    profiler.session_memory = functools.partial(session_reservation, pool, plan)
    seen: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.append(pool.out)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    profiler._run_session([("add", ADD.k0, "a"), ("softmax", ADD.k0, "b")], 2)
    stop.set()
    watcher.join()
    assert max(seen) == CONTEXT_BYTES + 2 * GIB  # the larger of the two tasks' needs
    assert pool.out == 0
