"""One turn of a game as a picture, for a dispute report or a look back: the table before and
after (the pieces a play brought from the hand and those it moved on the table marked), each
seat's hand after the turn, the stock and the pile, and what happened, command by command.

It draws a replay (``shared.audit.replay.replay``) and nothing else: the replay is already what
its viewer may see (``shared.core.visibility``), so a hand the viewer may not see is drawn as
backs and a count, a rejected layout of another seat as its code only. The stock is never drawn,
not even once the game has ended (a picture is for the table, not the deck's order)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from shared.pictures.pieces import FULL, SMALL, Size, back, face, noun
from shared.pictures.svg import Drawing

WIDTH = 1000
MARGIN = 16
GAP = 4  # between the pieces of a meld
MELD_GAP = 18
ROW_GAP = 8
HAND_X = 220  # where the pieces of a hand start (its seat's name is left of it)
NAME_ROOM = 26  # characters of a seat's name and number that fit left of its hand
BACK_STEP = 9  # face-down pieces overlap: only their number matters
MAX_BACKS = 40
INK, FAINT, ALARM = "#1b1b1b", "#666666", "#b71c1c"


class _Page:
    """The drawing and how far down it has been filled."""

    def __init__(self, drawing: Drawing) -> None:
        self.drawing = drawing
        self.y = float(MARGIN)

    def line(self, text: str, size: int = 13, **attrs: str | int) -> ET.Element:
        self.y += size + 5
        return self.drawing.write(None, MARGIN, self.y, text, font_size=size, **attrs)

    def heading(self, text: str) -> None:
        self.y += 8
        self.line(text, 15, font_weight="bold", fill=INK)
        self.y += 4


def _seat_name(players: Sequence[str], seat: Any) -> str:
    if not isinstance(seat, int):
        return "the referee"
    name = players[seat] if 0 <= seat < len(players) else "?"
    return f"{name} (seat {seat})"


def _viewer_words(replay: Mapping[str, Any]) -> str:
    viewer, players = replay["viewer"], replay["players"]
    if viewer == "all":
        return "everyone (the game has ended)" if replay["status"] == "finished" else "the operator"
    if viewer == "spectator":
        return "a spectator"
    return _seat_name(players, viewer)


def marks(table: Sequence[Sequence[str]], diff: Mapping[str, Any]) -> list[list[str | None]]:
    """For each piece of ``table`` (the table after the turn), how it got there this turn:
    ``"played"`` from a hand, ``"moved"`` from another meld, None if it stayed."""
    incoming: dict[int, list[tuple[str, str]]] = {}
    stayed = _continued(diff["moves"])
    for move in diff["moves"]:
        target, origin, cards = move["to"], move["from"], move["cards"]
        if not target.startswith("meld ") or not isinstance(cards, list):
            continue
        if (origin, target) in stayed:
            continue  # the meld went on there: these pieces did not move
        mark = (
            "played" if origin.startswith("hand") else "moved" if origin.startswith("meld") else ""
        )
        if mark:
            incoming.setdefault(int(target.split()[1]), []).extend((c, mark) for c in cards)
    out: list[list[str | None]] = []
    for number, meld in enumerate(table, start=1):
        left = incoming.get(number, [])
        row: list[str | None] = []
        for card in meld:
            hit = next((k for k, (c, _) in enumerate(left) if c == card), None)
            row.append(left.pop(hit)[1] if hit is not None else None)
        out.append(row)
    return out


def _continued(moves: Sequence[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """The (old meld, new meld) pairs where a meld went on: the new meld that got most of an old
    meld's pieces, and the old meld that gave it most (a meld that grew, shrank or was split
    keeps its place in a player's eyes; only the pieces that left it moved)."""
    shares = [
        (m["from"], m["to"], len(m["cards"]))
        for m in moves
        if m["from"].startswith("meld ")
        and m["to"].startswith("meld ")
        and isinstance(m["cards"], list)
    ]
    best_target: dict[str, tuple[int, str]] = {}
    for origin, target, count in shares:
        if count > best_target.get(origin, (0, ""))[0]:
            best_target[origin] = (count, target)
    best_origin: dict[str, tuple[int, str]] = {}
    for origin, (count, target) in best_target.items():
        if count > best_origin.get(target, (0, ""))[0]:
            best_origin[target] = (count, origin)
    return {(origin, target) for target, (_, origin) in best_origin.items()}


def _table(
    page: _Page,
    melds: Sequence[Sequence[str]],
    place: str,
    tiles: bool,
    framed: set[int],
    frame: str,
    marked: Sequence[Sequence[str | None]] | None = None,
) -> None:
    """The melds, numbered as the replay numbers them, in rows; ``framed``: melds (0-based) drawn
    in a dashed ``frame`` (taken apart, or new)."""
    drawing = page.drawing
    group = drawing.group(None, class_="table", data_place=place)
    if not melds:
        page.line("The table is empty.", fill=FAINT)
        return
    step = FULL.w + GAP
    x, top = float(MARGIN), page.y + 4
    for index, meld in enumerate(melds):
        width = len(meld) * step - GAP
        if x > MARGIN and x + width > WIDTH - MARGIN:
            x, top = float(MARGIN), top + FULL.h + 14 + ROW_GAP
        item = drawing.group(group, class_="meld", data_meld=index + 1)
        drawing.write(item, x, top + 10, str(index + 1), font_size=10, fill=FAINT)
        if index in framed:
            drawing.rect(
                item,
                x - 3,
                top + 11,
                width + 6,
                FULL.h + 6,
                fill="none",
                stroke=frame,
                stroke_width=1.5,
                stroke_dasharray="5 3",
            )
        for k, card in enumerate(meld):
            mark = marked[index][k] if marked is not None else None
            face(drawing, item, x + k * step, top + 14, card, tiles=tiles, place=place, mark=mark)
        x += width + MELD_GAP
    page.y = top + 14 + FULL.h + ROW_GAP


def _row(
    page: _Page,
    parent: ET.Element,
    left: float,
    top: float,
    cards: Sequence[str | None],
    tiles: bool,
    place: str,
    size: Size,
) -> float:
    """Pieces face up from ``left`` on, wrapping (None: a gap, between two melds); the bottom
    of the last row."""
    step = size.w + GAP // 2
    x, y = left, top
    for card in cards:
        width = step if card is not None else step // 2
        if x + width > WIDTH - MARGIN + GAP // 2 and x > left:
            x, y = left, y + size.h + GAP
        if card is not None:
            face(page.drawing, parent, x, y, card, tiles=tiles, place=place, size=size)
        x += width
    return y + size.h + GAP


def _hands(page: _Page, replay: Mapping[str, Any], tiles: bool) -> None:
    drawing, snap, players = page.drawing, replay["after"], replay["players"]
    to_play = snap["turn"]["seat"] if snap["turn"] is not None else None
    scores = snap["scores"]
    for seat, count in enumerate(snap["hand_counts"]):
        hand = snap["hands"].get(str(seat))
        group = drawing.group(
            None, class_="hand", data_seat=seat, data_shown="yes" if hand is not None else "no"
        )
        top = page.y + 6
        name = _seat_name(players, seat)
        if len(name) > NAME_ROOM:  # a long name would run into the hand
            name = name[: NAME_ROOM - 1] + "\u2026"
        bold = "bold" if seat == to_play else "normal"
        drawing.write(
            group,
            MARGIN,
            top + 14,
            ("\u25b6 " if seat == to_play else "") + name,
            font_size=13,
            font_weight=bold,
            fill=INK,
        )
        about = [
            f"{count} {noun(tiles, count)}",
            "opened" if snap["opened"][seat] else "not opened",
        ]
        if scores[seat] is not None:
            about.append(f"score {scores[seat]}")
        drawing.write(group, MARGIN, top + 31, ", ".join(about), font_size=11, fill=FAINT)
        if hand is not None:
            bottom = _row(page, group, HAND_X, top, hand, tiles, "hand", FULL)
            for piece in group.iter("g"):
                if piece.get("class") == "piece":
                    piece.set("data-seat", str(seat))
        else:
            shown = min(count, MAX_BACKS)
            for i in range(shown):
                back(drawing, group, HAND_X + i * BACK_STEP, top, tiles=tiles)
            right = HAND_X + max(0, shown - 1) * BACK_STEP + FULL.w + 10
            words = f"{count} {noun(tiles, count)} face down" if count else f"no {noun(tiles)} left"
            drawing.write(group, right, top + FULL.h / 2 + 5, words, font_size=12, fill=FAINT)
            bottom = top + FULL.h + GAP
        page.y = max(bottom, top + 36) + 2


def _stock_and_pile(page: _Page, replay: Mapping[str, Any], tiles: bool) -> None:
    snap = replay["after"]
    pile = snap["pile"]
    text = f"Stock: {snap['stock']} {noun(tiles, snap['stock'])} face down."
    if pile["count"]:
        text += f" Pile: {pile['count']} {noun(tiles, pile['count'])}, the top one:"
    page.line(text, fill=INK)
    if pile["top"] is not None:
        width = len(text) * 7.0 + MARGIN + 8
        group = page.drawing.group(None, class_="pile")
        face(
            page.drawing,
            group,
            width,
            page.y - SMALL.h + 8,
            pile["top"],
            tiles=tiles,
            place="pile",
            size=SMALL,
        )
        page.y += 12


def _count(cards: Any) -> int:
    return len(cards) if isinstance(cards, list) else int(cards)


def _shown(moves: Sequence[Mapping[str, Any]], target: str) -> list[str]:
    """The pieces of ``moves`` (their lists, not their counts) going to a hand or to the pile."""
    out: list[str] = []
    for move in moves:
        if move["to"].startswith(target) and isinstance(move["cards"], list):
            out += move["cards"]
    return out


def describe(command: Mapping[str, Any], players: Sequence[str], tiles: bool) -> str:
    """One command in words a player uses."""
    who = _seat_name(players, command["seat"])
    kind, moves = command["kind"], command["moves"]
    types = [event["type"] for event in command["events"]]
    drawn = sum(_count(m["cards"]) for m in moves if m["to"].startswith("hand"))
    sources = sorted({m["from"] for m in moves if m["to"].startswith("hand")})
    drew = f"drew {drawn} {noun(tiles, drawn)} from the {' and '.join(sources)}" if drawn else ""
    if command["outcome"] == "rejected":
        code = (command.get("recorded") or {}).get("detail") or "refused"
        what = "layout" if "TurnPlayed" in types or command["kind"] == "play" else "command"
        return f"{who}: the {what} was refused ({code})"
    if kind == "play":
        recorded = command["recorded"] or {}
        played = len(recorded.get("played", []))
        words = f"{who} played {played} {noun(tiles, played)}"
        taken = len(recorded.get("to_hand", []))
        if taken:
            words += f" and took {taken} back to the hand"
        if recorded.get("opening"):
            words += f", an opening of {recorded.get('points')} points"
        return words
    if kind == "draw":
        reshuffled = [m for m in moves if m["to"] == "stock"]
        words = f"{who} {drew}" if drew else f"{who} drew"
        if reshuffled:
            words += (
                f" (the pile was shuffled into the stock first: {_count(reshuffled[0]['cards'])})"
            )
        return words
    if kind == "discard":
        return f"{who} discarded"
    if kind == "pass":
        return f"{who} passed"
    if kind == "timeout":
        return f"{who} ran out of time" + (f" and {drew}" if drew else "")
    if kind == "end":
        return f"{who} ended the turn"
    if kind == "sit":
        return f"{who} took a seat"
    fixed = {
        "GameCreated": "the game was created",
        "GameStarted": "the game started",
        "RoundDealt": "a round was dealt",
        "ScoresRecorded": "the round's scores were recorded",
        "MatchEnded": "the match ended",
        "SeedRevealed": "the secret seed was revealed",
        "TurnStarted": "the next turn began",
    }
    said = [fixed[t] for t in dict.fromkeys(types) if t in fixed]
    return "; ".join(said) if said else kind


def _log(page: _Page, replay: Mapping[str, Any], tiles: bool) -> None:
    drawing, players = page.drawing, replay["players"]
    group = drawing.group(None, class_="log")
    if not replay["commands"]:
        page.line("Nothing yet: the turn has only begun.", fill=FAINT)
    for command in replay["commands"]:
        first, last = command["versions"]
        span = f"v{first}" if first == last else f"v{first}\u2013{last}"
        text = f"{span}  {describe(command, players, tiles)}"
        if command["agrees"] is not None:
            text += "  \u2014 re-judged today: " + (
                "agrees with the record" if command["agrees"] else "DIFFERS FROM THE RECORD"
            )
        page.y += 18
        fill = ALARM if command["agrees"] is False else INK
        entry = drawing.group(group, class_="entry", data_versions=f"{first}-{last}")
        drawing.write(entry, MARGIN, page.y, text, font_size=12, fill=fill)
        pieces: list[str | None] = [*_shown(command["moves"], "hand")]
        pieces += _shown(command["moves"], "pile")
        for meld in command.get("layout") or []:
            pieces += [None, *meld] if pieces else meld
        if pieces:
            page.y = _row(page, entry, MARGIN + 40, page.y + 5, pieces, tiles, "log", SMALL)


def turn_picture(replay: Mapping[str, Any]) -> str:
    """The SVG text of ``replay`` (one turn or one version, as its viewer may see it)."""
    tiles = replay["rules"]["name"] == "rummikub"
    players = replay["players"]
    turn = replay["turn"]
    name = f"turn {turn}" if turn is not None else "before the first turn"
    title = f"{replay['rules']['name']}, game {replay['game_id']}, {name}"
    first, last = replay["versions"]
    seat = replay["seat"]
    whose = f"the turn of {_seat_name(players, seat)}" if isinstance(seat, int) else "no turn yet"
    about = (
        f"{whose}; shown to {_viewer_words(replay)}; "
        f"game {replay['status']}; round {replay['round']}; versions {first} to {last}"
    )
    page = _Page(Drawing(WIDTH, title.capitalize(), about))
    page.line(title.capitalize(), 17, font_weight="bold", fill=INK)
    page.line(about[0].upper() + about[1:] + ".", 12, fill=FAINT)
    page.line(
        "Marked this turn: gold outline, played from the hand; blue outline, moved from another "
        "meld;",
        11,
        fill=FAINT,
    )
    page.line(
        "red dashed frame, a meld changed or taken apart (before); green dashed frame, a new or "
        "changed meld (after).",
        11,
        fill=FAINT,
    )
    diff = replay["diff"]
    removed = {m["meld"] - 1 for m in diff["removed"]}
    added = {m["meld"] - 1 for m in diff["added"]}
    page.heading("The table before")
    _table(page, replay["before"]["table"], "before", tiles, removed, ALARM)
    page.heading("The table after")
    after = replay["after"]["table"]
    _table(page, after, "after", tiles, added, "#2e7d32", marks(after, diff))
    page.heading("The hands after")
    _hands(page, replay, tiles)
    _stock_and_pile(page, replay, tiles)
    page.heading("What happened")
    _log(page, replay, tiles)
    return page.drawing.text(page.y + MARGIN)
