"""The pages' plots: inline SVG with titled, labelled axes, ticks and legends, log axes where
the values span decades, the same bytes for the same data, names shown as text (never markup or
a formula). matplotlib draws every plot (the report's two, `report_plots`, and the sweep's, the
recommendation's and the layer changes), imported only where a page with a plot is written, and
never pyplot."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from repro.reports import plots, sweep
from tests.plot_pages import HOSTILE, PAGES, fronts_members, sweep_state

_TEXT = re.compile(r"<text[^>]*>([^<]*)</text>")


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg .*?</svg>", page, flags=re.DOTALL)


def _texts(svg: str) -> list[str]:
    import html

    return [html.unescape(t) for t in _TEXT.findall(svg)]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_plot_is_svg_with_a_title_labelled_axes_and_ticks(name: str, tmp_path: Path) -> None:
    build, labels = PAGES[name]
    page = build(tmp_path)
    svgs = _svgs(page)
    assert svgs, name
    texts = [t for svg in svgs for t in _texts(svg)]
    for label in labels:
        assert label in texts, (label, texts)
    for svg in svgs:
        assert 'role="img"' in svg
        assert re.search(r"<title>[^<]+</title>", svg)  # the accessible name
        assert 'id="figure_1"' in svg  # matplotlib's
        assert 'id="xtick_1"' in svg
        assert 'id="text_1"' in svg
        if "replay vs original</title>" not in svg:  # the report's bars name their rows
            assert 'id="ytick_1"' in svg
    assert "http://" not in page
    assert "https://" not in page
    assert "<?xml" not in page
    assert "<!DOCTYPE svg" not in page


def test_the_report_has_a_plot_per_scenario_a_cdf_and_the_layer_changes(tmp_path: Path) -> None:
    page = PAGES["report"][0](tmp_path)
    titles = [t for svg in _svgs(page) for t in re.findall(r"<title>([^<]+)</title>", svg)]
    assert titles == [
        "SingleStream: replay vs original",
        "SingleStream: latency CDF",
        "Offline: replay vs original",
        "largest changes of time per sample, by layer",
    ]
    bars = _texts(_svgs(page)[2])
    assert "-30.0 %" in bars  # each metric's difference beside it
    assert {"not reproduced", "reproduced", "tolerance"} <= set(bars)  # the legend
    cdf = _texts(_svgs(page)[1])
    assert {"original", "replay"} <= set(cdf)
    assert any(t.endswith(("µs", "ms")) for t in cdf)  # log ticks in time units
    layers = _texts(_svgs(page)[3])
    assert "conv3" in layers
    assert "conv0" not in layers
    assert {"slower in the replay", "faster in the replay"} <= set(layers)


def test_the_recommendation_front_is_solid_and_named_the_dominated_faded(tmp_path: Path) -> None:
    svg = _svgs(PAGES["recommend"][0](tmp_path))[0]
    texts = _texts(svg)
    assert {"Pareto front (3)", "dominated (2)"} <= set(texts)
    assert {"S/big", "S/small"} <= set(texts)  # front members named
    assert "S/old" not in texts  # dominated ones are not
    assert f"opacity: {plots.FADED}" in svg
    assert "1k" in texts or "10k" in texts  # log ticks as plain numbers, not mathtext


def test_names_are_text_never_markup_or_a_formula(tmp_path: Path) -> None:
    svg = _svgs(PAGES["recommend"][0](tmp_path))[0]
    assert "<img" not in svg
    assert f"S/{HOSTILE}"[:31] + "…" in _texts(svg)  # shortened, as written: `$` kept
    assert "\\mathdefault" not in svg


def test_sweep_intervals_are_cut_at_zero_and_the_kinds_are_in_the_legend() -> None:
    svg = _svgs(sweep.page(sweep_state()))[0]
    texts = _texts(svg)
    legend = {
        "front (2)",
        "tied: beaten on the means only (1)",
        "dominated (1)",
        "excluded by a constraint (1)",
    }
    assert legend <= set(texts)
    assert any("cut at 0" in t for t in texts)
    ticks = [float(t) for t in texts if re.fullmatch(r"-?\d+(\.\d+)?", t)]
    assert min(ticks) >= 0  # the y axis is not stretched below 0 by point 2's interval


def test_one_objective_or_no_measured_point_has_no_plot() -> None:
    state = sweep_state()
    assert "<svg" not in sweep.page({**state, "objectives": state["objectives"][:1]})
    unmeasured = [{**p, "metrics": {}} for p in state["points"]]
    assert "<svg" not in sweep.page({**state, "points": unmeasured})


def test_the_fronts_page_has_a_panel_per_fold_and_the_counts(tmp_path: Path) -> None:
    members, recovered = fronts_members()
    page = PAGES["fronts"][0](tmp_path)
    texts = _texts(_svgs(page)[0])
    for r in recovered:
        title = f"fold {r.fold}: {r.found} of {r.true_members} found, {r.false_members} false"
        assert title in texts
        assert f"<tr><td>{r.fold}</td>" in page  # and the table
    assert {"true front (true values)", "predicted front (predicted values)"} <= set(texts)
    assert set(members["fold"]) == {1, 2, 3}
    assert members["on_true"].any()
    assert members["on_predicted"].any()


def test_the_same_data_gives_the_same_bytes_whatever_matplotlib_was_told(tmp_path: Path) -> None:
    import matplotlib

    first = PAGES["report"][0](tmp_path / "a")
    with matplotlib.rc_context({"lines.linewidth": 9.0, "axes.facecolor": "red"}):
        second = PAGES["report"][0](tmp_path / "b")
    normalise = str(tmp_path / "a"), str(tmp_path / "b")
    assert first.replace(normalise[0], "T") == second.replace(normalise[1], "T")
    assert "Date" not in first
    assert "<dc:" not in first


def test_matplotlib_is_imported_only_for_a_page_with_a_plot_and_never_pyplot(
    tmp_path: Path,
) -> None:
    """A report page without a plot imports no matplotlib; one with its plots imports what
    draws (a bare `Figure` and the SVG backend), never pyplot or a GUI backend."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from repro.reports import html\n"
        "from tests.plot_pages import report_page\n"
        "render = html.render\n"
        "html.render = lambda report: render(report.model_copy(update={'scenarios': []}))\n"
        f"page = report_page(Path({str(tmp_path / 'a')!r}), profile=False)\n"
        "assert '<svg' not in page\n"
        "bare = sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib')\n"
        "html.render = render\n"
        f"page = report_page(Path({str(tmp_path / 'b')!r}), profile=False)\n"
        "assert page.count('<svg ') == 3, page.count('<svg ')\n"
        "print(json.dumps([bare, sorted(m for m in sys.modules if m.startswith('matplotlib'))]))"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    bare, drawn = json.loads(out.stdout)
    assert bare == []
    assert "matplotlib.figure" in drawn
    assert "matplotlib.backends.backend_svg" in drawn
    assert "matplotlib.pyplot" not in drawn
    backends = {m for m in drawn if m.startswith("matplotlib.backends.backend_")}
    # the SVG backend's own imports: its mixed-mode renderer rasterises through Agg
    assert backends <= {f"matplotlib.backends.backend_{b}" for b in ("svg", "mixed", "agg")}


def test_the_cli_and_the_renderers_import_no_matplotlib() -> None:
    """Start-up: `repro --help` and importing the report modules leave matplotlib unloaded."""
    code = (
        "import sys, repro.cli, repro.reports.html, repro.reports.pareto, repro.reports.sweep, "
        "repro.reports.fronts, repro.reports.profile_html, repro.reports.plots\n"
        "from click.testing import CliRunner\n"
        "assert CliRunner().invoke(repro.cli.cli, ['--help']).exit_code == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
