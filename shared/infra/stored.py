"""The event envelope: what the engine decides (:class:`NewEvent`) and what a game's log holds
(:class:`StoredEvent`: the event, where in which game, when, because of which command, and its
link to its predecessor).

Each stored event carries the SHA-256 of its own envelope and the hash of the previous event of
the same game, so the log of a game is a hash chain (``shared.infra.chain`` builds and checks
it). The hash always covers the event *as stored*: an event that was upcast on read keeps a
reference to its stored form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GENESIS_HASH = "0" * 64
"""The ``prev_hash`` of the first event of every game (and the head of a game with no events)."""


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event as decided by the engine, before the store gives it a place in a game's log."""

    type: str
    data: dict[str, Any]
    schema: int = 1
    actor: str | None = None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event in a game's log: the envelope of the design, hash-chained to its predecessor.

    ``version`` is the 1-based sequence number within the game; ``time`` is unix seconds given by
    the appender. ``as_stored`` is set only on an event that the codec upcast on read: it is the
    event exactly as stored (older schema and data), which is what the hashes cover.
    """

    game_id: str
    version: int
    type: str
    schema: int
    time: float
    command_id: str | None
    actor: str | None
    data: dict[str, Any]
    prev_hash: str
    hash: str
    # A secret of the event's own that its hash covers (absent from events stored before salts
    # and from those of appenders without a key): without it, a hidden draw of a few cards under
    # a predictable command id could be found by hashing every guess against the public hash.
    salt: str | None = None
    as_stored: StoredEvent | None = field(default=None, repr=False, compare=False)

    def stored_form(self) -> StoredEvent:
        """The event as it is in the log (itself unless it was upcast on read)."""
        return self.as_stored if self.as_stored is not None else self

    def hashed_fields(self) -> dict[str, Any]:
        """The fields the hash covers, by name: the stored form's envelope without ``hash``."""
        e = self.stored_form()
        return {
            "game_id": e.game_id,
            "version": e.version,
            "type": e.type,
            "schema": e.schema,
            "time": e.time,
            "command_id": e.command_id,
            "actor": e.actor,
            "data": e.data,
            "prev_hash": e.prev_hash,
        } | ({"salt": e.salt} if e.salt is not None else {})
