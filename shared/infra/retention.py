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
"""

from __future__ import annotations

from typing import Any

from shared.infra.client import RedisClient
from shared.infra.keys import Keys

LOBBY_STATUSES = ("waiting", "playing", "finished")

TOKENS_GRACE_MS = 30 * 86_400 * 1000  # a forgotten game's tokens still name their seats

# KEYS: the game's own keys, the head hash second, its tokens last (``game_data_keys``, then
# ``tokens``); ARGV[1]: the archived head hash, ARGV[2]: how long the tokens stay (ms). Deletes
# the rest unless the head moved past the archived one: the count deleted, or -1 (the game
# changed after it was archived: it must be archived again first).
FORGET = """
local head = redis.call('HGET', KEYS[2], 'hash')
if head and head ~= ARGV[1] then return -1 end
local data = {}
for i = 1, #KEYS - 1 do data[i] = KEYS[i] end
redis.call('PEXPIRE', KEYS[#KEYS], ARGV[2])
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


class Retention:
    """The due and kept sets, and forgetting a game's keys."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._forget = client.register_script(FORGET)

    async def note_due(self, game_ids: list[str], at: float) -> None:
        """Finished games to archive from ``at`` on (a game noted already keeps its time)."""
        if game_ids:
            await self.client.zadd(self.keys.archive_due(), dict.fromkeys(game_ids, at), nx=True)

    async def retry_later(self, game_id: str, at: float) -> None:
        """Try archiving ``game_id`` again at ``at`` (it could not be archived now)."""
        await self.client.zadd(self.keys.archive_due(), {game_id: at})

    async def due(self, now: float, limit: int) -> list[str]:
        """Up to ``limit`` games due for archiving at ``now``, the longest waiting first."""
        raw = await self.client.zrangebyscore(self.keys.archive_due(), "-inf", now, 0, limit)
        return [_text(r) for r in raw]

    async def kept_since(self, game_id: str, at: float) -> None:
        """``game_id`` is archived and read back at ``at``: hold it, then leave ``due``."""
        await self.client.zadd(self.keys.archive_kept(), {game_id: at}, nx=True)
        await self.client.zrem(self.keys.archive_due(), game_id)

    async def expired(self, before: float, limit: int) -> list[str]:
        """Up to ``limit`` archived games read back before ``before`` (their time is up)."""
        raw = await self.client.zrangebyscore(self.keys.archive_kept(), "-inf", before, 0, limit)
        return [_text(r) for r in raw]

    async def known(self, game_id: str) -> bool:
        """Whether ``game_id`` is due or kept already."""
        due = await self.client.zscore(self.keys.archive_due(), game_id)
        kept = await self.client.zscore(self.keys.archive_kept(), game_id)
        return due is not None or kept is not None

    async def forget(self, game_id: str, archived_head: str) -> bool:
        """Remove the archived game from Redis (see the module docstring for the order);
        False, with nothing removed, if its head is not ``archived_head``."""
        if await self.drop_own_keys(game_id, archived_head) < 0:
            return False
        await self.client.srem(self.keys.games(), game_id)
        for status in LOBBY_STATUSES:
            await self.client.zrem(self.keys.lobby(status), game_id)
        await self.client.zrem(self.keys.archive_kept(), game_id)
        return True

    async def drop_own_keys(self, game_id: str, archived_head: str) -> int:
        """The first step of ``forget``, alone: the game's own keys deleted (its tokens set to
        expire) unless its head is not ``archived_head`` (-1); how many were deleted."""
        deleted = await self._forget(
            keys=[*game_data_keys(self.keys, game_id), self.keys.tokens(game_id)],
            args=[archived_head, TOKENS_GRACE_MS],
        )
        return int(deleted)

    async def sizes(self) -> dict[str, int]:
        """How many games are due and kept."""
        return {
            "due": int(await self.client.zcard(self.keys.archive_due())),
            "kept": int(await self.client.zcard(self.keys.archive_kept())),
        }


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
