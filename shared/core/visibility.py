"""Who may see what before the game ends: one rule, declared field by field with the events, that
every way out of the log reads (the views, the event feed and its catch-ups, replays, exports).

Each event class maps every one of its fields to a :class:`Seen` (``Event.SEEN``): who sees the
field while the game is live, and what everyone else gets in its place. Once the game has ended,
and for the operator, everything is public. A field missing from its class's map is hidden from
everyone while the game is live (fail closed); ``tests/engine/test_visibility.py`` fails on it, so
a new field cannot be added without saying who may see it.

The audiences: public; the seat the event concerns (its ``seat`` field: a drawn card is seen by
its drawer, a rejected layout by the seat that tried it); each seat its own entry of a tuple
indexed by seat (the hands of a deal); nobody until the game ends (the stock order, the seed).

``masked(event, sight)`` is the one function that applies the rule to an event; the views, the
replay and the gateway's feed all call it (through ``views.event_json``); a record, which holds
every event whole, is built only for a sight that sees everything (``audit.record``). The same
:class:`Seen` values say what a viewer sees of the state (:data:`HAND`, :data:`STOCK`,
:data:`PILE`) and of the view (:data:`ROUND_HANDS`, :data:`TURN`), so snapshots and views read
the rule too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.core.events import Event


class Audience(Enum):
    """Who sees a field while the game is live."""

    PUBLIC = "public"  # everyone
    SEAT = "seat"  # only the seat the record concerns (an event's ``seat`` field)
    EACH_SEAT = "each seat"  # a tuple indexed by seat: each seat sees its own entry only
    NOBODY = "nobody"  # nobody, until the game ends


class Mask(Enum):
    """What those who may not see a field get instead."""

    NULL = "null"  # None (for EACH_SEAT: None in each entry they may not see)
    COUNT = "count"  # how many cards it holds
    OMIT = "omit"  # nothing: the key is left out


@dataclass(frozen=True, slots=True)
class Seen:
    """The visibility of one field: its audience, its mask, and optionally another field's value
    that makes it public (a card drawn from the face-up pile is seen by all)."""

    audience: Audience
    mask: Mask = Mask.NULL
    public_when: tuple[str, Any] | None = None


PUBLIC = Seen(Audience.PUBLIC)
# The state's secrets, and the events' fields that carry them.
HAND = Seen(Audience.EACH_SEAT)  # a hand: its own seat's (in a deal and a round's end too)
STOCK = Seen(Audience.NOBODY, Mask.COUNT)  # the stock's order: nobody's; its size: everyone's
SEED = Seen(Audience.NOBODY)  # the secret seed: published by SeedRevealed once the game is over
SEAT_ONLY = Seen(Audience.SEAT)  # the seat's own: its seed, a rejected layout and its reason
DRAWN = Seen(Audience.SEAT, Mask.COUNT, public_when=("source", "pile"))  # a draw's cards
# The pile below its top: every card was laid face up, but it is listed whole only at the end
# (the replay's snapshot shows its top and its count, as the views do).
PILE = Seen(Audience.NOBODY, Mask.OMIT)

# The view's last round lists its hands once the game has ended (a seat's own is its ``hand``).
ROUND_HANDS = Seen(Audience.NOBODY, Mask.OMIT)

# The view's ``turn``: its seat, number and deadline are public; how that turn stands (drawn,
# placed, rejected layouts, how many more leave it open, the card taken) is shown to its seat.
_OWN_TURN = Seen(Audience.SEAT, Mask.OMIT)
TURN: Mapping[str, Seen] = {
    "seat": PUBLIC,
    "number": PUBLIC,
    "deadline": PUBLIC,
    "drawn": _OWN_TURN,
    "placed": _OWN_TURN,
    "rejected": _OWN_TURN,
    "rejections_left": _OWN_TURN,
    "taken": _OWN_TURN,
}
# A command's id in a replay: the seat's own. The chain's hashes cover it, and with it, the time
# and the hash the feed shows, anyone could test guesses at the cards hidden in its events.
COMMAND_ID = Seen(Audience.SEAT)
_UNDECLARED = Seen(Audience.NOBODY)  # fail closed: a field nobody classified is nobody's


@dataclass(frozen=True, slots=True)
class Sight:
    """Who looks: a seat (``seat`` its number) or a spectator (``seat`` None); ``full`` when
    everything is public to them (the game has ended, or the operator looks)."""

    seat: int | None = None
    full: bool = False

    def sees(self, seen: Seen, owner: int | None) -> bool:
        """Whether this sight sees a field declared ``seen`` whose owner is seat ``owner``."""
        if self.full or seen.audience is Audience.PUBLIC:
            return True
        if seen.audience in (Audience.SEAT, Audience.EACH_SEAT):
            return owner is not None and owner == self.seat
        return False

    def sees_hand(self, seat: int) -> bool:
        """Whether this sight sees the hand of ``seat``."""
        return self.sees(HAND, seat)


EVERYONE = Sight(None, True)


def seen_of(event: Event, name: str) -> Seen:
    """How field ``name`` of ``event`` is declared (hidden, where it is not declared)."""
    return type(event).SEEN.get(name, _UNDECLARED)


def sees_field(sight: Sight, event: Event, name: str) -> bool:
    """Whether ``sight`` sees field ``name`` of ``event`` whole."""
    seen = seen_of(event, name)
    if seen.public_when is not None:
        other, value = seen.public_when
        if getattr(event, other, None) == value:
            return True
    if seen.audience is Audience.EACH_SEAT:
        return sight.full
    return sight.sees(seen, getattr(event, "seat", None))


def _replacement(value: Any, mask: Mask) -> Any:
    if mask is Mask.COUNT:
        return len(value) if isinstance(value, tuple | list) else None
    return None


def mask_fields(
    values: Mapping[str, Any], declared: Mapping[str, Seen], sight: Sight, owner: int | None
) -> dict[str, Any]:
    """``values`` (field -> value) as ``sight`` may see them, by the ``declared`` visibility of
    each field (undeclared ones hidden), ``owner`` the seat they concern."""
    shown: dict[str, Any] = {}
    for name, value in values.items():
        seen = declared.get(name, _UNDECLARED)
        if seen.public_when is not None and values.get(seen.public_when[0]) == seen.public_when[1]:
            shown[name] = value
        elif seen.audience is Audience.EACH_SEAT and not sight.full:
            shown[name] = [
                entry if sight.sees(seen, seat) else _replacement(entry, seen.mask)
                for seat, entry in enumerate(value)
            ]
        elif sight.sees(seen, owner):
            shown[name] = value
        elif seen.mask is not Mask.OMIT:
            shown[name] = _replacement(value, seen.mask)
    return shown


def masked(event: Event, sight: Sight) -> dict[str, Any]:
    """The fields of ``event`` (as the event holds them) as ``sight`` may see them: a field the
    sight may not see becomes its mask (None, a count), or is left out. A field at its default
    is left out, as in the stored form (``events.to_data``), so that a field added later changes
    nothing anyone is shown of the events made before it."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.default is dataclasses.MISSING or value != f.default:
            values[f.name] = value
    return mask_fields(values, type(event).SEEN, sight, getattr(event, "seat", None))
