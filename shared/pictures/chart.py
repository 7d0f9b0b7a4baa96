"""A chart of what a run measured (``rummy simulate --plot``, ``rummy loadtest --plot``): one or
more panels stacked, each with its axes, ticks and a line per series, as SVG.

A small module of our own rather than a plotting library: the charts are a few lines each, and
the service's runtime keeps no heavy dependency for them. Each series also carries its values
exactly (``data-points``: ``x,y`` pairs), so a reader or a test gets the figures back, not the
pixels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from shared.pictures.svg import Drawing

WIDTH = 760
PANEL_HEIGHT = 260
LEFT, RIGHT, TOP, BOTTOM = 64, 150, 34, 42  # the plot area's margins inside a panel
COLOURS = ("#1565c0", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#5d4037")
INK, FAINT, GRID = "#1b1b1b", "#666666", "#e0e0e0"


@dataclass(frozen=True)
class Series:
    """One measured line: its name and its points (x, y)."""

    name: str
    points: Sequence[tuple[float, float]]


@dataclass(frozen=True)
class Panel:
    """One chart of the picture: a title, what the axes measure, and its series."""

    title: str
    x_label: str
    y_label: str
    series: Sequence[Series]


def ticks(low: float, high: float, wanted: int = 5) -> list[float]:
    """Round values from ``low`` to ``high`` (about ``wanted`` of them) to mark an axis at."""
    if high <= low:
        high = low + 1
    raw = (high - low) / wanted
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    count = math.floor((high - first) / step + 1e-9) + 1
    digits = max(0, 2 - math.floor(math.log10(step)))  # a tick's value to its step's precision
    return [round(first + i * step, digits) for i in range(count)]


def _label(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _exact(value: float) -> str:
    """The value as Python reads it back exactly (whole numbers without a point)."""
    whole = math.isfinite(value) and value == int(value)
    return str(int(value)) if whole else repr(float(value))


def _bounds(values: Sequence[float], from_zero: bool) -> tuple[float, float]:
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    if from_zero:
        low = min(low, 0.0)
    if high == low:
        high = low + (abs(low) or 1.0)
    return low, high


def _panel(drawing: Drawing, panel: Panel, top: float) -> None:
    group = drawing.group(None, class_="panel", data_title=panel.title)
    xs = [x for s in panel.series for x, _ in s.points]
    ys = [y for s in panel.series for _, y in s.points]
    x_low, x_high = _bounds(xs, from_zero=False)
    y_low, y_high = _bounds(ys, from_zero=True)
    x_ticks, y_ticks = ticks(x_low, x_high), ticks(y_low, y_high)
    y_low, y_high = min(y_low, y_ticks[0]), max(y_high, y_ticks[-1])
    left, right = LEFT, WIDTH - RIGHT
    upper, lower = top + TOP, top + PANEL_HEIGHT - BOTTOM

    def px(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * (right - left)

    def py(y: float) -> float:
        return lower - (y - y_low) / (y_high - y_low) * (lower - upper)

    drawing.write(group, left, top + 20, panel.title, font_size=14, font_weight="bold", fill=INK)
    for value in y_ticks:
        y = py(value)
        drawing.line(group, left, y, right, y, stroke=GRID)
        drawing.write(
            group, left - 6, y + 4, _label(value), font_size=11, fill=FAINT, text_anchor="end"
        )
    for value in x_ticks:
        x = px(value)
        drawing.line(group, x, lower, x, lower + 4, stroke=FAINT)
        drawing.write(
            group, x, lower + 16, _label(value), font_size=11, fill=FAINT, text_anchor="middle"
        )
    drawing.line(group, left, lower, right, lower, stroke=INK)
    drawing.line(group, left, upper, left, lower, stroke=INK)
    drawing.write(
        group,
        (left + right) / 2,
        lower + 34,
        panel.x_label,
        font_size=12,
        fill=INK,
        text_anchor="middle",
    )
    middle = (upper + lower) / 2
    drawing.write(
        group,
        16,
        middle,
        panel.y_label,
        font_size=12,
        fill=INK,
        text_anchor="middle",
        transform=f"rotate(-90 16 {middle:.1f})",
    )
    for index, series in enumerate(panel.series):
        colour = COLOURS[index % len(COLOURS)]
        exact = " ".join(f"{_exact(x)},{_exact(y)}" for x, y in series.points)
        line = drawing.group(group, class_="series", data_series=series.name, data_points=exact)
        drawing.titled(line, series.name)
        pixels = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in series.points)
        if len(series.points) > 1:
            drawing.add(
                line,
                "polyline",
                points=pixels,
                fill="none",
                stroke=colour,
                stroke_width=2,
                stroke_linejoin="round",
            )
        if len(series.points) <= 40:
            for x, y in series.points:
                drawing.add(line, "circle", cx=px(x), cy=py(y), r=2.5, fill=colour)
        key = upper + 6 + index * 18
        drawing.line(group, right + 14, key, right + 34, key, stroke=colour, stroke_width=3)
        drawing.write(group, right + 40, key + 4, series.name, font_size=12, fill=INK)


def chart(title: str, panels: Sequence[Panel], note: str = "") -> str:
    """The SVG text of ``panels`` stacked under ``title`` (and a ``note``: how it was run)."""
    drawing = Drawing(WIDTH, title, note)
    drawing.write(None, LEFT, 24, title, font_size=16, font_weight="bold", fill=INK)
    top = 30.0
    if note:
        drawing.write(None, LEFT, 44, note, font_size=11, fill=FAINT)
        top = 48.0
    for panel in panels:
        _panel(drawing, panel, top)
        top += PANEL_HEIGHT
    return drawing.text(top + 8)
