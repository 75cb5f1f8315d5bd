"""Batch profiling: kernels renamed apart per candidate, launches attributed back by suffix, and
the batch path of NcuProfiler with a fake ncu that answers like the real one (H200 CSV)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from live.evaluator import kernel_id
from live.profiler import NcuProfiler, triton_kernel_names
from live.profiler.batch import kernel_regex, rename_kernels, split_launches
from live.profiler.csv_parse import Launch
from tests.live.fixtures.candidates.tiny_tasks import SPEC

FIXTURES = Path(__file__).parent / "fixtures"
ADD_CSV = (FIXTURES / "ncu" / "h200_add.csv").read_text()
GOOD = (FIXTURES / "candidates" / "vadd_good.py").read_text()

HELPER_CODE = '''
import triton
import triton.language as tl

@triton.jit
def helper(x):
    return x * 2

@triton.jit
def kern(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, helper(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)

def run(x):
    kern[(1,)](x, x.numel(), BLOCK=16)
    kernel_alias = kern
    return kernel_alias
'''


def test_rename_kernels_renames_definitions_and_references() -> None:
    names = triton_kernel_names(HELPER_CODE)
    assert sorted(names) == ["helper", "kern"]
    renamed = rename_kernels(HELPER_CODE, names, 7)
    tree = ast.parse(renamed)
    defs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert defs == {"helper__kb7", "kern__kb7", "run"}
    ids = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert "kern" not in ids and "helper" not in ids
    assert {"kern__kb7", "helper__kb7"} <= ids


def test_renamed_candidate_still_runs_and_is_correct_under_the_interpreter(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The renamed source is the same program: it computes the same result."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    import torch

    namespace: dict = {}
    exec(compile(rename_kernels(GOOD, triton_kernel_names(GOOD), 3), "<renamed>", "exec"),
         namespace)
    assert "vadd_kernel__kb3" in namespace and "vadd_kernel" not in namespace
    x, y = torch.arange(100, dtype=torch.float32), torch.ones(100)
    out = torch.empty(100)
    namespace["vadd"](x, y, out)
    assert torch.equal(out, x + y)


def test_split_launches_attributes_by_suffix_and_restores_names() -> None:
    launches = [Launch("k__kb0", {"sm_pct": 1.0}), Launch("k__kb1", {"sm_pct": 2.0}),
                Launch("k__kb0", {"sm_pct": 3.0}), Launch("other_kernel", {"sm_pct": 9.0}),
                Launch("a_b__kb12(int, float)", {"sm_pct": 4.0})]
    groups = split_launches(launches)
    assert sorted(groups) == [0, 1, 12]
    assert [lc.values["sm_pct"] for lc in groups[0]] == [1.0, 3.0]
    assert {lc.kernel_name for lc in groups[0]} == {"k"}
    assert groups[12][0].kernel_name == "a_b"
    assert kernel_regex([["k"], ["k", "h"]]) == "regex:^(h__kb1|k__kb0|k__kb1)$"


FAKE_NCU = '''#!{python}
"""Answers like ncu: the H200 CSV, once per --code file, with the renamed kernel's name."""
import re, sys
args = sys.argv[1:]
codes = [args[i + 1] for i, a in enumerate(args) if a == "--code"]
regex = args[args.index("--kernel-name") + 1] if "--kernel-name" in args else ""
csv = open({csv!r}).read()
lines = csv.splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
header, units, rows = lines[start], lines[start + 1], lines[start + 2:]
print(header)
print(units)
n = 0
for j, path in enumerate(codes):
    text = open(path).read()
    names = re.findall(r"def (\\w+__kb\\d+)", text)
    if {skip} == j or not names:
        continue
    for row in rows:
        if not row.startswith('"'):
            continue
        cells = row.split('","')
        print('"' + str(n) + '","' + '","'.join(cells[1:]).replace("add_kernel", names[0]))
        n += 1
'''


def _fake_ncu(tmp_path: Path, skip: int = -1) -> str:
    path = tmp_path / "ncu"
    path.write_text(FAKE_NCU.format(python=sys.executable, csv=str(FIXTURES / "ncu" /
                                                                    "h200_add.csv"), skip=skip))
    path.chmod(0o755)
    return str(path)


def test_profile_many_one_session_per_batch_and_cache(tmp_path: Path) -> None:
    codes = [GOOD + f"\n# variant {i}\n" for i in range(5)]
    profiler = NcuProfiler(SPEC, cache_dir=tmp_path / "cache", ncu_path=_fake_ncu(tmp_path),
                           timeout_s=60)
    profiler._metrics = ["gpu__time_duration.sum"]  # skip --query-metrics against the fake
    results = profiler.profile_many("vadd", codes, batch_size=3)
    assert [r.kernel_id for r in results] == [kernel_id(c) for c in codes]
    assert all(r.profiled for r in results), [r.error for r in results]
    assert all(r.kernel_names == ("vadd_kernel",) for r in results)
    assert all(r.n_launches == 3 for r in results)
    assert results[0].hw_sig == pytest.approx(results[4].hw_sig)
    again = profiler.profile_many("vadd", codes[:2] + [GOOD + "\n# new\n"], batch_size=3)
    assert [r.cached for r in again] == [True, True, False]


def test_profile_many_profiles_a_missed_candidate_alone(tmp_path: Path) -> None:
    """A candidate the batch captured nothing of gets its own session (here: still nothing,
    so an honest profiled=False with ncu's words), and the others are unaffected."""
    codes = [GOOD + f"\n# variant {i}\n" for i in range(3)]
    profiler = NcuProfiler(SPEC, ncu_path=_fake_ncu(tmp_path, skip=1), timeout_s=60)
    profiler._metrics = ["gpu__time_duration.sum"]
    results = profiler.profile_many("vadd", codes, batch_size=8)
    assert [r.profiled for r in results] == [True, False, True]
    assert results[1].error and "no kernel launch" in results[1].error
