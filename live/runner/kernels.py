"""The kernels behind a live episode's pool: what the runner knows of each pool member.

The episode itself (policy state, pool, the step order) is `kbsim.policies.episode.Episode`;
its `members[idx]` are the `KernelInfo` records here (pool index = position in that list).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kbsim.strategies import PHI_DIMS, RUNTIME_DIMS


@dataclass
class KernelInfo:
    """A correct kernel of the pool."""

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
    #: roofline signature (live.hardware) from its measured runtime; None without GPU peaks
    roofline: list[float] | None = None

    def as_child(self, parent: KernelInfo, strategy: str) -> KernelInfo:
        """The pool entry for this kernel reached from `parent` under `strategy` (a fresh
        record: the same kernel may be reached from several parents, and each pool member
        keeps its own lineage)."""
        return KernelInfo(
            kernel_id=self.kernel_id, code=self.code, ms=self.ms, ref_ms=self.ref_ms,
            parent_id=parent.kernel_id, chain=[*parent.chain, strategy], phi=self.phi,
            rt6=self.rt6, meta=self.meta, hw=self.hw, prof9=self.prof9, roofline=self.roofline,
        )


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


def features(phi: Sequence[float | None] | None,
             rt6: Sequence[float | None] | None) -> tuple[np.ndarray, np.ndarray]:
    """(phi, runtime vector) as the pool stores them (see `_clean`)."""
    return _clean(phi, len(PHI_DIMS)), _clean(rt6, len(RUNTIME_DIMS))
