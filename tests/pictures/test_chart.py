"""The charts of measured runs: a chart parses as SVG and carries every series exactly; its axis
ticks are round and cover the data; `rummy simulate --plot` draws the figures it printed."""

from __future__ import annotations

import itertools
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from services.main import main
from shared.pictures.chart import Panel, Series, chart, ticks

SVG = "{http://www.w3.org/2000/svg}"


def drawn_series(svg: str) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """Panel title -> series name -> its exact points, read back from the picture."""
    root = ET.fromstring(svg)
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for panel in root.iter(f"{SVG}g"):
        if panel.get("class") != "panel":
            continue
        lines = out.setdefault(panel.get("data-title", ""), {})
        for series in panel.iter(f"{SVG}g"):
            if series.get("class") == "series":
                text = series.get("data-points", "")
                pairs = [pair.split(",") for pair in text.split()]
                lines[series.get("data-series", "")] = [(float(x), float(y)) for x, y in pairs]
    return out


def test_a_chart_carries_its_series_exactly() -> None:
    rate = Series("rate", [(0.5, 0.1 + 0.2), (1.0, 1e-7), (1.5, 12345.678)])
    flat = Series("flat", [(1, 3), (2, 3)])
    alone = Series("alone", [(4, -2.5)])
    empty = Series("empty", [])
    svg = chart(
        "a run", [Panel("first", "s", "n", [rate, flat]), Panel("second", "x", "y", [alone, empty])]
    )
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and float(root.get("height", "0")) > 0
    assert drawn_series(svg) == {
        "first": {"rate": list(rate.points), "flat": [(1.0, 3.0), (2.0, 3.0)]},
        "second": {"alone": [(4.0, -2.5)], "empty": []},
    }
    texts = [el.text for el in root.iter(f"{SVG}text")]
    assert {"a run", "first", "second", "rate", "flat"} <= set(texts)
    lines = [el for el in root.iter(f"{SVG}polyline")]
    assert len(lines) == 2  # a series of one point is a dot, an empty one nothing


@given(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(1e-6, 1e6, allow_nan=False),
)
def test_ticks_are_round_and_within_the_range(low: float, span: float) -> None:
    assume(span >= 1e-9 * max(1.0, abs(low)))  # a range a float can still tell apart
    high = low + span
    marks = ticks(low, high)
    assert 1 <= len(marks) <= 11
    assert all(low - 1e-6 * span <= m <= high + 1e-6 * span for m in marks)
    steps = [b - a for a, b in itertools.pairwise(marks)]
    assert all(step == pytest.approx(steps[0], rel=1e-6) and step > 0 for step in steps)


def test_simulate_plots_what_it_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "simulate.svg"
    argv = ["simulate", "--games", "5", "--players", "2", "--rules", "robbers-classic"]
    assert main([*argv, "--bots", "greedy,clumsy", "--json", "--plot", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    drawn = drawn_series(out.read_text(encoding="utf-8"))
    rates = drawn["Win rate so far, by bot"]
    assert set(rates) == {"greedy", "clumsy"}
    for bot, points in rates.items():
        assert [x for x, _ in points] == [1, 2, 3, 4, 5]
        assert round(points[-1][1], 4) == result["win_rate"][bot]
    turns = drawn["Turns in each game"]["turns"]
    assert len(turns) == 5 and sum(y for _, y in turns) == result["turns"]
    bad = tmp_path / "no" / "dir" / "x.svg"
    assert main([*argv, "--games", "1", "--json", "--plot", str(bad)]) == 2
    assert "cannot write the plot" in capsys.readouterr().err


def test_both_commands_take_a_plot_file() -> None:
    from services.main import build_parser

    parser = build_parser()
    for command in ("simulate", "loadtest"):
        assert parser.parse_args([command, "--plot", "out.svg"]).plot == "out.svg"
