"""A picture of a turn shows exactly the viewer's cards: over self-played games of every rule
set, at the end of sampled turns while the game is live, each seat's picture draws every card of
its own hand (as the state holds it), no card of another hand (those are backs, as many as the
hand holds), no card it could not know of, never the stock, and no card named in a text; once
the game has ended, every hand is drawn, and still not the stock."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

import pytest

from shared.audit.replay import SPECTATOR, Timeline, replay, timeline
from shared.core.cards import cards_str
from shared.core.events import RoundDealt, TurnStarted
from shared.core.state import GameState
from shared.pictures.pieces import FULL
from shared.pictures.turn import MAX_BACKS, turn_picture
from tests.audit.games import Game
from tests.secrecy import card_texts, visible

SVG = "{http://www.w3.org/2000/svg}"
SAMPLED = 12  # turns looked at per game (and the last one)


def _prefix(line: Timeline, cut: int) -> Timeline:
    """The game as it stood after its first ``cut`` events."""
    turns = {n: i for n, i in line.turn_index().items() if i < cut}
    return Timeline(
        line.game_id, line.stored[:cut], line.events[:cut], line.states[: cut + 1], turns
    )


def _turn_end(line: Timeline, start: int) -> int:
    """Events up to the end of the turn starting at ``start``, the next turn's start included."""
    end = start + 1
    while end < len(line.events) and not isinstance(line.events[end], TurnStarted | RoundDealt):
        end += 1
    return min(end + 1, len(line.events))


def pieces(svg: str) -> list[dict[str, str]]:
    """Every piece drawn face up: its card, where it lies and whose hand it is in."""
    root = ET.fromstring(svg)
    return [dict(el.attrib) for el in root.iter(f"{SVG}g") if el.get("class") == "piece"]


def loose_texts(svg: str) -> list[str]:
    """The texts of the picture that are not on a piece's face."""
    root = ET.fromstring(svg)
    faces = {id(t) for el in root.iter(f"{SVG}g") if el.get("class") == "piece" for t in el.iter()}
    return [el.text or "" for el in root.iter() if id(el) not in faces and el.text]


def _known(line: Timeline, first: int, last: int, seat: int | None, full: bool) -> Counter[str]:
    """What the viewer may know of over versions ``first..last`` (from a deal on)."""
    start = first - 1
    for index in range(first - 1, last):
        if isinstance(line.events[index], RoundDealt):
            start = index + 1
    known: Counter[str] = Counter()
    for version in range(start, last + 1):
        state: GameState = line.states[version]
        if full:
            everything = visible(state, None)
            for hand in state.hands:
                everything += Counter(cards_str(hand))
            known |= everything
        else:
            known |= visible(state, seat)
    return known


def check(line: Timeline, shown: dict[str, Any], svg: str, seat: int | None) -> None:
    """One picture as ``seat`` (None: a spectator) got it, against the state's truth."""
    where = (line.game_id, shown["turn"], seat, shown["viewer"])
    full = shown["viewer"] == "all"
    after: GameState = line.states[shown["after"]["version"]]
    drawn = pieces(svg)
    root = ET.fromstring(svg)
    hands = {
        int(g.get("data-seat", "-1")): g for g in root.iter(f"{SVG}g") if g.get("class") == "hand"
    }
    assert sorted(hands) == list(range(after.seats)), where
    for other, hand in enumerate(after.hands):
        in_hand = Counter(
            p["data-card"]
            for p in drawn
            if p["data-place"] == "hand" and p.get("data-seat") == str(other)
        )
        if full or other == seat:
            assert in_hand == Counter(cards_str(hand)), (where, other)
        else:
            assert not in_hand, (where, other, in_hand)
            backs = [g for g in hands[other].iter(f"{SVG}g") if g.get("class") == "back"]
            assert len(backs) == min(len(hand), MAX_BACKS), (where, other)
    assert {p["data-place"] for p in drawn} <= {"before", "after", "hand", "pile", "log"}, where
    for place, table in (
        ("before", line.states[shown["before"]["version"]].table),
        ("after", after.table),
    ):
        on_table = Counter(p["data-card"] for p in drawn if p["data-place"] == place)
        assert on_table == Counter(cards_str(c for meld in table for c in meld)), (where, place)
    first, last = shown["versions"]
    allowed = _known(line, first, last, seat, full)
    for place in ("before", "after", "hand", "pile"):
        cards = Counter(p["data-card"] for p in drawn if p["data-place"] == place)
        extra = {c: n - allowed[c] for c, n in cards.items() if n > allowed[c]}
        assert not extra, (where, place, extra)
    # The log draws each command's pieces (a card drawn then discarded shows twice).
    for entry in root.iter(f"{SVG}g"):
        if entry.get("class") == "entry":
            cards = Counter(
                el.get("data-card", "")
                for el in entry.iter(f"{SVG}g")
                if el.get("class") == "piece"
            )
            extra = {c: n - allowed[c] for c, n in cards.items() if n > allowed[c]}
            assert not extra, (where, entry.get("data-versions"), extra)
    named = card_texts(loose_texts(svg))
    assert not named, (where, named)


@pytest.mark.parametrize("family", ["robbers", "robbers-classic", "rummikub"])
def test_a_picture_shows_exactly_the_viewers_cards(played: list[Game], family: str) -> None:
    games = [g for g in played if timeline(g.events).final.rules.name == family]
    assert games, family
    rng = random.Random(family)
    looked = 0
    for game in games:
        line = timeline(game.events)
        starts = sorted(line.turn_index().items())
        sample = [*rng.sample(starts, min(SAMPLED, len(starts))), starts[-1]]
        for number, start in sample:
            cut = _turn_end(line, start)
            live = _prefix(line, cut)
            viewers: list[Any] = [*range(line.final.seats), SPECTATOR]
            for viewer in viewers:
                shown = replay(live.stored, turn=number, viewer=viewer, line=live)
                svg = turn_picture(shown)
                seat = viewer if isinstance(viewer, int) else None
                check(live, shown, svg, seat)
                looked += 1
        # Once the game has ended, everyone sees every hand (and still not the stock).
        number = starts[-1][0]
        shown = replay(line.stored, turn=number, viewer=0, line=line)
        assert shown["viewer"] == "all"
        check(line, shown, turn_picture(shown), 0)
    assert looked >= 3 * SAMPLED


def test_the_pieces_are_the_rule_sets_own(played: list[Game]) -> None:
    """Cards carry their suits, rummikub's tiles their numbers and colours."""
    for game in played:
        name = timeline(game.events).final.rules.name
        line = timeline(game.events)
        svg = turn_picture(replay(line.stored, turn=3, line=line))
        root = ET.fromstring(svg)
        assert root.tag == f"{SVG}svg" and float(root.get("height", "0")) > FULL.h
        faces = [
            " ".join(t.text or "" for t in el.iter(f"{SVG}text"))
            for el in root.iter(f"{SVG}g")
            if el.get("class") == "piece"
        ]
        assert faces, name
        suits = any(s in text for text in faces for s in "\u2660\u2665\u2666\u2663")
        words = " ".join(loose_texts(svg))
        if name == "rummikub":
            assert not suits and " tiles" in words and " cards" not in words, name
        else:
            assert suits and " cards" in words and " tiles" not in words, name


def test_every_turn_and_every_version_is_drawn(played: list[Game]) -> None:
    """Any moment of a game makes a well-formed picture: the creation and the seating (no
    hands yet), every turn, every command, the end of the match."""
    shortest = sorted(played, key=lambda game: len(game.events))
    for game in shortest[:2]:
        line = timeline(game.events)
        for number in line.turn_index():
            ET.fromstring(turn_picture(replay(line.stored, turn=number, line=line)))
    line = timeline(shortest[0].events)
    for item in line.stored:
        shown = replay(line.stored, version=item.version, viewer=SPECTATOR, line=line)
        root = ET.fromstring(turn_picture(shown))
        assert root.tag == f"{SVG}svg", item.version
