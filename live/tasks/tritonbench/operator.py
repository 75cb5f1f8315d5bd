"""One TritonBench-G operator as a kernelband ``Task`` (worker and parent side).

Each operator with both files becomes a ``Task`` named ``tritonbench/<op>`` with
``call_style="returns"``: the gold code (above the separator, plus its test code's imports) is
both ``k0`` and the reference; a candidate is a whole operator file (any test code in it is
ignored). One performance input is one shape, ``{"index": i}``; the candidate must match the gold
outputs on it (``task.hooks.run`` calls the perf script's ``call_op`` with the candidate's
functions bound in; inputs the gold code writes are outputs, see ``live.evaluator.checks``), and
``task.hooks.source_check`` runs the operator's own test code against the candidate and compares
its ``result_gold`` with the gold code's (``compare_values``, dtype tolerances). Both runs of the
test code start from the same seeded RNG state (Python ``random``, NumPy, torch CPU and CUDA),
so the comparison is like with like; so do the checked calls of ``call_op`` (many operators
draw their own random inputs inside the call), but not the timed ones. Byte and FLOP counts
come from ``get_gbps`` and ``get_tflops`` evaluated at a runtime of 1 ms.

Inputs are made on the CPU by ``get_input_tensors()`` under a seeded RNG state (restored
afterwards), ``torch.empty`` giving zeros there (D72), and moved to the GPU with the script's
own ``to_cuda`` (nested entries and module objects included); on the CPU they are moved
recursively.

What the parent needs to build a task without running anything (``OperatorMeta``: number of
inputs, their sizes, byte/FLOP tables) is computed once in a worker and cached with the gold
check's result, so a cached load executes no operator code in the loading process.
"""

from __future__ import annotations

import contextlib
import functools
import random
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from live.evaluator.checks import agreement, compare_values
from live.evaluator.run_candidate import PERF_SEED
from live.tasks.base import DEFAULT_TOLERANCES, ShapeVerdict, Task, TaskHooks
from live.tasks.findings import TaskFindings
from live.tasks.loading import import_source
from live.tasks.tritonbench.format import (
    NAME_PREFIX,
    PERF_SUFFIX,
    imported_names,
    module_code,
    operator_source,
    perf_class,
    results_variable,
    retarget,
    split_operator_file,
)

#: tiny inputs checked on the CPU (and, with several seeds, on a GPU)
_CPU_SHAPES = 2
#: the seed of the RNG state the operator's test code runs under (gold and candidate alike)
TEST_CODE_SEED = 0
#: NOTE (D74): perf shapes timed per candidate, the largest by input bytes (every kept shape
#: is still checked), so a speedup is sum ref / sum candidate (TritonBench's convention) over
#: those four. Most scripts double their sizes from one input to the next, and there the four
#: largest hold at least 15/16 of the whole sum; timing all 6-26 inputs per candidate made one
#: evaluation 24-62 s on an H200
TIMED_SHAPES = 4
#: NOTE (D74): perf shapes a candidate is checked on: the timed ones and the two smallest (the
#: load-time gold check compares every shape); checking all 6-26 inputs, each with a gold run
#: and a comparison, dominated a live evaluation
CHECKED_SHAPES = TIMED_SHAPES + 2
#: NOTE (D78): the most of a card's usable memory one live check of an operator may need;
#: larger perf shapes are left out of live checks (the memory plan's notes say which). On an
#: H200, operators whose largest inputs needed 34-49 GiB held most of the plan's 84.5 GiB pool,
#: and evaluations spent a median 37 s of 68 waiting for the pool and the GPU lock
CHECK_SHARE = 1 / 8


@contextlib.contextmanager
def seeded_rng(seed: int) -> Iterator[None]:
    """Seed Python ``random``, NumPy and torch (CPU and CUDA) for the benchmark's own code, and
    restore their states afterwards.

    The benchmark's scripts draw from the global generators (they are not ours to change), so
    this is the one place kernelband touches global random state, and it puts it back.
    """
    import numpy as np

    py_state, np_state = random.getstate(), np.random.get_state()
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    devices = list(range(torch.cuda.device_count())) if cuda else []
    with torch.random.fork_rng(devices=devices):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)  # every CUDA device's generator too
        try:
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)


_EMPTY_FACTORIES = ("empty", "empty_like", "empty_strided")


@contextlib.contextmanager
def zeroed_empty_tensors() -> Iterator[None]:
    """``torch.empty`` and its kin return zeros while a performance script makes its inputs.

    NOTE (D72): some scripts build inputs with ``torch.empty`` and never fill them
    (``context_attn_llama``'s ``req_to_token_indexs``, index tables of KV-cache operators):
    their values are whatever the allocator's memory held, so the same script gives two runs two
    different inputs, and index inputs point anywhere (an illegal memory access on the GPU).
    Zeros are what a fresh page holds, what such scripts were evidently run with, and the same
    in every run. Only ``get_input_tensors`` runs under this; never a candidate or a timing.
    """
    originals = {name: getattr(torch, name) for name in _EMPTY_FACTORIES}
    new_empty = torch.Tensor.new_empty

    def zeroed(factory: Any) -> Any:
        @functools.wraps(factory)
        def make(*args: Any, **kwargs: Any) -> Any:
            return factory(*args, **kwargs).zero_()
        return make

    try:
        for name, factory in originals.items():
            setattr(torch, name, zeroed(factory))
        torch.Tensor.new_empty = zeroed(new_empty)  # type: ignore[method-assign]
        yield
    finally:
        for name, factory in originals.items():
            setattr(torch, name, factory)
        torch.Tensor.new_empty = new_empty  # type: ignore[method-assign]


@contextlib.contextmanager
def filled_uninitialised_memory() -> Iterator[None]:
    """``torch.empty`` (and its kin) filled with NaN / the integer maximum, and torch's
    deterministic algorithms (warnings, not errors, where an op has none), restored afterwards.

    NOTE (D69): many operators return buffers from ``torch.empty`` that their kernels write only
    in part (padding rows, masked tails); two runs of the same gold code then hold two different
    leftovers there and "disagree". Filled, both hold NaN, and NaN in the gold output means
    "anything" to the comparison (``live.evaluator.checks.compare_output``), so a candidate that
    writes those elements is not penalised. Checked calls only, never timed ones.
    """
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    _use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        _use_deterministic_algorithms(enabled, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill


def _use_deterministic_algorithms(mode: bool, warn_only: bool) -> None:
    """``torch.use_deterministic_algorithms`` without importing inductor where it is not loaded.

    The public function also sets ``torch._inductor.config.deterministic``, and importing that
    module imports ``torch._dynamo``: ~1.1 CPU-s in each worker's first checked call of an
    operator, for a flag only code compiled by inductor reads. Here torch's own flag is set the
    same way (the one ``fill_uninitialized_memory`` and the ops obey) and inductor's only where
    inductor is loaded already; where torch lacks the private setter, the public function.
    """
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
        return
    inductor_config = sys.modules.get("torch._inductor.config")
    if inductor_config is not None:
        inductor_config.deterministic = mode
    setter(mode, warn_only=warn_only)


#: NOTE (D80): device memory zeroed before each run of an operator's test code, as bytes for
#: blocks of more than 1 MiB and as 1 MiB blocks (PyTorch's allocator serves requests up to
#: 1 MiB from a separate pool of 2 MiB segments); within the memory plan's 256 MiB of
#: allocator slack per worker, and more than any TritonBench-G test code allocates at once
SCRUB_LARGE_BYTES = 128 * 2**20
SCRUB_SMALL_BLOCKS = 32
#: rounds of taking the free blocks left in kept segments (a small segment's free block over
#: 1 MiB takes two requests of at most 1 MiB: a larger request would go to the large pool)
SCRUB_ROUNDS = 3


def _dirty_block_requests() -> list[int]:
    """Request sizes that take the free blocks of this device's cached segments, smallest
    first (a request gets the smallest free block that fits): up to 1 MiB per request in a
    small segment, the whole block in a large one (where blocks of 1 MiB or less are never
    handed out)."""
    device = torch.cuda.current_device()
    sizes = []
    for segment in torch.cuda.memory_snapshot():
        if segment["device"] != device:
            continue
        for block in segment["blocks"]:
            if block["state"] != "inactive":
                continue
            if segment["segment_type"] == "small":
                sizes.append(min(block["size"], 2**20))
            elif block["size"] > 2**20:
                sizes.append(block["size"])
    return sorted(sizes)


def scrub_device_memory() -> None:
    """Hand the allocator's cached blocks back and refill its cache with zeroed memory, so that
    the next run reads zeros where it reads memory it never wrote, as a fresh process does.

    NOTE (D80): some operators' test code reads past the end of its own tensors
    (`apply_penalty`'s `p_cumsum_seq_len` holds 2 offsets for a batch of 2 and the kernel
    reads a third; `token_attn_mistral`'s third case reads 128 columns of a 64-column table).
    Run as a plain script, once in a fresh process, the bytes past the end are zeros from a
    fresh page and the kernel reads an empty range; in a check worker, after other runs and
    other operators, they hold leftovers (NaN or the integer maximum that D69 fills in) and
    the same kernel faults (illegal memory access, an illegal instruction). The zeroed blocks
    are freed at once; the allocator serves the run's allocations from them.

    Giving cached blocks back is not enough: a segment that still holds a live tensor (an
    earlier run's results, a kept input) stays, with its free blocks as they were, and the
    allocator serves small requests from the smallest free block that fits, so from those
    first. Those blocks are taken too (`_dirty_block_requests`) and zeroed (H200: the
    zeroing of fresh blocks alone made `apply_penalty` pass once in a process and
    `token_attn_mistral` still fault on a second run).
    """
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    held = [torch.zeros(size, dtype=torch.uint8, device="cuda")
            for _ in range(SCRUB_ROUNDS) for size in _dirty_block_requests()]
    held += [torch.zeros(2**20, dtype=torch.uint8, device="cuda")
             for _ in range(SCRUB_SMALL_BLOCKS)]
    held.append(torch.zeros(SCRUB_LARGE_BYTES, dtype=torch.uint8, device="cuda"))
    del held  # the blocks stay cached, zeroed (the stream orders the fills first)


@contextlib.contextmanager
def checked_state(seed: int = 0) -> Iterator[None]:
    """What every checked run of an operator's code starts from (gold and candidate alike): one
    seeded RNG state and filled uninitialised memory."""
    with seeded_rng(seed), filled_uninitialised_memory():
        yield


@dataclass(frozen=True)
class OperatorMeta:
    """What building an operator's task needs from its performance script (JSON-able)."""

    n_inputs: int
    is_sequence: bool
    smallest: tuple[int, ...]
    bytes_table: dict[int, int]
    flops_table: dict[int, int]
    entry_functions: tuple[str, ...]
    #: bytes of each performance input's tensors, in script order
    input_bytes: tuple[int, ...] = ()
    #: the gold check's per-shape verdicts (index -> {"kind", "reason"}), NOTE (D73)
    verdicts: dict[int, dict[str, str]] = field(default_factory=dict)
    #: device bytes each checked shape peaked at in the gold check (index -> bytes)
    peaks: dict[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_check(self, verdicts: dict[int, dict[str, str]],
                   peaks: dict[int, int]) -> OperatorMeta:
        """This metadata with what the gold check found per shape."""
        return OperatorMeta(**{**asdict(self), "verdicts": dict(verdicts),
                               "peaks": dict(peaks)})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OperatorMeta:
        return cls(n_inputs=int(data["n_inputs"]), is_sequence=bool(data["is_sequence"]),
                   smallest=tuple(data["smallest"]),
                   bytes_table={int(k): int(v) for k, v in data["bytes_table"].items()},
                   flops_table={int(k): int(v) for k, v in data["flops_table"].items()},
                   entry_functions=tuple(data["entry_functions"]),
                   input_bytes=tuple(int(x) for x in data.get("input_bytes", ())),
                   verdicts={int(k): dict(v) for k, v in data.get("verdicts", {}).items()},
                   peaks={int(k): int(v) for k, v in data.get("peaks", {}).items()})


# ---------------------------------------------------------------------------------------------
# the task's callables (top-level functions, bound with functools.partial)


@functools.lru_cache(maxsize=64)
def _gold_module(path: str, op: str) -> ModuleType:
    source = operator_source(path, op)
    return import_source(module_code(source.code, source.test_code), f"tb_gold_{op}")


def _perf_instance(path: str, op: str, module: ModuleType, device: str) -> Any:
    """The perf object bound to ``module``, cached on the module (one per device)."""
    attribute = f"_kb_perf_{op}_{device.replace(':', '_')}"
    instance = getattr(module, attribute, None)
    if instance is None:
        instance = perf_class(operator_source(path, op), module, device)()
        setattr(module, attribute, instance)
    return instance


@functools.lru_cache(maxsize=2)
def _cpu_inputs(path: str, op: str, seed: int) -> tuple[list[Any], bool]:
    """All performance inputs for ``seed`` on the CPU, and whether entries are sequences."""
    return _generate_inputs(path, op, seed)


@functools.lru_cache(maxsize=16)
def _small_cpu_inputs(path: str, op: str, seed: int) -> tuple[dict[int, Any], bool]:
    """The ``_CPU_SHAPES`` smallest performance inputs for ``seed`` (the CPU shapes), by index.

    On a CPU the evaluator checks those shapes with the candidate's seeds (on a GPU, every perf
    shape with ``PERF_SEED`` only, D74); the script can only make all its inputs at once, so
    for the other seeds only the small entries are kept: each seed's inputs are made once per
    worker instead of once per check, and the perf seed's full set stays cached."""
    entries, is_sequence = _generate_inputs(path, op, seed)
    return {index: entries[index] for index in _smallest(entries)}, is_sequence


def _smallest(entries: list[Any]) -> list[int]:
    """Indices of the ``_CPU_SHAPES`` entries with the fewest tensor elements, ascending."""
    sizes = [sum(x.numel() for x in flatten_outputs(e) if isinstance(x, torch.Tensor))
             for e in entries]
    return sorted(sorted(range(len(entries)), key=lambda index: sizes[index])[:_CPU_SHAPES])


def _generate_inputs(path: str, op: str, seed: int) -> tuple[list[Any], bool]:
    perf = _perf_instance(path, op, _gold_module(path, op), "cpu")
    with seeded_rng(seed), zeroed_empty_tensors():
        perf.get_input_tensors()
    entries = list(perf.input_tensors)
    perf.input_tensors = []
    if not entries:
        raise ValueError(f"{operator_source(path, op).perf_path}: get_input_tensors() produced "
                         "no inputs.")
    return entries, isinstance(entries[0], (tuple, list))


def move_entry(entry: Any, device: str, perf: Any = None) -> Any:
    """One performance input on ``device``: the script's ``to_cuda`` on a GPU when it has one,
    else every tensor in the (nested) entry copied there (a module is moved, not copied).

    Always a copy, also where a tensor already is (every input on a CPU): entries come from a
    cache of generated inputs, and an operator that writes its inputs in place would otherwise
    change what the next check is given; a reference writing the values already there would
    then not count as writing them (a racy scatter's second gold check said "modified by the
    candidate" instead of comparing the two writes). The inputs are generated on the CPU, so a
    script's ``to_cuda`` copies too."""
    if device.startswith("cuda") and perf is not None:
        try:
            return perf.to_cuda(entry)
        except NotImplementedError:
            pass
    if isinstance(entry, torch.Tensor):
        return entry.to(device, copy=True)
    if isinstance(entry, (tuple, list)):
        return type(entry)(move_entry(x, device) for x in entry)
    if isinstance(entry, dict):
        return {key: move_entry(value, device) for key, value in entry.items()}
    if isinstance(entry, torch.nn.Module):
        return entry.to(device)
    return entry


def make_inputs(path: str, op: str, shape: dict[str, int], seed: int, device: str) -> tuple:
    """Performance input number ``shape["index"]`` as a tuple (copied to ``device``: tensors
    the caller owns, see `move_entry`)."""
    index = shape["index"]
    small, is_sequence = ({}, False) if seed == PERF_SEED else _small_cpu_inputs(path, op, seed)
    if index in small:
        entry = small[index]
    else:
        entries, is_sequence = _cpu_inputs(path, op, seed)
        entry = entries[index]
    perf = _perf_instance(path, op, _gold_module(path, op), device) \
        if device.startswith("cuda") else None
    moved = move_entry(entry, device, perf)
    return tuple(moved) if is_sequence else (moved,)


def run_operator(path: str, op: str, is_sequence: bool, module: ModuleType, inputs: tuple) -> tuple:
    """Call the perf script's ``call_op`` with ``module``'s functions; outputs as a tuple."""
    device = next((x.device.type for x in flatten_outputs(inputs)
                   if isinstance(x, torch.Tensor)), "cpu")
    perf = _perf_instance(path, op, module, device)
    return flatten_outputs(perf.call_op(inputs if is_sequence else inputs[0]))


def reference(path: str, op: str, is_sequence: bool, *inputs: Any) -> tuple:
    """The gold operator's outputs."""
    return run_operator(path, op, is_sequence, _gold_module(path, op), inputs)


def flatten_outputs(value: Any) -> tuple:
    """The leaves of a (nested) result in order: tensors, and anything else as it is (numbers,
    strings, None, NumPy arrays) for ``compare_values``."""
    if isinstance(value, (tuple, list)):
        return tuple(t for item in value for t in flatten_outputs(item))
    if isinstance(value, dict):
        return tuple(t for key in value for t in flatten_outputs(value[key]))
    return (value,)


def result_gold_of(code: str, test_code: str, device: str, stem: str) -> Any:
    """Run ``code`` followed by the (retargeted) test code under the seeded RNG state; return
    its results: ``result_gold``, or where the test code keeps them under another name, the
    test's returned or last-built results dict (`results_variable`)."""
    test_code, name = results_variable(test_code)
    if name is None:
        raise ValueError("the test code leaves no results: no result_gold, no top-level call "
                         "of its test function, no module-level results dict")
    scrub_device_memory()
    with checked_state(TEST_CODE_SEED):
        module = import_source(code + "\n\n" + retarget(test_code, device) + "\n", stem)
    if not hasattr(module, name):
        raise ValueError(f"the test code did not set {name}")
    return getattr(module, name)


#: NOTE (D76): runs of the gold test code merged into the expected ``result_gold`` when a
#: candidate's disagrees with the first run's (the first is all a candidate that agrees costs)
GOLD_RUNS = 3
#: operators whose gold test-code results a worker keeps (its next checks are others')
_GOLD_KEPT = 8


@dataclass
class _GoldResults:
    """One operator's gold test-code results in this worker, and their merge once made."""

    runs: list[Any] = field(default_factory=list)
    merged: tuple[Any, int, int] | None = None
    #: what the last passing source check set aside, for the gold check's record
    set_aside: str | None = None


_GOLD: dict[tuple[str, str, str], _GoldResults] = {}


def _gold(path: str, op: str, device: str, n: int) -> _GoldResults:
    """This worker's gold test-code results for ``op``, with at least ``n`` runs."""
    key = (path, op, device)
    if key not in _GOLD and len(_GOLD) >= _GOLD_KEPT:
        _GOLD.pop(next(iter(_GOLD)))  # the oldest
    gold = _GOLD.setdefault(key, _GoldResults())
    source = operator_source(path, op)
    while len(gold.runs) < n:
        gold.runs.append(result_gold_of(source.code, source.test_code, device,
                                        f"tb_goldtest_{op}_{len(gold.runs)}"))
    return gold


def _gold_agreement(gold: _GoldResults) -> tuple[Any, int, int]:
    """The ``GOLD_RUNS`` runs of the gold test code merged (``agreement``): the expected result
    where they agree, "anything" where they do not; how many elements they disagree on, and
    how many there are."""
    if gold.merged is None:
        gold.merged = agreement(gold.runs[:GOLD_RUNS], _default_tolerance)
    return gold.merged


def set_aside_note(path: str, op: str, device: str) -> str | None:
    """What the last passing source check of ``op`` did not compare, or None (NOTE D76)."""
    gold = _GOLD.get((path, op, device))
    return gold.set_aside if gold is not None else None


def _default_tolerance(dtype_name: str) -> tuple[float, float]:
    return DEFAULT_TOLERANCES.get(dtype_name.removeprefix("torch."), (1e-5, 1e-5))


def compare_results(got: Any, expected: Any, where: str = "result_gold") -> str | None:
    """None when two nested results agree (``live.evaluator.checks.compare_values``)."""
    return compare_values(got, expected, _default_tolerance, where)


def code_part(candidate_source: str) -> str:
    """What to import for a candidate: the code above the separator of a whole operator file,
    plus its test code's imports (all of it without a separator)."""
    split = split_operator_file(candidate_source)
    return module_code(*split) if split else candidate_source


def source_check(path: str, op: str, candidate_source: str, device: str) -> str | None:
    """Run the operator's test code on the candidate; compare ``result_gold`` with the gold's.

    NOTE (D76): when the candidate's result differs from the gold's first run, it is compared
    again with ``GOLD_RUNS`` runs of the gold merged: elements where the gold code disagrees
    with itself under the same seeds (racing writes to one place, reads of memory it does not
    own) are not compared there; the rest are. ``set_aside_note`` says how many were.
    """
    split = split_operator_file(candidate_source)
    code = split[0] if split else candidate_source
    source = operator_source(path, op)
    gold = _gold(path, op, device, 1)
    gold.set_aside = None
    try:
        got = result_gold_of(code, source.test_code, device, f"tb_candtest_{op}")
    except Exception as exc:
        return f"the operator's test code raised {type(exc).__name__}: {exc}"
    problem = compare_results(got, gold.runs[0])
    if problem is None:
        return None
    merged, varying, total = _gold_agreement(_gold(path, op, device, GOLD_RUNS))
    if not varying or varying == total:  # all alike (a wrong candidate) or nothing to compare
        return problem
    problem = compare_results(got, merged)
    if problem is None:
        gold.set_aside = (f"result_gold compared where {GOLD_RUNS} runs of the gold test code "
                          f"agree: {varying} of {total} elements or values set aside")
    return problem


def release_caches() -> None:
    """Drop the operators' inputs made on the CPU and their test code's results (a check
    worker's next check is another operator's; the modules stay, they are small)."""
    _cpu_inputs.cache_clear()
    _small_cpu_inputs.cache_clear()
    _GOLD.clear()


def _table_lookup(table: dict[int, int], shape: dict[str, int]) -> int:
    return table[shape["index"]]


# ---------------------------------------------------------------------------------------------
# building


def operator_meta(path: Path | str, op: str) -> OperatorMeta:
    """Run the performance script's ``get_input_tensors`` (CPU) and throughput formulas once."""
    path_str = str(Path(path).resolve())
    source = operator_source(path_str, op)
    if source.perf_path is None:
        raise ValueError(f"operator {op!r} has no {op}{PERF_SUFFIX} performance script.")
    entries, is_sequence = _cpu_inputs(path_str, op, 0)
    perf = _perf_instance(path_str, op, _gold_module(path_str, op), "cpu")
    bytes_table, flops_table = {}, {}
    for index, entry in enumerate(entries):
        try:
            bytes_table[index] = int(round(perf.get_gbps(entry, 1.0) * 1e6))
            flops_table[index] = int(round(perf.get_tflops(entry, 1.0) * 1e9))
        except Exception:  # a script without usable throughput formulas: no roofline figures
            bytes_table, flops_table = {}, {}
            break
    input_bytes = tuple(sum(x.numel() * x.element_size() for x in flatten_outputs(e)
                            if isinstance(x, torch.Tensor)) for e in entries)
    return OperatorMeta(len(entries), is_sequence, tuple(_smallest(entries)), bytes_table,
                        flops_table, tuple(imported_names(source)), input_bytes)


def tritonbench_task(path: Path | str, name: str, meta: OperatorMeta | None = None) -> Task:
    """The task for one operator (``add`` or ``tritonbench/add``), without the gold check.

    Without ``meta`` the performance script runs here (a worker); with it (from the check
    cache) nothing of the operator runs.
    """
    path_str = str(Path(path).resolve())
    op = name.removeprefix(NAME_PREFIX)
    source = operator_source(path_str, op)
    if meta is None:
        meta = operator_meta(path_str, op)
    shapes = [{"index": index} for index in range(meta.n_inputs)]
    small = [shapes[index] for index in meta.smallest]
    entry_functions = list(meta.entry_functions)
    return Task(
        name=NAME_PREFIX + op,
        description=f"TritonBench-G operator {op!r} ({source.operator_path.name}). A candidate "
        "is a whole operator file that keeps the gold code's public functions and signatures: "
        f"{', '.join(entry_functions) or op}.",
        category="tritonbench",
        entry=entry_functions[0] if entry_functions else op,
        k0=module_code(source.code, source.test_code),
        reference=functools.partial(reference, path_str, op, meta.is_sequence),
        make_inputs=functools.partial(make_inputs, path_str, op),
        # NOTE (D74): no extra seeded test shapes on a GPU: a candidate is checked on every
        # kept perf input (one seed) and by the operator's own test code; a script makes all
        # its inputs at once (up to 30 GB on the host), so another seed's small inputs cost
        # a whole generation per candidate
        test_shapes=[],
        perf_shapes=shapes,
        cpu_shapes=small,
        bytes_moved=functools.partial(_table_lookup, meta.bytes_table)
        if meta.bytes_table else None,
        flops=functools.partial(_table_lookup, meta.flops_table) if meta.flops_table else None,
        source=f"tritonbench:{path_str}",
        call_style="returns",
        language="triton",
        hooks=TaskHooks(
            run=functools.partial(run_operator, path_str, op, meta.is_sequence),
            source_check=functools.partial(source_check, path_str, op),
            source_note=functools.partial(set_aside_note, path_str, op),
            prepare_source=code_part,
            # operators that draw their own random inputs inside the call (many do:
            # `wrapper(m, n)` makes a torch.randn matrix) compare like with like only from one
            # RNG state; outputs written in part compare like with like only from filled
            # memory (D69)
            call_context=functools.partial(checked_state, TEST_CODE_SEED),
            release=release_caches),
    )


def tritonbench_findings(meta: OperatorMeta) -> TaskFindings:
    """What is known of an operator's perf inputs beside its task: the gold check's verdicts
    and peaks (in `meta` from the check cache; none before a check), each input's bytes, and
    how many inputs a candidate is checked and timed on (D74) and its share of the card (D78)."""
    return TaskFindings(
        shape_verdicts={index: ShapeVerdict(v["kind"], v["reason"])
                        for index, v in meta.verdicts.items()},
        shape_bytes=meta.input_bytes or None,
        max_timed_shapes=TIMED_SHAPES,
        max_checked_shapes=CHECKED_SHAPES,
        measured_peak_bytes=dict(meta.peaks),
        max_check_share=CHECK_SHARE)
