"""A game a referee still caches whose log has left Redis: forgotten by the archiver once
archived, or lost with Redis's data. A command for it is refused at once (``game_archived``),
acknowledged, nothing appended, no dead letter, and the referee's cached state dropped; a log
that went back to an earlier version (or another history) is decided on as Redis now has it.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from services.gateway.state import GATEWAY
from shared.archive.sqlite import SqliteArchive
from shared.core.commands import SERVICE_COMMAND_PREFIX, command_json
from shared.core.views import seat_view
from shared.infra.bus import Bus, Requester
from shared.infra.chain import verify_chain
from shared.infra.gamelog import Loaded
from shared.infra.keys import Keys
from shared.infra.protocol import CommandEntry
from shared.infra.retention import Retention, game_data_keys
from shared.infra.stored import NewEvent
from shared.play.bots import BOTS
from tests.archive.letting_go import archive_games
from tests.gateway.api import check_error, play_to_end
from tests.gateway.conftest import MakeStack, make_stack
from tests.services.conftest import Stack
from tests.services.driver import create_game, drive
from tests.services.test_bad_input import dead_letters, pending

__all__ = ["make_stack"]  # the gateway tests' fixture, used here too

ROBBERS = ("robbers", 2, {"match_rounds": 1})


async def finished_game(stack: Stack) -> str:
    game_id = await create_game(stack.requester, *ROBBERS)
    await drive(stack.requester, stack.games, game_id, ["greedy", "greedy"])
    return game_id


def move(loaded: Loaded, cid: str | None = None) -> CommandEntry:
    """The move greedy makes for the seat on turn in ``loaded``."""
    state = loaded.state
    assert state.turn is not None
    seat = state.turn.seat
    chosen = BOTS["greedy"]().choose(seat_view(state, seat), random.Random(0))
    body = command_json(chosen, with_seat=False)
    return CommandEntry(state.game_id, "seat", cid or f"{seat}:{uuid.uuid4().hex}", body, seat)


async def settled(stack: Stack) -> None:
    """Every command acknowledged, none dead-lettered."""
    assert await stack.until(lambda: _none_pending(stack))
    assert await dead_letters(stack) == []


async def _none_pending(stack: Stack) -> bool:
    return await pending(stack) == 0


async def gone(stack: Stack, game_id: str) -> bool:
    """Whether Redis holds nothing of the game's log."""
    return not any([await stack.client.exists(k) for k in game_data_keys(stack.keys, game_id)])


async def test_a_rematch_offered_after_the_game_was_forgotten_is_refused_at_once(
    stack: Stack,
) -> None:
    game_id = await finished_game(stack)
    version, head = await stack.games.store.version(game_id)
    assert stack.referee.games.cached_version(game_id) == version
    assert await Retention(stack.client, stack.keys).forget(game_id, head)

    link = CommandEntry(
        game_id,
        "seat",
        f"{SERVICE_COMMAND_PREFIX}rematch",
        {"type": "rematch", "game_id": f"g{uuid.uuid4().hex[:10]}"},
        0,
    )
    answer = await stack.requester.request(link, 10)

    assert answer["status"] == "refused" and answer["code"] == "game_archived", answer
    assert game_id in answer["message"] and "no more commands" in answer["message"]
    # The receipt of the game as it was last seen (the archived head).
    assert (answer["version"], answer["head"]) == (version, head)
    assert await gone(stack, game_id)
    assert not stack.referee.games.cached(game_id)
    await settled(stack)


async def test_a_late_move_for_a_forgotten_game_is_refused_as_archived(stack: Stack) -> None:
    game_id = await finished_game(stack)
    _, head = await stack.games.store.version(game_id)
    assert await Retention(stack.client, stack.keys).forget(game_id, head)

    late = CommandEntry(game_id, "seat", "0:late", {"type": "draw"}, 0)
    answer = await stack.requester.request(late, 10)

    assert answer["status"] == "refused" and answer["code"] == "game_archived", answer
    assert await gone(stack, game_id)
    assert not stack.referee.games.cached(game_id)
    await settled(stack)


async def test_the_api_answers_a_move_for_an_archived_game_409_game_archived(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    url = f"sqlite://{tmp_path}/archive.db"
    api_stack = await make_stack(archive_url=url, retain_seconds=0.0)
    api = api_stack.api
    game_id, _, tokens = await api.new_game(*ROBBERS)
    final = (await play_to_end(api, game_id, tokens, ["greedy", "greedy"], seed=3)).final
    archive = SqliteArchive(f"{tmp_path}/archive.db")
    await archive_games(api_stack.redis, api_stack.settings, archive, [game_id])
    assert api_stack.referee.games.cached(game_id)

    reply = await api.command(game_id, tokens[0], {"id": "late", "type": "draw"})

    assert reply.status == 409, reply
    check_error(reply.body, "game_archived")
    assert (reply.body["version"], reply.body["head"]) == (final["version"], final["head"])
    assert await api.view(game_id) == final  # still served, from the archive


async def test_a_move_for_a_game_redis_lost_is_refused_and_appends_nothing(stack: Stack) -> None:
    game_id = await create_game(stack.requester, *ROBBERS)
    loaded = await stack.games.load(game_id, fresh=True)
    assert stack.referee.games.cached_version(game_id) == loaded.version
    # Redis restarted without the game's data (the referee kept running, its cache whole).
    await stack.client.delete(*game_data_keys(stack.keys, game_id))

    answer = await stack.requester.request(move(loaded), 10)

    assert answer["status"] == "refused" and answer["code"] == "game_archived", answer
    assert answer["version"] == loaded.version
    assert await gone(stack, game_id)
    assert not stack.referee.games.cached(game_id)
    assert game_id not in stack.referee._seeds
    await settled(stack)
    # A game never seen is still "no such game": only a log that went away is "archived".
    again = await stack.requester.request(move(loaded, "0:again"), 10)
    assert again["code"] == "game_not_started", again


async def test_a_log_that_went_back_is_decided_on_as_redis_has_it(stack: Stack) -> None:
    game_id = await create_game(stack.requester, *ROBBERS)
    before = await stack.games.load(game_id, fresh=True)
    first = move(before)
    assert (await stack.requester.request(first, 10))["status"] == "accepted"
    after = await stack.games.load(game_id, fresh=True)
    assert stack.referee.games.cached_version(game_id) == after.version > before.version
    # Redis restored from a copy older than that move: the referee's cache is ahead of the log.
    await rewind(stack, game_id, before, first.cid)

    answer = await stack.requester.request(move(before), 10)

    assert answer["status"] == "accepted", (answer["code"], answer["message"])
    assert answer["version"] == after.version
    stored = await stack.games.store.read(game_id)
    assert len(stored) == after.version and verify_chain(stored) is None
    await settled(stack)


async def test_a_log_with_another_history_is_decided_on_as_redis_has_it(stack: Stack) -> None:
    game_id = await create_game(stack.requester, *ROBBERS)
    before = await stack.games.load(game_id, fresh=True)
    first = move(before)
    assert (await stack.requester.request(first, 10))["status"] == "accepted"
    after = await stack.games.load(game_id, fresh=True)
    # The same move again, as another appender made it: the same version, another head.
    moved = await stack.games.store.read(game_id, after=before.version)
    await rewind(stack, game_id, before, first.cid)
    seed = bytes.fromhex((await stack.client.get(stack.keys.seed(game_id))).decode())
    other = await stack.games.store.append(
        game_id,
        [NewEvent(e.type, e.data, e.schema, e.actor) for e in moved],
        expected_version=before.version,
        command_id="other",
        time=moved[0].time + 1,
        expected_head=before.head,
        salt_key=seed,
    )
    assert other.last_version == after.version and other.head != after.head
    assert stack.referee.games.cached_version(game_id) == after.version

    answer = await stack.requester.request(move(after), 10)

    assert answer["status"] == "accepted", (answer["code"], answer["message"])
    stored = await stack.games.store.read(game_id)
    assert stored[after.version - 1].hash == other.head
    assert len(stored) == answer["version"] and verify_chain(stored) is None
    await settled(stack)


async def rewind(stack: Stack, game_id: str, to: Loaded, cid: str) -> None:
    """The game's keys as an older copy of Redis had them: its log up to ``to``, without the
    command ``cid`` applied after it."""
    key = stack.keys.events(game_id)
    kept = await stack.client.xrange(key, max=f"{to.version}-0")
    await stack.client.delete(key)
    for entry_id, fields in kept:
        await stack.client.xadd(key, fields, id=entry_id)
    await stack.client.hset(
        stack.keys.head(game_id), mapping={"version": to.version, "hash": to.head}
    )
    await stack.client.hdel(stack.keys.commands(game_id), cid)


@pytest.mark.parametrize("held", [True, False], ids=["its-referee", "another-referee"])
async def test_a_gateway_stops_showing_a_game_redis_lost_once_a_move_finds_no_log(
    make_stack: MakeStack, held: bool
) -> None:
    """The gateway's cached state of a game Redis lost (its referee's refusal: game_archived;
    a referee that never held it: game_not_started) goes with the refusal, so the game's page
    says it is gone instead of showing it in play for as long as the cache keeps it."""
    api_stack = await make_stack()
    api = api_stack.api
    game_id, _, tokens = await api.new_game(*ROBBERS)
    seat = (await api.view(game_id))["turn"]["seat"]
    await api_stack.redis.delete(*game_data_keys(Keys(api_stack.settings.prefix), game_id))
    if not held:
        api_stack.referee.games.forget(game_id)  # as a referee restarted since would be
    path = f"/api/games/{game_id}"
    assert (await api.call("GET", path)).status == 200  # what the gateway cached

    reply = await api.command(game_id, tokens[seat], {"id": "lost", "type": "draw"})

    assert reply.status == 409, reply
    check_error(reply.body, "game_archived" if held else "game_not_started")
    gone_page = await api.call("GET", path)
    assert gone_page.status == 404, gone_page
    check_error(gone_page.body, "not_found")


@pytest.mark.parametrize("answered_since", [False, True])
async def test_a_gateway_drops_its_cached_games_when_redis_comes_back_without_its_data(
    make_stack: MakeStack, answered_since: bool
) -> None:
    """Its heartbeat finds its reply stream lost: gone, or made again (with no time to live) by
    an answer a referee wrote since. Every game it caches goes (a page nobody moves on
    included), once, and the stream is made again."""
    api_stack = await make_stack()
    api = api_stack.api
    gateway = api_stack.server.app[GATEWAY]
    game_id, _, _ = await api.new_game(*ROBBERS)
    path = f"/api/games/{game_id}"
    assert (await api.call("GET", path)).status == 200
    await gateway.heartbeat()
    assert gateway.games.cached(game_id)  # nothing lost, nothing dropped
    prefix = api_stack.settings.prefix
    lost = [key async for key in api_stack.redis.scan_iter(match=f"{prefix}*")]
    await api_stack.redis.delete(*lost)  # Redis restarted empty
    if answered_since:
        await api_stack.redis.xadd(gateway.requester.stream, {b"a": b"an answer"})

    await gateway.heartbeat()

    assert not gateway.games.cached(game_id)
    # Made again with its time to live, so the next beat keeps it: dropped once.
    assert await api_stack.redis.pttl(gateway.requester.stream) > 0
    assert await gateway.requester.keep()
    gone_page = await api.call("GET", path)
    assert gone_page.status == 404, gone_page
    check_error(gone_page.body, "not_found")


async def test_a_gateway_that_only_served_pages_drops_them_when_redis_lost_its_data(
    make_stack: MakeStack,
) -> None:
    """A gateway that never sent a command still has a reply stream (made as it started), so
    it finds the loss as any other does."""
    api_stack = await make_stack()
    gateway = api_stack.server.app[GATEWAY]
    elsewhere = Requester(
        Bus(api_stack.redis, Keys(api_stack.settings.prefix), api_stack.settings.partitions),
        "elsewhere",
    )
    try:
        game_id = await create_game(elsewhere, *ROBBERS)
    finally:
        await elsewhere.close()
    path = f"/api/games/{game_id}"
    assert (await api_stack.api.call("GET", path)).status == 200
    await gateway.heartbeat()
    assert gateway.games.cached(game_id)
    prefix = api_stack.settings.prefix
    lost = [key async for key in api_stack.redis.scan_iter(match=f"{prefix}*")]
    await api_stack.redis.delete(*lost)  # Redis restarted empty

    await gateway.heartbeat()

    assert not gateway.games.cached(game_id)
    assert (await api_stack.api.call("GET", path)).status == 404
