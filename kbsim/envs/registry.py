"""The one map from a replay environment's name to how it is built and which engine runs it.

Every caller that turns a name (``--env tape``, the demo's tape and fitted pair, the sim-to-real
check) into an `Env` goes through `build_env`; the entry's `kind` is also what the replay engine
is compiled for (`kbsim.replay.engine.compiled_worker(family, kind)`), so a command compiles the
code of the environments it names and of no other (issue #16).

Adding an environment: a builder module under ``kbsim/envs/`` returning an `Env` with a new kind
constant (``kbsim/envs/data.py``), its compiled step as a ``kind == KIND`` branch of
``env_answer`` / ``env_arm_means`` / ``env_init`` / ``env_reveal_hw`` in ``kbsim/envs/step.py``
(called with the literal kind in an ``ekind == KIND`` branch of ``kbsim/replay/engine.py``),
and one `EnvEntry` line in `ENVIRONMENTS` below.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbsim.envs.data import FITTED, SYNTHETIC, TAPE, Env


@dataclass(frozen=True)
class EnvEntry:
    """How to build one environment kind."""

    name: str
    kind: int  # the compiled engine's constant (kbsim.envs.data)
    source: str  # "trace": built from a trace's (steps, kernels) tables; "spec": from a text
    builder: str  # "module:function", imported on first use
    options: tuple[str, ...]  # keyword options the builder takes besides tasks / description
    summary: str

    def build_function(self) -> Any:
        module, _, function = self.builder.partition(":")
        return getattr(importlib.import_module(module), function)


ENVIRONMENTS: dict[str, EnvEntry] = {
    entry.name: entry
    for entry in (
        EnvEntry("tape", TAPE, "trace", "kbsim.envs.tape:build_tape",
                 ("on_exhaust", "not_applicable", "reveals", "reveal"),
                 "recorded outcomes in order, per (parent, strategy)"),
        EnvEntry("fitted", FITTED, "trace", "kbsim.envs.fitted:build_fitted",
                 ("knn", "not_applicable", "reveals", "reveal"),
                 "nearest-neighbour model of the trace, unlimited horizon"),
        EnvEntry("synthetic", SYNTHETIC, "spec", "kbsim.envs.synthetic:build_synthetic", (),
                 "planted clusters, Lipschitz constant, noise, exact means"),
    )
}
#: the environments built from a recorded trace (tape, fitted)
TRACE_ENVS: tuple[str, ...] = tuple(n for n, e in ENVIRONMENTS.items() if e.source == "trace")


def env_entry(name: str) -> EnvEntry:
    """The registry entry of `name`; ValueError with the valid names otherwise."""
    entry = ENVIRONMENTS.get(name)
    if entry is None:
        raise ValueError(f"unknown replay environment {name!r}; expected one of "
                         f"{', '.join(ENVIRONMENTS)}.")
    return entry


def build_env(name: str, source: Any, *, tasks: Sequence[str] | None = None,
              description: str | None = None, **options: Any) -> Env:
    """Build environment `name` from `source`: a (steps, kernels) pair of trace tables (or a
    `kbsim.trace.TraceData`) for trace environments, a spec text for ``synthetic``.

    `options` the environment does not take (``knn`` for tape, say) are ignored, so one set of
    options can build several environments; `tasks` and `description` apply to trace
    environments only.
    """
    entry = env_entry(name)
    build = entry.build_function()
    kwargs = {k: v for k, v in options.items() if k in entry.options and v is not None}
    if entry.source == "spec":
        if not isinstance(source, str):
            raise ValueError(f"the {name} environment is built from a spec text, not "
                             f"{type(source).__name__}.")
        return build(source, **kwargs)
    if hasattr(source, "steps") and hasattr(source, "kernels"):
        steps, kernels = source.steps, source.kernels
    else:
        steps, kernels = source
    if tasks is not None:
        kwargs["tasks"] = list(tasks)
    if description is not None:
        kwargs["description"] = description
    return build(steps, kernels, **kwargs)


def build_envs(names: Sequence[str], source: Any, **kwargs: Any) -> list[Env]:
    """`build_env` for each of `names` from one source."""
    return [build_env(name, source, **kwargs) for name in names]
