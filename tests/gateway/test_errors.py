"""Every documented error status and code, each changing nothing (but, for a recorded rejection
of the rules, the version); the lobby's pagination and filters; seeded games."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from services.gateway.errors import ERROR_CODES
from services.gateway.state import GATEWAY
from services.referee.referee import Referee
from shared.core.cards import cards_str, sorted_cards
from shared.core.commands import Context, Start
from shared.core.decide import decide
from shared.core.events import CommandRejected, RoundDealt
from shared.infra.gamelog import fold_stored
from shared.infra.store.redis import RedisEventStore
from tests.gateway.api import Json, check_error, new_id
from tests.gateway.conftest import LimitClock, MakeStack, Stack

SEED = "00112233445566778899aabbccddeeff"


@asynccontextmanager
async def nothing_changes(stack: Stack, game_id: str, tokens: list[str]) -> AsyncIterator[None]:
    """The block leaves the game exactly as it was: no event, the same views for everyone."""
    before = await stack.event_count(game_id)
    views = [await stack.api.view(game_id, t) for t in [None, *tokens]]
    yield
    assert await stack.event_count(game_id) == before
    assert [await stack.api.view(game_id, t) for t in [None, *tokens]] == views


def turn_of(view: Json) -> int:
    assert view["turn"] is not None
    return int(view["turn"]["seat"])


async def started(
    stack: Stack, seats: int = 2, rules: str = "robbers"
) -> tuple[str, str, list[str]]:
    return await stack.api.new_game(rules, seats, {"match_rounds": 1})


# --- commands ------------------------------------------------------------------------------


async def test_an_illegal_layout_is_a_recorded_422_that_changes_only_the_version(
    stack: Stack,
) -> None:
    api = stack.api
    game_id, _, tokens = await started(stack)
    seat = turn_of(await api.view(game_id))
    before = await api.view(game_id, tokens[seat])
    other = await api.view(game_id, tokens[1 - seat])
    layout = [*before["table"], [before["hand"][0]]]  # a one-card meld is never legal

    reply = await api.command(
        game_id, tokens[seat], {"id": new_id(), "type": "play", "layout": layout}
    )

    assert reply.status == 422
    check_error(reply.body, "illegal_layout")
    after = await api.view(game_id, tokens[seat])
    assert reply.body["version"] == before["version"] + 1 == after["version"]
    assert reply.body["head"] == after["head"] != before["head"]
    assert after["table"] == before["table"] and after["hand"] == before["hand"]
    assert after["seats"] == before["seats"] and after["stock"] == before["stock"]
    assert after["turn"]["seat"] == seat and after["turn"]["rejected"] == 1
    other_after = await api.view(game_id, tokens[1 - seat])
    assert other_after["hand"] == other["hand"]
    log = await stack.log(game_id)
    assert isinstance(log[-1], CommandRejected) and log[-1].code == "illegal_layout"
    assert len(log) == after["version"]


async def test_refusals_of_turn_and_version_are_409s_that_change_nothing(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await started(stack)
    view = await api.view(game_id)
    seat = turn_of(view)

    async with nothing_changes(stack, game_id, tokens):
        reply = await api.command(game_id, tokens[1 - seat], {"id": new_id(), "type": "draw"})
        assert reply.status == 409
        check_error(reply.body, "not_your_turn")
    async with nothing_changes(stack, game_id, tokens):
        body = {"id": new_id(), "type": "draw", "expected_version": view["version"] - 1}
        reply = await api.command(game_id, tokens[seat], body)
        assert reply.status == 409
        check_error(reply.body, "stale_version")
        assert str(view["version"]) in reply.body["error"]["message"]
    body = {"id": new_id(), "type": "draw", "expected_version": view["version"]}
    reply = await api.command(game_id, tokens[seat], body)
    assert reply.status == 200 and reply.body["accepted"] is True


async def test_a_retried_command_id_answers_the_same_and_applies_once(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await started(stack)
    view = await api.view(game_id)
    seat = turn_of(view)
    # A rejected attempt retried: the same 422, recorded once.
    mine = await api.view(game_id, tokens[seat])
    bad = {"id": "oops", "type": "play", "layout": [*mine["table"], [mine["hand"][0]]]}
    first_bad = await api.command(game_id, tokens[seat], bad)
    assert first_bad.status == 422
    count = await stack.event_count(game_id)
    assert await api.command(game_id, tokens[seat], bad) == first_bad
    assert await stack.event_count(game_id) == count
    # An accepted draw retried (with its expected_version, now stale): the same 200, once.
    body = {"id": "draw-1", "type": "draw", "expected_version": count}
    first = await api.command(game_id, tokens[seat], body)
    assert first.status == 200 and first.body["accepted"] is True
    count = await stack.event_count(game_id)
    assert first.body["version"] == count
    for _ in range(2):
        again = await api.command(game_id, tokens[seat], body)
        assert (again.status, again.body) == (first.status, first.body)
    assert await stack.event_count(game_id) == count
    draws = [e for e in await stack.log(game_id) if type(e).__name__ == "CardDrawn"]
    assert len(draws) == 1
    # The same id with another body is refused and changes nothing.
    async with nothing_changes(stack, game_id, tokens):
        reused = await api.command(game_id, tokens[seat], {"id": "draw-1", "type": "pass"})
        assert reused.status == 409
        check_error(reused.body, "command_id_reused")
    # Ids are per seat: the next seat may use the same id for its own command.
    reply = await api.command(game_id, tokens[1 - seat], {"id": "draw-1", "type": "draw"})
    assert reply.status == 200 and reply.body["accepted"] is True


async def test_a_command_the_referee_cannot_answer_in_time_is_a_504_safe_to_retry(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(command_timeout=0.5)
    api = stack.api
    game_id, _, tokens = await started(stack)
    seat = turn_of(await api.view(game_id))
    count = await stack.event_count(game_id)
    stack.referee.stop()
    await asyncio.gather(*stack.tasks[:1])

    body = {"id": "slow", "type": "draw"}
    reply = await api.command(game_id, tokens[seat], body)
    assert reply.status == 504
    check_error(reply.body, "timeout")
    assert await stack.event_count(game_id) == count

    referee = Referee(stack.redis, stack.settings)
    stack.referee = referee
    stack.tasks[0] = asyncio.create_task(referee.run())
    reply = await api.command(game_id, tokens[seat], body)
    assert reply.status == 200 and reply.body["accepted"] is True
    draws = [e for e in await stack.log(game_id) if type(e).__name__ == "CardDrawn"]
    assert len(draws) == 1, "the first send and its retry applied once"


async def test_tokens_decide_who_may_do_what(stack: Stack) -> None:
    api = stack.api
    game_id, host, tokens = await started(stack)
    _, other_host, other_tokens = await started(stack)
    seat = turn_of(await api.view(game_id))
    forged = [tokens[seat][:-2] + "xx", "x" * 43, other_tokens[0], other_host, "", " "]

    async with nothing_changes(stack, game_id, tokens):
        for token in forged:
            reply = await api.command(game_id, token, {"id": new_id(), "type": "draw"})
            assert reply.status == 401, (token, reply)
            check_error(reply.body, "unauthorized")
        for token in forged[:4]:
            for method, path in [
                ("GET", f"/api/games/{game_id}"),
                ("GET", f"/api/games/{game_id}/events"),
                ("POST", f"/api/games/{game_id}/start"),
            ]:
                reply = await api.call(method, path, token=token)
                assert reply.status == 401, (method, path, reply)
                check_error(reply.body, "unauthorized")
        reply = await api.call(
            "POST", f"/api/games/{game_id}/commands", {"id": "a", "type": "draw"}
        )
        assert reply.status == 401
        check_error(reply.body, "unauthorized")
        reply = await api.command(game_id, host, {"id": new_id(), "type": "draw"})
        assert reply.status == 403
        check_error(reply.body, "forbidden")
        # The host token reads the spectator's view.
        host_view = await api.view(game_id, host)
        assert host_view["you"] is None and "hand" not in host_view
        assert host_view == await api.view(game_id)


async def test_starting_and_seating_refusals(stack: Stack) -> None:
    api = stack.api
    game_id, host = await api.create("robbers", 2)
    _, first = await api.sit(game_id, "ann")
    async with nothing_changes(stack, game_id, [first]):
        reply = await api.call("POST", f"/api/games/{game_id}/start", {}, token=host)
        assert reply.status == 409
        check_error(reply.body, "seats_empty")
        reply = await api.call("POST", f"/api/games/{game_id}/start", {}, token=first)
        assert reply.status == 403
        check_error(reply.body, "forbidden")
        reply = await api.call("POST", f"/api/games/{game_id}/start", {})
        assert reply.status == 401
        check_error(reply.body, "unauthorized")
    assert (await api.view(game_id))["status"] == "waiting"
    seat, second = await api.sit(game_id, "bob")
    assert seat == 1 and second != first
    async with nothing_changes(stack, game_id, [first, second]):
        reply = await api.call("POST", f"/api/games/{game_id}/seats", {"name": "cat"})
        assert reply.status == 409
        check_error(reply.body, "game_full")
    view = await api.start(game_id, host)
    assert view["status"] == "playing" and view["you"] is None and "hand" not in view
    async with nothing_changes(stack, game_id, [first, second]):
        reply = await api.call("POST", f"/api/games/{game_id}/seats", {"name": "dan"})
        assert reply.status == 409
        check_error(reply.body)
        # Starting again is a retry of the one start: the same success, nothing new.
        reply = await api.call("POST", f"/api/games/{game_id}/start", {}, token=host)
        assert reply.status == 200 and reply.body == await api.view(game_id)


# --- requests ------------------------------------------------------------------------------


async def test_malformed_and_oversized_bodies(make_stack: MakeStack) -> None:
    stack = await make_stack(max_body_bytes=2048)
    api = stack.api
    game_id, _, tokens = await started(stack)
    seat = turn_of(await api.view(game_id))
    posts = [
        ("/api/games", None),
        (f"/api/games/{game_id}/seats", None),
        (f"/api/games/{game_id}/commands", tokens[seat]),
    ]
    async with nothing_changes(stack, game_id, tokens):
        for path, token in posts:
            for raw in [b"{not json", b'{"id": "a",', b"[1, 2]", b'"text"', b"\xff\xfe"]:
                reply = await api.call("POST", path, token=token, data=raw)
                assert reply.status == 400, (path, raw, reply)
                check_error(reply.body, "bad_json")
            big = b'{"name": "' + b"x" * 4000 + b'"}'
            reply = await api.call("POST", path, token=token, data=big)
            assert reply.status == 413, (path, reply)
            check_error(reply.body, "body_too_large")
    assert (await api.call("GET", "/api/games?status=waiting")).body["games"] == []


async def test_badly_shaped_commands_are_422s_that_change_nothing(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await started(stack)
    seat = turn_of(await api.view(game_id))
    async with nothing_changes(stack, game_id, tokens):
        for body in [
            {"type": "draw"},
            {"id": "", "type": "draw"},
            {"id": "x" * 65, "type": "draw"},
            {"id": 7, "type": "draw"},
            {"id": new_id(), "type": "cheat"},
            {"id": new_id()},
            {"id": new_id(), "type": "draw", "expected_version": "3"},
            {"id": new_id(), "type": "draw", "source": "sleeve"},
            {"id": new_id(), "type": "play", "layout": "4S 5S 6S"},
            {"id": new_id(), "type": "play", "layout": [["ZZ"]]},
            {"id": new_id(), "type": "discard", "card": "nope"},
        ]:
            reply = await api.command(game_id, tokens[seat], body)
            assert reply.status == 422, (body, reply)
            check_error(reply.body)


async def test_unknown_games_and_paths_are_404s(stack: Stack) -> None:
    api = stack.api
    _, _, tokens = await started(stack)
    for game_id in ["gdoesnotexist00", "g" + "0" * 16, "nope", "%7Bx%7D"]:
        for method, path, token in [
            ("GET", f"/api/games/{game_id}", None),
            ("GET", f"/api/games/{game_id}", tokens[0]),
            ("GET", f"/api/games/{game_id}/events", None),
            ("GET", f"/api/games/{game_id}/ws", None),
            ("POST", f"/api/games/{game_id}/seats", None),
            ("POST", f"/api/games/{game_id}/start", None),
            ("POST", f"/api/games/{game_id}/commands", tokens[0]),
        ]:
            body = {"name": "x"} if path.endswith("seats") else {"id": "a", "type": "draw"}
            reply = await api.call(method, path, body if method == "POST" else None, token=token)
            assert reply.status == 404, (method, path, reply)
            check_error(reply.body, "not_found")
    reply = await api.call("GET", "/api/nothing-here")
    assert reply.status == 404
    check_error(reply.body, "not_found")
    reply = await api.call("DELETE", "/api/games")
    assert reply.status == 405
    check_error(reply.body)


# --- creation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"rules": "robbers", "seats": 2, "options": {"jokers": 99}}, "jokers"),
        ({"rules": "robbers", "seats": 2, "options": {"ace": "high"}}, "ace"),
        ({"rules": "robbers", "seats": 2, "options": {"match_rounds": 0}}, "match_rounds"),
        ({"rules": "robbers", "seats": 2, "options": {"discard_pile": "yes"}}, "discard_pile"),
        ({"rules": "rummikub", "seats": 2, "options": {"turn_seconds": 1}}, "turn_seconds"),
        ({"rules": "robbers", "seats": 9}, "seats"),
        ({"rules": "robbers", "seats": "two"}, "seats"),
    ],
)
async def test_a_bad_option_is_a_422_naming_it(stack: Stack, body: Json, named: str) -> None:
    reply = await stack.api.call("POST", "/api/games", body)
    assert reply.status == 422
    check_error(reply.body)
    message = reply.body["error"]["message"]
    assert named in message and "allowed" in message, message
    assert (await stack.api.call("GET", "/api/games?status=waiting")).body["games"] == []


async def test_an_unknown_option_rule_set_or_field_is_a_422_naming_it(stack: Stack) -> None:
    # (These messages name the culprit and list the choices, without the word 'allowed'.)
    for body, named, listed in [
        ({"rules": "robbers", "seats": 2, "options": {"speed": 3}}, "speed", "jokers"),
        ({"rules": "poker", "seats": 2}, "poker", "rummikub"),
    ]:
        reply = await stack.api.call("POST", "/api/games", body)
        assert reply.status == 422
        check_error(reply.body, "bad_options")
        assert named in reply.body["error"]["message"]
        assert listed in reply.body["error"]["message"]
    reply = await stack.api.call("POST", "/api/games", {"rules": "robbers", "seats": 2, "x": 1})
    assert reply.status == 422
    check_error(reply.body, "bad_request")
    assert "x" in reply.body["error"]["message"]


async def test_a_fixed_seed_is_refused_by_a_normal_server(stack: Stack) -> None:
    reply = await stack.api.call(
        "POST", "/api/games", {"rules": "robbers", "seats": 2, "seed": SEED}
    )
    assert reply.status == 422
    check_error(reply.body)
    assert "seed" in reply.body["error"]["message"]
    assert (await stack.api.call("GET", "/api/games?status=waiting")).body["games"] == []


async def test_a_seeded_game_deals_what_its_seed_says(make_stack: MakeStack) -> None:
    """With --allow-seeded-games, the deal follows from the fixed seed and the public facts
    (game id, player seeds): anyone holding the seed predicts every hand before the end."""
    stack = await make_stack(allow_seeded_games=True)
    api = stack.api
    for bad in ["zz", "", 5, "ab" * 65]:
        reply = await api.call("POST", "/api/games", {"rules": "robbers", "seats": 2, "seed": bad})
        assert reply.status == 422, bad
        check_error(reply.body)
    hands: list[list[list[str]]] = []
    for _ in range(2):
        game_id, host = await api.create("robbers", 3, {"match_rounds": 1}, seed=SEED)
        tokens = [(await api.sit(game_id, f"p{n}", seed=f"s{n}"))[1] for n in range(3)]
        store = RedisEventStore(stack.redis, stack.settings.prefix)
        before_start = fold_stored(await store.read(game_id)).state
        await api.start(game_id, host)
        predicted = decide(before_start, Start(), Context(0.0, bytes.fromhex(SEED)))
        assert not isinstance(predicted, type(None)) and isinstance(predicted, list)
        deal = next(e for e in predicted if isinstance(e, RoundDealt))
        seen = [(await api.view(game_id, t))["hand"] for t in tokens]
        assert seen == [cards_str(sorted_cards(h)) for h in deal.hands]
        hands.append(seen)
    # The published shuffle (rr-shuffle-v1) mixes the game id into the key, so the same seed and
    # player seeds in two games (two ids) deal two ways: reproducible per game, not across games.
    assert hands[0] != hands[1]


# --- limits --------------------------------------------------------------------------------


async def test_a_token_over_its_command_rate_is_a_429_that_changes_nothing(
    make_stack: MakeStack,
) -> None:
    clock = LimitClock()  # still: exactly the burst passes, then nothing until it moves
    stack = await make_stack(rate_per_second=4, limit_clock=clock)  # bursts of 8
    api = stack.api
    game_id, _, tokens = await started(stack)
    seat = turn_of(await api.view(game_id))
    idle = tokens[1 - seat]  # not its turn: each command is a 409 that changes nothing
    count = await stack.event_count(game_id)
    statuses = [
        (await api.command(game_id, idle, {"id": new_id(), "type": "draw"})).status
        for _ in range(8)
    ]
    assert statuses == [409] * 8, statuses
    reply = await api.command(game_id, idle, {"id": new_id(), "type": "draw"})
    assert reply.status == 429, reply
    check_error(reply.body, "rate_limited")
    assert reply.headers["Retry-After"] == "1", reply.headers
    assert await stack.event_count(game_id) == count
    # Reads are not limited; other tokens are not held back; the token recovers with time.
    for _ in range(20):
        assert (await api.call("GET", f"/api/games/{game_id}", token=idle)).status == 200
    reply = await api.command(game_id, tokens[seat], {"id": new_id(), "type": "draw"})
    assert reply.status == 200 and reply.body["accepted"] is True
    assert (await api.command(game_id, idle, {"id": new_id(), "type": "draw"})).status == 429
    clock.advance(0.25)  # one command's worth at 4 a second
    reply = await api.command(game_id, idle, {"id": new_id(), "type": "draw"})
    assert reply.status == 200 and reply.body["accepted"] is True
    assert (await api.command(game_id, idle, {"id": new_id(), "type": "draw"})).status == 429


# --- the lobby -----------------------------------------------------------------------------


async def test_the_lobby_pages_through_every_game_once_by_status(stack: Stack) -> None:
    api = stack.api
    waiting = [(await api.create("robbers", 2))[0] for _ in range(7)]
    playing = [(await api.new_game("rummikub", 2))[0] for _ in range(2)]

    async def listing(status: str, limit: int) -> list[Json]:
        games: list[Json] = []
        cursor: str | None = "0"
        pages = 0
        while cursor is not None:
            reply = await api.call(
                "GET", f"/api/games?status={status}&limit={limit}&cursor={cursor}"
            )
            assert reply.status == 200, reply
            assert len(reply.body["games"]) <= limit
            games.extend(reply.body["games"])
            cursor = reply.body["next"]
            pages += 1
            assert pages < 20
        return games

    games = await listing("waiting", 3)
    ids = [g["game_id"] for g in games]
    assert sorted(ids) == sorted(waiting) and len(set(ids)) == len(ids)
    assert ids == waiting[::-1], "newest first"
    assert all(g["status"] == "waiting" and g["rules"] == "robbers" for g in games)
    assert all(g["seats"] == 2 and g["seated"] == 0 for g in games)
    ids = [g["game_id"] for g in await listing("playing", 1)]
    assert sorted(ids) == sorted(playing)
    assert await listing("finished", 5) == []
    default = await api.call("GET", "/api/games")
    assert [g["game_id"] for g in default.body["games"]] == waiting[::-1]
    for query in ["status=lost", "cursor=-1", "cursor=abc", "limit=0", "limit=100000"]:
        reply = await api.call("GET", f"/api/games?{query}")
        assert reply.status == 422, query
        check_error(reply.body, "bad_request")


def test_every_published_code_has_a_meaning() -> None:
    assert ERROR_CODES and all(isinstance(v, str) and v for v in ERROR_CODES.values())
    for code in [
        "unauthorized",
        "forbidden",
        "not_found",
        "bad_json",
        "body_too_large",
        "rate_limited",
        "stale_version",
        "command_id_reused",
        "not_your_turn",
        "illegal_layout",
        "seats_empty",
        "game_full",
        "timeout",
    ]:
        assert code in ERROR_CODES


async def test_odd_query_values_and_plain_requests_get_published_errors(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await started(stack)
    version = (await api.view(game_id))["version"]
    for path in [
        "/api/games?cursor=" + "9" * 30,
        "/api/games?limit=" + "9" * 30,
        "/api/games?cursor=%C2%B2",  # a superscript two: a digit to str.isdigit, not a number
        f"/api/games/{game_id}/events?after=" + "9" * 30,
        f"/api/games/{game_id}/events?after=-1",
        f"/api/games/{game_id}/ws?after=x",
        # Longer than int() reads (a ValueError, once a 500), and the replay's own numbers.
        "/api/games?cursor=" + "9" * 5000,
        f"/api/games/{game_id}/events?after=" + "1" * 5000,
        f"/api/games/{game_id}/replay?turn=%C2%B2",
        f"/api/games/{game_id}/replay?version=" + "9" * 5000,
        f"/api/games/{game_id}/replay?turn=0",
    ]:
        reply = await api.call("GET", path)
        assert reply.status == 422, (path, reply)
        check_error(reply.body, "bad_request")
    # Asking for events after the current version is simply nothing new.
    reply = await api.call("GET", f"/api/games/{game_id}/events?after={version + 5}")
    assert reply.status == 200 and reply.body["events"] == [] and reply.body["version"] == version
    # The WebSocket route asked without an upgrade: a 4xx in the published shape.
    reply = await api.call("GET", f"/api/games/{game_id}/ws", token=tokens[0])
    assert 400 <= reply.status < 500, reply
    check_error(reply.body)


async def test_redis_away_is_a_503_to_retry_in_the_published_shape(stack: Stack) -> None:
    """A request that failed for Redis's reasons (away, full, read-only) is no failure of the
    gateway's: 503 ``unavailable`` with ``Retry-After``, not a 500."""
    api = stack.api
    game_id, _, _ = await started(stack)
    server = stack.redis.connection_pool.connection_kwargs["server"]
    server.connected = False  # Redis goes away
    try:
        # The events list always reads the log (a view may come from the cache for a second).
        reply = await api.call("GET", f"/api/games/{game_id}/events")
        assert reply.status == 503, reply
        check_error(reply.body, "unavailable")
        assert reply.headers["Retry-After"] == "1"
    finally:
        server.connected = True
    assert (await api.call("GET", f"/api/games/{game_id}")).status == 200


async def test_a_failure_of_the_gateways_own_is_a_500_in_the_published_shape(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = stack.api
    game_id, _, _ = await started(stack)

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(stack.server.app[GATEWAY].store, "read", broken)
    reply = await api.call("GET", f"/api/games/{game_id}/events")
    assert reply.status == 500, reply
    check_error(reply.body, "internal")
