"""How every random stream of a replay (and of a live run) is derived from (seed, task).

The policy's stream depends on (seed, task_id) only, never on the environment, so a policy
replayed on the tape of a run it logged itself makes exactly the draws it made live. The live
runner MUST seed its policy with `policy_rng(seed, task_id)` (and draw from it only through
`select` / `update` / `prepare`), and use the step loop documented in `kbsim.replay.engine`.
Environments draw from their own stream, `env_rng(seed, task_id)`. Both streams are the same
for every policy at a given (seed, task): common random numbers across compared policies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from kbsim.rng import derive_seed, new_rng, new_rngs


def policy_rng(seed: int, task_id: str) -> np.ndarray:
    """The policy's RNG state for one episode (live run or replay) of `task_id` with `seed`."""
    return new_rng(derive_seed(seed, "policy", task_id))


def env_rng(seed: int, task_id: str) -> np.ndarray:
    """The environment's RNG state for one replay episode (never used by a policy)."""
    return new_rng(derive_seed(seed, "env", task_id))


def episode_rngs(stream: str, pairs: Sequence[tuple[str, int]]) -> np.ndarray:
    """(len(pairs), 3) RNG states of many (task_id, seed) episodes at once: row i equals
    `policy_rng(seed, task_id)` for stream "policy", `env_rng(seed, task_id)` for "env"."""
    if stream not in ("policy", "env"):
        raise ValueError(f"stream must be 'policy' or 'env', got {stream!r}")
    blake2b, low63 = hashlib.blake2b, (1 << 63) - 1
    derived = []
    for task_id, seed in pairs:
        if isinstance(task_id, str) and isinstance(seed, int) and not isinstance(seed, bool):
            # derive_seed(seed, stream, task_id), its canonical text written out (hot loop)
            text = f"i:{seed}|s:{stream}|s:{task_id}".encode()
            digest = blake2b(text, digest_size=8).digest()
            derived.append(int.from_bytes(digest, "little") & low63)
        else:
            derived.append(derive_seed(seed, stream, task_id))
    return new_rngs(derived)
