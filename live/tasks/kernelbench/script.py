"""Run a KernelBench problem the benchmark's own way, in a worker: ``Model(*get_init_inputs())``
moved to the device and called on ``get_inputs()`` moved there, unseeded. A skipped problem's
reason then says whether the problem itself fails on this machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from live.tasks.loading import exec_module_file


def run_problem(runner: Any, workdir: Path, problem_path: str) -> dict[str, Any]:
    """``status`` ok, or the exception (the caller's worker reports it)."""
    import torch

    module = exec_module_file(Path(problem_path), "kb_plain_problem", keep=False)
    device = runner.device
    model = module.Model(*module.get_init_inputs())
    model = model.to(device)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    with torch.no_grad():
        model(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    return {"status": "ok", "recycle": True}
