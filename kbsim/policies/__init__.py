"""Bandit policies of kbsim: one compiled implementation (numba) and a readable reference.

- `spec`: policy names, parameters and their defaults, `parse_policy("kernelband-v2:K=5")`.
- `state`: `Pool` (the candidate pool, owned by the caller) and `PolicyState` (plain arrays).
- `kernels`: THE compiled `select` / `update` / `representatives` / `prepare` (live and replay).
- `reference`: plain-Python twins (`select_ref`, `update_ref`, ...) that document the math and
  draw the same random numbers, so tests hold both step-for-step identical.

Deviations and choices tagged in the code: NOTE (D30) re-clustering keeps labels matched to
the previous clusters; (D31) eps-greedy / Thompson run on v2's clusters, masks and parents;
(D32) v1's psi models "improved", trained by deterministic buffer replay; (D33) v1 distances
scaled by the running std; (D34) parent-softmax cache and when pool.hw may be written;
(D35) kernels compiled with numba's private ``_nrt=False``; (D36) UCB bonus as
(c * sqrt(ln t)) / sqrt(N).

Additions to the API contract (nothing in it was changed):
- `prepare(kind, fparams, iparams, state, pool, rng)`: the re-clustering / assignment / mask
  refresh that `select` runs first, exposed so the live runner can profile `representatives`
  before the arm is chosen.
- `select_inline` / `update_inline` (in `kernels`): the same code inlined into `_nrt=False` hot
  loops (benchmarks, replay inner loops); see `kernels` for why.
- `select_in_v2` / `select_in_v1` / `select_in_flat`, `update_in_*`, `prepare_in_v2` /
  `prepare_in_v1`, `representatives_in_v2` (in `kernels`): one family's policy code; the replay
  engine, compiled per family, calls its family's in branches numba prunes before inlining, so
  only that family's code is copied and compiled (issue #16).
- `prepare_in_family` / `select_in_family` / `update_in_family` / `representatives_in_family`
  (in `kernels`): the dispatch over those on the family (`spec.policy_family`), taken first; the
  kind-taking entry points call them with `family_of(kind)`.
- `new_state(..., target=None)`: hardware dim per strategy (needed only when n_strategies != 6).
- `representatives` lists the representatives with no hw dimension known (all three NaN): a
  partial signature counts as profiled.
- `pool_add` returns -1 when the pool is full; `select` returns (-1, -1, -1, NaN) on an empty
  pool; `cluster` is -1 for policies without clusters (bon, greedy, random, ucb-flat, explore).

Development caveat: numba's on-disk cache (``cache=True``) keys a function on its own file only,
and a cached caller embeds its callees' machine code. After editing a policy module, delete the
stale ``__pycache__/*.nbi`` / ``*.nbc`` files of the modules that call it (kernels.py, replay
loops, benchmarks, tests), or they keep running the old code.
"""

from kbsim.policies.kernels import (
    prepare,
    representatives,
    select,
    select_inline,
    update,
    update_inline,
)
from kbsim.policies.spec import POLICY_NAMES, PolicySpec, parse_policy
from kbsim.policies.state import (
    PolicyState,
    Pool,
    copy_pool,
    copy_state,
    new_pool,
    new_state,
    pool_add,
)

__all__ = [
    "POLICY_NAMES",
    "Pool",
    "PolicySpec",
    "PolicyState",
    "copy_pool",
    "copy_state",
    "new_pool",
    "new_state",
    "parse_policy",
    "pool_add",
    "prepare",
    "representatives",
    "select",
    "select_inline",
    "update",
    "update_inline",
]
