"""Chat messages for one proposal: the system prompt and a user message per strategy.

Templates are package data (``live/proposers/prompts/*.txt``, ``string.Template`` syntax); a
``prompt_dir`` holding files of the same names overrides any of them. The user message carries
the task, the strategy's guidance, the parent's code, its runtime against the reference, its
profile in words ("DRAM throughput 88% of peak: memory-bound; SM 31%") and the entry function's
contract (destination-passing or returns, see ``live/tasks/base.py``).
"""

from __future__ import annotations

import ast
from importlib import resources
from pathlib import Path
from string import Template

from kbsim.strategies import STRATEGIES
from live.proposers.base import ParentInfo
from live.pyast import parse
from live.tasks.base import Task

#: words for profile keys other than the three throughputs (PROFILE_DIMS of kbsim.strategies)
_PROFILE_WORDS: dict[str, tuple[str, str]] = {
    "l2_hit_rate_pct": ("L2 hit rate", "%"),
    "dram_bw_pct": ("DRAM bandwidth", "% of peak"),
    "sm_util_pct": ("SM utilisation", "%"),
    "warp_efficiency_pct": ("warp execution efficiency", "%"),
    "achieved_occupancy_pct": ("achieved occupancy", "%"),
    "theoretical_occupancy_pct": ("theoretical occupancy", "%"),
    "shared_bank_conflicts": ("shared-memory bank conflicts", ""),
    "coalescing_pct": ("global-access coalescing", "%"),
    "tensor_core_util_pct": ("tensor-core utilisation", "%"),
}


def load_template(name: str, prompt_dir: str | Path | None = None) -> str:
    """Text of template ``name`` (``system``, ``user`` or a strategy), user dir first."""
    if prompt_dir is not None:
        override = Path(prompt_dir) / f"{name}.txt"
        if override.is_file():
            return override.read_text(encoding="utf-8")
    files = resources.files("live.proposers.prompts")
    return files.joinpath(f"{name}.txt").read_text(encoding="utf-8")


def _pct(value: float) -> str:
    return f"{value:.0f}%"


def profile_in_words(profile: dict[str, float]) -> str:
    """One line: the bottleneck first, then every other known figure."""
    if not profile:
        return "not profiled (no hardware counters available for this kernel)."
    sm, dram, l2 = profile.get("sm_pct"), profile.get("dram_pct"), profile.get("l2_pct")
    parts: list[str] = []
    if dram is not None:
        parts.append(f"DRAM throughput {_pct(dram)} of peak")
    if sm is not None:
        parts.append(f"SM {_pct(sm)}")
    if l2 is not None:
        parts.append(f"L2 {_pct(l2)}")
    verdict = ""
    if sm is not None and dram is not None:
        top = max(sm, dram, l2 if l2 is not None else 0.0)
        if top < 40:
            verdict = "latency-bound (no unit near its peak)"
        elif dram >= 60 and dram >= sm:
            verdict = "memory-bound"
        elif l2 is not None and l2 >= 60 and l2 >= sm:
            verdict = "L2-bound"
        elif sm >= 60:
            verdict = "compute-bound"
        else:
            verdict = "balanced, nothing saturated"
    line = parts[0] + (f": {verdict}" if verdict else "") if parts else ""
    rest = parts[1:]
    for key, value in profile.items():
        if key in ("sm_pct", "dram_pct", "l2_pct") or key not in _PROFILE_WORDS:
            continue
        words, unit = _PROFILE_WORDS[key]
        number = f"{value:.0f}" if unit else f"{value:g}"
        rest.append(f"{words} {number}{unit}")
    return "; ".join([p for p in [line, *rest] if p]) + "."


def runtime_in_words(ms: float | None, ref_ms: float | None) -> str:
    if ms is None:
        return "not measured."
    text = f"{ms:.4g} ms summed over the benchmark shapes"
    if ref_ms is not None and ms > 0:
        text += f"; the PyTorch reference takes {ref_ms:.4g} ms (speedup {ref_ms / ms:.2f}x)"
    return text + "."


def meta_in_words(meta: dict[str, float]) -> str:
    if not meta:
        return "unknown."
    parts = []
    if "registers" in meta:
        parts.append(f"{meta['registers']:.0f} registers/thread")
    if "shared_bytes" in meta:
        parts.append(f"{meta['shared_bytes'] / 1024:.1f} KB shared memory")
    if "num_warps" in meta:
        parts.append(f"{meta['num_warps']:.0f} warps")
    if "num_stages" in meta:
        parts.append(f"{meta['num_stages']:.0f} stages")
    return (", ".join(parts) or "unknown") + "."


def _signature(code: str, entry: str) -> str | None:
    try:
        tree = parse(code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return f"{entry}({ast.unparse(node.args)})"
    return None


def contract_in_words(task: Task, parent_code: str) -> str:
    signature = _signature(parent_code, task.entry) or f"{task.entry}(...)"
    if task.call_style == "dps":
        return (
            f"The module must define the entry function `{signature}` with exactly this "
            "signature (destination-passing style): the inputs come first, then the outputs, "
            "which the caller has already allocated (filled with NaN) with the right shapes and "
            "dtypes. Write every element of every output in place and return None; do not "
            "allocate, resize or reassign the outputs, and do not modify the inputs."
        )
    return (
        f"The module must define `{signature}` with exactly this signature; like the parent, it "
        "allocates and returns its results (same shapes, dtypes and order). Do not modify the "
        "inputs."
    )


def build_messages(
    task: Task, parent: ParentInfo, strategy: str, prompt_dir: str | Path | None = None
) -> list[dict[str, str]]:
    """[system, user] chat messages asking for ``strategy`` applied to ``parent``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    user = Template(load_template("user", prompt_dir)).substitute(
        task_name=task.name,
        category=task.category,
        task_description=task.description.strip(),
        strategy=strategy,
        strategy_guidance=load_template(strategy, prompt_dir).strip(),
        runtime=runtime_in_words(parent.ms, parent.ref_ms),
        profile=profile_in_words(parent.profile),
        meta=meta_in_words(parent.meta),
        parent_code=parent.code.strip("\n"),
        contract=contract_in_words(task, parent.code),
    )
    return [
        {"role": "system", "content": load_template("system", prompt_dir).strip()},
        {"role": "user", "content": user.strip()},
    ]


def k0_contract_in_words(task: Task) -> str:
    """The contract of a first kernel, which has no parent to copy a signature from."""
    if task.call_style == "dps":
        return contract_in_words(task, "")
    return (
        f"The module must define `{task.entry}` with the reference's constructor arguments and "
        "forward arguments (a class when the reference is a class, such as `ModelNew(nn.Module)` "
        "for `Model`); it allocates and returns the same results (same shapes, dtypes and "
        "order), computed by Triton kernels it launches. Do not modify the inputs."
    )


def build_k0_messages(task: Task, prompt_dir: str | Path | None = None) -> list[dict[str, str]]:
    """[system, user] chat messages asking for a task's first kernel (k0) from its reference,
    as the task's description gives it (step 0 of a live run: NOTE D100)."""
    user = Template(load_template("k0", prompt_dir)).substitute(
        task_name=task.name,
        category=task.category,
        task_description=task.description.strip(),
        contract=k0_contract_in_words(task),
    )
    return [
        {"role": "system", "content": load_template("system", prompt_dir).strip()},
        {"role": "user", "content": user.strip()},
    ]
