"""Tokens: random, unguessable (256 bits), stored only as their SHA-256 in the game's own key,
so neither a leaked Redis dump nor a log line gives anyone a seat."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict

from shared.infra.client import RedisClient
from shared.infra.keys import Keys

HOST = "host"
CACHE = 100_000
CACHE_SECONDS = 10.0  # a token's role is asked of Redis again after this: a seat given up
# before the start (its tokens withdrawn) stops working on every gateway within it


def new_token() -> str:
    """A fresh token."""
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What the store keeps of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


class Tokens:
    """Issue and resolve the tokens of games (host, or a seat number)."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._known: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()
        self.clock = time.monotonic

    async def issue(self, game_id: str, role: str) -> str:
        """A new token for ``role`` (``"host"`` or a seat number as text) in ``game_id``."""
        token = new_token()
        await self.client.hset(self.keys.tokens(game_id), token_hash(token), role)
        return token

    async def revoke(self, game_id: str, role: str) -> int:
        """Withdraw every token of ``role`` in ``game_id`` (a seat given up before the start,
        which the next player takes with a token of its own). Returns how many there were."""
        key = self.keys.tokens(game_id)
        held = await self.client.hgetall(key)
        gone = [h for h, r in held.items() if (r.decode() if isinstance(r, bytes) else r) == role]
        if gone:
            await self.client.hdel(key, *gone)
        hashes = {h.decode() if isinstance(h, bytes) else str(h) for h in gone}
        for cached in [k for k in self._known if k[0] == game_id and k[1] in hashes]:
            del self._known[cached]
        return len(gone)

    async def role(self, game_id: str, token: str) -> str | None:
        """``"host"``, the seat number as text, or None for a token this game does not know."""
        key = (game_id, token_hash(token))
        now = self.clock()
        known = self._known.get(key)
        if known is not None and now - known[1] < CACHE_SECONDS:
            return known[0]
        raw = await self.client.hget(self.keys.tokens(game_id), key[1])
        if raw is None:
            self._known.pop(key, None)
            return None
        role = raw.decode() if isinstance(raw, bytes) else str(raw)
        self._known[key] = (role, now)
        self._known.move_to_end(key)
        while len(self._known) > CACHE:
            self._known.popitem(last=False)
        return role
