"""Players' accounts: a display name, a password and the sessions that prove who is asking.

Kept in Redis under the deployment's prefix, beside the games (one hash tag, ``{accounts}``, so a
registration's two keys and a deletion's stay on one Redis Cluster slot): an account is read on
every request a logged-in player makes, and the gateway already holds a Redis client for that,
whereas the archive is optional (``rummy serve`` runs without one) and holds finished games only.

Passwords are hashed with argon2id (``argon2-cffi``), in a worker thread so a login does not hold
the event loop. Sessions, like seat tokens, are random and kept only as their SHA-256: a Redis
dump gives nobody a session. A session's token starts with ``rs_`` so a route that takes a seat
token or a session in the same header tells them apart without a lookup.

A deleted account keeps its id in the games it played (the logs are immutable) but the id no
longer resolves to its name: it shows as a pseudonym worked out from the id.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from services.gateway.auth import token_hash
from shared.infra.client import RedisClient

SESSION_PREFIX = "rs_"
MIN_PASSWORD = 8
MAX_PASSWORD = 256  # characters: argon2 takes any length; a megabyte would only cost time
MIN_NAME = 2
MAX_NAME = 40  # as a seat's name (shared.core.commands.MAX_NAME)
MAX_SESSIONS = 20  # a new login past this ends the oldest session
SESSION_SECONDS = 30 * 24 * 3600
GAMES_KEPT = 500  # the games an account lists (the newest)

# KEYS: names hash, the account's hash. ARGV: folded name, id, name, password hash, created.
REGISTER_SCRIPT = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[2], 'name', ARGV[3], 'password', ARGV[4], 'created', ARGV[5])
return 1
"""

# KEYS: names hash, the account's hash, its sessions hash, the session index. ARGV: folded name,
# pseudonym.
DELETE_SCRIPT = """
redis.call('HDEL', KEYS[1], ARGV[1])
local sessions = redis.call('HKEYS', KEYS[3])
for _, hashed in ipairs(sessions) do redis.call('HDEL', KEYS[4], hashed) end
redis.call('DEL', KEYS[3])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'name', ARGV[2], 'deleted', '1')
return #sessions
"""


class AccountError(ValueError):
    """A registration or login refused: ``field`` is what was wrong (for the JSON error)."""

    def __init__(self, code: str, field: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


@dataclass(frozen=True, slots=True)
class Player:
    """An account as others may see it: its id and the name shown."""

    id: str
    name: str
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class Session:
    """A session as its owner sees it (never its token): ``id`` names it for revoking."""

    id: str
    created: float
    expires: float
    label: str


def fold(name: str) -> str:
    """The form names are unique in: case-insensitive, spaces trimmed and squeezed."""
    return " ".join(name.split()).casefold()


def pseudonym(player_id: str) -> str:
    """What a deleted account shows as: stable, and says nothing of who it was."""
    return "player-" + hashlib.sha256(player_id.encode()).hexdigest()[:8]


def check_name(name: Any) -> str:
    """A display name as stored (spaces squeezed), or ``AccountError`` naming the field."""
    if not isinstance(name, str):
        raise AccountError("bad_request", "name", "name must be a string")
    shown = " ".join(name.split())
    if not MIN_NAME <= len(shown) <= MAX_NAME or not shown.isprintable():
        raise AccountError(
            "bad_request",
            "name",
            f"name must be {MIN_NAME} to {MAX_NAME} printable characters",
        )
    if shown.casefold().startswith("player-") or shown.casefold().endswith(" bot"):
        raise AccountError(
            "bad_request", "name", "names like 'player-…' and '… bot' are kept for others"
        )
    return shown


def check_password(password: Any) -> str:
    """A password that may be set, or ``AccountError`` naming the field."""
    if not isinstance(password, str) or not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise AccountError(
            "bad_request",
            "password",
            f"password must be a string of {MIN_PASSWORD} to {MAX_PASSWORD} characters",
        )
    return password


def new_session_token() -> str:
    """A fresh session token."""
    return SESSION_PREFIX + secrets.token_urlsafe(32)


class Accounts:
    """The accounts and sessions of one deployment."""

    def __init__(
        self,
        client: RedisClient,
        prefix: str,
        *,
        hasher: PasswordHasher | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.base = f"{prefix}{{accounts}}:"
        self.hasher = hasher or PasswordHasher()
        self.clock = clock
        self._register = client.register_script(REGISTER_SCRIPT)
        self._delete = client.register_script(DELETE_SCRIPT)
        # Checked against when a name has no account, so a miss takes as long as a wrong
        # password and does not tell a guesser which names exist (made on the first miss: an
        # argon2 hash is too dear to make for every app that never needs one).
        self._decoy: str | None = None

    def _names(self) -> str:
        return self.base + "names"

    def _account(self, player_id: str) -> str:
        return f"{self.base}player:{player_id}"

    def _sessions(self, player_id: str) -> str:
        return f"{self.base}sessions:{player_id}"

    def _index(self) -> str:
        return self.base + "session"

    def _games(self, player_id: str) -> str:
        return f"{self.base}games:{player_id}"

    async def register(self, name: Any, password: Any) -> Player:
        """A new account; ``AccountError`` for a bad or taken name or a bad password."""
        shown = check_name(name)
        secret = check_password(password)
        hashed = await asyncio.to_thread(self.hasher.hash, secret)
        player_id = uuid.uuid4().hex
        made = await self._register(
            keys=[self._names(), self._account(player_id)],
            args=[fold(shown), player_id, shown, hashed, repr(self.clock())],
        )
        if not made:
            raise AccountError("name_taken", "name", f"the name {shown!r} is taken")
        return Player(player_id, shown)

    async def authenticate(self, name: Any, password: Any) -> Player:
        """The account ``name`` names if ``password`` is its own; else one refusal that does
        not say which of the two was wrong."""
        if not isinstance(name, str) or not isinstance(password, str):
            raise AccountError("bad_request", "name", "name and password must be strings")
        if len(password) > MAX_PASSWORD or len(name) > 4 * MAX_NAME:
            raise AccountError("bad_credentials", "password", "wrong name or password")
        found = await self.client.hget(self._names(), fold(name))
        player_id = _text(found) if found is not None else None
        stored = None
        if player_id is not None:
            raw = await self.client.hget(self._account(player_id), "password")
            stored = _text(raw) if raw is not None else None
        if stored is None and self._decoy is None:
            self._decoy = await asyncio.to_thread(self.hasher.hash, secrets.token_hex(16))
        if not await asyncio.to_thread(self._verify, stored or self._decoy or "", password):
            raise AccountError("bad_credentials", "password", "wrong name or password")
        if player_id is None or stored is None:
            raise AccountError("bad_credentials", "password", "wrong name or password")
        if self.hasher.check_needs_rehash(stored):
            rehashed = await asyncio.to_thread(self.hasher.hash, password)
            await self.client.hset(self._account(player_id), "password", rehashed)
        player = await self.player(player_id)
        assert player is not None
        return player

    def _verify(self, stored: str, password: str) -> bool:
        try:
            return bool(self.hasher.verify(stored, password))
        except (VerificationError, InvalidHashError):
            return False

    async def player(self, player_id: str) -> Player | None:
        """The account with that id as others see it (a pseudonym once deleted), or None."""
        if not player_id or len(player_id) > 64:
            return None
        held = await self.client.hmget(self._account(player_id), ["name", "deleted"])
        if held[0] is None:
            return None
        deleted = held[1] is not None
        return Player(player_id, pseudonym(player_id) if deleted else _text(held[0]), deleted)

    async def names(self, player_ids: list[str]) -> dict[str, str]:
        """The name each id shows as (a pseudonym for a deleted or unknown one)."""
        out: dict[str, str] = {}
        for player_id in dict.fromkeys(player_ids):
            player = await self.player(player_id)
            out[player_id] = player.name if player is not None else pseudonym(player_id)
        return out

    async def open_session(self, player: Player, label: str = "") -> str:
        """A new session's token for ``player`` (the oldest ended past ``MAX_SESSIONS``)."""
        token = new_session_token()
        hashed = token_hash(token)
        now = self.clock()
        doc = json.dumps(
            {"created": now, "expires": now + SESSION_SECONDS, "label": label[:80]},
            separators=(",", ":"),
        )
        await self.client.hset(self._sessions(player.id), hashed, doc)
        await self.client.hset(self._index(), hashed, player.id)
        held = await self.sessions(player.id)
        for old in sorted(held, key=lambda s: s.created)[:-MAX_SESSIONS]:
            await self.revoke(player.id, old.id)
        return token

    async def session_player(self, token: str) -> Player | None:
        """The live account a session token belongs to, or None (unknown, ended, expired)."""
        if not token.startswith(SESSION_PREFIX) or len(token) > 128:
            return None
        hashed = token_hash(token)
        found = await self.client.hget(self._index(), hashed)
        if found is None:
            return None
        player_id = _text(found)
        raw = await self.client.hget(self._sessions(player_id), hashed)
        if raw is None or json.loads(raw)["expires"] <= self.clock():
            return None
        player = await self.player(player_id)
        return None if player is None or player.deleted else player

    async def sessions(self, player_id: str) -> list[Session]:
        """The owner's live sessions, oldest first."""
        held = await self.client.hgetall(self._sessions(player_id))
        now = self.clock()
        out = []
        for hashed, raw in held.items():
            doc = json.loads(raw)
            if doc["expires"] > now:
                out.append(
                    Session(_text(hashed)[:16], doc["created"], doc["expires"], doc["label"])
                )
        return sorted(out, key=lambda s: (s.created, s.id))

    async def revoke(self, player_id: str, session_id: str) -> bool:
        """End the owner's session named ``session_id`` (a prefix of its hash); True if it
        was live."""
        held = await self.client.hgetall(self._sessions(player_id))
        gone = [_text(h) for h in held if _text(h)[:16] == session_id]
        if not gone:
            return False
        await self.client.hdel(self._sessions(player_id), *gone)
        await self.client.hdel(self._index(), *gone)
        return True

    async def close_session(self, token: str) -> bool:
        """Log out: end the session of ``token``."""
        player = await self.session_player(token)
        if player is None:
            return False
        return await self.revoke(player.id, token_hash(token)[:16])

    async def delete(self, player: Player, password: Any) -> int:
        """Delete the account (its password checked again): its name is free, its sessions
        end, its id shows as a pseudonym. Returns the sessions ended."""
        if not isinstance(password, str):
            raise AccountError("bad_request", "password", "password must be a string")
        await self.authenticate(player.name, password)
        keys = [self._names(), self._account(player.id), self._sessions(player.id), self._index()]
        ended = int(await self._delete(keys=keys, args=[fold(player.name), pseudonym(player.id)]))
        await self.client.delete(self._games(player.id))
        return ended

    async def note_seat(self, player_id: str, game_id: str, seat: int) -> None:
        """Remember that ``player_id`` holds ``seat`` of ``game_id`` (to resume it anywhere)."""
        key = self._games(player_id)
        await self.client.zadd(key, {f"{game_id}:{seat}": self.clock()})
        old = await self.client.zrevrange(key, GAMES_KEPT, -1)
        if old:
            await self.client.zrem(key, *old)

    async def seats(self, player_id: str) -> list[tuple[str, int, float]]:
        """The seats the account took, newest first: (game id, seat, when)."""
        held = await self.client.zrevrange(self._games(player_id), 0, -1, withscores=True)
        out = []
        for member, at in held:
            game_id, _, seat = _text(member).rpartition(":")
            out.append((game_id, int(seat), float(at)))
        return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
