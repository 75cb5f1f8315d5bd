"""Write the README.md of a shipped trace dataset from its manifest and contents.

    python benchmarks/gpu/dataset_readme.py traces/explore-h100
    python benchmarks/gpu/dataset_readme.py traces/policy-v2-h100 --force \\
        --command "MAX_WALL=480 bash benchmarks/gpu/live_run.sh policy-v2 --tasks builtin ..." \\
        --nvidia-smi out/policy-v2.gpu.txt --software "Nsight Compute=2025.3"

What it records: the GPU (name, compute capability, SM count), every software version the
manifest's hardware entry holds (torch, triton, Nsight Compute, driver, CUDA where present) and
those it lacks, given here (``--nvidia-smi FILE``: the CSV benchmarks/gpu/live_run.sh saves, for
the driver; ``--software NAME=VERSION``, repeatable), the proposer and policy, the date range of
the rows, the command that made the dataset (``--command``, repeatable; else the manifest's own
``command``; else one rebuilt from the manifest's ``config`` and labelled as such), counts
(attempts, per status, per task, kernels, correct and profiled kernels), the size on disk and
whether ``kernelband traces validate`` passes. An existing README is kept unless ``--force``
(hand-written notes are worth more than this summary).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: manifest hardware keys shown as software versions, in this order, when present
_VERSION_KEYS: tuple[tuple[str, str], ...] = (
    ("torch", "torch"), ("triton", "triton"), ("cuda", "CUDA"), ("cuda_version", "CUDA"),
    ("driver", "driver"), ("driver_version", "driver"), ("ncu", "Nsight Compute"),
    ("ncu_version", "Nsight Compute"), ("nsight_compute", "Nsight Compute"),
    ("python", "Python"),
)
def _live_flags() -> dict[str, str]:
    """`kernelband live`'s option for each config key (click's parameter name -> its flag),
    so that a rebuilt command uses the real flags (``timing_patience_s``: ``--timing-patience``)."""
    import click

    from kernelband.cli.live import live

    return {p.name: max(p.opts, key=len) for p in live.params
            if isinstance(p, click.Option) and p.name}


#: how the trace's not_applicable attempts were counted (manifest key `not_applicable_rule`)
NA_RULE_TEXT = {
    "unavailable": "unavailable actions: a `not_applicable` attempt spent no step of T "
                   "(issue #18)",
    "failure": "recorded before issue #18: every `not_applicable` attempt spent a step as a "
               "failure (reward 0); replay it with the old rule, as `kernelband analyze "
               "sim2real` does for such a trace",
}


def size_bytes(path: Path) -> int:
    """Bytes of every file under `path`."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _human(n_bytes: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n_bytes < 1024 or unit == "GB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024  # type: ignore[assignment]
    return ""


def software_versions(hardware: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, version) pairs found in a manifest's hardware entry (no duplicates)."""
    seen: dict[str, str] = {}
    for key, label in _VERSION_KEYS:
        value = hardware.get(key)
        if value not in (None, "") and label not in seen:
            seen[label] = str(value)
    return list(seen.items())


def nvidia_smi_versions(path: str | Path) -> list[tuple[str, str]]:
    """[("driver", version)] from `nvidia-smi --query-gpu=name,driver_version,... --format=csv`
    output (the first GPU row); [] when the file names no driver_version column."""
    lines = [ln.strip() for ln in Path(path).read_text().splitlines() if ln.strip()]
    if len(lines) < 2:
        return []
    header = [h.strip().split(" ")[0] for h in lines[0].split(",")]
    values = [v.strip() for v in lines[1].split(",")]
    if "driver_version" not in header or len(values) != len(header):
        return []
    return [("driver", values[header.index("driver_version")])]


def rebuilt_command(manifest: dict[str, Any]) -> str | None:
    """A `kernelband live` command line rebuilt from the manifest's config (None without one)."""
    config = manifest.get("config")
    if not isinstance(config, dict) or not config:
        return None
    parts = ["kernelband", "live"]
    proposer = (manifest.get("proposer") or {}).get("kind")
    flags = _live_flags()
    for key, value in config.items():
        if value is None or value is False or key in ("run_id",):
            continue
        flag = flags.get(key, "--" + key.replace("_", "-"))
        parts += [flag] if value is True else [flag, str(value)]
        if key == "policy" and proposer:
            parts += ["--proposer", str(proposer)]
    return shlex.join(parts)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def distinct_kernels(kernels: Any) -> Any:
    """One row per (task_id, kernel_id) of a kernels table: whether any row of it is correct
    and whether any is profiled."""
    return kernels.groupby(["task_id", "kernel_id"], sort=False).agg(
        correct=("correct", "any"), profiled=("profiled", "any"))


def build_readme(trace_dir: str | Path, commands: Sequence[str] = (),
                 extra_software: Sequence[tuple[str, str]] = ()) -> str:
    """The README text of the dataset at `trace_dir` (see the module docstring);
    `extra_software` adds (name, version) pairs the manifest does not hold."""
    import numpy as np

    from kbsim.trace.reader import load_trace, validate_trace
    from kbsim.trace.summary import gpu_name

    root = Path(trace_dir)
    data = load_trace(root)
    manifest = data.manifests[0] if data.manifests else {}
    steps, kernels = data.steps_df(), data.kernels_df()
    hardware = manifest.get("hardware") or {}
    limits = hardware.get("limits") or {}
    policy = manifest.get("policy") or {}
    proposer = manifest.get("proposer") or {}
    gpu = gpu_name(hardware)
    extras = [f"compute capability {hardware['capability']}"] if hardware.get("capability") else []
    sm_count = hardware.get("sm_count") or limits.get("sm_count")
    extras += [f"{sm_count} SMs"] if sm_count else []
    versions = software_versions(hardware)
    known = {label for label, _ in versions}
    versions += [(name, version) for name, version in extra_software if name not in known]
    software = ", ".join(f"{label} {version}" for label, version in versions)
    times = steps["time"] if len(steps) else None
    dates = (f"{times.min():%Y-%m-%d %H:%M} to {times.max():%Y-%m-%d %H:%M} UTC"
             if times is not None else "no rows")
    status_counts = steps["status"].value_counts()
    distinct = distinct_kernels(kernels)
    problems = validate_trace(root)
    spec = policy.get("spec") or policy.get("name") or "?"
    model = f" (model {proposer['model']})" if proposer.get("model") else ""
    lines = [f"# {root.name}: `{spec}` with the `{proposer.get('kind', '?')}` proposer on "
             f"{gpu}", "",
             "A trace dataset recorded by this project (schema v"
             f"{manifest.get('schema_version', '?')}; see traces/SCHEMA.md). This README was "
             "written by `benchmarks/gpu/dataset_readme.py` from the manifest and the rows.", ""]
    lines += _table(["", ""], [
        ["GPU", gpu + (f" ({', '.join(extras)})" if extras else "")],
        ["timing", str(hardware.get("timing_backend", "?"))],
        ["software", software or "not recorded in the manifest"],
        ["policy", f"`{spec}`"],
        ["proposer", f"{proposer.get('kind', '?')}{model}"],
        ["rows dated", dates],
        ["runs", ", ".join(data.run_ids) or "?"],
        ["tasks", f"{steps['task_id'].nunique()} with attempts, "
                  f"{len(manifest.get('tasks', []))} in the manifest"],
        ["attempts", f"{len(steps)} ("
                     + ", ".join(f"{n} {s}" for s, n in status_counts.items()) + ")"],
        ["not_applicable rule", NA_RULE_TEXT.get(str(manifest.get("not_applicable_rule")),
                                                 NA_RULE_TEXT["failure"])],
        ["kernels", f"{len(distinct)} distinct, {int(distinct['correct'].sum())} correct, "
                    f"{int(distinct['profiled'].sum())} profiled"],
        ["size on disk", f"{_human(size_bytes(root))} (steps {_human(size_bytes(root / 'steps'))}"
                         f", kernels {_human(size_bytes(root / 'kernels'))})"],
        ["`kernelband traces validate`",
         "passes" if not problems else f"fails: {problems[0]}"],
    ])
    lines += ["", "## Command", ""]
    recorded = list(commands) or ([str(manifest["command"])] if manifest.get("command") else [])
    rebuilt = rebuilt_command(manifest)
    if recorded:
        lines += ["```bash", *recorded, "```"]
    elif rebuilt:
        lines += ["Rebuilt from the manifest's `config` (no command line was recorded); "
                  "a resumed run repeats it with `--resume`:", "", "```bash", rebuilt, "```"]
    else:
        lines += ["Not recorded in the manifest (pass `--command` to this script)."]
    lines += ["", "## Per task", ""]
    statuses = [s for s in status_counts.index]
    rows = []
    per_kernel = distinct.reset_index()
    for task, part in steps.groupby("task_id", sort=True):
        ok = part[part["status"] == "ok"]["speedup_vs_ref"].to_numpy(np.float64, na_value=np.nan)
        best = f"{np.nanmax(ok):.3f}" if np.isfinite(ok).any() else ""
        task_kernels = per_kernel[per_kernel["task_id"] == task]
        counts = part["status"].value_counts()
        rows.append([task, len(part), *[int(counts.get(s, 0)) for s in statuses], best,
                     len(task_kernels), int(task_kernels["profiled"].sum())])
    lines += _table(["task", "attempts", *statuses, "best speedup vs ref", "kernels",
                     "profiled"], rows)
    missing = sorted(set(manifest.get("tasks", [])) - set(steps["task_id"]))
    if missing:
        lines += ["", f"Tasks in the manifest without attempts: {', '.join(missing)}."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace_dir", type=Path, help="the dataset directory")
    parser.add_argument("--command", action="append", default=[],
                        help="command line that made the dataset (repeatable)")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write [TRACE_DIR/README.md]")
    parser.add_argument("--nvidia-smi", type=Path, default=None,
                        help="nvidia-smi CSV saved beside the run (for the driver version)")
    parser.add_argument("--software", action="append", default=[], metavar="NAME=VERSION",
                        help="a software version the manifest lacks (repeatable)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing README")
    args = parser.parse_args(argv)
    extra: list[tuple[str, str]] = []
    for item in args.software:
        name, sep, version = item.partition("=")
        if not sep or not name.strip() or not version.strip():
            print(f"error: --software takes NAME=VERSION, got {item!r}", file=sys.stderr)
            return 1
        extra.append((name.strip(), version.strip()))
    out = args.out or args.trace_dir / "README.md"
    if out.exists() and not args.force:
        print(f"error: {out} exists (pass --force to overwrite it)", file=sys.stderr)
        return 1
    try:
        if args.nvidia_smi is not None:
            extra = nvidia_smi_versions(args.nvidia_smi) + extra
        text = build_readme(args.trace_dir, args.command, extra)
    except (ValueError, OSError) as err:  # the trace reader's TraceError: one sentence
        print(f"error: {err}", file=sys.stderr)
        return 1
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
