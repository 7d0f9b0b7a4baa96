"""Accounts: register, log in and out, sessions listed and revoked, names unique, guessing
limited, bad input refused by field, and no route showing another player's sessions."""

from __future__ import annotations

from tests.gateway.api import check_error
from tests.gateway.conftest import LimitClock, MakeStack, Stack
from tests.players.conftest import cheapen, forget_cookies, register


async def test_register_log_in_and_out(stack: Stack) -> None:
    api = stack.api
    player_id, token = await register(api, "Alice")
    forget_cookies(stack)
    me = await api.call("GET", "/api/me", token=token)
    assert me.status == 200 and me.body == {"id": player_id, "name": "Alice"}
    login = await api.call("POST", "/api/sessions", {"name": "alice", "password": "correct horse"})
    assert login.status == 201 and login.body["player"]["id"] == player_id
    second = login.body["token"]
    assert second != token and second.startswith("rs_")
    out = await api.call("POST", "/api/me/logout", {}, token=token)
    assert out.status == 204
    assert (await api.call("GET", "/api/me", token=token)).status == 401
    assert (await api.call("GET", "/api/me", token=second)).status == 200


async def test_cookie_is_httponly_and_samesite(stack: Stack) -> None:
    reply = await stack.api.call("POST", "/api/accounts", {"name": "Bob", "password": "12345678"})
    cookie = reply.headers["Set-Cookie"]
    assert "rummy_session=rs_" in cookie
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    me = await stack.api.call("GET", "/api/me")  # the cookie jar sends it
    assert me.status == 200 and me.body["name"] == "Bob"


async def test_wrong_password_and_unknown_name_answer_alike(stack: Stack) -> None:
    await register(stack.api, "Carol")
    forget_cookies(stack)
    wrong = await stack.api.call("POST", "/api/sessions", {"name": "Carol", "password": "nope1234"})
    nobody = await stack.api.call(
        "POST", "/api/sessions", {"name": "Nobody", "password": "nope1234"}
    )
    assert wrong.status == nobody.status == 401
    assert check_error(wrong.body, "bad_credentials") == check_error(nobody.body)
    assert wrong.body["error"]["message"] == nobody.body["error"]["message"]


async def test_names_are_unique_case_insensitively(stack: Stack) -> None:
    await register(stack.api, "Dora  Explorer")
    reply = await stack.api.call(
        "POST", "/api/accounts", {"name": "dora explorer", "password": "abcdefgh"}
    )
    assert reply.status == 409
    check_error(reply.body, "name_taken")
    assert reply.body["option"] == "name"


async def test_bad_input_names_the_field_and_changes_nothing(stack: Stack) -> None:
    api = stack.api
    cases = [
        ({"name": "x", "password": "abcdefgh"}, "name"),
        ({"name": "Eve", "password": "short"}, "password"),
        ({"name": "Eve"}, "password"),
        ({"password": "abcdefgh"}, "name"),
        ({"name": 7, "password": "abcdefgh"}, "name"),
        ({"name": "Eve bot", "password": "abcdefgh"}, "name"),
    ]
    for body, field in cases:
        reply = await api.call("POST", "/api/accounts", body)
        assert reply.status == 422, (body, reply)
        check_error(reply.body, "bad_request")
        assert reply.body["option"] == field, (body, reply.body)
    extra = await api.call("POST", "/api/accounts", {"name": "Eve", "password": "abcdefgh", "x": 1})
    assert extra.status == 422 and "x" in extra.body["error"]["message"]
    # Nothing was made: the name is still free.
    assert (
        await api.call("POST", "/api/accounts", {"name": "Eve", "password": "abcdefgh"})
    ).status == 201


async def test_sessions_are_listed_and_revoked_by_their_owner(stack: Stack) -> None:
    api = stack.api
    _, first = await register(api, "Fay")
    forget_cookies(stack)
    second = (
        await api.call("POST", "/api/sessions", {"name": "Fay", "password": "correct horse"})
    ).body["token"]
    forget_cookies(stack)
    listed = await api.call("GET", "/api/me/sessions", token=first)
    assert listed.status == 200
    sessions = listed.body["sessions"]
    assert len(sessions) == 2 and sum(s["current"] for s in sessions) == 1
    assert all(first not in str(s) and second not in str(s) for s in sessions)
    other = next(s for s in sessions if not s["current"])
    assert (await api.call("DELETE", f"/api/me/sessions/{other['id']}", token=first)).status == 204
    assert (await api.call("GET", "/api/me", token=second)).status == 401
    again = await api.call("DELETE", f"/api/me/sessions/{other['id']}", token=first)
    assert again.status == 404


async def test_one_player_cannot_see_or_end_anothers_sessions(stack: Stack) -> None:
    api = stack.api
    _, gina = await register(api, "Gina")
    forget_cookies(stack)
    _, hal = await register(api, "Hal")
    forget_cookies(stack)
    hals = (await api.call("GET", "/api/me/sessions", token=hal)).body["sessions"]
    ginas = (await api.call("GET", "/api/me/sessions", token=gina)).body["sessions"]
    assert {s["id"] for s in hals}.isdisjoint(s["id"] for s in ginas)
    refused = await api.call("DELETE", f"/api/me/sessions/{hals[0]['id']}", token=gina)
    assert refused.status == 404
    assert (await api.call("GET", "/api/me", token=hal)).status == 200


async def test_login_guessing_is_limited_per_name_from_any_address(
    make_stack: MakeStack,
) -> None:
    clock = LimitClock()
    stack = cheapen(await make_stack(limit_clock=clock))
    await register(stack.api, "Ivy")
    forget_cookies(stack)
    statuses = []
    for n in range(8):
        # Each guess from another address (behind no trusted proxy, the header is ignored, so
        # the per-address limit is off here and the name's limit is what holds).
        reply = await stack.api.call(
            "POST", "/api/sessions", {"name": "IVY", "password": f"guess{n:04}"}
        )
        statuses.append(reply.status)
    # The registration counted under the name too: four guesses after it.
    assert statuses[:4] == [401] * 4 and set(statuses[4:]) == {429}
    limited = await stack.api.call(
        "POST", "/api/sessions", {"name": "Ivy", "password": "correct horse"}
    )
    assert limited.status == 429 and int(limited.headers["Retry-After"]) >= 1
    clock.advance(12.5)  # one more attempt's worth
    ok = await stack.api.call("POST", "/api/sessions", {"name": "Ivy", "password": "correct horse"})
    assert ok.status == 201


async def test_registrations_are_limited_per_address(make_stack: MakeStack) -> None:
    clock = LimitClock()
    stack = cheapen(await make_stack(limit_clock=clock))
    statuses = []
    for n in range(22):
        body = {"name": f"user{n:02}", "password": "abcdefgh"}
        statuses.append((await stack.api.call("POST", "/api/accounts", body)).status)
    assert statuses[:20] == [201] * 20 and statuses[20:] == [429, 429]
