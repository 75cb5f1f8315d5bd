"""When a replayed v2 sees each representative's Nsight Compute signature (issue 15).

A live ``--profile reps`` run shows a representative first asked for at step ``a`` its roofline
signature (the trace's ``roofline_sig``) until its Nsight Compute profile is back and the lag
has passed, then Nsight's (``hw_sig``), from a step ``shown`` recorded in
``signature-reveals.jsonl`` (`kbsim.trace.reveals`; docs/profiling-and-memory.md). The trace
environments (tape, fitted) replay that timing with one of:

- ``recorded``: member ``i`` (a recorded kernel) shows its roofline signature while
  ``t <`` its recorded ``shown_step`` and its ``hw_sig`` from then on; a kernel the run never
  showed, its roofline signature for ever. With the same policy and seed on the run's own tape
  this is the live run step for step (tests/live/test_live_reveal_exact.py);
- ``delays``: the delay ``shown - asked`` (steps) of a member first asked for at ``t`` is drawn
  (env RNG, at that first ask) from the recorded delays, so other policies and seeds see the
  same timing; a recorded run that never showed a signature: roofline for ever. NOTE (D75):
  delays are drawn independently of the kernel and of the profiler's load, on which the live
  delay depends;
- ``lag:N``: a fixed delay of N steps;
- ``at-once``: ``hw_sig`` as soon as the policy asks (the behaviour before issue 15, and what a
  trace without ``roofline_sig`` falls back to, said once and recorded in `Env.reveal`).

Per pool member the episode keeps when it was first asked (``asked``), from which step Nsight's
signature shows (``due``) and whether it shows a provisional (roofline) one (``prov``, asked for
again while it represents a cluster); all reset per episode (`kbsim.envs.data.Scratch`). A
replaced signature goes through `kbsim.policies.kernels.show_signature`, as in the live runner.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from numba import njit

from kbsim.envs.data import (
    I_REVEAL,
    I_REVEAL_LAG,
    NEVER_SHOWN,
    REVEAL_AT_ONCE,
    REVEAL_DELAYS,
    REVEAL_LAG,
    REVEAL_MODES,
    REVEAL_RECORDED,
)
from kbsim.policies.kernels import show_signature_in_family
from kbsim.rng import rand_int
from kbsim.trace.reveals import Reveal

log = logging.getLogger(__name__)


def parse_reveal(text: str) -> tuple[int, int]:
    """(REVEAL_MODES value, lag in steps) of ``at-once`` | ``recorded`` | ``delays`` |
    ``lag:N``; ValueError otherwise."""
    name, _, lag = text.partition(":")
    if name not in REVEAL_MODES or (name == "lag") != bool(lag):
        raise ValueError(f"unknown signature timing {text!r}; expected at-once, recorded, "
                         "delays or lag:N.")
    if name != "lag":
        return REVEAL_MODES[name], 0
    if not lag.isdigit():
        raise ValueError(f"lag:N needs a whole number of steps >= 0, got {text!r}.")
    return REVEAL_LAG, int(lag)


def apply_reveal(fields: dict[str, np.ndarray], kernel_rows: dict[tuple[str, str], int],
                 reveals: Sequence[Reveal] | None, reveal: str | None) -> str:
    """Set the signature timing of compiled trace fields; returns what was used (for
    `Env.reveal` and the replay manifest).

    `kernel_rows`: (task_id, kernel_id) -> global kernel row; `reveals`: the trace's
    ``signature-reveals.jsonl`` (None: none); `reveal`: a `parse_reveal` text, or None for
    ``recorded`` when the trace has reveals and ``at-once`` otherwise.
    """
    asked_for = reveal or ("recorded" if reveals is not None else "at-once")
    mode, lag = parse_reveal(asked_for)
    n_k = fields["k_hw"].shape[0]
    fields["k_shown"] = np.full(n_k, NEVER_SHOWN, np.int64)
    fields["reveal_delay"] = np.zeros(0, np.int64)
    fields["iparams"][I_REVEAL] = REVEAL_AT_ONCE
    fields["iparams"][I_REVEAL_LAG] = 0
    if mode == REVEAL_AT_ONCE:
        return "at-once"
    if not np.isfinite(fields["k_roof"]).any():
        log.warning("signature timing %s asked for, but the trace records no roofline_sig "
                    "(recorded before it existed, or without GPU peaks): the replayed policy "
                    "sees Nsight Compute signatures at once", asked_for)
        return f"at-once ({asked_for} asked for: the trace has no roofline_sig)"
    if mode in (REVEAL_RECORDED, REVEAL_DELAYS) and reveals is None:
        raise ValueError(f"signature timing {asked_for} needs the run's signature-reveals.jsonl "
                         "(a live --profile reps run writes it beside the trace).")
    if mode == REVEAL_RECORDED:
        first: dict[tuple[str, str], Reveal] = {}
        for r in sorted(reveals or (), key=lambda r: r.run_id):  # one run: its own reveals
            first.setdefault((r.task_id, r.kernel_id), r)
        for key, r in first.items():
            row = kernel_rows.get(key)
            if row is not None:
                fields["k_shown"][row] = r.shown_step
    elif mode == REVEAL_DELAYS:
        fields["reveal_delay"] = np.asarray([r.delay_steps for r in reveals or ()], np.int64)
    fields["iparams"][I_REVEAL] = mode
    fields["iparams"][I_REVEAL_LAG] = lag
    if mode == REVEAL_DELAYS:
        return f"delays (n={len(fields['reveal_delay'])})"
    return asked_for


@njit(cache=True, inline="always")
def reveal_due(mode, lag, k_shown, delays, key, t, rng) -> int:
    """The step from which a member with kernel row `key`, first asked for at step t, shows
    its Nsight Compute signature."""
    if mode == REVEAL_RECORDED:
        return k_shown[key]
    if mode == REVEAL_LAG:
        return t + lag
    if delays.shape[0] == 0:
        return NEVER_SHOWN
    return t + delays[rand_int(rng, delays.shape[0])]


@njit(cache=True, inline="always")
def env_reveal_timed(family, env, state, pool, idx, t, asked, due, prov, rng) -> None:
    """Show pool member idx, a representative the policy asks for at step t, the signature
    the timing says (module docstring); prov[idx] = 1 while it is its roofline one and
    Nsight's may still come."""
    key = pool.key[idx]
    if asked[idx] < 0:
        asked[idx] = t
        due[idx] = reveal_due(env.iparams[I_REVEAL], env.iparams[I_REVEAL_LAG], env.k_shown,
                              env.reveal_delay, key, t, rng)
    hw_known = False
    roof_known = False
    for d in range(3):
        if env.k_hw[key, d] == env.k_hw[key, d]:
            hw_known = True
        if env.k_roof[key, d] == env.k_roof[key, d]:
            roof_known = True
    if hw_known and t >= due[idx]:
        show_signature_in_family(family, state, pool, idx, env.k_hw[key])
        prov[idx] = 0
    elif roof_known:
        show_signature_in_family(family, state, pool, idx, env.k_roof[key])
        prov[idx] = 1 if hw_known and due[idx] < NEVER_SHOWN else 0
    else:
        prov[idx] = 0  # nothing to show yet: asked again while its signature is unknown
