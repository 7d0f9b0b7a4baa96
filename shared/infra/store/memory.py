"""An event store in process memory: for tests, notebooks and the single-process ``rummy serve``.

It keeps each event as its encoded record, like Redis does, so that a read goes through the same
codec (copies, upcasting, the same shapes) and behaves exactly like the Redis store.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from functools import partial

from shared.infra import codec
from shared.infra.keys import check_game_id
from shared.infra.store.base import (
    AppendResult,
    EventStore,
    HeadMismatch,
    VersionConflict,
    pause,
)
from shared.infra.stored import GENESIS_HASH, StoredEvent


@dataclass
class _Game:
    records: list[bytes] = field(default_factory=list)
    head: str = GENESIS_HASH
    commands: dict[str, AppendResult] = field(default_factory=dict)


class MemoryEventStore(EventStore):
    """All games in a dict; one condition wakes every subscriber on each append."""

    def __init__(self, upcasters: codec.Upcasters = codec.UPCASTERS) -> None:
        super().__init__(upcasters)
        self._games: dict[str, _Game] = {}
        self._appended = asyncio.Condition()

    async def _commit(
        self,
        game_id: str,
        events: list[StoredEvent],
        expected_version: int,
        expected_head: str,
        outcome: AppendResult,
    ) -> AppendResult:
        records = list(outcome.records)  # packed with the hashes, once (``sealed_chain``)
        await pause()  # the chain was computed "client-side": let others interleave, as on Redis
        # From here to the notify there is no await: the check and the write are atomic.
        game = self._games.get(game_id) or _Game()
        command_id = events[0].command_id
        if command_id is not None and command_id in game.commands:
            return game.commands[command_id]
        if len(game.records) != expected_version:
            raise VersionConflict(game_id, expected_version, len(game.records), game.head)
        if game.head != expected_head:
            raise HeadMismatch(game_id, expected_version, expected_head, game.head)
        self._games[game_id] = game
        game.records.extend(records)
        game.head = outcome.head
        if command_id is not None:
            game.commands[command_id] = replace(
                outcome, duplicate=True, events=(), records=(), packed_data=()
            )
        async with self._appended:
            self._appended.notify_all()
        return outcome

    async def _read(self, game_id: str, after: int, limit: int | None) -> list[StoredEvent]:
        game = self._games.get(game_id)
        if game is None:
            return []
        end = None if limit is None else after + limit
        return [codec.decode(raw, self.upcasters) for raw in game.records[after:end]]

    async def _outcome(self, game_id: str, command_id: str) -> AppendResult | None:
        game = self._games.get(game_id)
        return None if game is None else game.commands.get(command_id)

    async def version(self, game_id: str) -> tuple[int, str]:
        check_game_id(game_id)
        game = self._games.get(game_id)
        return (0, GENESIS_HASH) if game is None else (len(game.records), game.head)

    async def subscribe(self, game_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        check_game_id(game_id)
        if type(after) is not int or after < 0:
            raise ValueError(f"after must be an int >= 0, got {after!r}")
        seen = after
        while True:
            game = self._games.get(game_id)
            if game is not None and len(game.records) > seen:
                raw = game.records[seen]
                seen += 1
                yield codec.decode(raw, self.upcasters)
                continue
            async with self._appended:
                await self._appended.wait_for(partial(self._has_more, game_id, seen))

    def _has_more(self, game_id: str, seen: int) -> bool:
        game = self._games.get(game_id)
        return game is not None and len(game.records) > seen

    async def list_games(self) -> list[str]:
        return sorted(self._games)
