"""Turn plain row dicts into schema v1 Arrow tables, refusing anything the schema does not allow.

Missing nullable keys become nulls; a missing required key, an unknown key or a value of the wrong
type is a ValueError naming the column, the expected type and the value received.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

_INT_BOUNDS = {8: 2**7, 16: 2**15, 32: 2**31, 64: 2**63}


def _type_error(value: Any, arrow_type: pa.DataType) -> str | None:
    """Why `value` cannot be stored in a column of `arrow_type` (None when it can)."""
    if pa.types.is_string(arrow_type):
        return None if isinstance(value, str) else "a str"
    if pa.types.is_boolean(arrow_type):
        return None if isinstance(value, (bool, np.bool_)) else "a bool"
    if pa.types.is_integer(arrow_type):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            return f"an integer ({arrow_type})"
        bound = _INT_BOUNDS[arrow_type.bit_width]
        return None if -bound <= int(value) < bound else f"an integer within {arrow_type}"
    if pa.types.is_floating(arrow_type):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            return "a number (float64)"
        return None
    if pa.types.is_timestamp(arrow_type):
        if not isinstance(value, datetime):
            return "a datetime"
        return None if value.tzinfo is not None else "a timezone-aware datetime"
    if pa.types.is_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        if not isinstance(value, (list, tuple, np.ndarray)):
            return f"a list ({arrow_type})"
        if pa.types.is_fixed_size_list(arrow_type) and len(value) != arrow_type.list_size:
            return f"a list of exactly {arrow_type.list_size} values"
        for item in value:
            if item is not None and _type_error(item, arrow_type.value_type) is not None:
                return f"a list ({arrow_type})"
        return None
    return None  # a type this module does not know: let Arrow decide


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python values, so Arrow converts them without surprises."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def check_row(row: Mapping[str, Any], schema: pa.Schema, table_name: str) -> dict[str, Any]:
    """The row as a full dict of Python values (nulls filled in); ValueError if it does not fit."""
    if not isinstance(row, Mapping):
        raise ValueError(f"a {table_name} row must be a dict, got {type(row).__name__}")
    unknown = [key for key in row if schema.get_field_index(key) < 0]
    if unknown:
        raise ValueError(
            f"{table_name} row has unknown column {unknown[0]!r} (not in schema v1 {table_name})"
        )
    full: dict[str, Any] = {}
    for field in schema:
        value = row.get(field.name)
        if value is None:
            if not field.nullable:
                missing = "is missing" if field.name not in row else "is None"
                raise ValueError(f"{table_name} row: required column {field.name!r} {missing}")
            full[field.name] = None
            continue
        why = _type_error(value, field.type)
        if why is not None:
            shown = repr(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise ValueError(
                f"{table_name} row: column {field.name!r} must be {why}, "
                f"got {type(value).__name__} {shown}"
            )
        full[field.name] = _plain(value)
    return full


def rows_to_table(
    rows: Sequence[Mapping[str, Any]], schema: pa.Schema, table_name: str
) -> pa.Table:
    """Check every row and build one Arrow table with exactly `schema`."""
    checked = [check_row(row, schema, table_name) for row in rows]
    try:
        return pa.Table.from_pylist(checked, schema=schema)
    except (pa.ArrowException, OverflowError) as err:
        raise ValueError(f"{table_name} rows do not fit schema v1: {err}") from err


def conform_table(table: pa.Table, schema: pa.Schema, table_name: str) -> pa.Table:
    """A bulk-built table cast to exactly `schema`; ValueError on missing/unknown/mistyped columns.

    Columns must carry the schema's types already (or types Arrow casts safely); missing
    nullable columns are added as nulls.
    """
    unknown = [name for name in table.column_names if schema.get_field_index(name) < 0]
    if unknown:
        raise ValueError(
            f"{table_name} table has unknown column {unknown[0]!r} (not in schema v1 {table_name})"
        )
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            try:
                column = column.cast(field.type, safe=True)
            except (pa.ArrowException, ValueError) as err:
                raise ValueError(
                    f"{table_name} table: column {field.name!r} has type {column.type}, "
                    f"which does not cast safely to {field.type}"
                ) from err
        elif field.nullable:
            column = pa.nulls(table.num_rows, field.type)
        else:
            raise ValueError(f"{table_name} table: required column {field.name!r} is missing")
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def _finite(value: Any) -> float | None:
    """A float, or None for a missing or non-finite value (NaN is stored as null)."""
    if value is None:
        return None
    value = float(value)
    return value if np.isfinite(value) else None


def _finite_list(values: Any) -> list[float | None] | None:
    return None if values is None else [_finite(v) for v in values]


def kernel_row(
    *,
    run_id: str,
    task_id: str,
    kernel_id: str,
    code: str,
    parent_id: str | None,
    strategy_chain: Sequence[str],
    correct: bool,
    ms: float | None,
    phi: Sequence[float] | None,
    runtime_vec: Sequence[float] | None,
    timing_backend: str,
    shape_ms: Sequence[float] | None = None,
    timing_cv: float | None = None,
    registers: int | None = None,
    shared_bytes: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    hw_sig: Sequence[float] | None = None,
    profile9: Sequence[float] | None = None,
    profiler: str | None = None,
    roofline_sig: Sequence[float] | None = None,
) -> dict[str, Any]:
    """THE builder of a KERNELS_SCHEMA row (live runner, simulated recorder, tests).

    Rules: non-finite floats are stored as null; ``ms`` and ``shape_ms`` only for a correct
    kernel; the kernel is ``profiled`` exactly when a hardware signature is given, and then
    ``profiler`` names what measured it; ``profile9`` is stored whenever given;
    ``roofline_sig`` (the signature v2 sees before Nsight Compute's) only for a correct kernel.
    """
    profiled = hw_sig is not None and any(_finite(v) is not None for v in hw_sig)
    return {
        "run_id": run_id,
        "task_id": task_id,
        "kernel_id": kernel_id,
        "code": code,
        "parent_id": parent_id,
        "strategy_chain": list(strategy_chain),
        "correct": bool(correct),
        "ms": _finite(ms) if correct else None,
        "shape_ms": _finite_list(shape_ms) if correct else None,
        "timing_cv": _finite(timing_cv),
        "timing_backend": timing_backend,
        "registers": registers,
        "shared_bytes": shared_bytes,
        "num_warps": num_warps,
        "num_stages": num_stages,
        "phi": _finite_list(phi),
        "runtime_vec": _finite_list(runtime_vec),
        "hw_sig": _finite_list(hw_sig) if profiled else None,
        "profile9": _finite_list(profile9),
        "profiled": profiled,
        "profiler": profiler if profiled else None,
        "roofline_sig": _finite_list(roofline_sig) if correct and roofline_sig is not None
        else None,
    }
