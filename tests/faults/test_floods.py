"""Floods a hostile client can send, against real processes (`rummy gateway`, `referee`,
`scoring` on a redis-server of the test's own), each shown contained:

- a replay flood (many concurrent ``GET .../replay?turn=N`` of a game with a long log, no
  token): past its per-address replay limit the flooder gets ``429 rate_limited`` with
  ``Retry-After`` (and ``503 solver_busy`` past its one answer being worked out at once), in the
  published error shape, and no more replays are answered than the limit allows (a busy
  refusal gives its pass back); meanwhile another game's player, on the same gateway, has every
  command accepted at once;
- illegal-layout spam by the seat on turn: ``max_rejections`` (Decision 14) ends the turn with a
  ``TurnForfeited`` after ``max_rejections + 1`` refusals, the turn passes on and the spammer's
  further plays are ``409 not_your_turn`` (recording nothing); a burst past the per-token rate
  is ``429 rate_limited``;
- a create flood from one address: past ``RUMMY_LIMIT_CREATE_PER_MINUTE`` it is
  ``429 rate_limited``, the games made are exactly its 201s and no more than the limit allows,
  and another game plays on meanwhile, every command accepted.

Every player here comes from 127.0.0.1, so the limits shared by every route of an address
(``RUMMY_LIMIT_ADDRESS_PER_SECOND``, the read limit) stay off (the harness's default); each test
switches on only the limit under attack, small, so that it is reached quickly. Outcomes are
counted, never timed: the only clock used bounds how many requests a limit may let through."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections import Counter
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis

from shared.infra.keys import Keys
from tests.faults.conftest import MakeDeployment
from tests.faults.harness import Client, Json, Ledger, check_logs, play
from tests.servers import wait_ready

pytestmark = pytest.mark.slow

Answer = tuple[int, dict[str, str], Any]  # status, headers, body (JSON, or text)


async def request(
    session: aiohttp.ClientSession,
    port: int,
    method: str,
    path: str,
    body: Any = None,
    token: str | None = None,
) -> Answer:
    """One request, no retry: its status, headers and body."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with session.request(
        method,
        f"http://127.0.0.1:{port}{path}",
        json=body,
        headers=headers,
        timeout=aiohttp.ClientTimeout(total=60),
    ) as response:
        try:
            doc = await response.json(content_type=None)
        except ValueError:
            doc = await response.text()
        return response.status, dict(response.headers), doc


def check_refusal(answer: Answer, status: int, code: str) -> None:
    """``answer`` is the refusal ``status`` ``code`` in the published error shape, with a
    ``Retry-After`` of whole seconds, at least 1."""
    got, headers, doc = answer
    assert got == status, answer
    assert isinstance(doc, dict) and set(doc) == {"error"}, answer
    error = doc["error"]
    assert error["code"] == code and isinstance(error["message"], str) and error["message"]
    assert int(headers["Retry-After"]) >= 1, headers


def let_through(count_per_minute: float, elapsed: float) -> int:
    """The most requests a per-minute limit (a minute's worth at once) passes in ``elapsed``
    seconds."""
    return int(count_per_minute + count_per_minute * elapsed / 60.0) + 1


def illegal_play(view: Json) -> Json:
    """A play the seat of ``view`` can always make on its turn, always refused: the table as it
    is plus a one-card meld."""
    return {"id": uuid.uuid4().hex, "type": "play", "layout": [*view["table"], [view["hand"][0]]]}


async def reject(client: Client, game_id: str, tokens: list[str]) -> Json:
    """The seat on turn lays an illegal layout (refused and recorded); its answer."""
    seat = (await client.view(game_id))["turn"]["seat"]
    view = await client.view(game_id, tokens[seat])
    status, doc = await client.command(game_id, seat, tokens[seat], illegal_play(view))
    assert status == 422 and doc["error"]["code"] == "illegal_layout", (status, doc)
    return doc


async def other_game(
    session: aiohttp.ClientSession, port: int
) -> tuple[str, list[str], Client, Ledger, int]:
    """Another game on the gateway for a well-behaved player (its own client and ledger): its
    id, tokens, client, ledger and starting version."""
    ledger = Ledger()
    client = Client(session, port, ledger)
    game_id, tokens = await client.new_game("robbers", 2, {})
    return game_id, tokens, client, ledger, (await client.view(game_id))["version"]


async def play_on(client: Client, game_id: str, tokens: list[str], commands: int) -> None:
    """The well-behaved player plays ``commands`` commands of its game (bots choose them)."""
    await play(client, game_id, tokens, ["greedy", "greedy"], seed=1, stop_after=commands)


def check_unhindered(ledger: Ledger, game_id: str, commands: int, start: int, now: int) -> None:
    """Every command of the well-behaved player was answered 200 at the first try, and its log
    grew by at least that many events."""
    assert ledger.retries == 0 and not ledger.errors, (ledger.retries, dict(ledger.errors))
    assert not ledger.refusals, dict(ledger.refusals)
    acks = [a for a in ledger.acks if a.game_id == game_id]
    assert len(acks) == commands and {a.status for a in acks} == {200}, acks
    assert [a.version for a in acks] == sorted({a.version for a in acks}), acks
    assert acks[-1].version == now and now - start >= commands, (start, now)


# --- 1. a replay flood --------------------------------------------------------------------------

REPLAYS = 10  # RUMMY_LIMIT_REPLAY_PER_MINUTE: ten at once, then one every 6 s
LONG_LOG = 120  # illegal layouts in the flooded game (and a forfeit every fourth)
WAVE = 40  # replays the flooder asks at once
MIN_WAVES = 3
OTHER_COMMANDS = 30


async def test_a_replay_flood_is_refused_and_another_game_plays_on(
    make_deployment: MakeDeployment,
) -> None:
    deployment = make_deployment(RUMMY_LIMIT_REPLAY_PER_MINUTE=str(REPLAYS))
    gateway = deployment.start("gateway", "gateway")
    referee = deployment.start("referee", "referee")
    scoring = deployment.start("scoring", "scoring")
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, gateway, referee, scoring)
        client = Client(session, gateway.port, Ledger())
        flooded, tokens = await client.new_game("robbers", 2, {})
        for _ in range(LONG_LOG):
            await reject(client, flooded, tokens)
        flooded_view = await client.view(flooded)
        turns = flooded_view["turn"]["number"]
        assert flooded_view["version"] > LONG_LOG and turns > 20, flooded_view
        other, other_tokens, player, ledger, start = await other_game(session, gateway.port)

        answers: list[Answer] = []
        played = asyncio.Event()

        async def flood() -> None:
            waves = 0
            while waves < MIN_WAVES or not played.is_set():
                turn = (1 + (waves * WAVE + n) % turns for n in range(WAVE))
                paths = [f"/api/games/{flooded}/replay?turn={t}" for t in turn]
                wave = (request(session, gateway.port, "GET", path) for path in paths)
                answers.extend(await asyncio.gather(*wave))
                waves += 1

        began = time.monotonic()
        flooding = asyncio.create_task(flood())
        await play_on(player, other, other_tokens, OTHER_COMMANDS)
        played.set()
        await flooding
        elapsed = time.monotonic() - began

        statuses = Counter(status for status, _, _ in answers)
        assert set(statuses) <= {200, 429, 503}, statuses
        assert statuses[429] > len(answers) / 2, statuses
        for answer in answers:
            if answer[0] == 429:
                check_refusal(answer, 429, "rate_limited")
            elif answer[0] == 503:
                check_refusal(answer, 503, "solver_busy")
            else:
                doc = answer[2]
                assert doc["head"]["version"] == flooded_view["version"], doc
        # Every replay answered counts; one the busy pool refused gives its pass back (it was
        # not the flooder's question that was refused). No more were answered than the limit
        # allows in the time the flood lasted.
        assert 1 <= statuses[200] <= let_through(REPLAYS, elapsed), (statuses, elapsed)

        # Meanwhile the other game's player noticed nothing.
        now = (await player.view(other))["version"]
        check_unhindered(ledger, other, OTHER_COMMANDS, start, now)
        # And the flooder, once it has waited as long as it was told, is answered again (a
        # question not asked before: worked out, not kept).
        waits = {int(h["Retry-After"]) for status, h, _ in answers if status == 429}
        assert max(waits) <= math.ceil(60 / REPLAYS), waits  # never more than one interval
        await asyncio.sleep(max(waits))
        path = f"/api/games/{flooded}/replay?version={LONG_LOG}"
        status, _, doc = await request(session, gateway.port, "GET", path)
        assert status == 200 and doc["head"]["version"] == flooded_view["version"], (status, doc)

    assert gateway.stop() == 0, gateway.output()[-3000:]
    await check_logs(deployment.redis.url, deployment.prefix, [flooded, other], ledger, False)
    print(f"\n{len(answers)} replays asked in {elapsed:.1f} s: {dict(statuses)}")


# --- 2. illegal-layout spam ---------------------------------------------------------------------

COMMANDS_PER_SECOND = 4  # RUMMY_RATE_PER_SECOND: eight at once per token
SPAM = 30


async def test_illegal_layout_spam_forfeits_the_turn(make_deployment: MakeDeployment) -> None:
    deployment = make_deployment(RUMMY_RATE_PER_SECOND=str(COMMANDS_PER_SECOND))
    gateway = deployment.start("gateway", "gateway")
    referee = deployment.start("referee", "referee")
    scoring = deployment.start("scoring", "scoring")
    ledger = Ledger()
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, gateway, referee, scoring)
        client = Client(session, gateway.port, ledger)

        # A game of the default max_rejections (3): the spammer sends a burst at once.
        game, tokens = await client.new_game("robbers", 2, {})
        spectator = await client.view(game)
        seat, number = spectator["turn"]["seat"], spectator["turn"]["number"]
        view = await client.view(game, tokens[seat])
        assert view["turn"]["rejections_left"] == 3, view["turn"]
        path = f"/api/games/{game}/commands"
        began = time.monotonic()
        answers = await asyncio.gather(
            *(
                request(session, gateway.port, "POST", path, illegal_play(view), tokens[seat])
                for _ in range(SPAM)
            )
        )
        elapsed = time.monotonic() - began
        statuses = Counter(
            (status, doc["error"]["code"] if isinstance(doc, dict) else doc)
            for status, _, doc in answers
        )
        passed = statuses[(422, "illegal_layout")] + statuses[(409, "not_your_turn")]
        assert set(statuses) <= {
            (422, "illegal_layout"),
            (409, "not_your_turn"),
            (429, "rate_limited"),
        }, statuses
        assert statuses[(422, "illegal_layout")] == 4, statuses  # max_rejections + 1
        assert statuses[(409, "not_your_turn")] >= 1, statuses  # the burst went past the turn
        assert statuses[(429, "rate_limited")] >= 1, statuses  # and past the token's rate
        # No more passed the token's limit than it allows (a burst, then its rate).
        most = 2 * COMMANDS_PER_SECOND + int(COMMANDS_PER_SECOND * elapsed) + 1
        assert passed <= most, (statuses, elapsed)
        for answer in answers:
            if answer[0] == 429:
                check_refusal(answer, 429, "rate_limited")
        rejected = sorted(
            (doc["version"], doc["error"]["message"]) for status, _, doc in answers if status == 422
        )
        assert ["the turn is over" in m for _, m in rejected] == [False, False, False, True]

        after = await client.view(game)
        assert after["turn"]["seat"] != seat and after["turn"]["number"] == number + 1, after
        logs = await check_logs(deployment.redis.url, deployment.prefix, [game], ledger, False)
        events = logs[game]
        forfeits = [e for e in events if e.type == "TurnForfeited"]
        assert len(forfeits) == 1, forfeits
        forfeit = forfeits[0]
        assert (forfeit.data["seat"], forfeit.data["number"]) == (seat, number), forfeit
        assert (forfeit.data["reason"], forfeit.data["rejected"]) == ("max_rejections", 4)
        turn_rejections = [e for e in events if e.type == "CommandRejected"]
        assert len(turn_rejections) == 4 and turn_rejections[-1].version == forfeit.version - 1
        answered = [v for v, _ in rejected]  # each answer names the last event of its command
        assert [e.version for e in turn_rejections][:3] == answered[:3], (turn_rejections, answered)
        assert answered[3] == events[-1].version, (answered, events[-1])
        following = [e.type for e in events if e.version > forfeit.version]
        assert following[-1] == "TurnStarted", following
        assert events[-1].data["seat"] == after["turn"]["seat"], events[-1]

        # Once the token may send again, each further play is refused out of turn, unrecorded.
        for _ in range(5):
            status, doc = await client.command(game, seat, tokens[seat], illegal_play(view))
            assert (status, doc["error"]["code"]) == (409, "not_your_turn"), (status, doc)
        assert (await client.view(game))["version"] == after["version"]
        # The seat whose turn it now is plays as usual.
        acks = len(ledger.acks)
        await play(client, game, tokens, ["greedy", "greedy"], stop_after=1)
        assert [a.status for a in ledger.acks[acks:]] == [200], ledger.acks[acks:]
        assert int(ledger.acks[-1].cid.split(":")[0]) == after["turn"]["seat"], ledger.acks[-1]
        # And the spammer's next turn starts with its whole allowance again.
        view = await client.view(game, tokens[seat])
        assert view["turn"]["seat"] == seat and view["turn"]["rejections_left"] == 3, view["turn"]

        # A game that allows one rejected layout: the second ends the turn.
        strict, strict_tokens = await client.new_game("robbers", 2, {"max_rejections": 1})
        spectator = await client.view(strict)
        seat, number = spectator["turn"]["seat"], spectator["turn"]["number"]
        first = await reject(client, strict, strict_tokens)
        assert "the turn is over" not in first["error"]["message"], first
        view = await client.view(strict, strict_tokens[seat])
        assert view["turn"]["seat"] == seat and view["turn"]["rejections_left"] == 0, view["turn"]
        status, second = await client.command(strict, seat, strict_tokens[seat], illegal_play(view))
        assert status == 422 and "the turn is over" in second["error"]["message"], second
        status, third = await client.command(strict, seat, strict_tokens[seat], illegal_play(view))
        assert (status, third["error"]["code"]) == (409, "not_your_turn"), (status, third)
        logs = await check_logs(
            deployment.redis.url, deployment.prefix, [game, strict], ledger, False
        )
        forfeits = [e.data for e in logs[strict] if e.type == "TurnForfeited"]
        assert forfeits == [
            {"seat": seat, "number": number, "reason": "max_rejections", "rejected": 2}
        ], forfeits
        assert (await client.view(strict))["turn"]["seat"] != seat

    assert gateway.stop() == 0, gateway.output()[-3000:]
    await check_logs(deployment.redis.url, deployment.prefix, [game, strict], ledger, False)
    print(f"\n{SPAM} illegal layouts at once: {dict(statuses)}")


# --- 3. a create flood --------------------------------------------------------------------------

CREATES = 10  # RUMMY_LIMIT_CREATE_PER_MINUTE: ten at once, then one every 6 s
CREATE_WAVE = 40
MIN_CREATE_WAVES = 3


async def test_a_create_flood_is_refused_and_another_game_plays_on(
    make_deployment: MakeDeployment,
) -> None:
    deployment = make_deployment(RUMMY_LIMIT_CREATE_PER_MINUTE=str(CREATES))
    gateway = deployment.start("gateway", "gateway")
    referee = deployment.start("referee", "referee")
    scoring = deployment.start("scoring", "scoring")
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, gateway, referee, scoring)
        began = time.monotonic()
        # The other game is made first, from the same address: one of the limit's creations.
        other, other_tokens, player, ledger, start = await other_game(session, gateway.port)
        body = {"rules": "robbers", "seats": 2, "options": {}}
        answers: list[Answer] = []
        played = asyncio.Event()

        async def flood() -> None:
            waves = 0
            while waves < MIN_CREATE_WAVES or not played.is_set():
                wave = (
                    request(session, gateway.port, "POST", "/api/games", body)
                    for _ in range(CREATE_WAVE)
                )
                answers.extend(await asyncio.gather(*wave))
                waves += 1

        flooding = asyncio.create_task(flood())
        await play_on(player, other, other_tokens, OTHER_COMMANDS)
        played.set()
        await flooding
        elapsed = time.monotonic() - began

        statuses = Counter(status for status, _, _ in answers)
        assert set(statuses) == {201, 429}, statuses
        created = {doc["game_id"] for status, _, doc in answers if status == 201}
        assert len(created) == statuses[201]
        assert len(created) >= CREATES - 1 and 1 + len(created) <= let_through(CREATES, elapsed)
        for answer in answers:
            if answer[0] == 429:
                check_refusal(answer, 429, "rate_limited")

        # Once it has waited as long as it was told, the address may create again.
        waits = {int(h["Retry-After"]) for status, h, _ in answers if status == 429}
        assert max(waits) <= math.ceil(60 / CREATES), waits  # never more than one interval
        await asyncio.sleep(max(waits))
        status, _, doc = await request(session, gateway.port, "POST", "/api/games", body)
        assert status == 201, (status, doc)
        created.add(doc["game_id"])

        # The games made are exactly the 201s (and the other game): a refusal made nothing.
        status, _, lobby = await request(session, gateway.port, "GET", "/api/games?limit=200")
        assert status == 200 and lobby["next"] is None, lobby
        assert {g["game_id"] for g in lobby["games"]} == created, lobby
        redis = aioredis.Redis.from_url(deployment.redis.url)
        try:
            pattern = Keys(deployment.prefix).game("*", "events")
            streams = [key async for key in redis.scan_iter(match=pattern)]
        finally:
            await redis.aclose()
        assert len(streams) == 1 + len(created), streams

        now = (await player.view(other))["version"]
        check_unhindered(ledger, other, OTHER_COMMANDS, start, now)

    assert gateway.stop() == 0, gateway.output()[-3000:]
    await check_logs(
        deployment.redis.url, deployment.prefix, [other, *sorted(created)], ledger, False
    )
    print(f"\n{len(answers)} creations asked in {elapsed:.1f} s: {dict(statuses)}")
