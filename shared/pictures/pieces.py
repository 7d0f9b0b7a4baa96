"""One piece drawn face up or face down: a playing card with its rank and suit (robbers,
robbers-classic), a numbered tile in its colour (rummikub: the four suits are the four colours,
as the web client shows them), or a back that tells only that a piece is there.

Every face carries its card in notation (``data-card``) and where it lies (``data-place``), so a
test or a tool reads the picture's cards back without guessing them from its drawing."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from shared.core.cards import RANK_NAMES, parse_card
from shared.pictures.svg import Drawing

JOKER_TEXT = "JK"
SUIT_SYMBOLS = ("\u2660", "\u2665", "\u2666", "\u2663")  # spades, hearts, diamonds, clubs
SUIT_NAMES = ("spades", "hearts", "diamonds", "clubs")
CARD_INK = ("#1b1b1b", "#c62828", "#c62828", "#1b1b1b")
TILE_COLOURS = ("black", "red", "orange", "blue")
TILE_INK = ("#1b1b1b", "#c62828", "#e07000", "#1565c0")
RANK_WORDS = {1: "ace", 11: "jack", 12: "queen", 13: "king"}
MARKS = {"played": "#f9a825", "moved": "#1e88e5"}  # a stroke around a piece that moved


@dataclass(frozen=True)
class Size:
    """A piece's width and height (the table's, or the smaller ones of the log)."""

    w: int
    h: int


FULL = Size(34, 48)
SMALL = Size(22, 31)


def piece_name(text: str, tiles: bool) -> str:
    """What a piece is called in words: "queen of hearts", "red 12 tile", "joker"."""
    if text == JOKER_TEXT:
        return "joker tile" if tiles else "joker"
    card = parse_card(text)
    rank, suit = card % 13 + 1, card // 13
    if tiles:
        return f"{TILE_COLOURS[suit]} {rank} tile"
    return f"{RANK_WORDS.get(rank, str(rank))} of {SUIT_NAMES[suit]}"


def noun(tiles: bool, count: int = 2) -> str:
    """A piece, in the rule set's words."""
    word = "tile" if tiles else "card"
    return word if count == 1 else word + "s"


def face(
    drawing: Drawing,
    parent: ET.Element,
    x: float,
    y: float,
    text: str,
    *,
    tiles: bool,
    place: str,
    size: Size = FULL,
    mark: str | None = None,
) -> ET.Element:
    """The piece ``text`` (notation) face up at ``(x, y)``; ``mark``: how it moved this turn."""
    group = drawing.group(parent, class_="piece", data_card=text, data_place=place)
    drawing.titled(group, piece_name(text, tiles))
    w, h = size.w, size.h
    fill = "#fbf6e9" if tiles else "#ffffff"
    stroke, width = ("#555555", 1.0) if mark is None else (MARKS[mark], 3.0)
    drawing.rect(
        group, x, y, w, h, rx=4 if tiles else 3, fill=fill, stroke=stroke, stroke_width=width
    )
    if mark is not None:
        group.set("data-mark", mark)
    big, small = round(h * 0.42), round(h * 0.3)
    if text == JOKER_TEXT:
        ink = "#6a1b9a"
        drawing.write(
            group,
            x + w / 2,
            y + h * 0.45,
            "J" if tiles else JOKER_TEXT,
            font_size=small,
            fill=ink,
            text_anchor="middle",
            font_weight="bold",
        )
        drawing.write(
            group,
            x + w / 2,
            y + h * 0.85,
            "\u263a" if tiles else "\u2605",
            font_size=small,
            fill=ink,
            text_anchor="middle",
        )
        return group
    card = parse_card(text)
    rank, suit = card % 13 + 1, card // 13
    if tiles:
        ink = TILE_INK[suit]
        drawing.write(
            group,
            x + w / 2,
            y + h * 0.55,
            str(rank),
            font_size=big,
            fill=ink,
            text_anchor="middle",
            font_weight="bold",
        )
        drawing.add(group, "circle", cx=x + w / 2, cy=y + h * 0.78, r=max(2, w // 10), fill=ink)
        return group
    ink = CARD_INK[suit]
    drawing.write(
        group,
        x + 3,
        y + small + 1,
        RANK_NAMES[rank - 1],
        font_size=small,
        fill=ink,
        font_weight="bold",
    )
    drawing.write(
        group,
        x + w / 2,
        y + h * 0.88,
        SUIT_SYMBOLS[suit],
        font_size=big,
        fill=ink,
        text_anchor="middle",
    )
    return group


def back(
    drawing: Drawing, parent: ET.Element, x: float, y: float, *, tiles: bool, size: Size = FULL
) -> ET.Element:
    """A piece face down: nothing of it shows but that it is there."""
    group = drawing.group(parent, class_="back")
    w, h = size.w, size.h
    fill = "#8d6e63" if tiles else "#1a4f8b"
    drawing.rect(group, x, y, w, h, rx=4 if tiles else 3, fill=fill, stroke="#333333")
    drawing.rect(
        group, x + 4, y + 4, w - 8, h - 8, rx=2, fill="none", stroke="#ffffff", stroke_opacity=0.6
    )
    return group
