"""The gateway's replay and export routes on a whole stack (gateway, referee, scoring on one
fakeredis): a game played by bots over HTTP, its replays looked at from every seat while live,
its record refused, then exported and verified once it has ended."""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import fakeredis
import pytest
from aiohttp.test_utils import TestClient, TestServer

from services.gateway.app import make_app
from services.referee.referee import Referee
from services.scoring.scoring import Scoring
from shared.audit.record import loads
from shared.audit.verify import Receipt, audit_record
from shared.core.commands import command_json
from shared.core.rulesets import rule_set
from shared.core.views import seat_view_from_json
from shared.infra.settings import Settings
from shared.play.bots import BOTS

OPERATOR = "operator-secret-token"


@dataclass
class Stack:
    http: TestClient[Any, Any]
    tasks: list[asyncio.Task[None]]
    referee: Referee
    scoring: Scoring

    async def call(self, method: str, path: str, body: Any = None, token: str = "") -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with self.http.request(method, path, json=body, headers=headers) as reply:
            text = await reply.text()
            return reply.status, reply.headers.get("Content-Type", ""), text


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    redis = fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer())
    # Every look of the test comes from one address, as many as the game's length asks (its
    # deal is the game id's): no limits per address.
    settings = Settings(
        prefix=f"au{uuid.uuid4().hex[:8]}:",
        partitions=2,
        operator_token=OPERATOR,
        limit_address_per_second=0,
        limit_create_per_minute=0,
        limit_seat_per_minute=0,
        limit_replay_per_minute=0,
        limit_read_per_second=0,
    )
    referee, scoring = Referee(redis, settings), Scoring(redis, settings)
    tasks = [asyncio.create_task(referee.run()), asyncio.create_task(scoring.run())]
    http: TestClient[Any, Any] = TestClient(TestServer(make_app(redis, settings)))
    await http.start_server()
    yield Stack(http, tasks, referee, scoring)
    await http.close()
    referee.stop()
    scoring.stop()
    await asyncio.gather(*tasks)
    await redis.aclose()


async def _json(stack: Stack, method: str, path: str, body: Any = None, token: str = "") -> Any:
    status, _, text = await stack.call(method, path, body, token)
    return status, json.loads(text) if text else None


def _check_secrecy(replay: dict[str, Any], seat: int | None) -> None:
    """What a live replay may show ``seat`` (None: a spectator)."""
    assert replay["status"] == "playing"
    for snap in (replay["before"], replay["after"]):
        assert "stock_cards" not in snap and "cards" not in snap["pile"]
        for other, hand in snap["hands"].items():
            assert (hand is not None) == (seat is not None and int(other) == seat)
    for command in replay["commands"]:
        if command["seat"] == seat:
            continue
        assert "layout" not in command
        for event in command["events"]:
            if event["type"] == "CommandRejected":
                assert event["layout"] is None and event["reason"] is None
            if event["type"] == "CardDrawn" and event["source"] == "stock":
                assert isinstance(event["cards"], int)


async def test_replay_secrecy_and_export_permissions(stack: Stack) -> None:
    status, created = await _json(
        stack,
        "POST",
        "/api/games",
        {"rules": "robbers", "seats": 2, "options": {"match_rounds": 1}},
    )
    assert status == 201
    game_id, host = created["game_id"], created["host_token"]
    tokens = []
    for name in ("ann", "bo"):
        status, sat = await _json(stack, "POST", f"/api/games/{game_id}/seats", {"name": name})
        tokens.append(sat["token"])
    assert (await _json(stack, "POST", f"/api/games/{game_id}/start", {}, host))[0] == 200

    rng = random.Random(7)
    bots = [BOTS["clumsy"](), BOTS["greedy"]()]
    receipts: list[Receipt] = []
    looked = rejected_seen = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _, view = await _json(stack, "GET", f"/api/games/{game_id}")
        if view["status"] == "finished":
            break
        if view["turn"] is None:
            await asyncio.sleep(0.01)
            continue
        seat = view["turn"]["seat"]
        _, mine = await _json(stack, "GET", f"/api/games/{game_id}", token=tokens[seat])
        if mine["turn"] is None or mine["turn"]["seat"] != seat:
            continue
        rules = rule_set(mine["rules"]["name"], mine["rules"]["options"])
        command = bots[seat].choose(seat_view_from_json(mine, rules), rng)
        body = command_json(command, with_seat=False) | {"id": uuid.uuid4().hex}
        status, answer = await _json(
            stack, "POST", f"/api/games/{game_id}/commands", body, tokens[seat]
        )
        assert status in (200, 422), answer
        receipts.append(Receipt(answer["version"], answer["head"]))
        if status == 422:
            rejected_seen += 1
        if len(receipts) % 40 == 0 or (status == 422 and rejected_seen <= 2):
            # Look at the turn from every point of view while the game is live (not when this
            # command ended it: then every viewer sees all, which a CI run once met).
            _, now = await _json(stack, "GET", f"/api/games/{game_id}")
            if now["status"] == "finished":
                continue
            number = mine["turn"]["number"]
            ended_meanwhile = False
            for who, token in ((0, tokens[0]), (1, tokens[1]), (None, host), (None, "")):
                path = f"/api/games/{game_id}/replay?turn={number}"
                status, replay = await _json(stack, "GET", path, token=token)
                assert status == 200, replay
                if replay["status"] == "finished":
                    # The referee's own closing command (after scoring) can land between two
                    # looks; a finished game shows all, which the end of this test checks.
                    ended_meanwhile = True
                    break
                assert replay["viewer"] == (who if who is not None else "spectator")
                _check_secrecy(replay, who)
            if ended_meanwhile:
                continue
            status, full = await _json(
                stack, "GET", f"/api/games/{game_id}/replay?turn={number}", token=OPERATOR
            )
            assert status == 200 and full["viewer"] == "all" and "stock_cards" in full["before"]
            looked += 1
            # The record is not for seats or spectators while live; the operator may have it.
            for token in (tokens[0], host, "", "not-the-operator"):
                status, error = await _json(
                    stack, "GET", f"/api/games/{game_id}/export", token=token
                )
                assert status == 409 and error["error"]["code"] == "not_finished", error
            status, kind, text = await stack.call(
                "GET", f"/api/games/{game_id}/export", token=OPERATOR
            )
            assert status == 200 and kind.startswith("application/x-ndjson")
            live = audit_record(loads(text))
            assert live.ok and live.verdict("seed").status == "pending"
    else:
        pytest.fail("the game did not finish in time")
    assert looked and rejected_seen, "no rejected attempt was looked at"

    # Ended: the record to anyone, and it verifies offline with every receipt kept.
    status, kind, text = await stack.call("GET", f"/api/games/{game_id}/export")
    assert status == 200 and kind.startswith("application/x-ndjson")
    record = loads(text)
    audit = audit_record(record, receipts)
    assert audit.ok, audit.to_json()
    assert audit.verdict("seed").status == "ok"
    assert audit.verdict("receipts").status == "ok"
    assert record.header.players == ("ann", "bo")
    # And the replay shows everything to everyone.
    status, replay = await _json(
        stack, "GET", f"/api/games/{game_id}/replay?turn=2", token=tokens[1]
    )
    assert status == 200 and replay["viewer"] == "all" and replay["status"] == "finished"
    assert all(h is not None for h in replay["before"]["hands"].values())


async def test_replay_errors_have_the_published_shape(stack: Stack) -> None:
    _, created = await _json(stack, "POST", "/api/games", {"rules": "robbers", "seats": 2})
    game_id = created["game_id"]
    await _json(stack, "POST", f"/api/games/{game_id}/seats", {"name": "ann"})
    cases = [
        ("", 422, "bad_request"),
        ("?turn=1&version=3", 422, "bad_request"),
        ("?turn=x", 422, "bad_request"),
        ("?turn=0", 422, "bad_request"),
        ("?turn=9999", 404, "not_found"),
        ("?version=9999", 404, "not_found"),
        ("?version=2", 200, None),
    ]
    for query, status, code in cases:
        got, body = await _json(stack, "GET", f"/api/games/{game_id}/replay{query}")
        assert got == status, (query, body)
        if code is not None:
            assert body["error"]["code"] == code and body["error"]["message"], body
    got, body = await _json(stack, "GET", f"/api/games/{game_id}/replay?version=2")
    assert body["commands"][0]["kind"] == "sit" and body["viewer"] == "spectator"
    status, body = await _json(stack, "GET", f"/api/games/{game_id}/export")
    assert status == 409 and body["error"]["code"] == "not_finished"


async def test_an_unknown_game_is_not_found(stack: Stack) -> None:
    for path in ("/api/games/nope/replay?turn=1", "/api/games/nope/export"):
        status, body = await _json(stack, "GET", path, token=OPERATOR)
        assert status == 404 and body["error"]["code"] == "not_found"
