"""Step 0 of a task without a k0 of its own: the LLM proposer writes k0 from the reference.

A KernelBench problem loaded without a k0 file holds the reference's own code as ``k0`` (what
its gold-vs-gold check runs; `TaskHooks.k0_is_reference`), which is no solution. A live run then
asks the proposer for a first kernel (``write_k0``) and evaluates it; the attempt is the task's
step 0 in the trace, ``strategy`` ``k0`` and ``parent_id`` ``reference`` (NOTE D100), and the
policy's attempts follow from step 1. A proposer without ``write_k0`` (mutate) cannot start
such a task, which `check_k0_sources` says before the run starts. A proposer writes k0 by meeting
`live.proposers.base.K0Writer`.
"""

from __future__ import annotations

from collections.abc import Sequence

from live.proposers.base import K0Writer, Proposal, Proposer
from live.tasks.base import Task


def writes_k0(proposer: Proposer) -> bool:
    """Whether `proposer` can write a task's first kernel (the LLM proposers can)."""
    return isinstance(proposer, K0Writer)


def check_k0_sources(tasks: Sequence[Task], proposer: Proposer) -> None:
    """A ValueError, in one sentence, when a task has no k0 and `proposer` cannot write one."""
    refuse_without_k0([t.name for t in tasks if t.hooks.k0_is_reference], proposer)


def refuse_without_k0(missing: Sequence[str], proposer: Proposer) -> None:
    """`check_k0_sources` on the names of the tasks without a k0 (known before loading:
    ``live.tasks.registry.tasks_without_k0``)."""
    if not missing or writes_k0(proposer):
        return
    first = missing[0].split("/", 1)[0]
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    raise ValueError(
        f"{missing[0]}{more} have no k0 and the {proposer.name} proposer cannot write one: use "
        "an LLM proposer (--proposer openai), which writes k0 from the reference at step 0, or "
        f"make k0s with `kernelband tasks k0 --tasks {first}:PATH --out DIR` and run with "
        f"--tasks {first}:PATH@DIR/k0.json")


def k0_proposal(proposer: Proposer, task: Task, seed: int) -> Proposal:
    """The proposer's first kernel for `task`."""
    if not isinstance(proposer, K0Writer):
        raise TypeError(f"the {proposer.name} proposer cannot write a k0")
    return proposer.write_k0(task, seed=seed)
