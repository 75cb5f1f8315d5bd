"""How every random stream of a replay (and of a live run) is derived from (seed, task).

The policy's stream depends on (seed, task_id) only, never on the environment, so a policy
replayed on the tape of a run it logged itself makes exactly the draws it made live. The live
runner MUST seed its policy with `policy_rng(seed, task_id)` (and draw from it only through
`select` / `update` / `prepare`), and use the step loop documented in `kbsim.replay.engine`.
Environments draw from their own stream, `env_rng(seed, task_id)`. Both streams are the same
for every policy at a given (seed, task): common random numbers across compared policies.
"""

from __future__ import annotations

import numpy as np

from kbsim.rng import derive_seed, new_rng


def policy_rng(seed: int, task_id: str) -> np.ndarray:
    """The policy's RNG state for one episode (live run or replay) of `task_id` with `seed`."""
    return new_rng(derive_seed(seed, "policy", task_id))


def env_rng(seed: int, task_id: str) -> np.ndarray:
    """The environment's RNG state for one replay episode (never used by a policy)."""
    return new_rng(derive_seed(seed, "env", task_id))
