"""Tokens: random, unguessable (256 bits), stored only as their SHA-256 in the game's own key,
so neither a leaked Redis dump nor a log line gives anyone a seat."""

from __future__ import annotations

import hashlib
import secrets
from collections import OrderedDict

from shared.infra.client import RedisClient
from shared.infra.keys import Keys

HOST = "host"
CACHE = 100_000


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
        self._known: OrderedDict[tuple[str, str], str] = OrderedDict()

    async def issue(self, game_id: str, role: str) -> str:
        """A new token for ``role`` (``"host"`` or a seat number as text) in ``game_id``."""
        token = new_token()
        await self.client.hset(self.keys.tokens(game_id), token_hash(token), role)
        return token

    async def role(self, game_id: str, token: str) -> str | None:
        """``"host"``, the seat number as text, or None for a token this game does not know."""
        key = (game_id, token_hash(token))
        if key in self._known:
            return self._known[key]
        raw = await self.client.hget(self.keys.tokens(game_id), key[1])
        if raw is None:
            return None
        role = raw.decode() if isinstance(raw, bytes) else str(raw)
        self._known[key] = role
        while len(self._known) > CACHE:
            self._known.popitem(last=False)
        return role
