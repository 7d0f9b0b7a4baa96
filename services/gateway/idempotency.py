"""Idempotent creation and sitting: the ``Idempotency-Key`` header (the IETF httpapi draft's).

A create or a sit whose answer is lost (a 504 after a failover or a Redis blip, a dropped
connection) may still be applied later. Without a way to ask again, a sit applied after its 504
leaves a seat that no token controls, and the game can never finish. So each create and sit is
bound to a key, the client's own (the header) or, when it sends none, one the gateway picks and
returns in an error answer (``idempotency_key``). Asked again with the same key and body, the
gateway sends the same command again (the referees answer a repeated command id with its first
outcome) and issues a fresh token for the same role: the same game and a host token, or the same
seat and a seat token. Only hashes of tokens are stored (``auth.py``), so a token cannot be
given back; a fresh one for the same role is as good, and only the key's holder can get one.

What a key is bound to lives in Redis for ``idempotency_seconds`` (the key itself is never
stored, only its SHA-256): the body's fingerprint and what to send again (the game id of a
create, the command id of a sit). The same key with a different body is refused (422
``idempotency_key_reused``): it names another request, not a retry.

Scopes, i.e. who could replay someone else's key: a sit's key is scoped to its game, and is
honoured from any address (a phone that changes networks between the 504 and its retry must
still get its seat: a seat lost costs the whole game). A create's key is scoped to the client
address too (hashed with it): replayed from elsewhere it makes a new game rather than handing
over someone else's host token, and a retry from a new address costs only an extra empty game.
Either way a key is a secret of its client: it should be random (a UUID), since anyone who
sends the same key and body in its scope within ``idempotency_seconds`` gets a token for that
role. The keys the gateway picks are 128-bit random.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from aiohttp import web

from services.gateway.errors import ApiError
from shared.infra import jsontext
from shared.infra.bus import fingerprint
from shared.infra.client import RedisClient
from shared.infra.keys import Keys

HEADER = "Idempotency-Key"
MAX_KEY = 64

# KEYS[1]: the binding; ARGV[1]: the new binding (JSON), ARGV[2]: its time to live (seconds).
# The binding there already, or nothing (and the new one is set).
BIND = """
local old = redis.call('GET', KEYS[1])
if old then
  return old
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return false
"""


def request_key(request: web.BaseRequest) -> str:
    """The request's ``Idempotency-Key`` (the draft's quoted string, or bare), or a fresh one
    when it has none; a 422 naming the header when it is not 1-64 printable ASCII characters."""
    raw = request.headers.get(HEADER)
    if raw is None:
        return secrets.token_hex(16)
    key = raw.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not 0 < len(key) <= MAX_KEY or not all(" " <= c <= "~" for c in key):
        raise ApiError(
            422,
            "bad_request",
            f"header {HEADER} must be 1-{MAX_KEY} printable ASCII characters"
            " (a random UUID is best)",
        )
    return key


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class Idempotency:
    """The bindings of idempotency keys."""

    def __init__(self, client: RedisClient, keys: Keys, seconds: int) -> None:
        self.keys = keys
        self.seconds = seconds
        self._bind = client.register_script(BIND)

    async def create(self, address: str, key: str, body: Any, game_id: str) -> str:
        """The game id a create with ``key`` from ``address`` is bound to: ``game_id`` if the
        key is new here."""
        where = self.keys.idempotency("create", _digest(address, key))
        return await self._bound(where, body, game_id)

    async def sit(self, game_id: str, key: str, body: Any, command_id: str) -> str:
        """The command id a sit in ``game_id`` with ``key`` is bound to: ``command_id`` if the
        key is new in this game."""
        return await self._bound(
            self.keys.seat_idempotency(game_id, _digest(key)), body, command_id
        )

    async def _bound(self, where: str, body: Any, value: str) -> str:
        body_print = fingerprint(body)
        binding = jsontext.dumps({"body": body_print, "value": value})
        old = await self._bind(keys=[where], args=[binding, self.seconds])
        if not old:
            return value
        doc = jsontext.loads(old)
        if doc.get("body") != body_print:
            raise ApiError(
                422,
                "idempotency_key_reused",
                f"this {HEADER} was used for a request with a different body; a retry must "
                "send the same body, a new request a new key",
            )
        return str(doc["value"])
