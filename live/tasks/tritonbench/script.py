"""Run a TritonBench-G operator file the benchmark's own way, as a plain script (worker side).

``python <op>.py`` runs the operator's code and then its test code; a skipped operator's reason
says whether that also fails on this machine, so a user can tell a benchmark bug from a
kernelband bug. It runs in a sandboxed evaluator worker (``live.evaluator.isolated``), with the
operator's folder and its parent on ``sys.path`` as the script would have them, unseeded.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from live.tasks.tritonbench.format import retarget, split_operator_file


def run_plain_script(runner: Any, workdir: Path, operator_path: str) -> dict[str, Any]:
    """Execute the whole operator file as ``__main__``; ``status`` ok or the exception."""
    from live.evaluator.autotune import restore_autotuning

    restore_autotuning()  # a check before it in this worker tuned quickly (D71, D89)
    path = Path(operator_path)
    text = path.read_text()
    if runner.device != "cuda":  # NOTE (D2): only the test code is retargeted to the CPU
        split = split_operator_file(text)
        if split is not None:
            text = split[0] + "\n" + retarget(split[1], runner.device) + "\n"
    for folder in (str(path.parent), str(path.parent.parent)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    namespace = {"__name__": "__main__", "__file__": str(path)}
    exec(compile(text, str(path), "exec"), namespace)  # the benchmark's own file, as a script
    if runner.device == "cuda":
        import torch

        torch.cuda.synchronize()
    # a script may leave CUDA state, modules and sys.path entries behind: a fresh worker next
    return {"status": "ok", "recycle": True}
