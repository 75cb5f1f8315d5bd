"""Policy names, parameters with the paper's defaults, and the `name:k=v,...` spec syntax.

A `PolicySpec` is the resolved, validated form of a text such as
``kernelband-v2:K=5,c=1.0,theta_sat=80``. Its `fparams` / `iparams` arrays are what the compiled
kernels read (indices `F_*` / `I_*` below); `params` is the same information as a dict, and
``str(spec)`` the canonical text (only non-default parameters, in table order), so
``parse_policy(str(spec)) == spec``.

A choice parameter (``parent=headroom|fastest|speed`` of the v2 family) is a name in `params`
and in the text, and its index in `PARENT_RULES` in `iparams`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

POLICY_NAMES: tuple[str, ...] = (
    "kernelband-v2",
    "kernelband-v1",
    "bon",
    "greedy",
    "random",
    "ucb-flat",
    "eps-greedy",
    "thompson",
    "kernelband-v2-nomask",
    "explore",
)
# kinds: the index of the name in POLICY_NAMES (what the compiled kernels dispatch on)
KIND_V2, KIND_V1, KIND_BON, KIND_GREEDY, KIND_RANDOM = 0, 1, 2, 3, 4
KIND_UCB_FLAT, KIND_EPS_GREEDY, KIND_THOMPSON, KIND_V2_NOMASK, KIND_EXPLORE = 5, 6, 7, 8, 9

# float parameters
F_C = 0  # UCB exploration constant c
F_THETA = 1  # theta_sat per hardware dim: F_THETA + (SM=0, DRAM=1, L2=2)
F_TEMPERATURE = 4  # parent softmax temperature
F_ALPHA = 5  # v1 weight of the compatibility prior psi
F_LR = 6  # v1 logistic SGD learning rate
F_EPS = 7  # eps-greedy exploration probability
F_PRIOR_A = 8  # thompson Beta prior
F_PRIOR_B = 9
F_PARENT_TEMPERATURE = 10  # v2 family: temperature of the parent=speed softmax
N_FPARAMS = 11
# integer parameters
I_K = 0  # number of clusters
I_TAU = 1  # re-clustering period in steps (v2 family)
I_MASK = 2  # 1 = hardware masks on
I_ITERS = 3  # Lloyd iteration cap of the k-means re-clustering
I_BUFFER = 4  # v1 logistic buffer size B
I_WARM = 5  # v1 number of synthetic warm-start pairs
I_WARMUP = 6  # v1 warm-up pulls per strategy (3 -> 3*|S| pulls)
I_SGD = 7  # v1 SGD steps replayed from the buffer per update
I_PARENT = 8  # v2 family: parent rule, an index into PARENT_RULES
I_FRONTIER = 9  # v2 family: only the N fastest members are parent candidates (0 = all)
N_IPARAMS = 10

#: v2 family parent rules (DESIGN.md): the authors' headroom softmax (default), the fastest
#: member of the chosen cluster, a softmax over log speedup over k0
PARENT_RULES: tuple[str, ...] = ("headroom", "fastest", "speed")
PARENT_HEADROOM, PARENT_FASTEST, PARENT_SPEED = 0, 1, 2

#: policies that share v2's clustering, masks and parent rule (they differ in the arm rule)
V2_FAMILY: tuple[int, ...] = (KIND_V2, KIND_EPS_GREEDY, KIND_THOMPSON, KIND_V2_NOMASK)


def is_v2_family(kind: int) -> bool:
    """True for kernelband-v2, its nomask ablation, eps-greedy and thompson."""
    return kind in V2_FAMILY


#: policy families: the kinds that share one compiled code path (`policy_family`). The replay
#: engine is compiled once per (family, environment kind), so a replay compiles only the code
#: of the families it runs (issue #16: cold-start compile time).
FAMILY_V2, FAMILY_V1, FAMILY_FLAT = 0, 1, 2
FAMILY_NAMES: tuple[str, ...] = ("v2", "v1", "flat")


def policy_family(kind: int) -> int:
    """FAMILY_V2 (v2, v2-nomask, eps-greedy, thompson), FAMILY_V1, or FAMILY_FLAT (bon, greedy,
    random, ucb-flat, explore)."""
    if kind in V2_FAMILY:
        return FAMILY_V2
    return FAMILY_V1 if kind == KIND_V1 else FAMILY_FLAT

_SQRT2 = math.sqrt(2.0)

# name -> (type i/f, index into iparams/fparams, default, low, high, low inclusive)
_P = {
    "K": ("i", I_K, 3, 1, 64, True),
    "tau": ("i", I_TAU, 10, 1, 1_000_000, True),
    "c": ("f", F_C, 2.0, 0.0, 1e6, True),
    "theta_sat_sm": ("f", F_THETA + 0, 75.0, 0.0, 100.0, False),
    "theta_sat_dram": ("f", F_THETA + 1, 75.0, 0.0, 100.0, False),
    "theta_sat_l2": ("f", F_THETA + 2, 75.0, 0.0, 100.0, False),
    "temperature": ("f", F_TEMPERATURE, 1.0, 0.0, 1e6, False),
    "mask": ("i", I_MASK, 1, 0, 1, True),
    "iters": ("i", I_ITERS, 10, 1, 1000, True),
    "alpha": ("f", F_ALPHA, 0.5, 0.0, 1e6, True),
    "lr": ("f", F_LR, 0.05, 0.0, 10.0, False),
    "buffer": ("i", I_BUFFER, 500, 1, 1_000_000, True),
    "warm": ("i", I_WARM, 1000, 0, 1_000_000, True),
    "warmup": ("i", I_WARMUP, 3, 0, 10_000, True),
    "sgd_steps": ("i", I_SGD, 4, 0, 1000, True),
    "eps": ("f", F_EPS, 0.1, 0.0, 1.0, True),
    "prior_a": ("f", F_PRIOR_A, 1.0, 0.0, 1e6, False),
    "prior_b": ("f", F_PRIOR_B, 1.0, 0.0, 1e6, False),
    # a choice: stored as its index in PARENT_RULES, shown (params, text) as its name
    "parent": ("c", I_PARENT, 0, 0, len(PARENT_RULES) - 1, True),
    "parent_temperature": ("f", F_PARENT_TEMPERATURE, 0.1, 0.0, 1e6, False),
    "frontier": ("i", I_FRONTIER, 0, 0, 1_000_000, True),
}
#: the names of each choice parameter's values
_CHOICES: dict[str, tuple[str, ...]] = {"parent": PARENT_RULES}
_PARENT = ("parent", "parent_temperature", "frontier")
_CLUSTERING = ("K", "tau", "theta_sat_sm", "theta_sat_dram", "theta_sat_l2", "temperature",
               "mask", "iters", *_PARENT)
#: parameters each policy accepts (theta_sat is accepted wherever the three per-dim ones are)
POLICY_PARAMS: dict[str, tuple[str, ...]] = {
    "kernelband-v2": ("K", "tau", "c", *_CLUSTERING[2:5], "temperature", "mask", "iters",
                      *_PARENT),
    "kernelband-v1": ("K", "alpha", "lr", "buffer", "warm", "warmup", "sgd_steps"),
    "bon": (),
    "greedy": (),
    "random": (),
    "ucb-flat": ("c",),
    "eps-greedy": (*_CLUSTERING, "eps"),
    "thompson": (*_CLUSTERING, "prior_a", "prior_b"),
    "kernelband-v2-nomask": ("K", "tau", "c", *_CLUSTERING[2:5], "temperature", "iters",
                             *_PARENT),
    "explore": (),
}
#: per-policy defaults that differ from the table above
_OVERRIDES: dict[str, dict[str, float]] = {
    "ucb-flat": {"c": _SQRT2},  # UCB1 (Auer et al. 2002): mean + sqrt(2 ln t / n)
    "kernelband-v2-nomask": {"mask": 0},
}
_THETA_DIMS = ("theta_sat_sm", "theta_sat_dram", "theta_sat_l2")


def _defaults(name: str) -> dict[str, float | str]:
    out: dict[str, float | str] = {}
    for key in POLICY_PARAMS[name]:
        out[key] = _CHOICES[key][_P[key][2]] if key in _CHOICES else _P[key][2]
    out.update({k: v for k, v in _OVERRIDES.get(name, {}).items()})
    return out


@dataclass(frozen=True)
class PolicySpec:
    """A resolved policy: name, kind, every parameter (defaults filled in), kernel arrays."""

    name: str
    kind: int
    params: dict[str, float | str]
    fparams: np.ndarray = field(compare=False, repr=False)
    iparams: np.ndarray = field(compare=False, repr=False)

    def __hash__(self) -> int:
        return hash(str(self))

    def __str__(self) -> str:
        defaults = _defaults(self.name)
        changed = [k for k in POLICY_PARAMS[self.name] if self.params[k] != defaults[k]]
        parts: list[str] = []
        thetas = [self.params.get(k) for k in _THETA_DIMS]
        theta_changed = [k for k in changed if k in _THETA_DIMS]
        if len(theta_changed) == 3 and len(set(thetas)) == 1:
            changed = [k for k in changed if k not in _THETA_DIMS]
            parts.append(f"theta_sat={_fmt(thetas[0])}")
        parts += [f"{k}={_fmt(self.params[k])}" for k in changed]
        return self.name + (":" + ",".join(parts) if parts else "")


def _fmt(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _parse_value(name: str, key: str, text: str) -> float | str:
    if key in _CHOICES:
        value = text.strip().lower()
        if value not in _CHOICES[key]:
            raise ValueError(f"parameter {key} of policy {name!r} must be one of "
                             f"{', '.join(_CHOICES[key])}, got {text!r}")
        return value
    _, _, _, low, high, low_incl = _P[key]
    is_int = _P[key][0] == "i"
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    ok = math.isfinite(value) and (value >= low if low_incl else value > low) and value <= high
    if is_int and ok and not value.is_integer():
        ok = False
    if not ok:
        what = "an integer" if is_int else "a number"
        lo = f">= {_fmt(low)}" if low_incl else f"> {_fmt(low)}"
        raise ValueError(
            f"parameter {key} of policy {name!r} must be {what} {lo} and <= {_fmt(high)}, "
            f"got {text!r}"
        )
    return float(int(value)) if is_int else value


def parse_policy(text: str) -> PolicySpec:
    """Parse ``name[:key=value,...]`` into a validated `PolicySpec`.

    Raises ValueError with one sentence naming the valid policies or parameters on bad input.
    ``theta_sat=X`` sets the three per-dimension thresholds; ``theta_sat_sm`` / ``_dram`` /
    ``_l2`` then override single dimensions.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"empty policy spec; expected one of {', '.join(POLICY_NAMES)}")
    name, _, rest = text.strip().partition(":")
    name = name.strip().lower()
    if name not in POLICY_NAMES:
        raise ValueError(f"unknown policy {name!r}; expected one of {', '.join(POLICY_NAMES)}")
    valid = POLICY_PARAMS[name]
    accepted = valid + (("theta_sat",) if "theta_sat_sm" in valid else ())
    params = _defaults(name)
    seen: set[str] = set()
    pairs = [p.strip() for p in rest.split(",")] if rest.strip() else []
    # theta_sat first so that per-dim values override it regardless of order
    pairs.sort(key=lambda p: 0 if p.partition("=")[0].strip() == "theta_sat" else 1)
    for pair in pairs:
        key, eq, value = (s.strip() for s in pair.partition("="))
        if not eq or not key or not value:
            raise ValueError(
                f"bad parameter {pair!r} in policy spec {text!r}; expected key=value pairs "
                f"separated by commas, such as kernelband-v2:K=5,c=1.0"
            )
        if key not in accepted:
            listing = ", ".join(accepted) if accepted else "none"
            raise ValueError(
                f"unknown parameter {key!r} for policy {name!r}; valid parameters: {listing}"
            )
        if key in seen:
            raise ValueError(f"parameter {key!r} given twice in policy spec {text!r}")
        seen.add(key)
        if key == "theta_sat":
            v = _parse_value(name, "theta_sat_sm", value)
            for dim in _THETA_DIMS:
                params[dim] = v
        else:
            params[key] = _parse_value(name, key, value)
    return _build(name, params)


def _build(name: str, params: dict[str, float | str]) -> PolicySpec:
    fparams = np.zeros(N_FPARAMS, dtype=np.float64)
    iparams = np.zeros(N_IPARAMS, dtype=np.int64)
    full: dict[str, float | str] = {k: v[2] for k, v in _P.items()}
    full.update(params)
    for key, (typ, idx, *_rest) in _P.items():
        value = full[key]
        if typ == "c":
            iparams[idx] = _CHOICES[key].index(value) if isinstance(value, str) else int(value)
        elif typ == "i":
            iparams[idx] = int(value)
        else:
            fparams[idx] = float(value)

    def clean_value(key: str, value: float | str) -> float | str:
        typ = _P[key][0]
        if typ == "c":
            return str(value)
        return int(value) if typ == "i" else float(value)

    clean = {k: clean_value(k, v) for k, v in params.items()}
    return PolicySpec(name=name, kind=POLICY_NAMES.index(name), params=clean,
                      fparams=fparams, iparams=iparams)
