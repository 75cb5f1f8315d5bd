"""Explicit random state for the policies: xoroshiro128++ held in an int64 array of shape (3,).

No global random state anywhere in kbsim: every kernel that draws takes the state array and
advances it in place (the pynndescent pattern). The same generator exists twice:

- compiled (`rand_uniform`, `rand_int`, `rand_normal`, `rand_gamma`, `rand_beta`), used by the
  numba policies that replay and live run;
- plain Python (`py_rand_uniform`, ... , on Python ints masked to 64 bits), used by the readable
  reference policies in `kbsim.policies.reference`.

Both produce the same numbers bit for bit (tests/kbsim/test_rng.py), so a reference episode and a
compiled episode with the same seed make the same choices.

Seeding: `policy_rng(seed, task_id)` and `env_rng(seed, task_id)` (and `episode_rngs`, many at
once) derive every stream of a live run or a replay from (seed, task), so a live run and its
replay draw the same numbers.

State layout: ``state[0], state[1]`` are the two 64-bit words of xoroshiro128++ (Blackman and
Vigna, 2019) stored as int64 (two's complement), ``state[2]`` counts the 64-bit outputs drawn so
far (handy to check that two implementations drew the same number of times).

Derived draws:
- uniform in [0, 1): the top 53 bits of one output times 2**-53;
- integer in [0, n): ``int(uniform * n)`` (one output);
- normal: Marsaglia's polar method (uses only log and sqrt, both libm in Python and in numba);
- gamma: Marsaglia and Tsang (2000), with the ``U**(1/a)`` boost for a < 1;
- beta: ``X / (X + Y)`` with X ~ Gamma(a), Y ~ Gamma(b).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np
from numba import njit

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_TWO_M53 = 1.0 / 9007199254740992.0  # 2**-53

_U17 = np.uint64(17)
_U49 = np.uint64(49)
_U21 = np.uint64(21)
_U28 = np.uint64(28)
_U11 = np.uint64(11)


# ---------------------------------------------------------------------------- seeding (Python)


def _splitmix64(x: int) -> tuple[int, int]:
    """One splitmix64 step: (new counter, output)."""
    x = (x + _GOLDEN) & _MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x, z ^ (z >> 31)


def _to_signed(x: int) -> int:
    return x - (1 << 64) if x >= (1 << 63) else x


def new_rng(seed: int) -> np.ndarray:
    """A fresh generator state (int64, shape (3,)) derived from an integer seed."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    x = int(seed) & _MASK64
    x, s0 = _splitmix64(x)
    x, s1 = _splitmix64(x)
    if s0 == 0 and s1 == 0:  # the one forbidden state of xoroshiro
        s0 = 1
    return np.array([_to_signed(s0), _to_signed(s1), 0], dtype=np.int64)


def new_rngs(seeds: Sequence[int]) -> np.ndarray:
    """`new_rng` of each seed, stacked: shape (len(seeds), 3), the same states (one compiled
    pass instead of one array per seed: sweeps seed hundreds of thousands of episodes)."""
    for seed in seeds:
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise ValueError(f"seed must be an integer, got {seed!r}")
    words = np.array([int(seed) & _MASK64 for seed in seeds], dtype=np.uint64)
    out = np.zeros((len(words), 3), dtype=np.int64)
    _splitmix_states(words, out)
    return out


_GOLDEN_U64 = np.uint64(_GOLDEN)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_U30, _U27, _U31 = np.uint64(30), np.uint64(27), np.uint64(31)


@njit(cache=True)
def _splitmix_states(words: np.ndarray, out: np.ndarray) -> None:
    """out[i, :2] = the two splitmix64 outputs after words[i] (`new_rng`, compiled)."""
    for i in range(words.shape[0]):
        x = words[i]
        s = np.zeros(2, dtype=np.uint64)
        for j in range(2):
            x = x + _GOLDEN_U64
            z = x
            z = (z ^ (z >> _U30)) * _MIX1
            z = (z ^ (z >> _U27)) * _MIX2
            s[j] = z ^ (z >> _U31)
        if s[0] == 0 and s[1] == 0:
            s[0] = 1
        out[i, 0] = np.int64(s[0])
        out[i, 1] = np.int64(s[1])


def derive_seed(seed: int, *keys: int | str) -> int:
    """A stable sub-seed in [0, 2**63) for (seed, *keys), e.g. (run seed, policy name, task).

    Stable across processes and Python versions (BLAKE2b of a canonical text, not `hash()`).
    """
    parts = [f"i:{int(seed)}"]
    for key in keys:
        if isinstance(key, str):
            parts.append(f"s:{key}")
        elif isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            parts.append(f"i:{int(key)}")
        else:
            raise ValueError(f"derive_seed keys must be int or str, got {key!r}")
    digest = hashlib.blake2b("|".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def policy_rng(seed: int, task_id: str) -> np.ndarray:
    """The policy's RNG state for one episode (live run or replay) of `task_id` with `seed`.

    The policy's stream depends on (seed, task_id) only, never on the environment, so a policy
    replayed on the tape of a run it logged itself makes exactly the draws it made live. Every
    caller of the step (`kbsim.policies.episode.Episode`: the live runner, ``--resume``,
    `kbsim.replay.record`) and the compiled replay seed the policy with it and draw from it only
    through `select` / `update` / `prepare`. Both streams are the same for every policy at a
    given (seed, task): common random numbers across compared policies.
    """
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


# ---------------------------------------------------------------------------- compiled


@njit(cache=True, inline="always")
def _rotl(x, k):
    return (x << k) | (x >> (np.uint64(64) - k))


@njit(cache=True, _nrt=False)
def next_u64(state: np.ndarray) -> np.uint64:
    """One raw xoroshiro128++ output; advances `state` in place."""
    s0 = np.uint64(state[0])
    s1 = np.uint64(state[1])
    result = _rotl(s0 + s1, _U17) + s0
    s1 ^= s0
    state[0] = np.int64(_rotl(s0, _U49) ^ s1 ^ (s1 << _U21))
    state[1] = np.int64(_rotl(s1, _U28))
    state[2] += 1
    return result


@njit(cache=True, _nrt=False)
def rand_uniform(state: np.ndarray) -> float:
    """Uniform in [0, 1) (53 random bits)."""
    return np.float64(next_u64(state) >> _U11) * _TWO_M53


@njit(cache=True, _nrt=False)
def rand_int(state: np.ndarray, n: int) -> int:
    """Uniform integer in [0, n), n >= 1."""
    k = np.int64(rand_uniform(state) * n)
    return k if k < n else n - 1


@njit(cache=True, _nrt=False)
def rand_normal(state: np.ndarray) -> float:
    """Standard normal (Marsaglia's polar method, second value discarded)."""
    while True:
        u = 2.0 * rand_uniform(state) - 1.0
        v = 2.0 * rand_uniform(state) - 1.0
        s = u * u + v * v
        if 0.0 < s < 1.0:
            return u * math.sqrt(-2.0 * math.log(s) / s)


@njit(cache=True, _nrt=False)
def rand_gamma(state: np.ndarray, a: float) -> float:
    """Gamma(a, 1), a > 0 (Marsaglia and Tsang 2000)."""
    if a < 1.0:
        g = rand_gamma(state, a + 1.0)
        u = rand_uniform(state)
        return g * u ** (1.0 / a)
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = rand_normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = rand_uniform(state)
        if u < 1.0 - 0.0331 * (x * x) * (x * x):
            return d * v
        if u > 0.0 and math.log(u) < 0.5 * x * x + d * (1.0 - v + math.log(v)):
            return d * v


@njit(cache=True, _nrt=False)
def rand_beta(state: np.ndarray, a: float, b: float) -> float:
    """Beta(a, b), a, b > 0."""
    x = rand_gamma(state, a)
    y = rand_gamma(state, b)
    return x / (x + y)


# ---------------------------------------------------------------------------- Python twins


def _py_rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _MASK64


def py_next_u64(state: np.ndarray) -> int:
    """Plain-Python twin of `next_u64` (same output, same state afterwards)."""
    s0 = int(state[0]) & _MASK64
    s1 = int(state[1]) & _MASK64
    result = (_py_rotl((s0 + s1) & _MASK64, 17) + s0) & _MASK64
    s1 ^= s0
    state[0] = _to_signed(_py_rotl(s0, 49) ^ s1 ^ ((s1 << 21) & _MASK64))
    state[1] = _to_signed(_py_rotl(s1, 28))
    state[2] += 1
    return result


def py_rand_uniform(state: np.ndarray) -> float:
    """Plain-Python twin of `rand_uniform`."""
    return float(py_next_u64(state) >> 11) * _TWO_M53


def py_rand_int(state: np.ndarray, n: int) -> int:
    """Plain-Python twin of `rand_int`."""
    k = int(py_rand_uniform(state) * n)
    return k if k < n else n - 1


def py_rand_normal(state: np.ndarray) -> float:
    """Plain-Python twin of `rand_normal`."""
    while True:
        u = 2.0 * py_rand_uniform(state) - 1.0
        v = 2.0 * py_rand_uniform(state) - 1.0
        s = u * u + v * v
        if 0.0 < s < 1.0:
            return u * math.sqrt(-2.0 * math.log(s) / s)


def py_rand_gamma(state: np.ndarray, a: float) -> float:
    """Plain-Python twin of `rand_gamma`."""
    if a < 1.0:
        g = py_rand_gamma(state, a + 1.0)
        u = py_rand_uniform(state)
        return g * u ** (1.0 / a)
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = py_rand_normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = py_rand_uniform(state)
        if u < 1.0 - 0.0331 * (x * x) * (x * x):
            return d * v
        if u > 0.0 and math.log(u) < 0.5 * x * x + d * (1.0 - v + math.log(v)):
            return d * v


def py_rand_beta(state: np.ndarray, a: float, b: float) -> float:
    """Plain-Python twin of `rand_beta`."""
    x = py_rand_gamma(state, a)
    y = py_rand_gamma(state, b)
    return x / (x + y)
