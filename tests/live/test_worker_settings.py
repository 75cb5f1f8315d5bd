"""An evaluator worker's settings travel as one typed record (`WorkerSettings`), its first
frame, not as environment variables: code in the worker reads them with `worker_settings()`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from live.evaluator.isolated import Call, run_calls
from live.evaluator.sandbox import WorkerProcess
from live.evaluator.settings import WorkerSettings, worker_settings

PLAIN = "live.tasks.tritonbench.script.run_plain_script"


def test_a_worker_reads_its_settings_and_no_kb_variables(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    script = tmp_path / "report.py"
    script.write_text(
        "import json, os, pathlib\n"
        "from dataclasses import asdict\n"
        "from live.evaluator.settings import worker_settings\n"
        f"pathlib.Path({str(out)!r}).write_text(json.dumps({{\n"
        "    'settings': asdict(worker_settings()),\n"
        "    'kb_env': sorted(n for n in os.environ if n.startswith('KB_'))}))\n")
    settings = WorkerSettings(gpu_workers=3, input_cache_bytes=12345, quick_autotune=True,
                              first_config=True)
    results = run_calls([Call("report", PLAIN, {"operator_path": str(script)}, 120)],
                        device="cpu", workers=1, memory_limit_mb=8192, settings=settings)
    assert results["report"]["status"] == "ok", results
    seen = json.loads(out.read_text())
    # no setting travels as a KB_ variable: the worker has none beyond what this process has
    assert set(seen["kb_env"]) <= {n for n in os.environ if n.startswith("KB_")}
    assert seen["settings"] == {"device": "cpu", "memory_limit_mb": 8192, "gpu_workers": 3,
                                "gpu_cap_bytes": None, "input_cache_bytes": 12345,
                                "quick_autotune": True, "first_config": True}


def test_the_worker_reports_what_its_settings_turned_on() -> None:
    worker = WorkerProcess(WorkerSettings(device="cpu", memory_limit_mb=8192,
                                          quick_autotune=True))
    try:
        worker.wait_ready(300)
        assert worker.info is not None and "quick_autotune" in worker.info
    finally:
        worker.shutdown()


def test_settings_are_checked_and_absent_outside_a_worker() -> None:
    assert worker_settings() is None
    with pytest.raises(ValueError, match="device"):
        WorkerSettings(device="tpu")
    with pytest.raises(ValueError, match="gpu_workers"):
        WorkerSettings(gpu_workers=0)


def test_inductor_s_precompiled_headers_go_to_its_cache_not_the_worker_s_folder(
        tmp_path: Path) -> None:
    """A worker's TMPDIR is its own folder, removed with it; inductor names its precompiled
    headers' folder from the temp folder when its code cache is imported, so each worker
    that compiled C++ built them again. `share_inductor_headers` puts them in the cache."""
    import subprocess
    import sys

    own, cache = tmp_path / "kb-worker-x", tmp_path / "inductor"
    own.mkdir()
    code = ("from live.evaluator.worker import share_inductor_headers\n"
            "share_inductor_headers()\n"
            "import torch._inductor.codecache as c\n"
            "print(c._HEADER_DIR); print(c._HEADER_LOCK_DIR)\n")
    env = {**os.environ, "TMPDIR": str(own), "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    headers, locks = proc.stdout.split()
    assert headers == str(cache / "precompiled_headers")
    assert locks == str(cache / "precompiled_headers" / "locks")
