"""The visibility rule is declared for every field: each event class says who sees each of its
fields while the game is live, so a new field (or a new event) without a decision about its
secrecy fails here instead of leaking; the declarations fit the fields they describe; a field
nobody declared is hidden from everyone but a full sight; the view's turn is declared too."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import random
from typing import Any, ClassVar

import pytest

from shared.core import events as events_module
from shared.core.events import (
    EVENT_TYPES,
    CardDrawn,
    CommandRejected,
    Event,
    RoundDealt,
    StockReshuffled,
    TurnForfeited,
)
from shared.core.state import GameState
from shared.core.views import event_json, view_json
from shared.core.visibility import (
    EVERYONE,
    PUBLIC,
    TURN,
    Audience,
    Mask,
    Seen,
    Sight,
    masked,
    sees_field,
)
from shared.play.selfplay import SelfPlay

from .helpers import bots as make_bots

CARD_ANNOTATIONS = {"Cards", "Melds", "Melds | None"}


def test_every_field_of_every_event_is_classified() -> None:
    """``SEEN`` names exactly the fields of its class: none left out, none that is not one."""
    for cls in EVENT_TYPES.values():
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if n not in cls.SEEN]
        assert not missing, f"{cls.TYPE}: say who may see {missing} in its SEEN"
        unknown = set(cls.SEEN) - set(names)
        assert not unknown, f"{cls.TYPE}.SEEN names {sorted(unknown)}, which are not its fields"
        assert all(isinstance(seen, Seen) for seen in cls.SEEN.values()), cls.TYPE


def test_every_event_class_is_registered() -> None:
    """Every event class of the module is in ``EVENT_TYPES``, so the test above sees it."""
    classes = {
        cls
        for _, cls in inspect.getmembers(events_module, inspect.isclass)
        if issubclass(cls, Event) and cls is not Event
    }
    assert classes == set(EVENT_TYPES.values())


def test_the_declarations_fit_their_fields() -> None:
    """A seat's secret needs the seat (a ``seat`` field); each seat's entry needs a tuple indexed
    by seat; a count, something with cards to count; ``public_when``, a field to read."""
    for cls in EVENT_TYPES.values():
        kinds = {f.name: str(f.type) for f in dataclasses.fields(cls)}
        for name, seen in cls.SEEN.items():
            where = f"{cls.TYPE}.{name}"
            if seen.audience is Audience.SEAT:
                assert kinds.get("seat") == "int", f"{where}: the seat's own, but which seat?"
            if seen.audience is Audience.EACH_SEAT:
                assert kinds[name] == "Melds", f"{where}: each seat's entry of what?"
            if seen.mask is Mask.COUNT:
                assert kinds[name] in CARD_ANNOTATIONS, f"{where}: a count of what?"
            if seen.public_when is not None:
                assert seen.public_when[0] in kinds, f"{where}: public when what?"


def test_the_recent_events_and_view_fields_are_classified() -> None:
    """A forfeit is public (that and why the turn ended); ``rejections_left`` is its seat's."""
    assert set(TurnForfeited.SEEN.values()) == {PUBLIC}
    assert TURN["rejections_left"].audience is Audience.SEAT


@dataclasses.dataclass(frozen=True, slots=True)
class Leaky(Event):
    """An event whose author forgot to declare ``secret``."""

    TYPE: ClassVar[str] = "Leaky"
    SEEN: ClassVar[dict[str, Seen]] = {"seat": PUBLIC}
    seat: int
    secret: str


def test_a_field_nobody_declared_is_hidden_until_the_end() -> None:
    """Fail closed: what nobody classified is nobody's while the game is live."""
    event = Leaky(0, "the seed")
    for sight in (Sight(0), Sight(1), Sight(None)):
        assert masked(event, sight) == {"seat": 0, "secret": None}
        assert not sees_field(sight, event, "secret")
    assert masked(event, EVERYONE) == {"seat": 0, "secret": "the seed"}


def test_the_masks() -> None:
    """Each mask as declared: counts, None per seat, the pile's cards public."""
    deal = RoundDealt(1, (0, 1), 0, 1, ((1, 2), (3, 4, 5)), (6, 7, 8), (9,))
    assert masked(deal, Sight(1)) == {
        "round": 1,
        "seats": (0, 1),
        "dealer": 0,
        "starter": 1,
        "hands": [None, (3, 4, 5)],
        "stock": 3,
        "discard": (9,),
    }
    assert masked(deal, Sight(None))["hands"] == [None, None]
    assert masked(deal, Sight(None, True))["stock"] == (6, 7, 8)
    drawn = CardDrawn(0, (5, 6), "stock", True)
    assert masked(drawn, Sight(1))["cards"] == 2 and masked(drawn, Sight(0))["cards"] == (5, 6)
    assert masked(CardDrawn(0, (5,), "pile", False), Sight(None))["cards"] == (5,)
    rejected = CommandRejected(0, "play", "illegal_layout", "meld_too_small", "[6S]", ((5,),))
    others = masked(rejected, Sight(1))
    assert others["reason"] is None and others["layout"] is None
    assert others["code"] == "illegal_layout" and others["detail"] == "meld_too_small"
    assert masked(rejected, Sight(0))["layout"] == ((5,),)
    assert masked(StockReshuffled((1, 2)), Sight(0)) == {"stock": 2}


def _live_states(count: int) -> list[GameState]:
    """States of a self-played game with a turn in progress."""
    states: list[GameState] = []
    seed = hashlib.sha256(b"visibility").digest()
    players = make_bots("clumsy,greedy")
    game = SelfPlay("robbers", {"match_rounds": 1}, players, seed, random.Random(1))

    def keep(event: Event) -> None:
        if game.state.turn is not None and len(states) < count:
            states.append(game.state)

    game.on_event = keep
    game.play()
    return states


def test_the_view_turn_is_classified() -> None:
    """The turn's seat sees every declared field of its turn, the others the public ones; a
    field added to the view's turn and not to ``TURN`` fails here (it would show as None)."""
    public = {name for name, seen in TURN.items() if seen == PUBLIC}
    for state in _live_states(40):
        assert state.turn is not None
        for viewer in (None, 0, 1):
            turn: dict[str, Any] = view_json(state, viewer)["turn"]
            if viewer == state.turn.seat:
                assert set(turn) == set(TURN)
                own = ("drawn", "placed", "rejected", "rejections_left")
                assert all(turn[name] is not None for name in own)
            else:
                assert set(turn) == public


def test_the_event_json_reads_the_declarations(monkeypatch: pytest.MonkeyPatch) -> None:
    """A field declared secret is hidden by ``event_json`` without a line of it changing."""
    event = TurnForfeited(0, 3, "max_rejections", 4)
    assert event_json(event, 1, False)["rejected"] == 4
    secret = {**TurnForfeited.SEEN, "rejected": Seen(Audience.SEAT)}
    monkeypatch.setattr(TurnForfeited, "SEEN", secret)
    assert event_json(event, 1, False)["rejected"] is None
    assert event_json(event, 0, False)["rejected"] == 4
    assert event_json(event, 1, True)["rejected"] == 4
