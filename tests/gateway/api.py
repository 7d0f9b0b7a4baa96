"""A small client of the public API, written from the contract (issue 6), used by every gateway
test: over an aiohttp ``TestClient`` (in process) or a ``ClientSession`` (separate processes).

``play_to_end`` plays a whole game as clients would: it looks only at the API's views, lets bots
choose from ``seat_view_from_json`` and posts their commands.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from services.gateway.errors import ERROR_CODES
from shared.core.commands import command_json
from shared.core.rulesets import rule_set
from shared.core.views import seat_view_from_json
from shared.play.bots import BOTS

Json = dict[str, Any]


def new_id() -> str:
    return uuid.uuid4().hex


def check_error(body: Any, code: str | None = None) -> str:
    """Assert the published error shape (and the code, if given); returns the code."""
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), body
    err = body["error"]
    assert isinstance(err.get("code"), str) and err["code"] in ERROR_CODES, body
    assert isinstance(err.get("message"), str) and err["message"], body
    if code is not None:
        assert err["code"] == code, body
    return str(err["code"])


@dataclass
class Reply:
    """An answer: two are equal when their status and body are (a retry's answer is the first
    one's, but its ``Date`` header moves on when the two straddle a second)."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict, compare=False)


class Api:
    """The API over ``http`` (a TestClient with ``base=""`` or a ClientSession with a URL)."""

    def __init__(self, http: Any, base: str = "") -> None:
        self.http = http
        self.base = base

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        kwargs: dict[str, Any] = {"headers": sent}
        if data is not None:
            kwargs["data"] = data
        elif body is not None:
            kwargs["json"] = body
        async with self.http.request(method, self.base + path, **kwargs) as response:
            text = await response.text()
            try:
                parsed: Any = await response.json(content_type=None) if text else None
            except ValueError:
                parsed = text
            return Reply(response.status, parsed, dict(response.headers))

    # --- the contract's calls, asserting the documented success answers --------------------

    async def create(
        self, rules: str, seats: int, options: Json | None = None, **extra: Any
    ) -> tuple[str, str]:
        body = {"rules": rules, "seats": seats, "options": options or {}, **extra}
        reply = await self.call("POST", "/api/games", body)
        assert reply.status == 201, reply
        return reply.body["game_id"], reply.body["host_token"]

    async def sit(self, game_id: str, name: str, **extra: Any) -> tuple[int, str]:
        reply = await self.call("POST", f"/api/games/{game_id}/seats", {"name": name, **extra})
        assert reply.status == 201, reply
        return reply.body["seat"], reply.body["token"]

    async def start(self, game_id: str, host: str) -> Json:
        reply = await self.call("POST", f"/api/games/{game_id}/start", {}, token=host)
        assert reply.status == 200, reply
        return dict(reply.body)

    async def new_game(
        self, rules: str, seats: int, options: Json | None = None, **extra: Any
    ) -> tuple[str, str, list[str]]:
        """Create, fill every seat, start: (game id, host token, seat tokens by seat)."""
        game_id, host = await self.create(rules, seats, options, **extra)
        tokens: list[str] = [""] * seats
        for n in range(seats):
            seat, token = await self.sit(game_id, f"p{n}")
            tokens[seat] = token
        assert all(tokens)
        await self.start(game_id, host)
        return game_id, host, tokens

    async def view(self, game_id: str, token: str | None = None) -> Json:
        reply = await self.call("GET", f"/api/games/{game_id}", token=token)
        assert reply.status == 200, reply
        return dict(reply.body)

    async def events(self, game_id: str, token: str | None = None, after: int = 0) -> list[Json]:
        """Every event after ``after`` (following the pages) as ``token``'s holder sees them."""
        out: list[Json] = []
        while True:
            reply = await self.call(
                "GET", f"/api/games/{game_id}/events?after={after}", token=token
            )
            assert reply.status == 200, reply
            page = reply.body["events"]
            out.extend(page)
            if not page or page[-1]["version"] >= reply.body["version"]:
                return out
            after = page[-1]["version"]

    async def command(self, game_id: str, token: str | None, body: Any) -> Reply:
        return await self.call("POST", f"/api/games/{game_id}/commands", body, token=token)


@dataclass
class Played:
    """What playing one game saw."""

    final: Json  # the spectator's view at the end
    commands: int = 0
    rejected: int = 0
    rounds_played: set[int] = field(default_factory=set)
    waits: int = 0  # polls that found no turn (between rounds)
    slowed: int = 0  # 429 answers (the bots play faster than a token may send commands)
    first_views: dict[int, Json] = field(default_factory=dict)  # round: its first seat view


async def play_to_end(
    api: Api,
    game_id: str,
    tokens: list[str],
    bots: list[str],
    seed: int = 0,
    max_commands: int = 4000,
    expected_version: bool = True,
    between_rounds_timeout: float = 10.0,
    after_command: Any = None,
) -> Played:
    """Play the game to its end through the API only; ``after_command(seat, body, reply)`` is
    awaited after every command (the secrecy checks hook in there)."""
    rng = random.Random(seed)
    players = [BOTS[name]() for name in bots]
    played = Played(final={})
    idle_since: float | None = None
    while played.commands < max_commands:
        spectator = await api.view(game_id)
        if spectator["status"] == "finished":
            played.final = spectator
            return played
        turn = spectator["turn"]
        if turn is None:
            # Between rounds: nobody asks; the service records the scores and deals on its own.
            idle_since = idle_since or time.monotonic()
            waited = time.monotonic() - idle_since
            assert waited < between_rounds_timeout, f"no next round after {waited:.1f}s"
            played.waits += 1
            await asyncio.sleep(0.005)
            continue
        idle_since = None
        seat = turn["seat"]
        view = await api.view(game_id, tokens[seat])
        if view["turn"] is None or view["turn"]["seat"] != seat:
            continue  # it moved on between the two reads
        assert view["you"] == seat and view["status"] == "playing"
        played.rounds_played.add(view["round"])
        played.first_views.setdefault(view["round"], view)
        rules = rule_set(view["rules"]["name"], view["rules"]["options"])
        command = players[seat].choose(seat_view_from_json(view, rules), rng)
        body = command_json(command, with_seat=False) | {"id": new_id()}
        if expected_version:
            body["expected_version"] = view["version"]
        reply = await api.command(game_id, tokens[seat], body)
        while reply.status == 429:
            # Faster than the per-token command rate: slow down and retry the same id (safe).
            check_error(reply.body, "rate_limited")
            played.slowed += 1
            await asyncio.sleep(0.05)
            reply = await api.command(game_id, tokens[seat], body)
        played.commands += 1
        if reply.status == 200:
            assert reply.body["accepted"] is True and reply.body["version"] > view["version"]
        else:
            # Only a recorded refusal of the rules is acceptable from a bot.
            assert reply.status == 422, (body, reply)
            check_error(reply.body, "illegal_layout")
            played.rejected += 1
        if after_command is not None:
            await after_command(seat, body, reply)
    raise AssertionError(f"game {game_id} did not finish in {max_commands} commands")
