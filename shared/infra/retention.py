"""Retention: a finished game leaves Redis only after its archive row is committed and read
back, and only ``RUMMY_RETAIN_SECONDS`` later.

Two sorted sets carry a game through (``shared/infra/keys.py``): ``archive:due`` (finished, not
archived yet; score: when to try) and ``archive:kept`` (archived, still in Redis; score: when
the row was read back). Every step is idempotent and the order makes a crash harmless:

1. a finished game is added to ``due`` (from the feed, or a sweep of the games index);
2. once archived and read back it is added to ``kept``, then taken off ``due`` (a crash in
   between archives it again: a no-op for the archive);
3. when its time in ``kept`` is up, the game's own keys are deleted in one script, only if its
   head is still the archived one; then it is taken off the games index and the lobby, and last
   off ``kept``. A crash before the last step leaves it in ``kept``: the next pass deletes
   nothing more (the script finds the keys gone) and finishes the rest. A head that moved (a
   rematch offered after the game was archived) sends it back to ``due``: its longer log
   replaces the archived one, and it is kept again.

So at any moment a finished game is whole in Redis or whole in the archive (or both): never
half-removed. Readers that find its log gone read it from the archive.

A finished tournament goes through the same steps in sets of its own (``{prefix}tour:archive:due``
and ``:kept``, named as a game's under the tournaments' log prefix): noted due by a sweep of the
tournaments' index; forgotten, its log's keys go in one script, then its index entry and its
listing rows. A ruling recorded after the finish moves its head, as a rematch offer moves a
game's: it is archived again, then forgotten.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from shared.infra.client import RedisClient
from shared.infra.keys import Keys
from shared.infra.tournaments import TournamentIndex

LOBBY_STATUSES = ("waiting", "playing", "finished")

TOKENS_GRACE_MS = 30 * 86_400 * 1000  # a forgotten game's tokens still name their seats

# KEYS: the log's own keys, the head hash second (``game_data_keys``), then for a game its tokens
# last; ARGV[1]: the archived head hash, ARGV[2] (a game's only): how long the tokens stay (ms).
# Deletes the rest unless the head moved past the archived one: the count deleted, or -1 (the
# log changed after it was archived: it must be archived again first).
FORGET = """
local head = redis.call('HGET', KEYS[2], 'hash')
if head and head ~= ARGV[1] then return -1 end
local last = #KEYS
if ARGV[2] then
  redis.call('PEXPIRE', KEYS[last], ARGV[2])
  last = last - 1
end
local data = {}
for i = 1, last do data[i] = KEYS[i] end
return redis.call('DEL', unpack(data))
"""


def game_data_keys(keys: Keys, game_id: str) -> list[str]:
    """Every key one game holds for itself that leaves with it (one slot: they share its hash
    tag), head second. Not here: its idempotency bindings, which expire on their own, and its
    tokens, which expire ``TOKENS_GRACE_MS`` later: a player's client keeps sending its seat's
    token, and a finished game's views, replays and records stay open to it (to anyone)."""
    return [
        keys.events(game_id),
        keys.head(game_id),
        keys.commands(game_id),
        keys.seed(game_id),
        keys.standings(game_id),
    ]


class Holding(ABC):
    """The due and kept sets of one kind of log (games, tournaments) on its way to the archive;
    what forgetting one removes is the kind's own (``forget``)."""

    def __init__(self, client: RedisClient, due: str, kept: str) -> None:
        """``due``, ``kept``: the sorted sets' keys."""
        self.client = client
        self.due_key = due
        self.kept_key = kept
        self._forget = client.register_script(FORGET)

    async def note_due(self, ids: list[str], at: float) -> None:
        """Finished logs to archive from ``at`` on (one noted already keeps its time)."""
        if ids:
            await self.client.zadd(self.due_key, dict.fromkeys(ids, at), nx=True)

    async def retry_later(self, item: str, at: float) -> None:
        """Try archiving ``item`` again at ``at`` (it could not be archived now)."""
        await self.client.zadd(self.due_key, {item: at})

    async def due_again(self, item: str, at: float) -> None:
        """``item``'s log grew after it was archived: due again at ``at``, and no longer kept."""
        await self.retry_later(item, at)
        await self.client.zrem(self.kept_key, item)

    async def due(self, now: float, limit: int) -> list[str]:
        """Up to ``limit`` due for archiving at ``now``, the longest waiting first."""
        raw = await self.client.zrangebyscore(self.due_key, "-inf", now, 0, limit)
        return [_text(r) for r in raw]

    async def kept_since(self, item: str, at: float) -> None:
        """``item`` is archived and read back at ``at``: hold it, then leave ``due``."""
        await self.client.zadd(self.kept_key, {item: at}, nx=True)
        await self.client.zrem(self.due_key, item)

    async def expired(self, before: float, limit: int) -> list[str]:
        """Up to ``limit`` archived and read back before ``before`` (their time is up)."""
        raw = await self.client.zrangebyscore(self.kept_key, "-inf", before, 0, limit)
        return [_text(r) for r in raw]

    async def known(self, item: str) -> bool:
        """Whether ``item`` is due or kept already."""
        due = await self.client.zscore(self.due_key, item)
        kept = await self.client.zscore(self.kept_key, item)
        return due is not None or kept is not None

    @abstractmethod
    async def forget(self, item: str, archived_head: str) -> bool:
        """Remove the archived ``item`` from Redis, its own keys first (in one script), only if
        its head is still ``archived_head``; False, with nothing removed, if it is not."""

    async def sizes(self) -> dict[str, int]:
        """How many are due and kept."""
        return {
            "due": int(await self.client.zcard(self.due_key)),
            "kept": int(await self.client.zcard(self.kept_key)),
        }


class Retention(Holding):
    """The finished games' due and kept sets, and forgetting a game's keys."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        super().__init__(client, keys.archive_due(), keys.archive_kept())
        self.keys = keys

    async def forget(self, game_id: str, archived_head: str) -> bool:
        """Remove the archived game from Redis (see the module docstring for the order);
        False, with nothing removed, if its head is not ``archived_head``."""
        if await self.drop_own_keys(game_id, archived_head) < 0:
            return False
        await self.client.srem(self.keys.games(), game_id)
        for status in LOBBY_STATUSES:
            await self.client.zrem(self.keys.lobby(status), game_id)
        await self.client.zrem(self.kept_key, game_id)
        return True

    async def drop_own_keys(self, game_id: str, archived_head: str) -> int:
        """The first step of ``forget``, alone: the game's own keys deleted (its tokens set to
        expire) unless its head is not ``archived_head`` (-1); how many were deleted."""
        deleted = await self._forget(
            keys=[*game_data_keys(self.keys, game_id), self.keys.tokens(game_id)],
            args=[archived_head, TOKENS_GRACE_MS],
        )
        return int(deleted)


class TournamentRetention(Holding):
    """The finished tournaments' due and kept sets (``{prefix}tour:archive:due`` and
    ``:kept``, beside their logs), and forgetting a tournament: its log's keys (events, head,
    command outcomes), then its place in the tournaments' index and its listing rows, which
    the lobby reads from the archive from then on. The same order as a game's: a crash at any
    step leaves it kept, and the next pass finishes what is left."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self.logs = Keys(keys.tournament_logs())
        super().__init__(client, self.logs.archive_due(), self.logs.archive_kept())
        self.index = TournamentIndex(client, keys)

    async def forget(self, tournament_id: str, archived_head: str) -> bool:
        if await self.drop_own_keys(tournament_id, archived_head) < 0:
            return False
        await self.client.srem(self.logs.games(), tournament_id)
        await self.index.unlist(tournament_id)
        await self.client.zrem(self.kept_key, tournament_id)
        return True

    async def drop_own_keys(self, tournament_id: str, archived_head: str) -> int:
        """The first step of ``forget``: the log's keys deleted unless its head is not
        ``archived_head`` (-1); how many were deleted."""
        deleted = await self._forget(
            keys=list(self.logs.game_keys(tournament_id)), args=[archived_head]
        )
        return int(deleted)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
