"""The worker process: ``python -m live.evaluator.worker`` (started by `sandbox.WorkerProcess`).

It reads its settings (``live.evaluator.settings.WorkerSettings``, the first frame), imports
torch and triton once, says ``ready``, then serves requests one at a time over
stdin/stdout frames: an ``EvaluateRequest``, answered with a ``WorkerReply`` (see
``live.evaluator.messages``), or a ``{"op": "call"}`` dict, answered with a dict. The
candidate's own prints go to stderr, a log file. Each candidate runs in a fresh temp dir as
cwd. After a runtime fault (CUDA errors poison the context) it answers, then exits, and the
parent starts a fresh one.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any


def _protocol_streams():
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # candidate prints must not corrupt the protocol
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    return proto_in, proto_out


def _device_info(device: str) -> dict[str, Any]:
    import torch

    from live.evaluator.metadata import DeviceLimits

    if device != "cuda":
        return {"device": "cpu", "device_name": "cpu (TRITON_INTERPRET=1)",
                "limits": DeviceLimits(name="cpu").__dict__}
    props = torch.cuda.get_device_properties(0)
    limits = DeviceLimits(
        name=props.name,
        sm_count=props.multi_processor_count,
        max_threads_per_sm=getattr(props, "max_threads_per_multi_processor", 2048),
        regs_per_sm=getattr(props, "regs_per_multiprocessor", 65536),
        shared_bytes_per_sm=getattr(props, "shared_memory_per_multiprocessor", 233472),
        l2_bytes=getattr(props, "L2_cache_size", 50 * 1024 * 1024),
    )
    return {"device": "cuda", "device_name": props.name, "limits": limits.__dict__,
            "capability": f"{props.major}.{props.minor}", "torch": torch.__version__}


def _print_options_resetter() -> Callable[[], None]:
    """A function that puts torch's and NumPy's print options back as they are now.

    The code a worker runs may change them for the whole process: TritonBench-G's
    `matrix_reduction` calls ``torch.set_printoptions(profile='full')``, and
    `nested_loops_processing`, which prints its 4 to 8 million element outputs, then took
    145-170 s instead of 0.4 s when it was next in the same worker (three of ten H200 cold
    loads; in one it ended the load); a live run's candidates could do the same."""
    import numpy
    import torch

    numpy_options = numpy.get_printoptions()

    def reset() -> None:
        torch.set_printoptions(profile="default")
        numpy.set_printoptions(**numpy_options)

    return reset


#: inductor's C++ code cache module, which names its precompiled-header folder when imported
INDUCTOR_CODECACHE = "torch._inductor.codecache"


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then(module)` right after module `name` is first imported, then steps aside."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)  # the finders that would have found it
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run_module(module)
            self.then(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def share_inductor_headers() -> None:
    """Inductor's precompiled C++ headers in its compile cache (``TORCHINDUCTOR_CACHE_DIR``,
    which `sandbox.WorkerProcess` sets to the machine's shared one unless the user did), not in
    this worker's own temporary folder.

    Inductor keeps them, "persistent past program runtime", under the temp folder as it is
    when its code cache module is imported (``_HEADER_DIR``); in a worker that is its TMPDIR,
    removed with it, so every worker that compiled C++ (``torch.compile`` on the CPU: a
    KernelBench reference's timing under torch.compile, a candidate's own torch.compile)
    built them again: ~5 CPU-seconds of g++ each. The folder is set as soon as that module is
    imported (a one-time import hook: nothing is imported ahead of need); where torch names
    it otherwise, nothing changes."""
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not cache:
        return

    def share(module: Any) -> None:
        if isinstance(getattr(module, "_HEADER_DIR", None), str):
            module._HEADER_DIR = os.path.join(cache, "precompiled_headers")
            module._HEADER_LOCK_DIR = os.path.join(module._HEADER_DIR, "locks")

    if INDUCTOR_CODECACHE in sys.modules:
        share(sys.modules[INDUCTOR_CODECACHE])
    elif not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(INDUCTOR_CODECACHE, share))


def _remove_own_folder() -> None:
    """Remove the folder `sandbox.WorkerProcess` made for this worker (its ``TMPDIR``, named
    ``kb-worker-*``; nothing when the worker was started any other way)."""
    folder = Path(os.environ.get("TMPDIR", ""))
    if folder.name.startswith("kb-worker-"):
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    proto_in, proto_out = _protocol_streams()
    from live.evaluator.protocol import read_frame_fd
    from live.evaluator.settings import WorkerSettings, set_worker_settings

    settings = read_frame_fd(proto_in.fileno())  # the parent's first frame
    if settings is None:  # the parent is gone before it said anything
        _remove_own_folder()
        raise SystemExit("the evaluator is gone before it sent the worker's settings")
    if not isinstance(settings, WorkerSettings):
        raise SystemExit(f"expected WorkerSettings first, got {type(settings).__name__}")
    set_worker_settings(settings)
    device = settings.device
    share_inductor_headers()
    import torch
    import triton  # noqa: F401 - warm import, the reason workers exist

    limit_mb = settings.memory_limit_mb
    share_bytes = None
    planned_cap = settings.gpu_cap_bytes
    if device == "cuda" and (limit_mb or planned_cap):
        total = torch.cuda.get_device_properties(0).total_memory
        if planned_cap:  # the evaluator's memory plan (live.evaluator.memory_plan)
            fraction = min(1.0, int(planned_cap) / total)
        else:  # several workers on one GPU split it (with room for contexts and the allocator)
            fraction = min(1.0, int(limit_mb) * 2**20 / total, 0.9 / settings.gpu_workers)
        torch.cuda.set_per_process_memory_fraction(fraction)
        share_bytes = int(fraction * total)
    if device == "cpu":
        try:  # the task suite's work-arounds for interpreter gaps (bf16 dot), when present
            from live.tasks.interpreter_compat import enable_interpreter_compat

            enable_interpreter_compat()
        except ImportError:
            pass
    info = _device_info(device)
    info["triton"] = triton.__version__
    if settings.quick_autotune:  # NOTE (D79), set by the evaluator
        from live.evaluator.autotune import install_quick_autotune

        info["quick_autotune"] = install_quick_autotune()
    if share_bytes is not None:
        info["gpu_bytes_share"] = share_bytes
    from live.evaluator.run_candidate import CandidateRunner

    runner = CandidateRunner(device=device, info=info,
                             input_cache_bytes=settings.input_cache_bytes)
    home = Path(tempfile.mkdtemp(prefix="home-"))  # in the folder the parent removes
    from live.evaluator.guard import install as install_guard

    install_guard(home)  # candidates' own code: no network, processes or writes outside cwd
    try:
        parent_gone = _serve(proto_in, proto_out, runner, home, info)
    except BrokenPipeError:  # a reply could not be written: the parent is gone
        parent_gone = True
    shutil.rmtree(home, ignore_errors=True)
    if parent_gone:  # nobody else will remove the worker's folder now
        _remove_own_folder()
    try:
        proto_out.flush()
    except BrokenPipeError:
        pass
    sys.exit(0)


def _serve(proto_in: Any, proto_out: Any, runner: Any, home: Path, info: dict) -> bool:
    """Say ready, then judge each request until told to exit (False) or the parent's stream
    ends (True: the parent is gone)."""
    from live.evaluator.protocol import read_frame_fd, write_frame

    write_frame(proto_out, ("ready", info))
    reset_print_options = _print_options_resetter()
    while True:
        request = read_frame_fd(proto_in.fileno())
        if request is None:
            return True
        if isinstance(request, dict) and request.get("op") == "exit":
            return False
        reset_print_options()
        workdir = Path(tempfile.mkdtemp(prefix="cand-", dir=home))
        os.chdir(workdir)
        started = time.perf_counter()

        def await_turn(kind: str) -> bool:
            """Ask the parent for the GPU lock (`kind`: shared | timing); False if it is gone."""
            write_frame(proto_out, ("phase", kind))
            answer = read_frame_fd(proto_in.fileno())
            return isinstance(answer, dict) and answer.get("op") == "go"

        try:
            if isinstance(request, dict):  # {"op": "call"}: a named kernelband function
                from live.evaluator.isolated import serve_call

                if request.get("op") != "call":
                    raise ValueError(f"unknown request op {request.get('op')!r}")
                response: Any = serve_call(request, runner, workdir)
            else:
                response = runner.evaluate(
                    request, workdir,
                    on_compiled=lambda: write_frame(proto_out, ("phase", "compiled")),
                    await_turn=await_turn if request.exclusive_timing else None,
                )
        finally:
            os.chdir(home)
            shutil.rmtree(workdir, ignore_errors=True)
        worker_s = time.perf_counter() - started
        if isinstance(response, dict):
            response["worker_s"] = worker_s
            recycle = bool(response.get("recycle"))
        else:
            response = replace(response, worker_s=worker_s)
            recycle = response.recycle
        write_frame(proto_out, ("result", response))
        if recycle:
            return False


if __name__ == "__main__":
    main()
