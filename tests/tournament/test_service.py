"""The tournament service in process (fakeredis, or the real Redis at REDIS_URL) beside the real
referee, scoring and bots: a Swiss tournament of bots played to its end through the desk, every
table played once and every round paired once; redelivered commands and steps done again
change nothing; a service stopped abruptly mid-round and started again finishes the
tournament with nothing lost or doubled; bad commands are answered with their field and write
nothing."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from services.tournament.service import TournamentService, step_id
from shared.infra.protocol import CommandEntry
from shared.infra.tournaments import TournamentDesk, summary
from shared.tournament.commands import SERVICE, PairRound
from tests.services.bot_games import Players, play_people
from tests.services.conftest import Stack, stack  # noqa: F401 (the fixture)

DIRECTOR = "d" * 32
TOURNAMENT = "t00000000000000a1"
BOTS = ("greedy", "random", "clumsy", "stubborn")
CREATE_BODY = {
    "name": "Club night",
    "rules": "robbers",
    "options": {"match_rounds": 1},
    "format": "swiss",
    "rounds": 2,
    "table_seats": 2,
    "fill": "byes",
}


@dataclass
class Run:
    """The tournament services of one test, a desk and the bots."""

    stack: Stack
    desk: TournamentDesk
    players: Players
    running: dict[int, tuple[TournamentService, asyncio.Task[None]]] = field(default_factory=dict)

    def start(self, consumer: str = "tournaments-1", sweep: float = 0.5) -> TournamentService:
        service = TournamentService(
            self.stack.client, self.stack.settings_for(consumer), sweep_seconds=sweep
        )
        self.running[id(service)] = (service, asyncio.create_task(service.run()))
        return service

    async def stop(self, service: TournamentService) -> None:
        service.stop()
        _, task = self.running.pop(id(service))
        await asyncio.wait_for(task, 20)

    async def kill(self, service: TournamentService) -> None:
        """Stop it with no drain: its task is cancelled wherever it is."""
        _, task = self.running.pop(id(service))
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await service.referees.close()


@pytest.fixture
async def run(stack: Stack) -> AsyncIterator[Run]:  # noqa: F811
    players = Players(stack)
    players.start()
    desk = TournamentDesk(stack.client, stack.keys, "test", timeout=10.0)
    built = Run(stack, desk, players)
    try:
        yield built
    finally:
        for service, task in list(built.running.values()):
            service.stop()
            await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 20)
        await players.stop_all()
        await desk.close()


async def send(
    run: Run, kind: str, payload: dict[str, Any] | None = None, actor: str = DIRECTOR, cid: str = ""
) -> dict[str, Any]:
    return await run.desk.send(TOURNAMENT, kind, cid or kind, payload or {}, actor)


async def open_tournament(run: Run, rounds: int = 2) -> None:
    """Create a Swiss of four bots at tables of two, its games one round each, and close it."""
    create = {**CREATE_BODY, "rounds": rounds}
    for kind, payload in (("create", create), ("open", {})):
        answer = await send(run, kind, payload)
        assert answer["status"] == "accepted", answer
    for bot in BOTS:
        entrant = {"player": f"bot:{bot}", "name": f"{bot} bot", "rating": 0.0}
        answer = await send(run, "register", entrant, cid=f"register-{bot}")
        assert answer["status"] == "accepted", answer
    answer = await send(run, "close")
    assert answer["status"] == "accepted", answer


async def finished(run: Run) -> bool:
    state = await run.desk.load(TOURNAMENT)
    return state is not None and state.status == "finished"


async def tournament_log(run: Run) -> list[Any]:
    return await run.desk.log.store.read(TOURNAMENT)


async def check_played_once(run: Run, rounds: int) -> None:
    """Every round paired once, every table started and finished once, from its game's end."""
    log = await tournament_log(run)
    types = Counter(e.type for e in log)
    assert types["RoundPaired"] == rounds, types
    paired = [e for e in log if e.type == "RoundPaired"]
    assert [e.data["round"] for e in paired] == list(range(1, rounds + 1))
    tables = [(e.data["round"], t["table"]) for e in paired for t in e.data["tables"]]
    started = [(e.data["round"], e.data["table"]) for e in log if e.type == "TableStarted"]
    done = [(e.data["round"], e.data["table"]) for e in log if e.type == "TableFinished"]
    assert sorted(started) == sorted(tables) == sorted(done)
    assert types["TournamentFinished"] == 1
    for event in log:
        if event.type != "TableFinished":
            continue
        game = await run.stack.games.store.read(event.data["game_id"])
        game_types = [g.type for g in game]
        assert game_types.count("MatchEnded") == 1 and game_types.count("GameCreated") == 1
        assert event.data["head"] == [game[-1].version, game[-1].hash]
        assert {r["player"] for r in event.data["results"]} <= {f"bot:{b}" for b in BOTS}


def count_reads(service: TournamentService, slow: float = 0.0) -> Counter[str]:
    """The records of each game the service fetches from now on (each fetch ``slow`` seconds
    late, which widens the windows in which two advances could overlap)."""
    read: Counter[str] = Counter()
    fetching = service.games.records

    async def counted(game_id: str, after: int = 0, limit: int | None = None) -> list[bytes]:
        records = await fetching(game_id, after, limit)
        await asyncio.sleep(slow)
        read[game_id] += len(records)
        return records

    service.games.records = counted  # type: ignore[method-assign]
    return read


async def check_read_about_twice(run: Run, read: Counter[str]) -> None:
    """Every game end and sweep asks after each started table: a game in play is fetched on
    from where the last ask stopped, its whole log once its end is in."""
    for event in await tournament_log(run):
        if event.type == "TableFinished":
            game = event.data["game_id"]
            length = len(await run.stack.games.store.read(game))
            assert 0 < read[game] <= 2 * length, (game, read[game], length)


async def test_a_swiss_of_bots_is_played_to_its_end(run: Run) -> None:
    service = run.start()
    read = count_reads(service)
    await open_tournament(run)
    await run.stack.until(lambda: finished(run), timeout=120)
    await check_played_once(run, 2)
    state = await run.desk.load(TOURNAMENT)
    assert state is not None and len(state.standings) == 4
    assert state.standings[0].rank == 1
    page = await run.desk.page("finished")
    assert [row["tournament_id"] for row in page["tournaments"]] == [TOURNAMENT]
    assert (await run.desk.page("running"))["tournaments"] == []
    steps = service.metrics.registry.get_sample_value("tournaments_steps_total", {"step": "pair"})
    assert steps == 2
    await check_read_about_twice(run, read)

    # Finished, its games leave the game -> table map (which would grow for ever otherwise).
    async def tables_forgotten() -> bool:
        return not await run.stack.client.hlen(run.stack.keys.tournament_tables())

    await run.stack.until(tables_forgotten, timeout=20)


async def test_sweeps_and_game_ends_at_once_read_no_game_more_than_twice(run: Run) -> None:
    # Sweeps every 10 ms and slow reads: a sweep is nearly always under way when a game's end
    # comes in, and the two advances would each read its whole log if they ran at once.
    service = run.start(sweep=0.01)
    read = count_reads(service, slow=0.02)
    await open_tournament(run)
    await run.stack.until(lambda: finished(run), timeout=120)
    await check_played_once(run, 2)
    await check_read_about_twice(run, read)


async def test_steps_and_commands_done_again_change_nothing(run: Run) -> None:
    service = run.start()
    await open_tournament(run)
    await run.stack.until(lambda: finished(run), timeout=120)
    before = await tournament_log(run)
    # The service's own step again: its first outcome, nothing appended.
    answer = await service.step(TOURNAMENT, PairRound(1))
    assert answer["status"] == "accepted" and answer["duplicate"], answer
    # A director's command again (same id): its first answer.
    again = await send(run, "close")
    assert again["status"] == "accepted" and again["duplicate"], again
    # A table seated and started again: the referees answer each command with its first outcome.
    state = await run.desk.load(TOURNAMENT)
    assert state is not None
    table = state.played[0].tables[0]
    game_before = await run.stack.games.store.read(table.game_id)
    await service.start_table(state, table)  # the step itself, done again
    assert await run.stack.games.store.read(table.game_id) == game_before
    await service.sweep()
    assert await tournament_log(run) == before
    assert step_id(PairRound(1)) == f"{SERVICE}:pair:1"


async def test_a_service_killed_mid_round_resumes_with_nothing_lost_or_doubled(run: Run) -> None:
    first = run.start("tournaments-1")
    await open_tournament(run, rounds=3)

    async def started() -> bool:
        log = await tournament_log(run)
        return any(e.type == "TableStarted" for e in log)

    await run.stack.until(started, timeout=60)
    await run.kill(first)
    run.start("tournaments-2")
    await run.stack.until(lambda: finished(run), timeout=180)
    await check_played_once(run, 3)


async def test_bad_commands_are_answered_with_their_field_and_write_nothing(run: Run) -> None:
    run.start()
    await open_tournament(run)
    await run.stack.until(lambda: finished(run), timeout=120)
    before = await tournament_log(run)
    cases = [
        ("dance", {}, DIRECTOR, "bad_command", "kind"),
        ("register", {"player": "bot:nobody", "name": "x"}, DIRECTOR, "bad_command", "player"),
        (
            "rule",
            {"kind": "annul", "round": 1, "table": 1, "reason": "x"},
            "e" * 32,
            "not_director",
            "actor",
        ),
        ("pair", {"round": 9}, SERVICE, None, None),
    ]
    for kind, payload, actor, code, where in cases:
        answer = await run.desk.send(TOURNAMENT, kind, f"bad-{kind}", payload, actor)
        assert answer["status"] == "rejected", answer
        if code is not None:
            assert (answer["code"], answer["field"]) == (code, where), answer
        assert answer["message"]
    reused = await send(run, "open", {}, cid="close")
    assert reused["status"] == "rejected" and reused["code"] == "command_id_reused", reused
    wrong = await run.desk.send("x1", "open", "o", {}, DIRECTOR)
    assert (wrong["status"], wrong["field"]) == ("rejected", "tournament_id")
    assert await tournament_log(run) == before
    assert await run.desk.load("t" + "f" * 16) is None


async def test_malformed_entries_are_dead_lettered_and_a_bodyless_command_is_answered(
    run: Run,
) -> None:
    run.start()
    client, keys = run.stack.client, run.stack.keys
    await client.xadd(keys.tournament_commands(), {b"c": b"not json"})
    requester = run.desk.requester
    entry = CommandEntry(TOURNAMENT, "open", "x:open", {"payload": {}})
    answer = await requester.request(entry, 10.0)
    assert (answer["status"], answer["code"], answer["field"]) == (
        "rejected",
        "bad_command",
        "body",
    ), answer

    async def dead() -> bool:
        return bool(await client.xlen(keys.dead_letters()))

    await run.stack.until(dead)
    (record,) = await client.xrange(keys.dead_letters())
    assert b"malformed" in b"".join(record[1].values())
    assert await tournament_log(run) == []


async def test_a_crash_between_a_table_s_game_commands_is_resumed_once(run: Run) -> None:
    first = run.start("tournaments-1")
    sent: list[str] = []
    real = first._referee
    crashed = asyncio.Event()

    async def crashing(game: str, kind: str, cid: str, body: dict[str, Any]) -> None:
        if kind == "start" and not crashed.is_set():
            crashed.set()  # the game is created and seated, not started: the process dies here
            raise ConnectionError("the process died")
        sent.append(cid)
        await real(game, kind, cid, body)

    first._referee = crashing  # type: ignore[method-assign]
    await open_tournament(run)
    await crashed.wait()
    await run.kill(first)
    run.start("tournaments-2")
    await run.stack.until(lambda: finished(run), timeout=120)
    await check_played_once(run, 2)
    for event in await tournament_log(run):
        if event.type == "RoundPaired":
            for table in event.data["tables"]:
                game = [g.type for g in await run.stack.games.store.read(table["game_id"])]
                assert game.count("PlayerSeated") == len(table["seats"]), game
                assert game.count("GameStarted") == 1


async def test_the_sweep_lists_a_tournament_under_the_status_its_log_has(run: Run) -> None:
    service = run.start()
    await open_tournament(run)
    await run.stack.until(lambda: finished(run), timeout=120)
    await run.stop(service)  # (its own sweeps would mend the listing before the test looks)
    client, keys = run.stack.client, run.stack.keys
    # As a crash between the last append and the listing would leave it: still "running".
    await client.zrem(keys.tournaments("finished"), TOURNAMENT)
    await client.zadd(keys.tournaments("running"), {TOURNAMENT: 1.0})
    assert (await run.desk.page("finished"))["tournaments"] == []
    service = TournamentService(client, run.stack.settings_for("tournaments-2"))
    await service.sweep()
    assert [r["tournament_id"] for r in (await run.desk.page("finished"))["tournaments"]] == [
        TOURNAMENT
    ]
    assert (await run.desk.page("running"))["tournaments"] == []


async def test_accounts_sit_as_their_players_and_their_results_are_theirs(run: Run) -> None:
    """Two accounts beside two bots: each account's seat is a sit with its account id (the
    player's client plays it, here greedily), and the table's results name the account."""
    run.start()
    accounts = ["a" * 32, "b" * 32]
    create = {
        "name": "Mixed",
        "rules": "robbers",
        "options": {"match_rounds": 1},
        "format": "swiss",
        "rounds": 1,
        "table_seats": 2,
        "fill": "byes",
    }
    for kind, payload in (("create", create), ("open", {})):
        assert (await send(run, kind, payload))["status"] == "accepted"
    for number, account in enumerate(accounts):
        entrant = {"player": account, "name": f"P{number}", "rating": 0.0}
        answer = await send(run, "register", entrant, actor=account, cid="register")
        assert answer["status"] == "accepted", answer
    for bot in BOTS[:2]:
        entrant = {"player": f"bot:{bot}", "name": bot}
        assert (await send(run, "register", entrant, cid=f"register-{bot}"))["status"] == "accepted"
    assert (await send(run, "close"))["status"] == "accepted"

    async def started() -> list[str]:
        state = await run.desk.load(TOURNAMENT)
        if state is None or not state.played:
            return []
        tables = state.played[0].tables
        return [t.game_id for t in tables] if all(t.status != "paired" for t in tables) else []

    games = await run.stack.until(started, timeout=60)
    for number, game in enumerate(games):
        await play_people(run.stack.requester, run.stack.games, game, seed=number)
    await run.stack.until(lambda: finished(run), timeout=120)
    seated: dict[str, str] = {}
    for game in games:
        for event in await run.stack.games.store.read(game):
            if event.type == "PlayerSeated" and not event.data.get("bot"):
                seated[event.data["player"]] = event.data["name"]
    assert seated == {accounts[0]: "P0", accounts[1]: "P1"}
    results = {
        r["player"]
        for e in await tournament_log(run)
        if e.type == "TableFinished"
        for r in e.data["results"]
    }
    assert set(accounts) <= results


async def test_a_registration_retried_after_its_rating_moved_is_the_same_one(run: Run) -> None:
    """The sender looks a rating up at each try: a retry whose rating moved since the try that
    timed out is answered as that try was, not refused as another command under its id."""
    run.start()
    for kind, payload in (("create", {**CREATE_BODY}), ("open", {})):
        answer = await send(run, kind, payload)
        assert answer["status"] == "accepted", answer
    entrant = {"player": "p" * 32, "name": "Ann", "rating": 12.5}
    first = await send(run, "register", entrant, actor="p" * 32, cid="register")
    assert first["status"] == "accepted" and not first["duplicate"], first
    again = await send(run, "register", {**entrant, "rating": 14.0}, actor="p" * 32, cid="register")
    assert again["status"] == "accepted" and again["duplicate"], again
    other = await send(run, "register", {**entrant, "name": "Bob"}, actor="p" * 32, cid="register")
    assert other["status"] == "rejected" and other["code"] == "command_id_reused", other


async def test_a_listing_page_reads_kept_rows_not_logs(run: Run) -> None:
    """Every applied command keeps the tournament's listing row: a page folds no log (a cold
    page of many long tournaments would fold every one of them on the gateway otherwise)."""
    run.start()
    for kind, payload in (("create", {**CREATE_BODY}), ("open", {})):
        assert (await send(run, kind, payload))["status"] == "accepted"
    entrant = {"player": "p" * 32, "name": "Ann", "rating": 0.0}
    assert (await send(run, "register", entrant, actor="p" * 32))["status"] == "accepted"
    cold = TournamentDesk(run.stack.client, run.stack.keys, "cold", timeout=10.0)

    async def no_fold(tournament_id: str) -> Any:
        raise AssertionError(f"the page folded {tournament_id}'s log")

    cold.log.load = no_fold  # type: ignore[method-assign]
    try:
        page = await cold.page("registering")
    finally:
        await cold.close()
    [row] = page["tournaments"]
    assert row["tournament_id"] == TOURNAMENT and row["entrants"] == 1
    state = await run.desk.load(TOURNAMENT)
    assert state is not None and row == summary(state)


async def test_what_is_asked_of_a_tournament_being_advanced_is_done_next_all_at_once(
    run: Run,
) -> None:
    """A round's game ends come in bursts: one advance of a tournament runs at a time, and the
    ends noted meanwhile are looked at together by it next (a sweep's ask: every table)."""
    service = TournamentService(run.stack.client, run.stack.settings_for("tournaments-9"))
    looked: list[frozenset[str] | None] = []
    going_on = asyncio.Event()

    async def advance(tournament_id: str, ended: frozenset[str] | None = None) -> None:
        looked.append(ended)
        await going_on.wait()

    service.advance = advance  # type: ignore[method-assign]
    service._advance_soon(TOURNAMENT, "g1")
    await asyncio.sleep(0)
    service._advance_soon(TOURNAMENT, "g2")
    service._advance_soon(TOURNAMENT, "g3")
    going_on.set()
    await asyncio.gather(*service._advancing)
    assert looked == [frozenset({"g1"}), frozenset({"g2", "g3"})]
    going_on.clear()
    service._advance_soon(TOURNAMENT, "g4")
    await asyncio.sleep(0)
    service._advance_soon(TOURNAMENT, None)
    service._advance_soon(TOURNAMENT, "g5")
    going_on.set()
    await asyncio.gather(*service._advancing)
    assert looked[2:] == [frozenset({"g4"}), None]
    assert not service._asked
    await service.referees.close()
