"""Nothing leaks: over many self-played games, after every event, each seat's view holds its own
hand and no other card it may not see, the spectator's holds no hand, and no view shows the
stock order or the seed before the end; every event, as each viewer gets it, hides other seats'
dealt and drawn cards, rejected layouts and player seeds while the game is live, and shows no
card that the state's truth hides from that viewer (another hand, the stock); once it is
finished, everything is visible."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

import pytest

from shared.core.cards import card_str, cards_str
from shared.core.events import (
    EVENT_TYPES,
    CardDrawn,
    CommandRejected,
    Event,
    PlayerSeated,
    RoundDealt,
    RoundEnded,
    SeedRevealed,
    StockReshuffled,
    to_data,
)
from shared.core.gameview import VIEW_KEYS
from shared.core.shuffle import shuffle_key
from shared.core.state import GameState
from shared.core.views import event_json, view_json
from shared.core.visibility import PUBLIC
from shared.play.selfplay import SelfPlay
from tests.secrecy import (
    around,
    assert_fields_within,
    assert_no_stock_order,
    assert_no_text,
    card_texts,
)

from .helpers import bots as make_bots

SEAT_KEYS = {"seat", "name", "hand_count", "opened", "score", "bot", "away", "resigned", "missed"}
CARD_FIELDS = {"layout", "played", "to_hand", "hands", "stock", "discard", "cards"}


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
        assert_no_stock_order(view, [state.stock], viewer)


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
    """Every field of the event, cards in notation (a field at its default left out, as in the
    stored form)."""
    data = to_data(event)
    extra = {"type", "hand_counts"}
    assert {f.name for f in fields(event) if f.name in data} == shown.keys() - extra
    for f in fields(event):
        if f.name not in data:
            continue
        value = getattr(event, f.name)
        if f.name in CARD_FIELDS:
            assert shown[f.name] == deep_cards(value), f.name
        elif f.name == "card":
            assert shown[f.name] == card_str(value)
        else:
            assert shown[f.name] == data[f.name], f.name


def check_truth(event: Event, before: GameState, after: GameState, viewer: int | None) -> None:
    """One event of a live game as one viewer gets it, against the state's truth: no card the
    viewer could not see before or after it (another seat's hand, the stock), not the stock's
    order, and no other seat's seed."""
    shown = event_json(event, viewer, False)
    assert_fields_within(shown, around(event, before, after, viewer), (event.TYPE, viewer))
    assert_no_stock_order(shown, [before.stock, after.stock], (event.TYPE, viewer))
    others = [seed for seat, seed in enumerate(after.seeds) if seat != viewer]
    assert_no_text(shown, others, (event.TYPE, viewer))


@dataclass
class Watch:
    """Checks every event of a self-played game as it happens."""

    game: SelfPlay | None = None
    seats: int = 0
    secrets: tuple[str, ...] = ()
    checked: int = 0
    before: GameState = field(default_factory=GameState)

    def __call__(self, event: Event) -> None:
        assert self.game is not None
        state = self.game.state
        live = state.status != "finished"
        for viewer in (None, *range(self.seats)):
            check_event(event, viewer, live, self.secrets)
            check_view(state, viewer, self.secrets)
            if live:
                check_truth(event, self.before, state, viewer)
        self.before = state
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


def _secret_fields() -> list[tuple[type[Event], str]]:
    """Every field declared secret, but the seed SeedRevealed publishes (it is only written once
    the game has ended, so no live view can show it)."""
    return [
        (cls, name)
        for cls in EVENT_TYPES.values()
        for name, seen in cls.SEEN.items()
        if seen != PUBLIC and cls is not SeedRevealed
    ]


def _leak_found(rules: str, options: dict[str, Any], bots: str, n: int) -> str | None:
    """Play a game checking every live event against the truth; the first failure, if any."""
    seed = hashlib.sha256(f"views/{n}".encode()).digest()
    players = make_bots(bots)
    game = SelfPlay(rules, options, players, seed, random.Random(n), timeout_rate=0.05)
    before = [game.state]

    def watch(event: Event) -> None:
        if game.state.status != "finished":
            for viewer in (None, *range(len(players))):
                check_truth(event, before[0], game.state, viewer)
        before[0] = game.state

    game.on_event = watch
    try:
        game.play()
    except AssertionError as err:
        return str(err)
    return None


@pytest.mark.parametrize(("cls", "name"), _secret_fields(), ids=lambda v: getattr(v, "TYPE", v))
def test_the_truth_check_catches_every_secret_made_public(
    cls: type[Event], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Declare one secret field public and the check against the state's truth fails on an
    event that shows it (the check can fail, for every secret there is). The pile variant has a
    reshuffle and pile draws; the second game many rejected layouts (a layout names one card of
    two decks, which a copy on the table may account for)."""
    monkeypatch.setattr(cls, "SEEN", {**cls.SEEN, name: PUBLIC})
    found = _leak_found(*GAMES[-1]) or _leak_found(*GAMES[4])
    assert found is not None and cls.TYPE in found
