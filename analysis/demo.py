"""The README's main job: replay the paper's ablation grid on the default data and report.

The default data is the exploration trace shipped under ``traces/`` (recorded on a real GPU by
this project) when there is one; until then, a logging-policy (`explore`) trace of the synthetic
environment, generated on the fly, stands in, and the report says so.

Stages: trace -> replay (tape and fitted environments, preset ``paper-ablation``) -> analysis
tables and plots -> one HTML report. When a real policy trace (a live KernelBand v2 run) is
shipped beside the exploration trace, the sim-to-real check (``analysis.sim2real``) joins the
report: v2 replayed on the exploration trace against the real run, per task.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: shipped exploration traces, first found wins (issue: real GPU traces as the default)
SHIPPED_TRACES: tuple[str, ...] = ("explore-h100", "explore-h200")
#: shipped live policy traces for the sim-to-real check, first found wins
SHIPPED_POLICY_TRACES: tuple[str, ...] = ("policy-v2-h100", "policy-v2-h200")
#: the stand-in when no real trace is shipped
SYNTHETIC_DEFAULT = "default,tasks=12,seed=0"
SYNTHETIC_STEPS = 150


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


def _first_shipped(names: tuple[str, ...], root: Path | None) -> Path | None:
    base = root or Path(__file__).resolve().parent.parent / "traces"
    for name in names:
        candidate = base / name
        if (candidate / "manifest.json").exists():
            return candidate
    return None


def shipped_trace(root: Path | None = None) -> Path | None:
    """The shipped exploration trace, if this checkout has one."""
    return _first_shipped(SHIPPED_TRACES, root)


def shipped_policy_trace(root: Path | None = None) -> Path | None:
    """The shipped live policy trace (KernelBand v2), if this checkout has one."""
    return _first_shipped(SHIPPED_POLICY_TRACES, root)


def run_demo(out: str | Path, *, trace: str | Path | None = None,
             policy_trace: str | Path | None = None, seeds: int = 100,
             say: Callable[[str], None] = print, progress: bool = True) -> DemoResult:
    """Run the demo into `out` (trace/, replay/, analysis/, report.html).

    The sim-to-real check runs against `policy_trace` when given, else against the shipped
    policy trace when the exploration trace is the shipped one too (analysis/sim2real/).
    """
    from analysis.inputs import load_input
    from analysis.pipeline import analyze_input, write_analysis
    from analysis.report import render_report
    from kbsim.envs.registry import TRACE_ENVS, build_envs
    from kbsim.replay.presets import get_preset
    from kbsim.replay.sweep import run_sweep
    from kbsim.trace.reader import load_trace

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    trace_dir = Path(trace) if trace is not None else shipped_trace()
    synthetic = trace_dir is None
    if policy_trace is not None:
        policy_dir: Path | None = Path(policy_trace)
    else:
        policy_dir = shipped_policy_trace() if trace is None and not synthetic else None
    if trace_dir is None:
        from kbsim.envs.synthetic import build_synthetic
        from kbsim.replay.record import record_trace

        trace_dir = out / "trace"
        if not (trace_dir / "manifest.json").exists():
            say(f"no real trace shipped yet: recording an `explore` trace of the synthetic "
                f"environment ({SYNTHETIC_DEFAULT}, {SYNTHETIC_STEPS} steps per task)")
            record_trace(trace_dir, build_synthetic(SYNTHETIC_DEFAULT), "explore", 0,
                         SYNTHETIC_STEPS)
    seconds["trace"] = time.perf_counter() - started

    say(f"replaying the paper's ablation grid on {trace_dir} (tape and fitted, {seeds} seeds)")
    t0 = time.perf_counter()
    data = load_trace(trace_dir)
    envs = build_envs(TRACE_ENVS, data, description=str(trace_dir))  # tape and fitted
    preset = get_preset("paper-ablation")
    replay_dir = out / "replay"
    run_sweep(preset.policies, envs, seeds, preset.steps, horizons=preset.horizons,
              out=replay_dir, progress=progress)
    seconds["replay"] = time.perf_counter() - t0

    say("analysing and writing the report")
    t0 = time.perf_counter()
    analysis_dir = out / "analysis"
    analysis = analyze_input(load_input(replay_dir))
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
    if synthetic:
        analysis.notes.insert(0, "No real GPU trace is shipped yet: this report replays a "
                                 "logging-policy trace of the synthetic environment.")
    seconds["report"] = time.perf_counter() - t0
    if policy_dir is not None:
        t0 = time.perf_counter()
        _add_sim2real(analysis, trace_dir, policy_dir, seeds, analysis_dir / "sim2real", say)
        seconds["sim2real"] = time.perf_counter() - t0
    else:
        analysis.notes.append("Sim-to-real check not run: no live policy trace (traces/"
                              f"{SHIPPED_POLICY_TRACES[0]}) beside the exploration trace.")
    t0 = time.perf_counter()
    report = out / "report.html"
    report.write_text(render_report(analysis, title="kernelband demo: the paper's ablation "
                                                     "grid, replayed"), encoding="utf-8")
    seconds["report"] += time.perf_counter() - t0
    (out / "demo.json").write_text(json.dumps({
        "trace": str(trace_dir), "synthetic_stand_in": synthetic, "seeds": seeds,
        "preset": preset.name, "policy_trace": None if policy_dir is None else str(policy_dir),
        "seconds": seconds,
    }, indent=2))
    from analysis.verdict import ranking_text

    verdict = analysis.tables.get("verdict")
    ranking = ranking_text(verdict) if verdict is not None and not verdict.empty else ""
    return DemoResult(trace_dir, synthetic, replay_dir, analysis_dir, report, seconds,
                      policy_dir, ranking)


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
