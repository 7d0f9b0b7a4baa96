"""Games that always end, over the API: resign and return by seat commands, leave a waiting
game, the host's cancel, expiry by the referees' timers (the lobby lists neither), and a
rematch offered and joined with one click each. Bad requests are refused with the published
error shape and change nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shared.infra.bus import partition_of
from shared.infra.protocol import CommandEntry
from tests.gateway.api import Api, check_error, play_to_end
from tests.gateway.conftest import MakeStack, Stack


async def lobby_ids(api: Api, status: str = "waiting") -> set[str]:
    reply = await api.call("GET", f"/api/games?status={status}")
    assert reply.status == 200, reply
    return {g["game_id"] for g in reply.body["games"]}


async def test_a_seat_resigns_and_the_last_seat_left_wins(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match": "single"})
    turn = (await api.view(game_id))["turn"]
    quitter = turn["seat"]
    reply = await api.command(game_id, tokens[quitter], {"id": "r1", "type": "resign"})
    assert reply.status == 200, reply
    truth = await stack.truth(game_id)
    assert truth.is_resigned(quitter)
    for _ in range(200):
        view = await api.view(game_id)
        if view["status"] == "finished":
            break
        await stack_sleep()
    assert view["status"] == "finished" and view["winner"] == [1 - quitter]
    assert view["seats"][quitter]["resigned"] is True
    reply = await api.command(game_id, tokens[quitter], {"id": "r2", "type": "resign"})
    assert reply.status == 409
    check_error(reply.body, "game_finished")


async def stack_sleep() -> None:
    await asyncio.sleep(0.02)


async def test_a_player_leaves_a_waiting_game_and_its_token_stops_working(stack: Stack) -> None:
    api = stack.api
    game_id, host = await api.create("robbers", 2)
    _, ann = await api.sit(game_id, "ann")
    path = f"/api/games/{game_id}/leave"
    reply = await api.call("POST", path, {"colour": "red"}, token=ann)
    assert reply.status == 422
    check_error(reply.body, "bad_request")
    reply = await api.call("POST", path, {"seat": 0}, token=host)
    assert reply.status == 403  # the host frees bots' seats only
    reply = await api.call("POST", path, {}, token=ann)
    assert reply.status == 200, reply
    assert reply.body["seats"][0]["name"] is None
    reply = await api.call("GET", f"/api/games/{game_id}", token=ann)
    assert reply.status == 401
    seat, _ = await api.sit(game_id, "bo")
    assert seat == 0
    # The host frees a bot's seat.
    reply = await api.call("POST", f"/api/games/{game_id}/seats", {"bot": "greedy"}, token=host)
    assert reply.status == 201
    reply = await api.call("POST", path, {"seat": 1}, token=host)
    assert reply.status == 200, reply
    assert (await stack.truth(game_id)).seated() == 1


async def test_the_host_cancels_a_waiting_game_and_the_lobby_drops_it(stack: Stack) -> None:
    api = stack.api
    game_id, host = await api.create("rummikub", 2)
    _, ann = await api.sit(game_id, "ann")
    assert game_id in await lobby_ids(api)
    path = f"/api/games/{game_id}/cancel"
    reply = await api.call("POST", path, {}, token=ann)
    assert reply.status == 403
    check_error(reply.body, "forbidden")
    before = await stack.event_count(game_id)
    reply = await api.call("POST", path, {}, token=host)
    assert reply.status == 200, reply
    assert reply.body["status"] == "cancelled" and reply.body["cancelled"] == "host"
    assert await stack.event_count(game_id) == before + 1
    assert game_id not in await lobby_ids(api)
    reply = await api.call("POST", f"/api/games/{game_id}/seats", {"name": "bo"})
    assert reply.status == 409
    check_error(reply.body, "game_cancelled")
    reply = await api.call("POST", path, {}, token=host)  # again: the same answer, applied once
    assert reply.status == 200 and reply.body["status"] == "cancelled"
    assert await stack.event_count(game_id) == before + 1
    playing, host, _ = await api.new_game("rummikub", 2)
    reply = await api.call("POST", f"/api/games/{playing}/cancel", {}, token=host)
    assert reply.status == 409
    check_error(reply.body, "not_waiting")


async def test_a_lobby_of_abandoned_games_empties_after_its_expiry(make_stack: MakeStack) -> None:
    stack = await make_stack(waiting_expiry_seconds=600, playing_expiry_seconds=900)
    api = stack.api
    waiting = [(await api.create("robbers", 2))[0] for _ in range(3)]
    playing, _, _ = await api.new_game("robbers-classic", 2)
    assert set(waiting) <= await lobby_ids(api)
    assert playing in await lobby_ids(api, "playing")
    stack.clock.advance(601)
    await fire_all(stack)
    assert not set(waiting) & await lobby_ids(api)
    assert playing in await lobby_ids(api, "playing")  # under way: its own, longer limit
    stack.clock.advance(300)
    await fire_all(stack)
    truth = await stack.truth(playing)
    assert truth.status == "cancelled" and truth.cancelled == "expired"
    assert playing not in await lobby_ids(api, "playing")
    for game_id in waiting:
        assert (await stack.truth(game_id)).cancelled == "expired"


async def test_a_move_puts_the_expiry_off_without_writing_the_timers(make_stack: MakeStack) -> None:
    """A sit is a move: the expiry set when the game was made stays where it was (no write of
    the timers per move), fires, finds the move, and is due a limit after it; with no move since,
    it then expires the game."""
    stack = await make_stack(waiting_expiry_seconds=600, playing_expiry_seconds=900)
    api = stack.api
    game_id, _ = await api.create("robbers", 3)
    timers = stack.referee.keys.timers(partition_of(game_id, stack.settings.partitions))
    member = f"{game_id}|expire"
    set_at = await stack.redis.zscore(timers, member)
    stack.clock.advance(400)
    await api.sit(game_id, "ann")
    assert await stack.redis.zscore(timers, member) == set_at
    stack.clock.advance(201)
    await fire_all(stack)
    assert (await stack.truth(game_id)).status == "waiting"
    assert await stack.redis.zscore(timers, member) == pytest.approx(set_at + 400, abs=1)
    stack.clock.advance(398)
    await fire_all(stack)
    assert (await stack.truth(game_id)).status == "waiting"  # not due yet
    stack.clock.advance(3)
    await fire_all(stack)
    assert (await stack.truth(game_id)).cancelled == "expired"
    assert await stack.redis.zscore(timers, member) is None


async def test_paging_through_a_lobby_that_drops_expired_games_misses_no_live_game(
    make_stack: MakeStack,
) -> None:
    """A page that drops games expired since they were filed takes them out of the list the
    cursors count in: the next page starts that much sooner, so the games after them are not
    skipped."""
    stack = await make_stack(waiting_expiry_seconds=600, playing_expiry_seconds=900)
    api = stack.api
    live = [(await api.create("robbers", 3))[0] for _ in range(3)]
    stack.clock.advance(500)
    abandoned = [(await api.create("robbers", 3))[0]]  # the newest
    stack.clock.advance(400)
    for game_id in live:
        await api.sit(game_id, "ann")  # kept alive past the abandoned games' expiry
    stack.clock.advance(201)
    await fire_all(stack)
    for game_id in abandoned:
        assert (await stack.truth(game_id)).cancelled == "expired"
    seen: list[str] = []
    cursor: str | None = "0"
    while cursor is not None:
        reply = await api.call("GET", f"/api/games?status=waiting&limit=1&cursor={cursor}")
        assert reply.status == 200, reply
        seen += [g["game_id"] for g in reply.body["games"]]
        cursor = reply.body["next"]
    assert sorted(seen) == sorted(live)


async def fire_all(stack: Stack) -> None:
    """Fire every due timer, and wait for the referee to handle what they sent."""
    for partition in range(stack.settings.partitions):
        await stack.referee.fire_timers(partition)
    for _ in range(100):
        pending = 0
        for partition in range(stack.settings.partitions):
            key = stack.referee.keys.command_stream(partition)
            groups = await stack.redis.xinfo_groups(key)
            pending += sum(int(g.get("lag") or 0) + int(g["pending"]) for g in groups)
        if not pending:
            return
        await stack_sleep()


async def finished_game(stack: Stack, options: dict[str, Any]) -> tuple[str, list[str]]:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 3, options)
    played = await play_to_end(api, game_id, tokens, ["greedy"] * 3, seed=3)
    assert played.final["status"] == "finished"
    return game_id, tokens


async def test_a_rematch_is_offered_and_joined_with_one_click_each(stack: Stack) -> None:
    api = stack.api
    game_id, _ = await api.create("robbers", 2)
    _, ann = await api.sit(game_id, "ann")
    reply = await api.call("POST", f"/api/games/{game_id}/rematch", {}, token=ann)
    assert reply.status == 409
    check_error(reply.body, "game_not_over")
    old, tokens = await finished_game(stack, {"match": "single"})
    reply = await api.call("POST", f"/api/games/{old}/rematch", {}, token=tokens[1])
    assert reply.status == 201, reply
    new = reply.body["game_id"]
    assert reply.body["seat"] == 0  # seat 1 moves one on, to seat 0
    again = await api.call("POST", f"/api/games/{old}/rematch", {}, token=tokens[1])
    assert again.status == 201 and again.body["game_id"] == new and again.body["seat"] == 0
    assert (await api.view(old))["rematch"] == new
    view = await api.view(new)
    assert view["rematch_of"] == old and view["status"] == "waiting"
    assert view["rules"] == (await api.view(old))["rules"]
    assert new not in await lobby_ids(api)  # reserved seats: not in the lobby
    reply = await api.call("POST", f"/api/games/{new}/seats", {"name": "stranger"})
    assert reply.status == 409
    check_error(reply.body, "seat_reserved")
    reply = await api.call("POST", f"/api/games/{old}/rematch/seat", {"x": 1}, token=tokens[0])
    assert reply.status == 422
    seats = {}
    for old_seat in (0, 2):
        reply = await api.call("POST", f"/api/games/{old}/rematch/seat", {}, token=tokens[old_seat])
        assert reply.status == 201, reply
        seats[old_seat] = reply.body
    assert seats[0]["seat"] == 2 and seats[2]["seat"] == 1
    started = await api.view(new, seats[2]["token"])
    assert started["status"] == "playing" and started["you"] == 1
    names = [s["name"] for s in started["seats"]]
    old_names = [s["name"] for s in (await api.view(old))["seats"]]
    assert names == [old_names[1], old_names[2], old_names[0]]


async def test_the_referees_timers_end_an_absent_players_turns(make_stack: MakeStack) -> None:
    """An untimed turn ends at ``absent_seconds``; the absent seat's later turns end at once
    (``skip``); its player's own move takes the seat back."""
    stack = await make_stack()
    api = stack.api
    options = {"absent_seconds": 60, "absent_turns": 1, "absent": "skip", "match": "single"}
    game_id, _, tokens = await api.new_game("robbers", 2, options)
    absent = (await api.view(game_id))["turn"]["seat"]
    other = 1 - absent
    await fire_all(stack)
    assert (await stack.truth(game_id)).missed[absent] == 0  # not yet: 60 s to go
    stack.clock.advance(61)
    await fire_all(stack)
    log = await stack.log(game_id)
    timed_out = [e for e in log if e.TYPE == "TurnTimedOut"]
    assert [(e.seat, e.reason) for e in timed_out] == [(absent, "absent")]  # type: ignore[attr-defined]
    assert (await stack.truth(game_id)).away[absent] == "skip"
    reply = await api.command(game_id, tokens[other], {"id": "d1", "type": "draw"})
    assert reply.status == 200, reply
    await fire_all(stack)  # the absent seat's turn ends at once, with no time passing
    truth = await stack.truth(game_id)
    assert truth.turn is not None and truth.turn.seat == other
    skipped = [e for e in await stack.log(game_id) if e.TYPE == "TurnTimedOut"][-1]
    assert skipped.reason == "skipped"  # type: ignore[attr-defined]
    reply = await api.command(game_id, tokens[other], {"id": "d2", "type": "draw"})
    assert reply.status == 200, reply
    # The player is back in time for its turn (a skipped turn may beat it to it: then wait
    # for the next one).
    for attempt in range(3):
        truth = await stack.truth(game_id)
        assert truth.turn is not None
        if truth.turn.seat == absent:
            reply = await api.command(
                game_id, tokens[absent], {"id": f"b{attempt}", "type": "draw"}
            )
            if reply.status == 200:
                break
        else:
            await api.command(game_id, tokens[other], {"id": f"o{attempt}", "type": "draw"})
    truth = await stack.truth(game_id)
    assert truth.away[absent] is None
    assert any(e.TYPE == "SeatReturned" for e in await stack.log(game_id))


async def test_a_game_nobody_plays_waits_for_a_return_and_then_expires(
    make_stack: MakeStack,
) -> None:
    """Decision 25: once every seat is away under ``skip``, no turn ends at once (the game
    would play itself to an end, and a result, that nobody played): it waits. A player's return
    plays on at once; a game nobody comes back to is cancelled by its expiry."""
    stack = await make_stack(playing_expiry_seconds=900)
    api = stack.api
    options = {"absent_seconds": 60, "absent_turns": 1, "absent": "skip", "match": "single"}
    game_id, _, tokens = await api.new_game("robbers", 2, options)
    timers = stack.referee.keys.timers(partition_of(game_id, stack.settings.partitions))
    for _ in range(2):  # each seat's turn runs out once: both players are away
        stack.clock.advance(61)
        await fire_all(stack)
    truth = await stack.truth(game_id)
    assert truth.away == ("skip", "skip") and truth.turn is not None
    waiting, version = truth.turn, truth.version
    assert [m for m in await stack.redis.zrange(timers, 0, -1) if b"expire" not in m] == []
    stack.clock.advance(300)
    await fire_all(stack)
    assert (await stack.truth(game_id)).version == version  # nobody plays: nothing happens
    # A timer set before the last player left finds nobody playing, and is dropped.
    number = waiting.number
    entry = CommandEntry(game_id, "timeout", f"timeout:{number}", {"number": number})
    outcome = await stack.referee.execute(entry)
    assert (outcome.status, outcome.code) == ("refused", "nobody_playing")
    assert (await stack.truth(game_id)).version == version
    # The player not on turn comes back: the turn the game waited on ends at once.
    back = 1 - waiting.seat
    reply = await api.command(game_id, tokens[back], {"id": "back", "type": "return"})
    assert reply.status == 200, reply
    await fire_all(stack)
    truth = await stack.truth(game_id)
    assert truth.away[back] is None and truth.turn is not None and truth.turn.seat == back
    reasons = [e.reason for e in await stack.log(game_id) if e.TYPE == "TurnTimedOut"]  # type: ignore[attr-defined]
    assert reasons == ["absent", "absent", "skipped"]
    # It goes again: its turn runs out, nobody plays, and the game's expiry cancels it.
    stack.clock.advance(61)
    await fire_all(stack)
    assert (await stack.truth(game_id)).away == ("skip", "skip")
    stack.clock.advance(900)
    await fire_all(stack)
    truth = await stack.truth(game_id)
    assert truth.status == "cancelled" and truth.cancelled == "expired"
    assert truth.winners == () and truth.revealed_seed is None


async def test_a_rematch_seats_the_finished_games_bots_by_itself(stack: Stack) -> None:
    api = stack.api
    game_id, host = await api.create("rummikub", 2, {}, bots=["hoarder"])
    _, ann = await api.sit(game_id, "ann")
    await api.start(game_id, host)
    reply = await api.command(game_id, ann, {"id": "q", "type": "resign"})
    assert reply.status == 200, reply
    for _ in range(200):
        if (await api.view(game_id))["status"] == "finished":
            break
        await stack_sleep()
    assert (await api.view(game_id))["winner"] == [0]  # the bot, the last seat left
    reply = await api.call("POST", f"/api/games/{game_id}/rematch", {}, token=ann)
    assert reply.status == 201, reply
    assert reply.body["seat"] == 0  # ann (seat 1) moves one on, to seat 0
    view = await api.view(reply.body["game_id"])
    assert view["status"] == "playing"  # the bot took its seat: every seat is taken
    assert [(s["name"], s["bot"]) for s in view["seats"]] == [
        ("ann", None),
        ("hoarder bot", "hoarder"),
    ]


async def test_the_services_own_seat_commands_cannot_come_from_a_client(stack: Stack) -> None:
    """``leave`` (which withdraws tokens) and ``rematch`` (which links a game the gateway made)
    are the gateway's to send: a seat's command of either type is refused, changing nothing."""
    api = stack.api
    game_id, _ = await api.create("robbers", 2)
    _, ann = await api.sit(game_id, "ann")
    before = await stack.event_count(game_id)
    for kind in ("leave", "rematch"):
        reply = await api.command(game_id, ann, {"id": kind, "type": kind, "game_id": "gx"})
        assert reply.status == 422, reply
        check_error(reply.body, "bad_request")
        assert "resign" in reply.body["error"]["message"]  # the allowed types are listed
    # Straight onto the command stream, without the gateway's command id, too.
    entry = CommandEntry(game_id, "seat", "0:forged", {"type": "rematch", "game_id": "gx"}, 0)
    outcome = await stack.referee.execute(entry)
    assert (outcome.status, outcome.code) == ("refused", "bad_command")
    assert await stack.event_count(game_id) == before
