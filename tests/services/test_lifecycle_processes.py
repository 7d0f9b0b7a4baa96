"""Games that always end, with real processes: separate `rummy gateway`, `rummy referee`, `rummy
scoring` and `rummy bots` on a redis-server of the test's own. The present seats play through
the HTTP API as a careful client does (``tests/faults/harness.py``); an absent seat sends
nothing, and its game still finishes under each ``absent`` policy in every rule set (Decision
17); a player who was away takes its seat back; and a lobby of abandoned games empties once the
referees expire them (Decision 18).

What is asserted is what the logs and the lobby show (the policy's events, the bot's moves
under its name, clean audits of the logs and of the exported records, every acknowledged
command applied once), never how long anything took.
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

from shared.audit.record import loads
from shared.audit.verify import audit_record
from shared.core.commands import command_json
from shared.core.rulesets import OPTIONS, rule_set
from shared.core.views import seat_view_from_json
from shared.infra.stored import StoredEvent
from shared.play.bots import BOTS
from tests.faults.harness import Client, Deployment, Json, Ledger, check_logs
from tests.servers import RedisServer, until, wait_ready
from tests.services.bot_games import RULE_SETS

pytestmark = pytest.mark.slow

POLICIES = ("skip", "bot", "forfeit")
ABSENT = 2  # the seat that never answers (of three)
SEATS = 3
STUCK_SECONDS = 90.0  # safety net only: a game whose version stands still that long is stuck
# The shortest absence the rules allow, missed once: the policy applies at the seat's first turn.
ABSENT_SECONDS = OPTIONS["absent_seconds"].low


def absent_options(policy: str, rounds: int = 1, bot: str = "greedy") -> Json:
    """Untimed (the absence limit, not a turn timer, ends the absent seat's turn)."""
    return {
        "match_rounds": rounds,
        "turn_seconds": None,
        "absent_seconds": ABSENT_SECONDS,
        "absent_turns": 1,
        "absent": policy,
        "absent_bot": bot,
    }


@pytest.fixture
def make_deployment(tmp_path: Path) -> Iterator[Callable[..., Deployment]]:
    """``make_deployment(**settings)``: a started redis-server of the test's own and an empty
    deployment on it (its processes see no REDIS_URL or RUMMY_* of the test's environment)."""
    made: list[Deployment] = []

    def make(**settings: str) -> Deployment:
        server = RedisServer(tmp_path / f"redis{len(made)}")
        deployment = Deployment(server, tmp_path, {"RUMMY_BOT_DELAY_SECONDS": "0", **settings})
        made.append(deployment)
        server.start()
        return deployment

    try:
        yield make
    finally:
        for deployment in made:
            deployment.close()
            deployment.redis.close()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as opened:
        yield opened


async def started(
    deployment: Deployment, session: aiohttp.ClientSession, bots: bool = True
) -> Client:
    """The four services (bots too unless ``bots`` is false), ready; a client of the gateway."""
    gateway = deployment.start("gateway", "gateway-0")
    services = [gateway, deployment.start("referee", "referee-0")]
    services.append(deployment.start("scoring", "scoring-0"))
    if bots:
        services.append(deployment.start("bots", "bots-0"))
    await wait_ready(session, *services)
    return Client(session, gateway.port, Ledger())


async def play_present(
    client: Client,
    game_id: str,
    tokens: list[str],
    absent: int,
    seed: int,
    back: Callable[[Json], bool] | None = None,
    by: str = "return",
) -> Json:
    """Play every seat but ``absent`` (greedy) through the API until the game is finished; the
    absent seat sends nothing, unless ``back`` says (of the spectator view) that its player is
    back: it then sends ``return`` (``by``), or its move of the turn it is on (``by`` "move"),
    and plays like the others from then on. Returns the final spectator view."""
    rng = random.Random(seed)
    player = BOTS["greedy"]()
    away = {absent}
    seen, since = -1, time.monotonic()
    while True:
        spectator = await client.view(game_id)
        if spectator["status"] == "finished":
            return spectator
        if spectator["version"] != seen:
            seen, since = spectator["version"], time.monotonic()
        assert time.monotonic() - since < STUCK_SECONDS, f"{game_id} stuck at version {seen}"
        if away and back is not None and back(spectator):
            away.clear()
            if by == "return":
                body = {"type": "return", "id": uuid.uuid4().hex}
                status, doc = await client.command(game_id, absent, tokens[absent], body)
                assert status == 200, (status, doc)
                continue
        turn = spectator["turn"]
        if turn is None or turn["seat"] in away:
            await asyncio.sleep(0.05)  # between rounds, or the absent seat's turn
            continue
        seat = turn["seat"]
        view = await client.view(game_id, tokens[seat])
        if view["turn"] is None or view["turn"]["seat"] != seat:
            continue  # it moved on between the two reads
        rules = rule_set(view["rules"]["name"], view["rules"]["options"])
        command = player.choose(seat_view_from_json(view, rules), rng)
        body = command_json(command, with_seat=False) | {
            "id": uuid.uuid4().hex,
            "expected_version": view["version"],
        }
        await client.command(game_id, seat, tokens[seat], body)


async def exported_audit(client: Client, game_id: str) -> None:
    """The finished game's exported record audits clean. Asked again, as a client would, while
    another export from this address is worked out (the games of a test end together, and an
    address has one costly answer at a time: ``503 solver_busy``)."""
    url = f"{client.base}/api/games/{game_id}/export"

    async def exported() -> str | None:
        async with client.session.get(url) as response:
            text = await response.text()
            if response.status == 503 and '"solver_busy"' in text:
                return None
            assert response.status == 200, (response.status, text[:500])
            return text

    text = await until(exported, 60, every=0.1)
    audit = audit_record(loads(text))
    assert audit.ok, (game_id, [v.to_json() for v in audit.verdicts])


def of_seat(events: list[StoredEvent], seat: int, kind: str) -> list[StoredEvent]:
    return [e for e in events if e.type == kind and e.data.get("seat") == seat]


def check_absent_seat(
    events: list[StoredEvent],
    policy: str,
    game_id: str,
    absent: int = ABSENT,
    bot: str = "greedy",
) -> None:
    """The absent seat's events are the policy's: its first turn timed out as absent, then
    skipped, handed to the bot (which then played it under its own name) or resigned; it never
    moved itself."""
    said = (game_id, policy)
    timed_out = of_seat(events, absent, "TurnTimedOut")
    assert timed_out and timed_out[0].data.get("reason") == "absent", (said, timed_out[:1])
    assert not [e for e in events if e.actor == f"seat:{absent}"], said
    handled = {
        "skip": of_seat(events, absent, "SeatSkipped"),
        "bot": of_seat(events, absent, "SeatHandedToBot"),
        "forfeit": of_seat(events, absent, "SeatResigned"),
    }
    for name, found in handled.items():
        assert len(found) == (1 if name == policy else 0), (said, name, found)
    (decided,) = handled[policy]
    assert decided.data["reason"] == "absent", (said, decided.data)
    assert decided.version > timed_out[0].version, said
    later = [e for e in events if e.version > decided.version]
    bot_moves = [e for e in later if e.actor == f"bot:{bot}"]
    if policy == "bot":
        assert decided.data["bot"] == bot, said
        assert bot_moves, f"{said}: the bot never moved the seat"
        # Its moves are the seat's (the turn it starts next, by ending its own, is another's;
        # a round it ends names no seat).
        moved = {e.data["seat"] for e in bot_moves if e.type != "TurnStarted" and "seat" in e.data}
        assert moved == {absent}, (said, moved)
    else:
        assert not bot_moves, said
    if policy == "skip":
        skipped = [e.data.get("reason") for e in of_seat(later, absent, "TurnTimedOut")]
        assert skipped and set(skipped) == {"skipped"}, (said, skipped)
    if policy == "forfeit":
        assert not of_seat(later, absent, "TurnStarted"), f"{said}: a resigned seat played on"


# The bot each rule set's absent seat is handed to (absent: bot): the strong one, the one that
# holds its plays back, and the one whose layouts are now and then refused.
ABSENT_BOTS = {"robbers": "solver", "robbers-classic": "hoarder", "rummikub": "clumsy"}


async def test_games_with_a_seat_that_never_answers_finish_under_every_policy(
    make_deployment: Callable[..., Deployment], session: aiohttp.ClientSession
) -> None:
    """Every rule set under every ``absent`` policy, in matches of two rounds where the rules
    have rounds (the seat stays skipped, played by the bot or out of the match across them);
    and two-seat games under ``forfeit``, which the seat left wins (Decision 16)."""
    deployment = make_deployment()
    client = await started(deployment, session)
    games: list[tuple[str, str, int, str, list[str]]] = []
    for policy in POLICIES:
        for rules in RULE_SETS:
            options = absent_options(policy, rounds=2, bot=ABSENT_BOTS[rules])
            games.append((policy, rules, ABSENT, *await client.new_game(rules, SEATS, options)))
    for rules in RULE_SETS:
        made = await client.new_game(rules, 2, absent_options("forfeit", rounds=2))
        games.append(("forfeit", rules, 1, *made))
    finals = await asyncio.gather(
        *(
            play_present(client, game_id, tokens, absent, seed)
            for seed, (_, _, absent, game_id, tokens) in enumerate(games)
        )
    )
    game_ids = [game_id for _, _, _, game_id, _ in games]
    logs = await check_logs(deployment.redis.url, deployment.prefix, game_ids, client.ledger)
    for (policy, rules, absent, game_id, tokens), final in zip(games, finals, strict=True):
        events = logs[game_id]
        check_absent_seat(events, policy, game_id, absent, ABSENT_BOTS[rules])
        rounds = [e for e in events if e.type == "RoundEnded"]
        if len(tokens) == 2:  # the last seat left won at once
            assert final["winner"] == [0], (game_id, final["winner"])
            assert [e.data["reason"] for e in rounds] == ["resigned"], (game_id, rules)
        else:
            assert len(rounds) >= (1 if rules == "robbers-classic" else 2), (game_id, rules)
        await exported_audit(client, game_id)
    assert client.ledger.acks, "the present seats sent nothing"


def away_as(policy: str, on_turn: bool = False) -> Callable[[Json], bool]:
    """Whether the absent seat is away under ``policy`` (``on_turn``: and on its turn)."""

    def away(spectator: Json) -> bool:
        turn = spectator["turn"]
        here = not on_turn or (turn is not None and turn["seat"] == ABSENT)
        return bool(spectator["seats"][ABSENT]["away"] == policy and here)

    return away


async def return_to(
    deployment: Deployment, gateway: Client, rules: str, policy: str, by: str
) -> None:
    """One game whose absent player comes back ``by`` a return or a move; its log shows the
    seat away by ``policy``, then back by that command, which was acknowledged."""
    client = copy.copy(gateway)
    client.ledger = Ledger()  # this game's acknowledgements only, for its checks
    game_id, tokens = await client.new_game(rules, SEATS, absent_options(policy))
    back = away_as(policy, on_turn=by == "move")
    final = await play_present(client, game_id, tokens, ABSENT, 1, back=back, by=by)
    said = (game_id, rules, policy, by)
    assert final["seats"][ABSENT]["away"] is None and not final["seats"][ABSENT]["bot"], said
    logs = await check_logs(deployment.redis.url, deployment.prefix, [game_id], client.ledger)
    events = logs[game_id]
    handed = "SeatHandedToBot" if policy == "bot" else "SeatSkipped"
    (away,) = of_seat(events, ABSENT, handed)
    returned = of_seat(events, ABSENT, "SeatReturned")
    reason = "returned" if by == "return" else "moved"
    assert [e.data["reason"] for e in returned] == [reason], (said, returned)
    assert returned[0].version > away.version, said
    assert returned[0].actor == f"seat:{ABSENT}", said
    # The command that brought the player back was acknowledged (and, check_logs saw, applied
    # once).
    acked = {ack.cid for ack in client.ledger.acks}
    assert returned[0].command_id in acked, (said, returned[0].command_id)
    after = [e for e in events if e.version > returned[0].version]
    assert not [e for e in after if e.actor == "bot:greedy"], f"{said}: the bot played on"
    await exported_audit(client, game_id)


async def test_a_returning_player_takes_the_seat_back(
    make_deployment: Callable[..., Deployment], session: aiohttp.ClientSession
) -> None:
    """Back after being handed to a bot or skipped, by ``return``; and, with the bots service
    away (so that the handed seat's turn waits out its absence limit), by a move of its own."""
    with_bots, without = make_deployment(), make_deployment()
    clients = await asyncio.gather(
        started(with_bots, session), started(without, session, bots=False)
    )
    await asyncio.gather(
        return_to(with_bots, clients[0], "robbers", "bot", "return"),
        return_to(with_bots, clients[0], "rummikub", "skip", "return"),
        return_to(without, clients[1], "robbers-classic", "bot", "move"),
    )


async def listed(client: Client, status: str) -> set[str]:
    """The games of one lobby list, paged through two at a time (the pages that drop expired
    games on the way must skip none of the others)."""
    shown: list[str] = []
    cursor: str | None = "0"
    while cursor is not None:
        path = f"/api/games?status={status}&limit=2&cursor={cursor}"
        code, doc = await client.retrying("GET", path)
        assert code == 200, (code, doc)
        shown += [game["game_id"] for game in doc["games"]]
        cursor = doc["next"]
    assert len(shown) == len(set(shown)), shown
    return set(shown)


# A playing game's expiry comes after its first absence limit: the referee's own timeouts, which
# end turns meanwhile, do not keep a game alive (Decision 18). A waiting game's comes sooner.
PLAYING_EXPIRY = ABSENT_SECONDS + 5
WAITING_EXPIRY = 5


async def test_a_lobby_of_abandoned_games_empties_after_its_expiry(
    make_deployment: Callable[..., Deployment], session: aiohttp.ClientSession
) -> None:
    """Waiting games nobody joined (one with a seat taken, one with none), playing games nobody
    moves in (one of them with its turns ended by the absence limit meanwhile), and a cancelled
    game: none is listed once the referees have expired them."""
    deployment = make_deployment(
        RUMMY_WAITING_EXPIRY_SECONDS=str(WAITING_EXPIRY),
        RUMMY_PLAYING_EXPIRY_SECONDS=str(PLAYING_EXPIRY),
    )
    client = await started(deployment, session, bots=False)
    waiting = []
    for seated in (0, 1):
        status, doc = await client.call("POST", "/api/games", {"rules": "robbers", "seats": 2})
        assert status == 201, (status, doc)
        for n in range(seated):
            status, _ = await client.call(
                "POST", f"/api/games/{doc['game_id']}/seats", {"name": f"p{n}"}
            )
            assert status == 201
        waiting.append(doc["game_id"])
    assert await listed(client, "waiting") >= set(waiting)
    playing = [(await client.new_game(rules, 2, {}))[0] for rules in RULE_SETS]
    timed_out, _ = await client.new_game("robbers", 2, absent_options("skip"))
    assert await listed(client, "playing") >= {*playing, timed_out}
    status, doc = await client.call("POST", "/api/games", {"rules": "robbers", "seats": 2})
    assert status == 201, (status, doc)
    cancelled = doc["game_id"]
    status, doc = await client.call("POST", f"/api/games/{cancelled}/cancel", {}, doc["host_token"])
    assert status == 200 and doc["status"] == "cancelled", (status, doc)
    assert cancelled not in await listed(client, "waiting")
    abandoned = [*waiting, *playing, timed_out]

    async def expired() -> bool:
        for game_id in abandoned:
            if (await client.view(game_id))["status"] != "cancelled":
                return False
        return True

    await until(expired, 120, every=0.2)
    for game_id in [*abandoned, cancelled]:
        view = await client.view(game_id)
        assert view["cancelled"] == ("host" if game_id == cancelled else "expired"), view
    for status_name in ("waiting", "playing", "finished"):
        shown = await listed(client, status_name)
        assert not shown & {*abandoned, cancelled}, (status_name, shown)
    logs = await check_logs(
        deployment.redis.url,
        deployment.prefix,
        [*abandoned, cancelled],
        client.ledger,
        finished=False,
    )
    for game_id in abandoned:
        (ended,) = [e for e in logs[game_id] if e.type == "GameCancelled"]
        assert ended.data["reason"] == "expired" and ended.version == len(logs[game_id])
    for game_id in playing:  # nobody moved: the referee's own deadlines did not fire either
        assert not [e for e in logs[game_id] if e.type == "TurnTimedOut"], game_id
    ends = [e for e in logs[timed_out] if e.type in ("TurnTimedOut", "SeatSkipped")]
    assert [e.type for e in ends][:2] == ["TurnTimedOut", "SeatSkipped"], ends
    assert not [e for e in logs[timed_out] if e.actor and e.actor.startswith("seat:")]
