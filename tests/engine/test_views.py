"""Nothing leaks: over many self-played games, after every event, each seat's view holds its own
hand and no other card it may not see, the spectator's holds no hand, and no view shows the
stock order or the seed before the end; every event, as each viewer gets it, hides other seats'
dealt and drawn cards, rejected layouts and player seeds while the game is live; once it is
finished, everything is visible."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, fields
from typing import Any

import pytest

from shared.core.cards import card_str, cards_str
from shared.core.events import (
    CardDrawn,
    CommandRejected,
    Event,
    PlayerSeated,
    RoundDealt,
    RoundEnded,
    StockReshuffled,
    to_data,
)
from shared.core.selfplay import SelfPlay
from shared.core.shuffle import shuffle_key
from shared.core.state import GameState
from shared.core.views import event_json, view_json

from .helpers import bots as make_bots

CARD = re.compile(r"^(?:A|[2-9]|10|J|Q|K)[SHDC]$|^JK$")
VIEW_KEYS = {
    "game_id",
    "version",
    "status",
    "rules",
    "round",
    "turn",
    "you",
    "table",
    "seats",
    "stock",
    "discard",
    "discard_count",
    "reshuffles",
    "last_round",
    "winner",
    "seed",
}
SEAT_KEYS = {"seat", "name", "hand_count", "opened", "score"}
CARD_FIELDS = {"layout", "played", "to_hand", "hands", "stock", "discard", "cards"}


def card_texts(value: Any) -> Counter[str]:
    """Every string in a JSON value that is a card in notation, counted."""
    found: Counter[str] = Counter()
    if isinstance(value, str):
        if CARD.match(value):
            found[value] += 1
    elif isinstance(value, dict):
        for item in value.values():
            found += card_texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            found += card_texts(item)
    return found


def deep_cards(value: Any) -> Any:
    """Card ints (nested in tuples) in notation, nested in lists."""
    if isinstance(value, tuple | list):
        return [deep_cards(v) for v in value]
    return card_str(value)


# --- the checks ----------------------------------------------------------------------------------


def check_view(state: GameState, viewer: int | None, secrets: tuple[str, ...]) -> None:
    """One view: the right fields, the viewer's own hand only, and no card beyond what the
    viewer may know (its hand, the table, the pile's top, and at the end the last hands)."""
    view = view_json(state, viewer)
    finished = state.status == "finished"
    if viewer is None:
        assert set(view) == VIEW_KEYS
    else:
        assert set(view) == VIEW_KEYS | {"hand"}
        own = state.hands[viewer] if state.hands else ()
        assert view["hand"] == cards_str(sorted(own))
    for seat in view["seats"]:
        assert set(seat) == SEAT_KEYS
        assert isinstance(seat["hand_count"], int)
    assert isinstance(view["stock"], int) and view["stock"] == len(state.stock)
    assert view["discard"] is None or isinstance(view["discard"], str)
    turn = view["turn"]
    if turn is not None and viewer != turn["seat"]:
        assert set(turn) == {"seat", "number", "deadline"}
    allowed: Counter[str] = Counter()
    if viewer is not None and state.hands:
        allowed += Counter(cards_str(state.hands[viewer]))
    allowed += Counter(cards_str(c for meld in state.table for c in meld))
    allowed += Counter(cards_str(state.discard[-1:]))
    if state.turn is not None and viewer == state.turn.seat and state.turn.taken is not None:
        allowed[card_str(state.turn.taken)] += 1  # the card it took from the pile (in its hand)
    last = view["last_round"]
    if last is not None and finished:
        allowed += card_texts(last["hands"])
    elif last is not None:
        assert "hands" not in last
    assert card_texts(view) == allowed
    text = json.dumps(view)
    if not finished:
        assert view["seed"] is None
        for secret in secrets:
            assert secret not in text


def check_event(event: Event, viewer: int | None, live: bool, secrets: tuple[str, ...]) -> None:
    """One event as one viewer gets it: by content, no other seat's cards, rejected layout or
    player seed while the game is live; everything once it is finished."""
    shown = event_json(event, viewer, not live)
    assert shown["type"] == event.TYPE
    if not live:
        check_everything_visible(event, shown)
        return
    for secret in secrets:
        assert secret not in json.dumps(shown)
    if isinstance(event, RoundDealt | RoundEnded):
        for seat, hand in enumerate(shown["hands"]):
            if seat == viewer:
                assert hand == cards_str(event.hands[seat])
            else:
                assert hand is None
        assert shown["hand_counts"] == [len(h) for h in event.hands]
        if isinstance(event, RoundDealt):
            assert shown["stock"] == len(event.stock)
            assert shown["discard"] == cards_str(event.discard)
    elif isinstance(event, StockReshuffled):
        assert shown["stock"] == len(event.stock)
    elif isinstance(event, CardDrawn):
        if event.seat == viewer or event.source == "pile":
            assert shown["cards"] == cards_str(event.cards)
        else:
            assert shown["cards"] == len(event.cards)
    elif isinstance(event, CommandRejected):
        if event.seat == viewer:
            assert shown["reason"] == event.reason
            if event.layout is not None:
                assert shown["layout"] == deep_cards(event.layout)
        else:
            assert shown["layout"] is None and shown["reason"] is None
            assert shown["code"] == event.code and shown["detail"] == event.detail
    elif isinstance(event, PlayerSeated):
        assert shown["seed"] == (event.seed if event.seat == viewer else None)
    else:
        check_everything_visible(event, shown)


def check_everything_visible(event: Event, shown: dict[str, Any]) -> None:
    """Every field of the event, cards in notation."""
    data = to_data(event)
    for f in fields(event):
        value = getattr(event, f.name)
        if f.name in CARD_FIELDS:
            assert shown[f.name] == deep_cards(value), f.name
        elif f.name == "card":
            assert shown[f.name] == card_str(value)
        else:
            assert shown[f.name] == data[f.name], f.name


@dataclass
class Watch:
    """Checks every event of a self-played game as it happens."""

    game: SelfPlay | None = None
    seats: int = 0
    secrets: tuple[str, ...] = ()
    checked: int = 0

    def __call__(self, event: Event) -> None:
        assert self.game is not None
        state = self.game.state
        live = state.status != "finished"
        for viewer in (None, *range(self.seats)):
            check_event(event, viewer, live, self.secrets)
            check_view(state, viewer, self.secrets)
        self.checked += 1


PILE = {"discard_pile": True, "match_rounds": 1}
GAMES = [
    ("robbers", {"match_rounds": 2}, "greedy,random,clumsy", 1),
    (
        "robbers",
        {"jokers": 6, "redeem_bonus": 5, "match_rounds": 1},
        "clumsy,greedy,random,greedy,clumsy",
        2,
    ),
    (
        "robbers",
        {**PILE, "hand_size": 30, "opening_points": 0},
        "pile-clumsy,pile-greedy,random",
        3,
    ),
    ("robbers", {**PILE, "turn_seconds": 60}, "pile-clumsy,pile-random,greedy", 11),
    ("robbers", {"turn_seconds": 60, "match_rounds": 2}, "clumsy,random", 4),
    ("robbers-classic", {}, "clumsy,greedy,random,random,greedy,clumsy", 5),
    ("robbers-classic", {"discard_pile": True, "turn_seconds": 30}, "pile-clumsy,greedy", 6),
    ("rummikub", {"match_rounds": 2}, "clumsy,greedy,random", 7),
    ("rummikub", {**PILE, "hand_size": 25}, "pile-clumsy,pile-greedy,random,greedy", 8),
]


@pytest.mark.parametrize(("rules", "options", "bots", "n"), GAMES)
def test_no_view_or_event_leaks(rules: str, options: dict[str, Any], bots: str, n: int) -> None:
    """A whole self-played game checked after every event, for every viewer; at the end every
    event is shown whole to everyone."""
    seed = hashlib.sha256(f"views/{n}".encode()).digest()
    players = make_bots(bots)
    watch = Watch(seats=len(players))
    game = SelfPlay(
        rules, options, players, seed, random.Random(n), timeout_rate=0.05, on_event=watch
    )
    key = shuffle_key(seed, "sim", [f"player-seed-{i}" for i in range(len(players))])
    watch.game = game
    watch.secrets = (seed.hex(), key.hex())
    report = game.play()
    assert report.finished and report.violations == []
    assert watch.checked == len(report.events) > 0
    kinds = {e.TYPE for e in report.events}
    assert {"RoundDealt", "CardDrawn", "TurnPlayed", "RoundEnded", "SeedRevealed"} <= kinds
    for event in report.events:
        for viewer in (None, *range(len(players))):
            check_everything_visible(event, event_json(event, viewer, True))
    for viewer in (None, *range(len(players))):
        assert view_json(report.state, viewer)["seed"] == seed.hex()


def test_the_games_exercise_every_secret() -> None:
    """The games above between them contain every kind of event that has something to hide,
    so the checks are not vacuous (rejections, reshuffles, timeouts, pile draws)."""
    seen: set[str] = set()
    for rules, options, bots, n in GAMES:
        seed = hashlib.sha256(f"views/{n}".encode()).digest()
        players = make_bots(bots)
        report = SelfPlay(
            rules, options, players, seed, random.Random(n), timeout_rate=0.05, check=False
        ).play()
        seen |= {e.TYPE for e in report.events}
        seen |= {
            "PileDraw" for e in report.events if isinstance(e, CardDrawn) and e.source == "pile"
        }
    assert {
        "CommandRejected",
        "StockReshuffled",
        "TurnTimedOut",
        "PileDraw",
        "TurnPassed",
        "PlayerSeated",
    } <= seen
