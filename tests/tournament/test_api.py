"""The tournament API over the gateway: create, the lobby, registration, entrants, rounds,
rulings and the log, each refusal with its field and nothing changed; only the director directs;
a guest cannot register; no view shows a hand or a seed."""

from __future__ import annotations

import time
from typing import Any

import pytest

from services.gateway.state import GATEWAY
from shared.infra.protocol import CommandEntry
from shared.infra.stored import GENESIS_HASH
from shared.tournament.tables import table_game_id
from tests.gateway.api import check_error
from tests.gateway.conftest import LimitClock, Stack, make_stack
from tests.gateway.test_view_schema import errors_of, validator
from tests.tournament.apitools import (
    MakeServed,
    account,
    create,
    desk,
    registering,
    running,
    served,
    stack,
    text,
    until,
    version,
)

__all__ = ["make_stack", "served", "stack"]  # the stacks' fixtures, used here


async def test_an_account_creates_a_tournament_and_directs_it(stack: Stack) -> None:
    me, token = await account(stack, "Dana")
    made = await create(stack, token)
    assert made.status == 201, made
    view = made.body
    tid = view["tournament_id"]
    assert tid.startswith("t") and len(tid) == 17
    assert view["status"] == "created"
    assert view["director"] == {"player": me, "name": "Dana"}
    assert (view["rules"], view["format"], view["rounds"], view["table_seats"]) == (
        "robbers",
        "swiss",
        2,
        2,
    )
    assert view["version"] == 1 and view["head"] != GENESIS_HASH
    again = await stack.api.call("GET", f"/api/tournaments/{tid}")
    assert again.status == 200 and again.body == view
    lobby = await stack.api.call("GET", "/api/tournaments?status=created")
    assert [t["tournament_id"] for t in lobby.body["tournaments"]] == [tid]
    assert lobby.body["tournaments"][0]["director"]["name"] == "Dana"


async def test_a_create_sent_again_with_its_key_names_the_same_tournament(stack: Stack) -> None:
    _, token = await account(stack, "Dana")
    body = {"name": "Once", "rules": "robbers", "table_seats": 2, "rounds": 1}
    headers = {"Idempotency-Key": "same-key"}
    first = await stack.api.call("POST", "/api/tournaments", body, token=token, headers=headers)
    second = await stack.api.call("POST", "/api/tournaments", body, token=token, headers=headers)
    assert first.status == second.status == 201, (first, second)
    assert first.body["tournament_id"] == second.body["tournament_id"]
    assert second.body["version"] == 1  # created once


async def test_a_guest_can_neither_create_nor_register(stack: Stack) -> None:
    refused = await stack.api.call(
        "POST", "/api/tournaments", {"name": "x", "rules": "robbers", "table_seats": 2}
    )
    assert refused.status == 401
    check_error(refused.body, "unauthorized")
    _, director = await account(stack, "Dana")
    tid = (await create(stack, director)).body["tournament_id"]
    await stack.api.call(
        "POST", f"/api/tournaments/{tid}/registration", {"open": True}, token=director
    )
    before = await version(stack, tid)
    guest = await stack.api.call("POST", f"/api/tournaments/{tid}/entrants", {})
    assert guest.status == 401
    check_error(guest.body, "unauthorized")
    seat_token = await stack.api.call(
        "POST", f"/api/tournaments/{tid}/entrants", {}, token="not-a-session"
    )
    assert seat_token.status == 401
    assert await version(stack, tid) == before


async def test_bad_creates_name_the_field_and_make_nothing(stack: Stack) -> None:
    _, token = await account(stack, "Dana")
    cases = [
        ({"name": ""}, "name"),
        ({"rules": "poker"}, "rules"),
        ({"format": "knockout"}, "format"),
        ({"rounds": 0}, "rounds"),
        ({"table_seats": 9}, "table_seats"),
        ({"fill": "bots:nobody"}, "fill"),
        ({"options": {"match": "forever"}}, "options"),
    ]
    for change, field in cases:
        reply = await create(stack, token, **change)
        assert reply.status == 422, (change, reply)
        check_error(reply.body, "bad_request")
        assert reply.body.get("option") == field, (change, reply.body)
        assert field in reply.body["error"]["message"] or field in ("options", "rules")
    unknown = await create(stack, token, seed="00ff")
    assert unknown.status == 422 and "seed" in unknown.body["error"]["message"]
    for status in ("created", "registering", "running", "finished"):
        lobby = await stack.api.call("GET", f"/api/tournaments?status={status}")
        assert lobby.body["tournaments"] == []


async def test_registration_entrants_and_withdrawal(stack: Stack) -> None:
    director_id, director = await account(stack, "Dana")
    tid = (await create(stack, director)).body["tournament_id"]
    early = await stack.api.call("POST", f"/api/tournaments/{tid}/entrants", {}, token=director)
    assert early.status == 409
    check_error(early.body, "not_registering")
    opened = await stack.api.call(
        "POST", f"/api/tournaments/{tid}/registration", {"open": True}, token=director
    )
    assert opened.status == 200 and opened.body["status"] == "registering"
    listed = await stack.api.call("GET", "/api/tournaments")  # registering is the default
    assert [t["tournament_id"] for t in listed.body["tournaments"]] == [tid]
    ann, ann_token = await account(stack, "Ann")
    entered = await stack.api.call("POST", f"/api/tournaments/{tid}/entrants", {}, token=ann_token)
    assert entered.status == 201, entered
    assert entered.body["entrants"] == [
        {"player": ann, "name": "Ann", "rating": 0.0, "withdrawn": None}
    ]
    before = await version(stack, tid)
    twice = await stack.api.call("POST", f"/api/tournaments/{tid}/entrants", {}, token=ann_token)
    assert twice.status == 409
    check_error(twice.body, "already_registered")
    assert await version(stack, tid) == before
    # Another account enters nobody but itself; the director may enter a bot.
    _, bo_token = await account(stack, "Bo")
    other = await stack.api.call(
        "POST", f"/api/tournaments/{tid}/entrants", {"player": "bot:greedy"}, token=bo_token
    )
    assert other.status == 403
    bot = await stack.api.call(
        "POST", f"/api/tournaments/{tid}/entrants", {"player": "bot:greedy"}, token=director
    )
    assert bot.status == 201, bot
    assert bot.body["entrants"][-1] == {
        "player": "bot:greedy",
        "name": "greedy bot",
        "rating": 0.0,
        "withdrawn": None,
    }
    left = await stack.api.call("DELETE", f"/api/tournaments/{tid}/entrants", token=ann_token)
    assert left.status == 200, left
    assert [e["player"] for e in left.body["entrants"]] == ["bot:greedy"]
    back = await stack.api.call("POST", f"/api/tournaments/{tid}/entrants", {}, token=ann_token)
    assert back.status == 201, back  # a new registration, not the first one's answer again
    assert director_id not in [e["player"] for e in back.body["entrants"]]


async def test_only_the_director_directs(stack: Stack) -> None:
    tid, _director, entrants = await running(stack, players=4)
    _, someone = entrants[0]
    before = await version(stack, tid)
    for path, body in (
        ("registration", {"open": True}),
        ("rounds", {"round": 1}),
        ("rulings", {"kind": "annul", "round": 1, "table": 1, "reason": "x"}),
    ):
        reply = await stack.api.call("POST", f"/api/tournaments/{tid}/{path}", body, token=someone)
        assert reply.status == 403, (path, reply)
        check_error(reply.body)
    assert await version(stack, tid) == before


async def test_round_1_is_paired_once_registration_closes_and_its_tables_play(
    stack: Stack,
) -> None:
    tid, director, entrants = await running(stack, players=4)
    view = (await stack.api.call("GET", f"/api/tournaments/{tid}")).body
    assert view["status"] == "running" and view["round"] == 1 and len(view["played"]) == 1
    tables = view["played"][0]["tables"]
    assert len(tables) == 2
    seated = sorted(s["player"] for t in tables for s in t["seats"])
    assert seated == sorted(who for who, _ in entrants)
    for table in tables:
        assert table["game_id"] == table_game_id(tid, 1, table["table"])
        assert table["status"] == "started"
        assert table["watch"] == f"/#/game/{table['game_id']}/watch"
        assert table["replay"] == f"/#/game/{table['game_id']}/replay/1"
        game = await stack.api.view(table["game_id"])
        assert game["status"] == "playing"
        assert [s["name"] for s in table["seats"]] == [s["name"] for s in game["seats"]]
    # The director may pair only the round due, once the last is over: refusals change nothing.
    before = await version(stack, tid)
    for body, status, code in (
        ({"round": "one"}, 422, "bad_request"),
        ({"round": 1}, 409, "round_paired"),
        ({"round": 3}, 409, "round_not_due"),
        ({}, 409, "round_in_play"),
    ):
        reply = await stack.api.call("POST", f"/api/tournaments/{tid}/rounds", body, token=director)
        assert reply.status == status, (body, reply)
        check_error(reply.body, code)
    assert await version(stack, tid) == before


async def test_nobody_takes_a_seat_of_a_tournament_table_but_its_tournament(stack: Stack) -> None:
    """Between the pairing (which makes a table's game id public) and the service's sits, the
    game waits with free seats: the gateway refuses every sit there, guest's or account's."""
    gw = stack.server.app[GATEWAY]
    game_id = table_game_id("t" + "0" * 16, 1, 1)
    body = {"rules": "robbers", "seats": 2, "options": {}, "tournament": "t" + "0" * 16}
    answer = await gw.forward(CommandEntry(game_id, "create", "create", body, at=time.time()))
    assert answer["status"] == "accepted", answer
    before = (await stack.api.view(game_id))["version"]
    _, session = await account(stack, "Stranger")
    for token in (None, session):
        reply = await stack.api.call(
            "POST", f"/api/games/{game_id}/seats", {"name": "stranger"}, token=token
        )
        assert reply.status == 409, reply
        check_error(reply.body, "seat_reserved")
        assert "tournament" in reply.body["error"]["message"]
    view = await stack.api.view(game_id)
    assert view["version"] == before and view["status"] == "waiting"
    # Nor can a game be made a tournament's table from the public API.
    reply = await stack.api.call("POST", "/api/games", body)
    assert reply.status == 422, reply


async def test_a_ruling_changes_the_standings_and_shows_its_reason(stack: Stack) -> None:
    tid, director, _entrants = await running(stack, players=4)
    view = (await stack.api.call("GET", f"/api/tournaments/{tid}")).body
    table = view["played"][0]["tables"][0]
    loser, winner = table["seats"][0]["player"], table["seats"][1]["player"]
    # The service records the table's result as the game's MatchEnded gave it.
    results = [
        {"player": loser, "seat": 0, "winner": False, "total": 40, "outs": 0, "wins": 0},
        {"player": winner, "seat": 1, "winner": True, "total": 5, "outs": 1, "wins": 1},
    ]
    finished = await finish(stack, tid, table, results)
    assert finished["status"] == "accepted", finished
    shown = (await stack.api.call("GET", f"/api/tournaments/{tid}")).body
    first = shown["played"][0]["tables"][0]
    assert first["status"] == "finished" and first["head"] == [30, "ab" * 32]
    assert [r["total"] for r in first["results"]] == [40, 5]
    before = {row["player"]: row for row in shown["standings"]}
    missing = await stack.api.call(
        "POST",
        f"/api/tournaments/{tid}/rulings",
        {"kind": "annul", "round": 1, "table": table["table"]},
        token=director,
    )
    assert missing.status == 422 and missing.body.get("option") == "reason"
    nobody = await stack.api.call(
        "POST",
        f"/api/tournaments/{tid}/rulings",
        {"kind": "forfeit", "round": 1, "table": table["table"], "player": "x", "reason": "r"},
        token=director,
    )
    assert nobody.status == 422
    check_error(nobody.body, "not_at_table")
    ruled = await stack.api.call(
        "POST",
        f"/api/tournaments/{tid}/rulings",
        {"kind": "annul", "round": 1, "table": table["table"], "reason": "a marked deck"},
        token=director,
    )
    assert ruled.status == 201, ruled
    after = ruled.body
    assert after["played"][0]["tables"][0]["status"] == "annulled"
    assert after["rulings"] == [
        {
            "kind": "annul",
            "round": 1,
            "table": table["table"],
            "player": "",
            "player_name": "",
            "reason": "a marked deck",
            "turn": None,
            "verdict": "",
        }
    ]
    rows = {row["player"]: row for row in after["standings"]}
    assert rows[winner] != before[winner]  # the win counts for nobody now
    assert any("a marked deck" in note for note in rows[winner]["notes"])
    other = after["played"][0]["tables"][1]
    seats = [s["player"] for s in other["seats"]]
    done = await finish(  # the round is over: the service pairs round 2
        stack,
        tid,
        other,
        [
            {"player": seats[0], "seat": 0, "winner": True, "total": 0, "outs": 1, "wins": 1},
            {"player": seats[1], "seat": 1, "winner": False, "total": 30, "outs": 0, "wins": 0},
        ],
    )
    assert done["status"] == "accepted", done
    await until(stack, tid, "round 2 paired", lambda t: t.current == 2)
    after = (await stack.api.call("GET", f"/api/tournaments/{tid}")).body
    assert after["history"] and any(
        "a marked deck" in note
        for entry in after["history"]
        for row in entry["standings"]
        for note in row["notes"]
    )
    log = (await stack.api.call("GET", f"/api/tournaments/{tid}/events")).body
    assert any(
        e["type"] == "RulingRecorded" and e["data"]["reason"] == "a marked deck"
        for e in log["events"]
    )


async def finish(
    stack: Stack, tid: str, table: dict[str, Any], results: list[dict[str, Any]]
) -> dict[str, Any]:
    """Record a table's result as the tournament service does (from its game's MatchEnded)."""
    payload = {
        "round": 1,
        "table": table["table"],
        "game_id": table["game_id"],
        "results": results,
        "head": [30, "ab" * 32],
    }
    command_id = f"test-finish:{table['table']}"
    return await desk(stack).send(tid, "table_finished", command_id, payload, "service")


async def test_the_log_pages_in_order_with_its_chain(stack: Stack) -> None:
    tid, _, _ = await running(stack, players=2)
    whole = await stack.api.call("GET", f"/api/tournaments/{tid}/events")
    assert whole.status == 200
    events = whole.body["events"]
    assert [e["version"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "TournamentCreated"
    assert whole.body["head"] == events[-1]["hash"] and whole.body["version"] == len(events)
    page = await stack.api.call("GET", f"/api/tournaments/{tid}/events?after=2&limit=1")
    assert [e["version"] for e in page.body["events"]] == [3]
    for query in ("after=-1", "limit=0", "limit=501", "after=x"):
        bad = await stack.api.call("GET", f"/api/tournaments/{tid}/events?{query}")
        assert bad.status == 422, query
        check_error(bad.body, "bad_request")


async def test_unknown_tournaments_and_bad_lobby_queries(stack: Stack) -> None:
    _, token = await account(stack, "Dana")
    for tid in ("t0000000000000000", "nonsense", "g0123456789abcdef"):
        for method, path in (
            ("GET", ""),
            ("GET", "/events"),
            ("POST", "/entrants"),
            ("POST", "/rounds"),
        ):
            reply = await stack.api.call(method, f"/api/tournaments/{tid}{path}", {}, token=token)
            assert reply.status == 404, (tid, path, reply)
            check_error(reply.body, "not_found")
    for query in ("status=open", "cursor=-1", "limit=0", "limit=201"):
        reply = await stack.api.call("GET", f"/api/tournaments?{query}")
        assert reply.status == 422, query
        check_error(reply.body, "bad_request")


async def test_a_gateway_stops_showing_a_tournament_redis_lost(stack: Stack) -> None:
    """Its heartbeat finds Redis back without its data: the tournament folds and views it kept
    go with the games, so a lost tournament's page says not_found."""
    tid, _, _ = await registering(stack, 2)
    path = f"/api/tournaments/{tid}"
    assert (await stack.api.call("GET", path)).status == 200
    gateway = stack.server.app[GATEWAY]
    prefix = stack.settings.prefix
    lost = [key async for key in stack.redis.scan_iter(match=f"{prefix}*")]
    await stack.redis.delete(*lost)  # Redis restarted empty

    await gateway.heartbeat()

    assert gateway.tournament_views == {}
    gone = await stack.api.call("GET", path)
    assert gone.status == 404, gone
    check_error(gone.body, "not_found")


async def test_no_tournament_view_shows_a_hand_or_a_seed(stack: Stack) -> None:
    tid, director, entrants = await running(stack, players=2)
    view = (await stack.api.call("GET", f"/api/tournaments/{tid}")).body
    table = view["played"][0]["tables"][0]
    game_id = table["game_id"]
    # A seated entrant gets its seat's token from its session (the service seated it).
    _who, token = next(e for e in entrants if e[0] == table["seats"][0]["player"])
    seat = await stack.api.call("POST", f"/api/me/games/{game_id}/token", {}, token=token)
    assert seat.status == 201, seat
    assert seat.body["seat"] == 0
    hand = (await stack.api.view(game_id, seat.body["token"]))["hand"]
    truth = await stack.truth(game_id)
    assert hand and truth.status == "playing" and truth.stock
    shown = [
        text((await stack.api.call("GET", f"/api/tournaments/{tid}")).body),
        text((await stack.api.call("GET", "/api/tournaments?status=running")).body),
        text((await stack.api.call("GET", f"/api/tournaments/{tid}/events")).body),
    ]
    for doc in shown:
        for word in ('"hand', '"hands"', '"seed"', '"seeds"', '"stock"', '"deck"'):
            assert word not in doc, word
        assert text(hand) not in doc
    stranger = await stack.api.call("POST", f"/api/me/games/{game_id}/token", {}, token=director)
    assert stranger.status == 404


async def test_creates_are_bounded_per_address(served: MakeServed) -> None:
    clock = LimitClock()
    stack = await served(limit_clock=clock, limit_create_per_minute=1)
    _, token = await account(stack, "Dana")
    assert (await create(stack, token)).status == 201
    refused = await create(stack, token, name="Another")
    assert refused.status == 429 and int(refused.headers["Retry-After"]) >= 1
    check_error(refused.body, "rate_limited")
    listed = await stack.api.call("GET", "/api/tournaments?status=created")
    assert len(listed.body["tournaments"]) == 1
    clock.advance(61)
    assert (await create(stack, token, name="Another")).status == 201


async def test_what_the_routes_send_fits_the_published_schemas(stack: Stack) -> None:
    """The tournament's view, the lobby's page and the log's page validate against their
    closed schemas in /openapi.json (a field added without its type fails here)."""
    tid, director, _ = await running(stack, players=3)
    view = (await stack.api.call("GET", f"/api/tournaments/{tid}")).body
    table = view["played"][0]["tables"][0]
    seats = [s["player"] for s in table["seats"]]
    results = [
        {"player": seats[0], "seat": 0, "winner": True, "total": None, "outs": 1, "wins": 1},
        {"player": seats[1], "seat": 1, "winner": False, "total": 12, "outs": 0, "wins": 0},
    ]
    assert (await finish(stack, tid, table, results))["status"] == "accepted"
    ruling = {
        "kind": "verdict",
        "round": 1,
        "table": 1,
        "turn": 3,
        "verdict": "the play was legal",
        "reason": "a disputed meld",
    }
    ruled = await stack.api.call("POST", f"/api/tournaments/{tid}/rulings", ruling, token=director)
    assert ruled.status == 201, ruled
    checks = [
        ("TournamentView", ruled.body),
        ("TournamentLobby", (await stack.api.call("GET", "/api/tournaments?status=running")).body),
        ("TournamentEvents", (await stack.api.call("GET", f"/api/tournaments/{tid}/events")).body),
    ]
    assert checks[1][1]["tournaments"], checks[1]
    for component, body in checks:
        assert errors_of(validator(component), body) == [], component


async def test_bad_director_bodies_name_the_field_and_change_nothing(stack: Stack) -> None:
    tid, director, entrants = await running(stack, players=2)
    before = await version(stack, tid)
    cases = [
        ("registration", {"open": "yes"}, "open"),
        ("registration", {"open": True, "when": "now"}, None),
        ("rulings", {"kind": "banish", "round": 1, "table": 1, "reason": "r"}, "kind"),
        ("rulings", {"kind": "annul", "round": 0, "table": 1, "reason": "r"}, "round"),
        ("rulings", {"kind": "annul", "round": 1, "table": 1, "reason": " "}, "reason"),
        ("rulings", {"kind": "verdict", "round": 1, "table": 1, "reason": "r"}, "turn"),
        ("rulings", {"kind": "annul", "round": 1, "table": 1, "reason": "r", "x": 1}, None),
        ("rounds", {"round": 1, "tables": 3}, None),
        ("entrants", {"player": ""}, "player"),
    ]
    for path, body, field in cases:
        reply = await stack.api.call("POST", f"/api/tournaments/{tid}/{path}", body, token=director)
        assert reply.status == 422, (path, body, reply)
        check_error(reply.body, "bad_request")
        assert reply.body.get("option") == field, (path, body, reply.body)
    not_json = await stack.api.call(
        "POST", f"/api/tournaments/{tid}/rulings", data=b"[1]", token=director
    )
    assert not_json.status == 400
    check_error(not_json.body, "bad_json")
    assert await version(stack, tid) == before
    # Mid-round nobody leaves a table in play; while registration is open the director
    # withdraws an entrant (?player=), another entrant may not.
    (first, first_token), _ = entrants
    playing = await stack.api.call("DELETE", f"/api/tournaments/{tid}/entrants", token=first_token)
    assert playing.status == 409
    check_error(playing.body, "table_in_play")
    open_tid, open_director, (one, two) = await registering(stack, players=2)
    refused = await stack.api.call(
        "DELETE", f"/api/tournaments/{open_tid}/entrants?player={two[0]}", token=one[1]
    )
    assert refused.status == 403, refused
    out = await stack.api.call(
        "DELETE", f"/api/tournaments/{open_tid}/entrants?player={two[0]}", token=open_director
    )
    assert out.status == 200, out
    assert [e["player"] for e in out.body["entrants"]] == [one[0]]
    assert first in [e["player"] for e in (await state_of(stack, tid))["entrants"]]


async def state_of(stack: Stack, tid: str) -> dict[str, Any]:
    return dict((await stack.api.call("GET", f"/api/tournaments/{tid}")).body)


async def test_a_tournament_view_is_built_once_per_version(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every open page polls its tournament: the gateway builds each version's view once and
    sends the same bytes to the next viewers of that version."""
    from services.gateway.routes import tournament_pages

    built: list[int] = []
    building = tournament_pages.tournament_json

    def counted(state: Any, director: str, head: str) -> Any:
        built.append(state.version)
        return building(state, director, head)

    monkeypatch.setattr(tournament_pages, "tournament_json", counted)
    tid, director, _ = await registering(stack, players=2)
    built.clear()  # (the answers to the set-up's commands are views too)
    first = await stack.api.call("GET", f"/api/tournaments/{tid}")
    again = await stack.api.call("GET", f"/api/tournaments/{tid}")
    assert first.status == again.status == 200 and first.body == again.body
    assert built == []  # the last command's answer built this version's view already
    closed = await stack.api.call(
        "POST", f"/api/tournaments/{tid}/registration", {"open": False}, token=director
    )
    assert closed.status == 200, closed
    later = await stack.api.call("GET", f"/api/tournaments/{tid}")
    assert later.body["version"] > first.body["version"]
    assert later.body["version"] in built  # a new version, a new view
    assert first.body["version"] not in built  # and never the old one again
