"""The HTML report: self-contained, sectioned, and it opens in headless Chromium."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.pipeline import Analysis
from analysis.report import empty_columns, render_report, run_report
from analysis.report_verdict import readable
from kbsim.replay.presets import get_preset
from tests.analysis.fixtures import write_planted_results

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report_path(tmp_path_factory: pytest.TempPathFactory, results_dir: Path) -> Path:
    return run_report(results_dir, tmp_path_factory.mktemp("report") / "report.html", n_boot=100)


def test_sections_follow_the_data(report_path: Path, trace_analysis: Analysis) -> None:
    text = report_path.read_text()
    for heading in ("Run: hardware and parameters", "Paper-style metrics", "Regret",
                    "Speedup over iterations and cost", "Strategies", "Notes"):
        assert heading in text
    assert "Lipschitz constant in" not in text  # results carry no φ: the section is left out
    trace_page = render_report(trace_analysis)
    assert "Lipschitz constant in" in trace_page and "Cluster validity" in trace_page
    assert "NVIDIA H100 80GB HBM3" in trace_page


class _Cells(HTMLParser):
    """Every table of a page as a list of rows of cell texts (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None


def empty_columns_of(page: str) -> dict[str, list[str]]:
    """Per table (by its header), the columns that have no value in any body row."""
    parser = _Cells()
    parser.feed(page)
    found = {}
    for rows in parser.tables:
        if len(rows) < 2:
            continue
        header, body = rows[0], rows[1:]
        empty = [name for i, name in enumerate(header)
                 if not any(i < len(r) and r[i] for r in body)]
        if empty:
            found[" | ".join(header)[:60]] = empty
    return found


def test_no_report_table_has_an_empty_column(report_path: Path,
                                             trace_analysis: Analysis) -> None:
    assert empty_columns_of(report_path.read_text()) == {}
    assert empty_columns_of(render_report(trace_analysis)) == {}


def test_an_empty_column_is_left_out_and_named(trace_analysis: Analysis) -> None:
    analysis = Analysis(kind="results", source="x", tables={
        "metrics": pd.DataFrame({"policy": ["a", "b"], "correct_pct": [np.nan, np.nan],
                                 "note": ["", " "], "fast1_pct": [50.0, np.nan]})})
    assert empty_columns(analysis.tables["metrics"]) == ["correct_pct", "note"]
    page = render_report(analysis)
    assert empty_columns_of(page) == {}
    assert "Left out, empty for every row here: correct_pct, note." in page


def test_verdict_comes_first_and_parameters_last_folded(report_path: Path) -> None:
    page = report_path.read_text()
    assert page.index("<section id='verdict'>") < page.index("<section id='metrics'>")
    assert page.index("<section id='notes'>") < page.index("<section id='context'>")
    context = page[page.index("<section id='context'>"):]
    assert "<details>" in context and "0–7 (8)" in context  # 8 seeds as a range


def test_report_without_input_needs_an_experiment(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nothing to report"):
        run_report(None, tmp_path / "r.html")


#: chromium's command name (Debian: chromium); CI installs it (.ci/run) and sets
#: KERNELBAND_REQUIRE_CHROMIUM=1 so that a missing browser fails instead of skipping
CHROMIUM = next((n for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("KERNELBAND_REQUIRE_CHROMIUM"),
    reason="chromium is not installed")
SCREEN = (1400, 1000)

#: run in the page after load: where the verdict sits, which images failed, empty columns
PROBE = """<script>
window.addEventListener('load', function () {
  function box(el) { if (!el) return null; var r = el.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }
  var images = Array.from(document.images).map(function (i) {
    return {alt: i.alt, ok: i.complete && i.naturalWidth > 0}; });
  var tables = Array.from(document.querySelectorAll('table')).map(function (t) {
    var rows = Array.from(t.querySelectorAll('tbody tr'));
    var width = t.rows.length ? t.rows[0].cells.length : 0, empty = [];
    for (var c = 0; c < width; c++) {
      var filled = rows.some(function (r) {
        return r.cells[c] && r.cells[c].textContent.trim() !== ''; });
      if (!filled) empty.push(t.rows[0].cells[c].textContent.trim() || String(c)); }
    return {id: t.id, rows: rows.length, empty: empty}; });
  var out = document.createElement('pre'); out.id = 'kb-probe';
  out.textContent = JSON.stringify({width: window.innerWidth,
    scroll_width: document.documentElement.scrollWidth,
    figure: box(document.querySelector('#verdict-figure img')),
    table: box(document.querySelector('#verdict-table')), images: images, tables: tables});
  document.body.appendChild(out);
});
</script>"""


def _chromium(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    assert CHROMIUM is not None, "chromium is required here (KERNELBAND_REQUIRE_CHROMIUM)"
    profile = tempfile.mkdtemp(dir=tmp_path)  # a fresh profile: no state between runs
    return subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
         f"--window-size={SCREEN[0]},{SCREEN[1]}", *args],
        capture_output=True, text=True, timeout=120, check=False)


def probe_page(page: Path, tmp_path: Path) -> dict:
    """Open ``page`` in headless Chromium and return what PROBE measured."""
    probed = tmp_path / f"probe-{page.name}"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = _chromium(["--virtual-time-budget=5000", "--dump-dom", probed.resolve().as_uri()],
                    tmp_path)
    found = re.search(r'<pre id="kb-probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, f"the probe did not run: {dom.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


def assert_verdict_first(probe: dict) -> None:
    """The verdict figure and table lie wholly inside the first 1400 x 1000 pixels, no image
    is broken and no table has a column without a value."""
    assert probe["width"] == SCREEN[0]
    assert probe["scroll_width"] <= SCREEN[0]  # nothing pushes the page sideways
    for name in ("figure", "table"):
        box = probe[name]
        assert box is not None, f"no verdict {name}"
        assert 0 <= box["top"] and box["bottom"] <= SCREEN[1], (name, box)
        assert box["right"] <= SCREEN[0], (name, box)
    broken = [i["alt"] for i in probe["images"] if not i["ok"]]
    assert not broken and probe["images"]
    empty = {t["id"] or f"table {i}": t["empty"] for i, t in enumerate(probe["tables"])
             if t["empty"]}
    assert not empty, empty


@needs_chromium
def test_report_opens_in_headless_chromium(report_path: Path, tmp_path: Path) -> None:
    probe = probe_page(report_path, tmp_path)
    assert_verdict_first(probe)
    assert len(probe["images"]) >= 5
    shot = tmp_path / "shot.png"
    _chromium([f"--screenshot={shot}", report_path.resolve().as_uri()], tmp_path)
    assert shot.is_file() and shot.stat().st_size > 20_000
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])  # the PNG's IHDR
    assert (width, height) == SCREEN


@needs_chromium
def test_demo_sized_verdict_fits_the_first_screen(tmp_path: Path) -> None:
    """The demo's grid (23 policies, tape and fitted) still shows the whole verdict on top."""
    names = list(dict.fromkeys(get_preset("paper-ablation").policies))
    effects = {name: -0.01 * i for i, name in enumerate(names)}
    # a trace manifest with GPU and proposer, under a long path: the question as long as the demo's
    trace = tmp_path / "work" / "kernelband" / "traces" / "explore-h200"
    trace.mkdir(parents=True)
    (trace / "manifest.json").write_text(json.dumps({
        "hardware": {"gpu_name": "NVIDIA H200"}, "proposer": {"kind": "mutate"}}))
    results = write_planted_results(tmp_path / "res", effects, envs=("tape", "fitted"),
                                    n_tasks=3, n_seeds=4, n_steps=40, source=str(trace))
    page = run_report(results, tmp_path / "report.html", n_boot=50)
    assert "recorded on NVIDIA H200 with the mutate proposer" in page.read_text()
    assert_verdict_first(probe_page(page, tmp_path))


def test_raw_parameters_read_as_ranges_and_counts() -> None:
    envs = [{"env": "tape", "tasks": [f"t{i}" for i in range(15)]},
            {"env": "fitted", "tasks": [f"t{i}" for i in range(15)]}]
    text = readable(envs)
    assert text.count("t14") == 1 and text.endswith("tasks: same as above")
    assert readable(list(range(100))) == "0–99 (100)"
    assert readable([3, 9, 27]) == "3, 9, 27"
    assert readable([f"p{i}" for i in range(40)]).endswith("… (40)")


def test_a_page_of_several_datasets_has_each_element_id_once(tmp_path: Path) -> None:
    """Two datasets on one page (as `kernelband demo` writes it): every id once, so each
    navigation link lands on its own dataset's section (the second verdict's table kept the
    first one's id)."""
    from analysis.inputs import load_input
    from analysis.pipeline import analyze_input

    effects = {"a": 0.0, "b": float(np.log(0.9))}
    first = analyze_input(load_input(write_planted_results(tmp_path / "one", effects,
                                                           n_seeds=4)), n_boot=100)
    second = analyze_input(load_input(write_planted_results(tmp_path / "two", effects,
                                                            n_seeds=4)), n_boot=100)
    page = render_report(first, heading="one", parts=[("two", "two", second)])
    ids = re.findall(r"id='([^']+)'", page) + re.findall(r'id="([^"]+)"', page)
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    assert repeated == []
    assert "two-verdict-table" in ids and "verdict-table" in ids
    links = re.findall(r"href='#([^']+)'", page)
    assert links and set(links) <= set(ids)
