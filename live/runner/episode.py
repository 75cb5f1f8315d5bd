"""One task's episode: the policy state, the candidate pool and the kernels behind it.

The step order is the one `kbsim.replay.engine` compiles and `kbsim.replay.record` documents::

    prepare -> reveal the representatives' signatures -> select -> (propose, evaluate)
            -> update -> add a correct child to the pool

and the policy's RNG is `kbsim.replay.seeding.policy_rng(seed, task_id)`, so the same compiled
`select` / `update` make the same draws here as in replay: a trace recorded with the logging
policy replays exactly on the tape environment.

An `Episode` knows nothing of GPUs, proposers or files: the runner feeds it outcomes, and
`--resume` feeds it the outcomes already recorded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kbsim.policies.kernels import prepare, representatives, select, update
from kbsim.policies.spec import PolicySpec
from kbsim.policies.state import new_pool, new_state, pool_add
from kbsim.replay.seeding import policy_rng
from kbsim.strategies import PHI_DIMS, PROFILE_DIMS, RUNTIME_DIMS, STRATEGIES


@dataclass
class KernelInfo:
    """A correct kernel of the pool (pool index = position in `Episode.kernels`)."""

    kernel_id: str
    code: str
    ms: float
    ref_ms: float | None
    parent_id: str | None
    chain: list[str]
    phi: np.ndarray
    rt6: np.ndarray
    meta: dict[str, float] = field(default_factory=dict)
    #: signature known to the runner (from a profile); revealed to the policy only on request
    hw: np.ndarray | None = None
    prof9: np.ndarray | None = None
    profile_tried: bool = False


@dataclass(frozen=True)
class Choice:
    cluster: int
    strategy: int
    parent: int
    propensity: float

    @property
    def strategy_name(self) -> str:
        return STRATEGIES[self.strategy]


def _clean(values: Sequence[float | None] | None, dims: int) -> np.ndarray:
    """A feature vector for the pool: unknown dimensions (NaN / None) become 0.

    NOTE (D4): under the interpreter compile metadata is unknown; a NaN in phi would poison the
    z-scored k-means of v2, so unknown dimensions enter the pool as 0 (constant columns are
    ignored by z-scoring). Replay's tape env reads the same cleaned vectors from the trace.
    """
    out = np.zeros(dims, dtype=np.float64)
    if values is not None:
        for i, v in enumerate(list(values)[:dims]):
            if v is not None and math.isfinite(float(v)):
                out[i] = float(v)
    return out


class Episode:
    """Policy state, pool and kernels of one task of a live run."""

    def __init__(self, spec: PolicySpec, task_id: str, seed: int, max_steps: int) -> None:
        self.spec = spec
        self.task_id = task_id
        self.seed = seed
        max_pool = max_steps + 1
        self.state = new_state(spec, max_pool)
        self.pool = new_pool(max_pool)
        self.rng = policy_rng(seed, task_id)
        self.kernels: list[KernelInfo] = []
        self.step = 0

    # -- pool ------------------------------------------------------------------------------

    def add_kernel(self, kernel: KernelInfo) -> int:
        """Add a correct kernel to the pool (signature hidden until the policy asks)."""
        nan3 = np.full(3, np.nan)
        nan9 = np.full(len(PROFILE_DIMS), np.nan)
        idx = pool_add(self.pool, kernel.phi, nan3, nan9, kernel.rt6, kernel.ms,
                       len(self.kernels))
        if idx < 0:
            raise RuntimeError(f"{self.task_id}: candidate pool is full")
        self.kernels.append(kernel)
        return idx

    @staticmethod
    def features(phi: Sequence[float | None] | None,
                 rt6: Sequence[float | None] | None) -> tuple[np.ndarray, np.ndarray]:
        return _clean(phi, len(PHI_DIMS)), _clean(rt6, len(RUNTIME_DIMS))

    # -- the step --------------------------------------------------------------------------

    def wanted_signatures(self) -> list[int]:
        """Bring the clustering up to date; pool indices whose signature the policy wants."""
        s = self.spec
        prepare(s.kind, s.fparams, s.iparams, self.state, self.pool, self.rng)
        return [int(i) for i in representatives(s.kind, self.state, self.pool)]

    def reveal(self, idx: int, hw: Sequence[float] | None,
               prof9: Sequence[float] | None) -> None:
        """Give the policy the hardware signature (and v1 profile) of pool member `idx`."""
        if hw is not None:
            self.pool.hw[idx, :] = np.asarray(hw, dtype=np.float64)
        if prof9 is not None:
            self.pool.prof9[idx, :] = np.asarray(prof9, dtype=np.float64)

    def select(self) -> Choice:
        s = self.spec
        cluster, strategy, parent, propensity = select(
            s.kind, s.fparams, s.iparams, self.state, self.pool, self.rng
        )
        return Choice(int(cluster), int(strategy), int(parent), float(propensity))

    def update(self, choice: Choice, child: KernelInfo | None) -> float:
        """Feed the outcome back (child None: the attempt failed); returns the policy's reward.

        A correct child joins the pool after the update, as in replay."""
        s = self.spec
        success = child is not None
        child_ms = child.ms if child is not None else np.nan
        reward = update(s.kind, s.fparams, s.iparams, self.state, self.pool, choice.cluster,
                        choice.strategy, choice.parent, child_ms, success)
        if child is not None:
            self.add_kernel(child)
        self.step += 1
        return float(reward)

    # -- views -----------------------------------------------------------------------------

    def best(self) -> KernelInfo:
        """The fastest correct kernel so far."""
        n = int(self.pool.n[0])
        return self.kernels[int(np.argmin(self.pool.ms[:n]))]
