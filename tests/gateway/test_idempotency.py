"""Idempotent creation and sitting (``Idempotency-Key``): a retry with the same key gets the same
game or seat and a token that works; without a header, a create or sit that times out names the
key the gateway picked, so that the seat it may still get is never left without a token.
(tests/faults/test_idempotency.py does the same across real processes and a stopped referee.)"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from services.referee.referee import Referee
from shared.infra.keys import Keys
from tests.gateway.api import Json, Reply, check_error, new_id
from tests.gateway.conftest import MakeStack, Stack


def key_header(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


async def sit(stack: Stack, game_id: str, key: str | None, name: str = "ann") -> Reply:
    headers = key_header(key) if key is not None else {}
    return await stack.api.call(
        "POST", f"/api/games/{game_id}/seats", {"name": name}, headers=headers
    )


async def seated(stack: Stack, game_id: str) -> int:
    return len([n for n in (await stack.truth(game_id)).names if n])


async def plays(stack: Stack, game_id: str, tokens: dict[int, str]) -> None:
    """The game runs: the seat whose turn it is draws with its token, accepted."""
    seat = (await stack.api.view(game_id))["turn"]["seat"]
    reply = await stack.api.command(game_id, tokens[seat], {"id": new_id(), "type": "draw"})
    assert reply.status == 200 and reply.body["accepted"] is True, reply


async def test_a_sit_retried_with_its_key_gets_the_same_seat_and_a_token_that_plays(
    stack: Stack,
) -> None:
    api = stack.api
    game_id, host = await api.create("robbers", 2)
    key = str(uuid.uuid4())
    first = await sit(stack, game_id, key)
    again = await sit(stack, game_id, f'"{key}"')  # the draft's quoted form: the same key
    assert first.status == again.status == 201, (first, again)
    assert again.body["seat"] == first.body["seat"]
    assert again.body["token"] != first.body["token"]  # a fresh token for the same seat
    assert await seated(stack, game_id) == 1
    seat = first.body["seat"]
    for token in (first.body["token"], again.body["token"]):
        assert (await api.view(game_id, token))["you"] == seat
    other, other_token = await api.sit(game_id, "bob")
    assert other != seat
    await api.start(game_id, host)
    await plays(stack, game_id, {seat: again.body["token"], other: other_token})


async def test_a_create_retried_with_its_key_gets_the_same_game_and_a_host_token_that_works(
    stack: Stack,
) -> None:
    api = stack.api
    body = {"rules": "robbers", "seats": 2, "options": {"match_rounds": 1}}
    key = str(uuid.uuid4())
    first = await api.call("POST", "/api/games", body, headers=key_header(key))
    again = await api.call("POST", "/api/games", body, headers=key_header(key))
    assert first.status == again.status == 201, (first, again)
    game_id = first.body["game_id"]
    assert again.body["game_id"] == game_id and again.body["host_token"] != first.body["host_token"]
    waiting = await api.call("GET", "/api/games?status=waiting")
    assert [g["game_id"] for g in waiting.body["games"]] == [game_id]
    tokens = {}
    for name in ("ann", "bob"):
        seat, token = await api.sit(game_id, name)
        tokens[seat] = token
    await api.start(game_id, again.body["host_token"])
    await plays(stack, game_id, tokens)
    # Another key is another game.
    other = await api.call("POST", "/api/games", body, headers=key_header(str(uuid.uuid4())))
    assert other.status == 201 and other.body["game_id"] != game_id


async def test_a_create_key_counts_only_from_the_address_that_sent_it(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(trusted_proxies="127.0.0.1")
    api = stack.api
    body = {"rules": "robbers", "seats": 2}
    games = []
    for client in ("192.0.2.1", "192.0.2.1", "192.0.2.2"):
        headers = key_header("same-key") | {"X-Forwarded-For": client}
        reply = await api.call("POST", "/api/games", body, headers=headers)
        assert reply.status == 201, reply
        games.append(reply.body["game_id"])
    assert games[0] == games[1] != games[2], "someone else's key makes a game of one's own"


async def test_a_key_reused_with_another_body_is_refused_and_changes_nothing(
    stack: Stack,
) -> None:
    api = stack.api
    game_id, _ = await api.create("robbers", 3)
    assert (await sit(stack, game_id, "k1", "ann")).status == 201
    reply = await sit(stack, game_id, "k1", "bob")
    assert reply.status == 422, reply
    check_error(reply.body, "idempotency_key_reused")
    assert await seated(stack, game_id) == 1
    body = {"rules": "robbers", "seats": 2}
    assert (await api.call("POST", "/api/games", body, headers=key_header("k2"))).status == 201
    reply = await api.call("POST", "/api/games", body | {"seats": 3}, headers=key_header("k2"))
    assert reply.status == 422, reply
    check_error(reply.body, "idempotency_key_reused")
    # The same key in another game is another sit.
    other, _ = await api.create("robbers", 2)
    assert (await sit(stack, other, "k1", "bob")).status == 201


@pytest.mark.parametrize("key", ["", '""', "x" * 65, "caf\u00e9", "tab\there"])
async def test_a_key_that_is_not_1_to_64_printable_ascii_characters_is_a_422(
    stack: Stack, key: str
) -> None:
    game_id, _ = await stack.api.create("robbers", 2)
    headers = {"Idempotency-Key": key}
    for path, body in [
        (f"/api/games/{game_id}/seats", {"name": "ann"}),
        ("/api/games", {"rules": "robbers", "seats": 2}),
    ]:
        reply = await stack.api.call("POST", path, body, headers=headers)
        assert reply.status == 422, (key, reply)
        check_error(reply.body, "bad_request")
        assert "Idempotency-Key" in reply.body["error"]["message"]
    assert await seated(stack, game_id) == 0


async def test_a_key_is_kept_for_idempotency_seconds_and_never_in_clear(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(idempotency_seconds=600)
    game_id, _ = await stack.api.create("robbers", 2)
    key = "my-secret-key-" + uuid.uuid4().hex
    assert (await sit(stack, game_id, key)).status == 201
    keys = Keys(stack.settings.prefix)
    found = [k async for k in stack.redis.scan_iter(match=keys.seat_idempotency(game_id, "*"))]
    assert len(found) == 1, found
    assert 0 < await stack.redis.ttl(found[0]) <= 600
    everything = [k async for k in stack.redis.scan_iter(match="*")]
    assert not any(key.encode() in k for k in everything)
    for k in everything:
        if await stack.redis.type(k) == b"string":
            assert key.encode() not in (await stack.redis.get(k) or b"")


async def test_without_a_header_a_timed_out_sit_names_the_key_to_retry_with(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(command_timeout=0.5)
    api = stack.api
    game_id, host = await api.create("robbers", 2)
    stack.referee.stop()
    await asyncio.gather(*stack.tasks[:1])

    reply = await sit(stack, game_id, None)
    assert reply.status == 504, reply
    check_error(reply.body, "timeout")
    key = reply.body["idempotency_key"]
    assert isinstance(key, str) and 0 < len(key) <= 64
    assert "Idempotency-Key" in reply.body["error"]["message"]

    referee = Referee(stack.redis, stack.settings)
    stack.referee = referee
    stack.tasks[0] = asyncio.create_task(referee.run())
    retried = await sit(stack, game_id, key)
    assert retried.status == 201, retried
    assert await seated(stack, game_id) == 1, "the first sit and its retry took one seat"
    seat = retried.body["seat"]
    other, other_token = await api.sit(game_id, "bob")
    await api.start(game_id, host)
    await plays(stack, game_id, {seat: retried.body["token"], other: other_token})


async def test_without_a_header_a_timed_out_create_names_the_key_to_retry_with(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(command_timeout=0.5)
    api = stack.api
    stack.referee.stop()
    await asyncio.gather(*stack.tasks[:1])
    body: Json = {"rules": "robbers", "seats": 2}
    reply = await api.call("POST", "/api/games", body)
    assert reply.status == 504, reply
    key = reply.body["idempotency_key"]

    referee = Referee(stack.redis, stack.settings)
    stack.referee = referee
    stack.tasks[0] = asyncio.create_task(referee.run())
    retried = await api.call("POST", "/api/games", body, headers=key_header(key))
    assert retried.status == 201, retried
    game_id = retried.body["game_id"]
    waiting = await api.call("GET", "/api/games?status=waiting")
    assert [g["game_id"] for g in waiting.body["games"]] == [game_id]
    tokens = {}
    for name in ("ann", "bob"):
        seat, token = await api.sit(game_id, name)
        tokens[seat] = token
    await api.start(game_id, retried.body["host_token"])
    await plays(stack, game_id, tokens)
