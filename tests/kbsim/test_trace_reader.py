"""Reader: loads valid datasets, and names file and problem, in one sentence, for each corruption.

CORRUPTIONS is a table of (name, how to damage a valid dataset, the exact message expected);
tests/cli/test_traces_cli.py feeds the same table through `kernelband traces validate`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kbsim.trace.reader import TraceError, load_trace, validate_trace
from kbsim.trace.writer import TraceWriter
from tests.kbsim.test_trace_writer import MANIFEST, kernel_row, step_row, write_valid

STEPS_PART = "steps/part-00000001.parquet"
KERNELS_PART = "kernels/part-00000001.parquet"
FIRST = "run_id='r1', task_id='t1', step=0"


def _edit_manifest(d: Path, **changes: object) -> None:
    manifest = json.loads((d / "manifest.json").read_text())
    for key, value in changes.items():
        if value is ...:
            del manifest[key]
        else:
            manifest[key] = value
    (d / "manifest.json").write_text(json.dumps(manifest))


def _edit_part(d: Path, part: str, edit: Callable[[pa.Table], pa.Table]) -> None:
    table = pq.read_table(d / part)
    pq.write_table(edit(table), d / part)


def _set(name: str, values: list) -> Callable[[pa.Table], pa.Table]:
    def edit(table: pa.Table) -> pa.Table:
        i = table.schema.get_field_index(name)
        field = table.schema.field(i).with_nullable(True)
        return table.set_column(i, field, pa.array(values, field.type))

    return edit


def _truncate(d: Path) -> None:
    data = (d / STEPS_PART).read_bytes()
    (d / STEPS_PART).write_bytes(data[: len(data) // 2])


def _retype_step(table: pa.Table) -> pa.Table:
    i = table.schema.get_field_index("step")
    return table.set_column(i, "step", pc.cast(table.column("step"), pa.string()))


def _newer_part(table: pa.Table) -> pa.Table:
    metadata = dict(table.schema.metadata)
    metadata[b"kernelband.schema_version"] = b"3"
    return table.replace_schema_metadata(metadata)


def matches(text: str, expected: str) -> bool:
    """Exact match, or a prefix match where `expected` ends with '...'."""
    if expected.endswith("..."):
        return text.startswith(expected[:-3]) and len(text) > len(expected) - 3
    return text == expected


# (id, corruption, expected message); "{d}" is the dataset directory
CORRUPTIONS: list[tuple[str, Callable[[Path], None], str]] = [
    (
        "no-directory",
        lambda d: shutil.rmtree(d),
        "{d}: no such directory",
    ),
    (
        "missing-manifest",
        lambda d: (d / "manifest.json").unlink(),
        "{d}: no manifest.json, so this is not a kernelband trace dataset",
    ),
    (
        "manifest-not-json",
        lambda d: (d / "manifest.json").write_text("{schema_version: 1"),
        "{d}/manifest.json: not valid JSON "
        "(Expecting property name enclosed in double quotes at line 1)",
    ),
    (
        "newer-schema-version",
        lambda d: _edit_manifest(d, schema_version=2),
        "{d}/manifest.json: schema version 2 was written by a newer kernelband "
        "(this one reads version 1); upgrade kernelband to read it",
    ),
    (
        "unknown-schema-version",
        lambda d: _edit_manifest(d, schema_version="v1"),
        "{d}/manifest.json: unknown schema version 'v1' (this kernelband reads version 1)",
    ),
    (
        "manifest-lacks-key",
        lambda d: _edit_manifest(d, hardware=...),
        "{d}/manifest.json: manifest lacks required key 'hardware'",
    ),
    (
        "truncated-part",
        _truncate,
        # pyarrow's own reason follows; its wording depends on the pyarrow version
        "{d}/" + STEPS_PART + ": unreadable Parquet file (truncated or corrupt: ...",
    ),
    (
        "missing-column",
        lambda d: _edit_part(d, STEPS_PART, lambda t: t.drop_columns(["reward"])),
        "{d}/" + STEPS_PART + ": missing column 'reward' required by schema v1 steps",
    ),
    (
        "wrong-type",
        lambda d: _edit_part(d, STEPS_PART, _retype_step),
        "{d}/" + STEPS_PART + ": column 'step' has type string, but schema v1 steps says int32",
    ),
    (
        "unknown-column",
        lambda d: _edit_part(d, STEPS_PART, lambda t: t.append_column("x", pa.array([1, 2, 3]))),
        "{d}/" + STEPS_PART + ": unknown column 'x' (not in schema v1 steps)",
    ),
    (
        "part-from-newer-kernelband",
        lambda d: _edit_part(d, STEPS_PART, _newer_part),
        "{d}/" + STEPS_PART + ": written by a newer kernelband "
        "(schema version 3; this one reads version 1)",
    ),
    (
        "nan-child-ms-on-ok",
        lambda d: _edit_part(d, STEPS_PART, _set("child_ms", [float("nan"), 1.0, 1.0])),
        "{d}/" + STEPS_PART + ": 1 'ok' row(s) have a missing, NaN or non-positive child_ms "
        f"(first: {FIRST})",
    ),
    (
        "unknown-status",
        lambda d: _edit_part(d, STEPS_PART, _set("status", ["ok", "ok", "superb"])),
        "{d}/" + STEPS_PART + ": unknown status 'superb' in 1 row(s) "
        "(first: run_id='r1', task_id='t1', step=2); allowed: ok, compile_error, runtime_error, "
        "incorrect, timeout, llm_error, no_code, not_applicable, rejected",
    ),
    (
        "reward-out-of-range",
        lambda d: _edit_part(d, STEPS_PART, _set("reward", [2.0, 0.1, 0.1])),
        "{d}/" + STEPS_PART + ": 1 row(s) have a reward that is NaN, infinite or above 1 "
        f"(first: {FIRST}, reward=2.0)",
    ),
    (
        "null-in-required-column",
        lambda d: _edit_part(d, STEPS_PART, _set("policy", [None, "explore", "explore"])),
        "{d}/" + STEPS_PART + ": column 'policy' has 1 null value(s) but is required",
    ),
    (
        "duplicate-steps",
        lambda d: shutil.copy(d / STEPS_PART, d / "steps/part-00000002.parquet"),
        "{d}: step (run_id='r1', task_id='t1', step=0) is recorded 2 times "
        "(3 duplicated step(s) in all)",
    ),
    (
        "run-id-not-in-manifest",
        lambda d: _edit_manifest(d, run_ids=["other"]),
        "{d}/manifest.json: steps use run id 'r1' that is not listed in the manifest's run_ids",
    ),
    (
        "empty-dataset",
        lambda d: (d / STEPS_PART).unlink(),
        "{d}: no steps recorded (empty dataset)",
    ),
    (
        "child-kernel-missing",
        lambda d: _edit_part(d, KERNELS_PART, lambda t: t.slice(0, 2)),
        "{d}: 2 'ok' step(s) name a child kernel missing from the kernels table "
        "(first: task_id='t1', child_id='k2')",
    ),
    (
        "stray-parquet-file",
        lambda d: shutil.copy(d / STEPS_PART, d / "steps/extra.parquet"),
        "{d}/steps/extra.parquet: not named like a part file (part-NNNNNNNN.parquet), "
        "so Parquet globs would read it but kbsim would not",
    ),
    (
        "duplicate-kernels",
        lambda d: shutil.copy(d / KERNELS_PART, d / "kernels/part-00000002.parquet"),
        "{d}: kernel (task_id='t1', kernel_id='k0') is recorded 2 times",
    ),
]


def corrupted_dataset(root: Path, corruption: Callable[[Path], None]) -> Path:
    """A valid 3-step dataset (one part file per table), then damaged by `corruption`."""
    d = root / "d"
    write_valid(d, 3, flush_every=1000)
    corruption(d)
    return d


def test_valid_dataset_loads(tmp_path: Path) -> None:
    d = corrupted_dataset(tmp_path, lambda d: None)
    assert validate_trace(d) == []
    data = load_trace(d)
    assert data.steps.num_rows == 3 and data.kernels.num_rows == 4
    assert data.manifests[0]["run_ids"] == ["r1"]
    frame = data.steps_df()
    assert list(frame["step"]) == [0, 1, 2] and frame["status"].eq("ok").all()
    assert set(data.kernels_df()["kernel_id"]) == {"k0", "k1", "k2", "k3"}


@pytest.mark.parametrize(
    ("corruption", "message"), [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS]
)
def test_each_corruption_gets_its_exact_message(
    tmp_path: Path, corruption: Callable[[Path], None], message: str
) -> None:
    d = corrupted_dataset(tmp_path, corruption)
    expected = message.format(d=d)
    problems = validate_trace(d)
    assert len(problems) == 1 and matches(problems[0], expected)
    with pytest.raises(TraceError) as info:
        load_trace(d)
    assert matches(str(info.value), expected)
    assert isinstance(info.value, ValueError)


def test_several_problems_are_all_reported(tmp_path: Path) -> None:
    d = corrupted_dataset(tmp_path, lambda d: _edit_part(d, STEPS_PART, _set("reward", [2.0] * 3)))
    _edit_part(d, KERNELS_PART, lambda t: t.append_column("y", pa.array([0] * 4)))
    problems = validate_trace(d)
    assert len(problems) == 2
    with pytest.raises(TraceError, match=r"\(and 1 more problem\(s\)\)$"):
        load_trace(d)


def test_several_datasets_load_together_and_collisions_are_named(tmp_path: Path) -> None:
    write_valid(tmp_path / "a", 2)
    write_valid(tmp_path / "b", 3)
    with pytest.raises(TraceError) as info:
        load_trace([tmp_path / "a", tmp_path / "b"])
    assert str(info.value) == (
        f"{tmp_path / 'b'}: run id 'r1' also appears in {tmp_path / 'a'}; "
        "combine them with `kernelband traces merge`"
    )
    with TraceWriter(tmp_path / "c", MANIFEST) as writer:
        writer.append_kernel(kernel_row("k1", run_id="r9"))
        writer.append_step(step_row(0, run_id="r9"))
    data = load_trace([tmp_path / "a", tmp_path / "c"])
    assert data.run_ids == ["r1", "r9"] and len(data.manifests) == 2
    assert data.steps.column("run_id").to_pylist() == ["r1", "r1", "r9"]


def test_loading_only_some_columns(tmp_path: Path) -> None:
    write_valid(tmp_path / "d", 3)
    data = load_trace(tmp_path / "d", steps_columns=["task_id", "status"], kernels_columns=["ms"])
    assert data.steps.column_names == ["task_id", "status"]
    assert data.kernels.column_names == ["ms"] and data.kernels.num_rows == 4


def test_vectors_are_stored_as_variable_lists_and_read_back_fixed(tmp_path) -> None:
    """pyarrow < 26 cannot read null fixed-size-list entries back from Parquet, so part files
    store vector columns as variable lists (readable by every version) and the reader restores
    the fixed sizes; files in the old layout (fixed-size lists on disk) still read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kbsim.trace.layout import atomic_write_parquet
    from kbsim.trace.reader import read_part_file
    from kbsim.trace.schema import KERNELS_SCHEMA
    from kbsim.trace.synthetic_trace import synthetic_tables

    _, kernels = synthetic_tables(30, 2, seed=1)
    hw = kernels.schema.get_field_index("hw_sig")
    n = kernels.num_rows
    values = [None if i % 3 == 1 else [1.0, 2.0, 3.0] for i in range(n)]
    kernels = kernels.set_column(hw, kernels.schema.field(hw), pa.array(values,
                                                                      pa.list_(pa.float64(), 3)))
    new = tmp_path / "new.parquet"
    atomic_write_parquet(new, kernels)
    stored = pq.read_schema(new)
    assert stored.field("hw_sig").type == pa.list_(pa.float64())
    assert stored.metadata == kernels.schema.metadata  # schema version kept
    old = tmp_path / "old.parquet"
    pq.write_table(kernels, old)  # the layout before: fixed-size lists on disk
    for path in (new, old):
        back = read_part_file(path, "kernels")
        assert back.schema.field("hw_sig").type == KERNELS_SCHEMA.field("hw_sig").type
        assert back.column("hw_sig").to_pylist() == values
