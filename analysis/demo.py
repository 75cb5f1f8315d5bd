"""The README's main job: replay the paper's ablation grid on the default data and report.

The default data are the datasets shipped under ``traces/`` (recorded on real GPUs by this
project), each an exploration trace with the live policy runs recorded beside it:

- the project's 15 built-in tasks (``explore-h200``, with KernelBand v2's ``policy-v2-h200``);
- TritonBench-G, the paper's 50-operator subset (``tritonbench-g-explore-h200``, with
  ``tritonbench-g-v2-h200`` and ``tritonbench-g-greedy-h200``).

Each dataset found goes through the same stages: replay (tape and fitted environments, preset
``paper-ablation``, then preset ``components`` for the component table) -> analysis tables
and plots -> the sim-to-real check of each live policy run beside it (``analysis.sim2real``:
the policy replayed on the exploration trace against the real run, per task). One HTML
report holds every dataset. A checkout with no real trace replays a logging-policy
(`explore`) trace of the synthetic environment, generated on the fly, and the report says so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: GPU models a shipped dataset may come from, first found wins; a dataset's policy runs are
#: taken from the same GPU model as its exploration trace
GPU_MODELS: tuple[str, ...] = ("h100", "h200")
#: the built-in tasks' shipped exploration traces and live v2 runs, first found wins
SHIPPED_TRACES: tuple[str, ...] = tuple(f"explore-{gpu}" for gpu in GPU_MODELS)
SHIPPED_POLICY_TRACES: tuple[str, ...] = tuple(f"policy-v2-{gpu}" for gpu in GPU_MODELS)
#: the stand-in when no real trace is shipped
SYNTHETIC_DEFAULT = "default,tasks=12,seed=0"
SYNTHETIC_STEPS = 150


@dataclass(frozen=True)
class Dataset:
    """A shipped dataset: ``traces/{explore}-{gpu}`` and its live policy runs
    ``traces/{policy}-{gpu}`` (one GPU model for all)."""

    key: str
    title: str
    explore: str
    policies: tuple[str, ...]


DATASETS: tuple[Dataset, ...] = (
    Dataset("builtin", "The project's 15 built-in tasks", "explore", ("policy-v2",)),
    Dataset("tritonbench-g", "TritonBench-G: the paper's 50-operator subset",
            "tritonbench-g-explore", ("tritonbench-g-v2", "tritonbench-g-greedy")),
)


@dataclass(frozen=True)
class DemoResult:
    trace: Path
    synthetic: bool
    replay: Path
    analysis: Path
    report: Path
    seconds: dict[str, float]
    #: the live policy trace compared with replay (None: no sim-to-real check was run)
    policy_trace: Path | None = None
    #: the verdict's short ranking (analysis.verdict.ranking_text), printed at the end
    ranking: str = ""
    #: every dataset in the report, in order: (key, exploration trace, live policy traces);
    #: the first one's results are ``replay`` and ``analysis``, the others' under OUT/KEY/
    datasets: tuple[tuple[str, Path, tuple[Path, ...]], ...] = ()
    #: each dataset's component table in short (analysis.components.component_text)
    components: str = ""


def _traces_root(root: Path | None) -> Path:
    return root or Path(__file__).resolve().parent.parent / "traces"


def _first_shipped(names: tuple[str, ...], root: Path | None) -> Path | None:
    base = _traces_root(root)
    for name in names:
        candidate = base / name
        if (candidate / "manifest.json").exists():
            return candidate
    return None


def shipped_trace(root: Path | None = None) -> Path | None:
    """The shipped exploration trace of the built-in tasks, if this checkout has one."""
    return _first_shipped(SHIPPED_TRACES, root)


def shipped_policy_trace(root: Path | None = None) -> Path | None:
    """The shipped live policy trace (KernelBand v2) of the built-in tasks, if any."""
    return _first_shipped(SHIPPED_POLICY_TRACES, root)


def shipped_datasets(root: Path | None = None) -> list[tuple[Dataset, Path, tuple[Path, ...]]]:
    """The shipped datasets in `DATASETS` order: (dataset, exploration trace, the live policy
    traces of the same GPU model that exist)."""
    found = []
    for dataset in DATASETS:
        for gpu in GPU_MODELS:
            explore = _first_shipped((f"{dataset.explore}-{gpu}",), root)
            if explore is None:
                continue
            policies = tuple(p for p in (_first_shipped((f"{name}-{gpu}",), root)
                                         for name in dataset.policies) if p is not None)
            found.append((dataset, explore, policies))
            break
    return found


def run_demo(out: str | Path, *, trace: str | Path | None = None,
             policy_trace: str | Path | None = None, seeds: int = 100,
             say: Callable[[str], None] = print, progress: bool = True,
             traces_root: Path | None = None, component_seeds: int = 100) -> DemoResult:
    """Run the demo into `out` (replay/, analysis/, report.html; further datasets under
    OUT/KEY/). Each dataset's report opens with the verdict and then the component table
    (preset ``components`` on tape and fitted, min(seeds, component_seeds) seeds).

    With `trace`, that trace alone (and `policy_trace`'s sim-to-real check, if given);
    otherwise every dataset shipped under `traces_root` (default: the checkout's traces/),
    each with the sim-to-real check of its live policy runs.
    """
    from analysis.report import render_report
    from kbsim.replay.presets import get_preset

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    # (key, heading, exploration trace, live policy traces)
    plan: list[tuple[str, str | None, Path, tuple[Path, ...]]] = []
    if trace is not None:
        plan.append(("custom", None, Path(trace),
                     (Path(policy_trace),) if policy_trace is not None else ()))
    else:
        for dataset, explore, policies in shipped_datasets(traces_root):
            if policy_trace is not None and not plan:
                policies = (Path(policy_trace),)
            plan.append((dataset.key, dataset.title, explore, policies))
    synthetic = not plan
    if synthetic:
        from kbsim.envs.synthetic import build_synthetic
        from kbsim.replay.record import record_trace

        trace_dir = out / "trace"
        if not (trace_dir / "manifest.json").exists():
            say(f"no real trace shipped yet: recording an `explore` trace of the synthetic "
                f"environment ({SYNTHETIC_DEFAULT}, {SYNTHETIC_STEPS} steps per task)")
            record_trace(trace_dir, build_synthetic(SYNTHETIC_DEFAULT), "explore", 0,
                         SYNTHETIC_STEPS)
        plan.append(("synthetic", None, trace_dir,
                     (Path(policy_trace),) if policy_trace is not None else ()))
    seconds["trace"] = time.perf_counter() - started

    analyses = []
    for index, (key, heading, explore, policies) in enumerate(plan):
        where = out if index == 0 else out / key
        label = "" if index == 0 else f"{key} "
        analysis, parts = _dataset(explore, policies, where, seeds, say, progress, seconds,
                                   label, component_seeds)
        if synthetic:
            analysis.notes.insert(0, "No real GPU trace is shipped yet: this report replays a "
                                     "logging-policy trace of the synthetic environment.")
        analyses.append((key, heading, analysis, parts))

    t0 = time.perf_counter()
    first_key, first_heading, main, main_parts = analyses[0]
    parts = [(f"{first_key}-{k}", h, a) for k, h, a in main_parts]
    for key, heading, analysis, more in analyses[1:]:
        parts.append((key, heading or key, analysis))
        parts += [(f"{key}-{k}", h, a) for k, h, a in more]
    title = ("kernelband demo: the paper's ablation grid, replayed"
             + (f" on {len(analyses)} datasets" if len(analyses) > 1 else ""))
    report = out / "report.html"
    report.write_text(render_report(main, title=title,
                                    heading=first_heading if len(analyses) > 1 else None,
                                    parts=parts), encoding="utf-8")
    seconds["report"] = seconds.get("report", 0.0) + time.perf_counter() - t0
    datasets = tuple((key, explore, policies) for key, _, explore, policies in plan)
    (out / "demo.json").write_text(json.dumps({
        "trace": str(plan[0][2]), "synthetic_stand_in": synthetic, "seeds": seeds,
        "preset": get_preset("paper-ablation").name,
        "component_seeds": min(seeds, component_seeds),
        "policy_trace": str(plan[0][3][0]) if plan[0][3] else None,
        "datasets": [{"key": key, "trace": str(explore),
                      "policy_traces": [str(p) for p in policies]}
                     for key, explore, policies in datasets],
        "seconds": seconds,
    }, indent=2))
    from analysis.verdict import ranking_text

    rankings = []
    for key, heading, analysis, _ in analyses:
        verdict = analysis.tables.get("verdict")
        if verdict is not None and not verdict.empty:
            text = ranking_text(verdict)
            rankings.append(f"{heading or key}:\n{text}" if len(analyses) > 1 else text)
    ranking = "\n\n".join(rankings)
    from analysis.components import component_text

    components = "\n\n".join(
        (f"{heading or key}:\n" if len(analyses) > 1 else "") + component_text(table)
        for key, heading, analysis, _ in analyses
        if (table := analysis.tables.get("components")) is not None and not table.empty)
    return DemoResult(plan[0][2], synthetic, out / "replay", out / "analysis", report, seconds,
                      plan[0][3][0] if plan[0][3] else None, ranking, datasets, components)


def _dataset(trace_dir: Path, policies: tuple[Path, ...], out: Path, seeds: int,
             say: Callable[[str], None], progress: bool, seconds: dict[str, float],
             label: str, component_seeds: int = 100) -> tuple[Any, list[tuple[str, str, Any]]]:
    """Replay, analyse and check one dataset into `out` (replay/, analysis/): its analysis
    (with the component table and the first policy's sim-to-real check) and one more part
    per further policy run."""
    from analysis.components import component_table_from_summary
    from analysis.inputs import load_input
    from analysis.pipeline import Analysis, analyze_input, write_analysis
    from kbsim.envs.registry import TRACE_ENVS, build_envs
    from kbsim.replay.presets import get_preset
    from kbsim.replay.sweep import run_sweep
    from kbsim.trace.reader import load_trace

    say(f"replaying the paper's ablation grid on {trace_dir} (tape and fitted, {seeds} seeds)")
    t0 = time.perf_counter()
    data = load_trace(trace_dir)
    envs = build_envs(TRACE_ENVS, data, description=str(trace_dir))  # tape and fitted
    preset = get_preset("paper-ablation")
    replay_dir = out / "replay"
    run_sweep(preset.policies, envs, seeds, preset.steps, horizons=preset.horizons,
              out=replay_dir, progress=progress)
    seconds[f"{label}replay"] = time.perf_counter() - t0

    say(f"replaying the component preset (each part of KernelBand v2 against full v2, "
        f"{component_seeds} seeds)")
    t0 = time.perf_counter()
    parts_grid = get_preset("components")
    component_runs = run_sweep(parts_grid.policies, envs, min(seeds, component_seeds),
                               parts_grid.steps, keep_steps=False)
    components = component_table_from_summary(component_runs.summary)
    seconds[f"{label}components"] = time.perf_counter() - t0

    say("analysing" + (f" {label.strip()}" if label else ""))
    t0 = time.perf_counter()
    analysis_dir = out / "analysis"
    analysis = analyze_input(load_input(replay_dir))
    if not components.empty:  # the full preset's table, in place of the grid's partial one
        analysis.tables["components"] = components
    write_analysis(analysis, analysis_dir)
    # the trace's own evidence (strategies, Lipschitz, cluster validity) joins the report
    trace_analysis = analyze_input(load_input(trace_dir))
    write_analysis(trace_analysis, analysis_dir / "trace")
    # the replay's tables and figures of the same name (metrics, speedup, strategies) keep
    # their place in the report; the trace's are in analysis/trace/
    for name, table in trace_analysis.tables.items():
        analysis.tables.setdefault(name, table)
    for name, png in trace_analysis.figures.items():
        analysis.figures.setdefault(name, png)
    analysis.context.update({f"trace {k}": v for k, v in trace_analysis.context.items()})
    analysis.notes += trace_analysis.notes
    seconds[f"{label}report"] = time.perf_counter() - t0
    parts: list[tuple[str, str, Any]] = []
    t0 = time.perf_counter()
    for index, policy in enumerate(policies):
        if index == 0:
            _add_sim2real(analysis, trace_dir, policy, seeds, analysis_dir / "sim2real", say)
            continue
        extra = Analysis(kind="sim2real", source=str(policy))
        _add_sim2real(extra, trace_dir, policy, seeds,
                      analysis_dir / f"sim2real-{policy.name}", say)
        parts.append((f"sim2real-{policy.name}", f"Sim-to-real: {policy.name}", extra))
    if policies:
        seconds[f"{label}sim2real"] = time.perf_counter() - t0
    else:
        analysis.notes.append("Sim-to-real check not run: no live policy trace (such as "
                              f"traces/{SHIPPED_POLICY_TRACES[0]}) beside the exploration "
                              "trace.")
    return analysis, parts


def _add_sim2real(analysis, explore: Path, policy: Path, seeds: int, out: Path,
                  say: Callable[[str], None]) -> None:
    """Run the sim-to-real check, write it under `out` and merge it into `analysis`."""
    from analysis.sim2real import run_sim2real, sim2real_analysis, write_sim2real

    say(f"sim-to-real: replaying {policy}'s policy on {explore} ({seeds} seeds)")
    try:
        result = run_sim2real(explore, policy, seeds=seeds)
    except ValueError as err:  # a bad or unrelated policy trace must not sink the demo
        analysis.notes.append(f"Sim-to-real check not run: {err}")
        return
    write_sim2real(result, out)
    extra = sim2real_analysis(result)
    analysis.tables.update(extra.tables)
    analysis.figures.update(extra.figures)
    analysis.context.update({f"sim-to-real {k}": v for k, v in extra.context.items()})
    analysis.notes += extra.notes
