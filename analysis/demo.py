"""The README's main job: replay the paper's ablation grid on the default data and report.

The default data is the exploration trace shipped under ``traces/`` (recorded on a real GPU by
this project) when there is one; until then, a logging-policy (`explore`) trace of the synthetic
environment, generated on the fly, stands in, and the report says so.

Stages: trace -> replay (tape and fitted environments, preset ``paper-ablation``) -> analysis
tables and plots -> one HTML report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: shipped exploration traces, first found wins (issue: real GPU traces as the default)
SHIPPED_TRACES: tuple[str, ...] = ("explore-h100", "explore-h200")
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


def shipped_trace(root: Path | None = None) -> Path | None:
    """The shipped exploration trace, if this checkout has one."""
    base = root or Path(__file__).resolve().parent.parent / "traces"
    for name in SHIPPED_TRACES:
        candidate = base / name
        if (candidate / "manifest.json").exists():
            return candidate
    return None


def run_demo(out: str | Path, *, trace: str | Path | None = None, seeds: int = 100,
             say: Callable[[str], None] = print, progress: bool = True) -> DemoResult:
    """Run the demo into `out` (trace/, replay/, analysis/, report.html)."""
    from analysis.inputs import load_input
    from analysis.pipeline import analyze_input, write_analysis
    from analysis.report import render_report
    from kbsim.envs.fitted import build_fitted
    from kbsim.envs.tape import build_tape
    from kbsim.replay.presets import get_preset
    from kbsim.replay.sweep import run_sweep
    from kbsim.trace.reader import load_trace

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    trace_dir = Path(trace) if trace is not None else shipped_trace()
    synthetic = trace_dir is None
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
    envs = [build_tape(data.steps, data.kernels, description=str(trace_dir)),
            build_fitted(data.steps, data.kernels, description=str(trace_dir))]
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
    analysis.tables.update(trace_analysis.tables)
    analysis.figures.update(trace_analysis.figures)
    analysis.context.update({f"trace {k}": v for k, v in trace_analysis.context.items()})
    analysis.notes += trace_analysis.notes
    if synthetic:
        analysis.notes.insert(0, "No real GPU trace is shipped yet: this report replays a "
                                 "logging-policy trace of the synthetic environment.")
    report = out / "report.html"
    report.write_text(render_report(analysis, title="kernelband demo: the paper's ablation "
                                                     "grid, replayed"), encoding="utf-8")
    seconds["report"] = time.perf_counter() - t0
    (out / "demo.json").write_text(json.dumps({
        "trace": str(trace_dir), "synthetic_stand_in": synthetic, "seeds": seeds,
        "preset": preset.name, "seconds": seconds,
    }, indent=2))
    return DemoResult(trace_dir, synthetic, replay_dir, analysis_dir, report, seconds)
