"""`kernelband tasks k0`: a thin wrapper over live.tasks.kernelbench.k0_report."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("k0")
@click.option("--tasks", "task_spec", required=True,
              help="A KernelBench spec: kernelbench:PATH[@level1|@level2:1-20|@FILE.json].")
@click.option("--out", type=click.Path(file_okay=False), required=True,
              help="Folder for the k0 files, k0.json (a selector of the passing ones) and "
              "k0-report.json.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="Where torch.compile runs (Triton code needs cuda).")
@click.option("--workers", type=int, default=None,
              help="Parallel workers [one per CPU core, at most 16 on a GPU].")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True,
              help="Limit per problem (compile, wrap and check), seconds.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def k0(task_spec: str, out: str, device: str, workers: int | None, timeout_s: float,
       as_json: bool) -> None:
    """Make each KernelBench problem's k0 from torch.compile's generated Triton code.

    For each problem, torch.compile (inductor, default mode) compiles the reference; where it
    lowers the problem to Triton kernels, their code wrapped as ModelNew is the problem's k0,
    checked as a load-time gold check checks a k0 and by the static check of a live run.
    Prints, per level, how many problems have a k0 that passes and why the rest do not;
    OUT/k0.json then selects those problems with their k0s for a live run. Each problem's
    result is kept in OUT/worker-results as it arrives: a run stopped midway, run again with
    the same OUT, makes only the problems left (and those whose worker crashed, timed out or
    ran out of memory). A problem out of memory beside the others is made again alone at the
    end. Make all levels with one command: several at once share the GPU's memory.

    \b
    Example:
        kernelband tasks k0 --tasks kernelbench:KernelBench --device cuda --out k0-out
        kernelband live --tasks kernelbench:KernelBench@k0-out/k0.json --proposer mutate --out traces/kb
    """
    from live.tasks.kernelbench.k0_report import build_k0s, table

    try:
        report = build_k0s(task_spec, Path(out), device=device, workers=workers,
                           timeout_s=timeout_s, progress=not as_json)
    except (ValueError, KeyError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"k0 from torch.compile on {report['device_name']} (torch {report['torch']}):")
    for line in table(report["levels"]):
        click.echo(line)
    click.echo(f"written to {out}: k0 files, k0.json (use kernelbench:PATH@{out}/k0.json), "
               "k0-report.json")
