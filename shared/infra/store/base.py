"""What every event store promises, and the part of appending that is the same for all of them.

A store keeps one log per game. Appending is optimistic: the caller says which version it decided
from (``expected_version``) and the append succeeds only if the game is still at that version, so
two referees deciding from the same state can never both append. A command id makes a retry
idempotent: the store remembers the outcome of every command id it applied to a game and answers a
repeat with that outcome instead of appending again.

The hash chain is computed here, in the client, before the backend commits (Redis' Lua has no
SHA-256). That is safe because every backend commits only if the game's head is still the one the
chain was computed from: the version *and* the head hash.
"""

from __future__ import annotations

import asyncio
import time as _time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass, field

from shared.infra import codec
from shared.infra.chain import sealed_chain
from shared.infra.keys import check_game_id
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent


@dataclass(frozen=True, slots=True)
class AppendResult:
    """The outcome of an append: which versions the events got and the new chain head.

    For a repeated command id, ``duplicate`` is true and the versions, head and ``fingerprint``
    are those of the original append (nothing was appended, ``events`` is empty); the caller
    compares fingerprints to tell a retry from a command id reused for a different command.
    """

    first_version: int
    last_version: int
    head: str
    duplicate: bool = False
    fingerprint: str | None = None
    events: tuple[StoredEvent, ...] = ()
    # The events' encoded records as stored, when the store has them at hand (the referee puts
    # them in the feed's news, so a gateway need not read them back).
    records: tuple[bytes, ...] = field(default=(), compare=False, repr=False)
    # Each event's data as packed in its record: what the feed's news carries of it.
    packed_data: tuple[bytes, ...] = field(default=(), compare=False, repr=False)

    def to_record(self) -> str:
        """The outcome as the store remembers it for the command id: ``first last head [fp]``."""
        parts = [str(self.first_version), str(self.last_version), self.head]
        if self.fingerprint is not None:
            parts.append(self.fingerprint)
        return " ".join(parts)

    @classmethod
    def from_record(cls, record: str) -> AppendResult:
        """The duplicate outcome of a remembered append (see :meth:`to_record`)."""
        parts = record.split(" ", 3)
        if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
            raise StoreError(f"malformed command outcome {record!r}")
        fingerprint = parts[3] if len(parts) == 4 else None
        return cls(int(parts[0]), int(parts[1]), parts[2], True, fingerprint)


class StoreError(Exception):
    """The store cannot do what was asked (its data is inconsistent, or a backend failed)."""


class VersionConflict(StoreError):
    """The game is not at the version the caller decided from: reload and decide again."""

    def __init__(
        self, game_id: str, expected: int, actual: int, head: str, message: str | None = None
    ) -> None:
        super().__init__(
            message or f"game {game_id}: expected version {expected}, it is at {actual}"
        )
        self.game_id = game_id
        self.expected = expected
        self.actual = actual
        self.head = head


class HeadMismatch(VersionConflict):
    """The game is at the expected version but its head hash is not the one the caller had:
    the caller's state comes from another history (a rewritten or recreated log)."""

    def __init__(self, game_id: str, version: int, expected_head: str, actual_head: str) -> None:
        message = (
            f"game {game_id}: at version {version} the head is {actual_head}, not {expected_head}"
        )
        super().__init__(game_id, version, version, actual_head, message)
        self.expected_head = expected_head


class EventStore(ABC):
    """One log per game; see the module docstring for the guarantees."""

    def __init__(self, upcasters: codec.Upcasters = codec.UPCASTERS) -> None:
        self.upcasters = upcasters

    async def append(
        self,
        game_id: str,
        events: Sequence[NewEvent],
        expected_version: int,
        command_id: str | None = None,
        fingerprint: str | None = None,
        time: float | None = None,
        expected_head: str | None = None,
        salt_key: bytes | None = None,
    ) -> AppendResult:
        """Append ``events`` to ``game_id`` if it is at ``expected_version``, atomically.

        Raises :class:`VersionConflict` (nothing appended) when it is not, and
        :class:`HeadMismatch` when it is but its head is not ``expected_head``. If
        ``command_id`` was already applied to this game, appends nothing and returns the
        original outcome (``duplicate=True``), whatever the expected version. ``time`` defaults
        to now. ``expected_head`` is the hash of the event at ``expected_version`` as the caller
        knows it (a cached state, a receipt); without it the store reads the head first, which
        costs a round trip but is still safe (the commit re-checks it). ``salt_key``: the
        game's secret seed, which salts the events (see :func:`shared.infra.chain.event_salt`).
        """
        check_game_id(game_id)
        if not events:
            raise ValueError("an append needs at least one event")
        if type(expected_version) is not int or expected_version < 0:
            raise ValueError(f"expected_version must be an int >= 0, got {expected_version!r}")
        if command_id is not None and (not isinstance(command_id, str) or not command_id):
            raise ValueError(f"command_id must be a non-empty str or None, got {command_id!r}")
        if fingerprint is not None and not isinstance(fingerprint, str):
            raise ValueError(f"fingerprint must be a str or None, got {fingerprint!r}")
        if expected_head is None:
            _, expected_head = await self.version(game_id)
        stamp = _time.time() if time is None else time
        stored, sealed = sealed_chain(
            game_id, events, expected_version + 1, expected_head, command_id, stamp, salt_key
        )
        outcome = AppendResult(
            first_version=stored[0].version,
            last_version=stored[-1].version,
            head=stored[-1].hash,
            fingerprint=fingerprint,
            events=tuple(stored),
            records=tuple(s.record for s in sealed),
            packed_data=tuple(s.data for s in sealed),
        )
        return await self._commit(game_id, stored, expected_version, expected_head, outcome)

    @abstractmethod
    async def _commit(
        self,
        game_id: str,
        events: list[StoredEvent],
        expected_version: int,
        expected_head: str,
        outcome: AppendResult,
    ) -> AppendResult:
        """Atomically: if ``events[0].command_id`` was applied, return its remembered outcome as
        a duplicate; else if the game is not at ``expected_version`` with head
        ``expected_head`` raise; else store ``events``, move the head and remember ``outcome``
        for the command id, and return ``outcome``. ``outcome.records`` are the events' stored
        records, packed with their hashes: what the backend stores."""

    async def read(
        self, game_id: str, after: int = 0, limit: int | None = None
    ) -> list[StoredEvent]:
        """The events of ``game_id`` with version > ``after``, oldest first, at most ``limit``,
        upcast to their current schema (each keeps its stored form for verification)."""
        check_game_id(game_id)
        if type(after) is not int or after < 0:
            raise ValueError(f"after must be an int >= 0, got {after!r}")
        if limit is not None and (type(limit) is not int or limit < 0):
            raise ValueError(f"limit must be an int >= 0 or None, got {limit!r}")
        if limit == 0:
            return []
        return await self._read(game_id, after, limit)

    async def read_types(self, game_id: str, types: Collection[str]) -> list[StoredEvent]:
        """The events of ``types`` in ``game_id``'s log, oldest first, upcast as ``read``'s: for
        a reader after a few events of a long log (a finished game's seatings and result). A
        store that can pass the other events over without decoding them does."""
        return [event for event in await self.read(game_id) if event.type in types]

    @abstractmethod
    async def _read(self, game_id: str, after: int, limit: int | None) -> list[StoredEvent]:
        """``read`` with checked arguments (``limit`` is None or positive)."""

    async def outcome(self, game_id: str, command_id: str) -> AppendResult | None:
        """The remembered outcome of ``command_id`` in ``game_id`` (as a duplicate would return
        it), or ``None`` if the game never applied it: lets a consumer answer a redelivered
        command without deciding it again."""
        check_game_id(game_id)
        if not isinstance(command_id, str) or not command_id:
            raise ValueError(f"command_id must be a non-empty str, got {command_id!r}")
        return await self._outcome(game_id, command_id)

    @abstractmethod
    async def _outcome(self, game_id: str, command_id: str) -> AppendResult | None:
        """``outcome`` with checked arguments."""

    @abstractmethod
    async def version(self, game_id: str) -> tuple[int, str]:
        """The game's chain head: its version and the hash of its last event
        (``(0, GENESIS_HASH)`` for a game with no events)."""

    @abstractmethod
    def subscribe(self, game_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        """Every event with version > ``after``: those already stored, then each new one as it is
        appended, forever (the caller stops iterating, or cancels)."""

    @abstractmethod
    async def list_games(self) -> list[str]:
        """The ids of all games, sorted. Every game with an event is listed; a game whose first
        append failed may be listed too (at version 0)."""


def genesis_head() -> tuple[int, str]:
    """The head of a game with no events."""
    return (0, GENESIS_HASH)


async def pause() -> None:
    """Let other tasks run, as a network round trip would (keeps the in-memory store honest
    about interleavings)."""
    await asyncio.sleep(0)
