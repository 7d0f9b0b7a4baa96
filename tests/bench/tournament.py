"""Tournament figures: a 256-player Swiss (64 tables of 4) played to its end through the real
services, its wall time and the tournament service's CPU per game, against the same number of
games played through the same services without it.

Starts a private redis-server, a referee and a scoring (separate processes, loopback spare
ports). The entrants are 256 accounts; their seats are played by greedy bots in this process, as
a player's client would send the moves (``play_table``). The baseline first: ``--rounds`` rounds
of 64 games of 4, each created, seated and started by this process through the referee's command
streams and played, a round's games together, the next round when they are all over. Then
`rummy tournaments` is started: the director creates the tournament (robbers, one round per
game, tables of 4, ``--rounds`` Swiss rounds), opens it, the entrants register and the director
closes it; from the close the service pairs each round, seats and starts its 64 tables, records
their results from the games' logs and pairs the next round, until the tournament is over. Then,
the tournament service stopped, the baseline again: the machine is shared, so the tournament is
bracketed by two baselines of the same run. Each of the three starts its processes afresh under a
key prefix of its own on the same Redis (a new consumer group reads its stream from the start:
a tournament service started after a baseline would first read all of its news).

Printed: the wall time of each (from the close to the finish; from the first create to the last
game's end), the tournament's against the baselines', the tournament service's CPU per game
(its process's user + system time over the tournament / the games it ran, from /proc) beside
the referee's and scoring's, and the time `rummy audit --tournament` takes to check the whole
tournament afterwards (every game audited, every result and standing recomputed), with its
verdict.

    python tests/bench/tournament.py [--entrants 256] [--rounds 3] [--plot FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from shared.core.commands import command_json  # noqa: E402
from shared.core.views import seat_view  # noqa: E402
from shared.infra.bus import Bus, Requester  # noqa: E402
from shared.infra.connection import connect, disconnect  # noqa: E402
from shared.infra.gamelog import GameLog  # noqa: E402
from shared.infra.keys import Keys  # noqa: E402
from shared.infra.protocol import CommandEntry  # noqa: E402
from shared.infra.settings import Settings  # noqa: E402
from shared.infra.store.redis import RedisEventStore  # noqa: E402
from shared.infra.tournaments import TournamentDesk  # noqa: E402
from shared.play.bots import BOTS  # noqa: E402
from tests.bench.load import cpu_seconds, redis_server  # noqa: E402
from tests.ports import spare_port  # noqa: E402
from tests.servers import url_ok, wait_until  # noqa: E402

RUMMY = [sys.executable, "-m", "services.main"]
PARTITIONS = 8
SEATS = 4
RULES = "robbers"
OPTIONS: dict[str, Any] = {"match_rounds": 1}  # one round per game: short, every rule kept
DIRECTOR = "d" * 32
TIMEOUT = 60.0  # seconds a command may wait for its answer on a loaded machine
IDLE = 5.0  # seconds the tournament service's CPU is measured with nothing to do


def entrant(i: int) -> str:
    """Entrant ``i``'s account id."""
    return f"{i + 1:032x}"


@dataclass
class Played:
    """What one run played: its games, the moves its players sent, its wall time, and the
    wall time of each of its rounds."""

    games: int = 0
    moves: int = 0
    seconds: float = 0.0
    rounds: list[float] = field(default_factory=list)


def per_game(cpu: float, games: int) -> float:
    """Milliseconds of CPU per game."""
    return cpu / games * 1000 if games else 0.0


def ratio(measured: float, baseline: float) -> float:
    """``measured`` against ``baseline`` (0 when there is no baseline)."""
    return measured / baseline if baseline else 0.0


async def play_table(
    requester: Requester, games: GameLog, game_id: str, luck: int, wait: float = 120.0
) -> int:
    """Play every seat of ``game_id`` (greedy, as each player's client sends its moves) until
    the game is over; the moves sent. Waits for the game to exist first."""
    rng = random.Random(luck)
    player = BOTS["greedy"]()
    loop = asyncio.get_running_loop()
    sent = 0
    seen, since = -1, loop.time()
    while True:
        state = (await games.load(game_id, fresh=True)).state
        if state.status in ("finished", "cancelled"):
            return sent
        if state.version != seen:
            seen, since = state.version, loop.time()
        elif loop.time() - since > wait:
            raise RuntimeError(f"game {game_id} stuck at version {seen} ({state.phase})")
        turn = state.turn
        if state.status != "playing" or state.phase != "turns" or turn is None:
            await asyncio.sleep(0.02)
            continue
        body = command_json(player.choose(seat_view(state, turn.seat), rng), with_seat=False)
        body["expected_version"] = state.version
        entry = CommandEntry(
            game_id, "seat", f"{turn.seat}:{uuid.uuid4().hex}", body, seat=turn.seat
        )
        answer = await requester.request(entry, TIMEOUT)
        if answer["status"] not in ("accepted", "rejected", "refused"):
            raise RuntimeError(f"game {game_id}: {answer}")
        sent += 1


@dataclass
class Deployment:
    """The processes of a run and where they listen."""

    redis_url: str
    prefix: str
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, name: str) -> None:
        """Start `rummy <name>` on the run's Redis and wait until it is ready."""
        port = spare_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "REDIS_URL": self.redis_url,
            "RUMMY_PREFIX": self.prefix,
            "RUMMY_PARTITIONS": str(PARTITIONS),
            "RUMMY_HTTP_HOST": "127.0.0.1",
            "RUMMY_HTTP_PORT": str(port),
            "RUMMY_LOG_LEVEL": "warning",
        }
        self.procs[name] = subprocess.Popen(
            [*RUMMY, name],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(partial(url_ok, f"http://127.0.0.1:{port}/readyz"), 60)

    def cpu(self) -> dict[str, float]:
        names = list(self.procs)
        return dict(zip(names, cpu_seconds([self.procs[n].pid for n in names]), strict=True))

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()

    def fresh(self, names: tuple[str, ...]) -> None:
        """Stop every process, then start ``names`` under a prefix of their own: each run
        starts on an empty feed (a consumer group reads its stream from the start, so a
        service started after a run would first read all of that run's news)."""
        for name in list(self.procs):
            self.stop(name)
        self.prefix = f"htaudit:bench{uuid.uuid4().hex[:6]}:"
        for name in names:
            self.start(name)


@contextmanager
def deployment() -> Iterator[Deployment]:
    """A private Redis (each run starts its processes on it with ``fresh``)."""
    with redis_server() as redis_url:
        run = Deployment(redis_url, "")
        try:
            yield run
        finally:
            for name in list(run.procs):
                run.stop(name)


async def _accepted(answer: dict[str, Any]) -> None:
    if answer["status"] != "accepted":
        raise RuntimeError(f"refused: {answer}")


async def tournament(run: Deployment, entrants: int, rounds: int) -> tuple[str, Played, float]:
    """Run the Swiss to its end; its id, what was played and the tournament service's CPU
    seconds from the close to the finish."""
    settings = Settings(redis_url=run.redis_url, prefix=run.prefix, partitions=PARTITIONS)
    client = connect(settings)
    keys = Keys(run.prefix)
    desk = TournamentDesk(client, keys, f"bench-{uuid.uuid4().hex[:6]}", timeout=TIMEOUT)
    requester = Requester(Bus(client, keys, PARTITIONS), f"players-{uuid.uuid4().hex[:6]}")
    games = GameLog(RedisEventStore(client, run.prefix))
    tid = "t" + uuid.uuid4().hex[:16]
    played = Played()
    try:
        create = {
            "name": "Bench Swiss",
            "rules": RULES,
            "options": OPTIONS,
            "format": "swiss",
            "rounds": rounds,
            "table_seats": SEATS,
            "fill": "bots:greedy",
        }
        await _accepted(await desk.send(tid, "create", "create", create, DIRECTOR))
        await _accepted(await desk.send(tid, "open", "open", {}, DIRECTOR))
        for start in range(0, entrants, 32):
            answers = await asyncio.gather(
                *(
                    desk.send(
                        tid,
                        "register",
                        "register",
                        {"player": entrant(i), "name": f"Player {i + 1}", "rating": 1500.0 - i},
                        entrant(i),
                    )
                    for i in range(start, min(entrants, start + 32))
                )
            )
            for answer in answers:
                await _accepted(answer)
        cpu0 = run.cpu()["tournaments"]
        started = time.perf_counter()
        await _accepted(await desk.send(tid, "close", "close", {}, DIRECTOR))
        playing: dict[str, asyncio.Task[int]] = {}
        round_started, current = started, 1
        while True:
            state = await desk.load(tid)
            assert state is not None
            if state.current > current or state.status == "finished":
                now = time.perf_counter()
                played.rounds.append(now - round_started)
                round_started, current = now, state.current
            if state.status == "finished":
                break
            for number, paired in enumerate(state.played, start=1):
                for table in paired.tables:
                    if table.game_id not in playing:
                        luck = number * 1000 + table.table
                        playing[table.game_id] = asyncio.create_task(
                            play_table(requester, games, table.game_id, luck)
                        )
            for task in playing.values():
                if task.done():
                    task.result()  # raises what went wrong
            await asyncio.sleep(0.2)
        played.seconds = time.perf_counter() - started
        cpu = run.cpu()["tournaments"] - cpu0
        played.moves = sum(await asyncio.gather(*playing.values()))
        played.games = sum(1 for r in state.played for t in r.tables if t.status == "finished")
        return tid, played, cpu
    finally:
        await desk.close()
        await requester.close()
        await disconnect(client)


async def baseline(run: Deployment, entrants: int, rounds: int) -> Played:
    """The same rounds of games of ``SEATS`` accounts, set up by this process with no
    tournament service."""
    settings = Settings(redis_url=run.redis_url, prefix=run.prefix, partitions=PARTITIONS)
    client = connect(settings)
    keys = Keys(run.prefix)
    requester = Requester(Bus(client, keys, PARTITIONS), f"base-{uuid.uuid4().hex[:6]}")
    games = GameLog(RedisEventStore(client, run.prefix))
    played = Played()
    tables = entrants // SEATS

    async def one(number: int, table: int) -> int:
        game = "g" + uuid.uuid4().hex[:16]
        body = {"rules": RULES, "seats": SEATS, "options": OPTIONS}
        steps = [CommandEntry(game, "create", "create", body)]
        for seat in range(SEATS):
            who = entrant((table * SEATS + seat + number) % entrants)
            sit = {"name": f"Player {who[-4:]}", "player": who}
            steps.append(CommandEntry(game, "sit", f"sit:{seat}", sit))
        steps.append(CommandEntry(game, "start", "start"))
        for step in steps:
            answer = await requester.request(step, TIMEOUT)
            if answer["status"] != "accepted":
                raise RuntimeError(f"{step.kind}: {answer}")
        return await play_table(requester, games, game, number * 1000 + table + 1)

    try:
        started = time.perf_counter()
        for number in range(1, rounds + 1):
            round_started = time.perf_counter()
            moves = await asyncio.gather(*(one(number, t) for t in range(tables)))
            played.moves += sum(moves)
            played.games += tables
            played.rounds.append(time.perf_counter() - round_started)
        played.seconds = time.perf_counter() - started
        return played
    finally:
        await requester.close()
        await disconnect(client)


def audit(run: Deployment, tid: str) -> tuple[float, dict[str, Any]]:
    """`rummy audit --tournament` of the tournament: its wall time and its JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REDIS_URL": run.redis_url}
    env["RUMMY_PREFIX"] = run.prefix
    started = time.perf_counter()
    done = subprocess.run(
        [*RUMMY, "audit", "--tournament", tid, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode == 2:
        raise RuntimeError(f"rummy audit could not read the tournament: {done.stderr}")
    return seconds, dict(json.loads(done.stdout))


def plot(swiss: Played, before: Played, after: Played, note: str = "") -> str:
    """Each round's wall time, the tournament's against the baseline's, as an SVG chart."""
    from shared.pictures.chart import Panel, Series, chart

    def points(played: Played) -> list[tuple[float, float]]:
        return [(float(n), s) for n, s in enumerate(played.rounds, start=1)]

    return chart(
        "A Swiss of 64 tables of 4 through the services",
        [
            Panel(
                "Seconds per round",
                "round",
                "s",
                [
                    Series("baseline before", points(before)),
                    Series("with the tournament service", points(swiss)),
                    Series("baseline after", points(after)),
                ],
            )
        ],
        note,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entrants", type=int, default=256, help="a multiple of 4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--plot", metavar="FILE", help="draw each round's seconds as SVG")
    args = parser.parse_args()
    if args.entrants % SEATS:
        parser.error(f"--entrants must be a multiple of {SEATS}")

    with deployment() as run:
        run.fresh(("referee", "scoring"))
        cpu0 = run.cpu()
        before = asyncio.run(baseline(run, args.entrants, args.rounds))
        cpu1 = run.cpu()
        run.fresh(("referee", "scoring", "tournaments"))
        idle0 = run.cpu()
        time.sleep(IDLE)
        idle = {name: (cpu - idle0[name]) / IDLE for name, cpu in run.cpu().items()}
        cpu2 = run.cpu()
        tid, swiss, service_cpu = asyncio.run(tournament(run, args.entrants, args.rounds))
        cpu3 = run.cpu()
        run.stop("tournaments")
        audit_seconds, verdict = audit(run, tid)
        run.fresh(("referee", "scoring"))
        cpu4 = run.cpu()
        after = asyncio.run(baseline(run, args.entrants, args.rounds))
        cpu5 = run.cpu()

    tables = args.entrants // SEATS
    print(
        f"{args.entrants}-player Swiss ({tables} tables of {SEATS}, {args.rounds} rounds, "
        f"{RULES} {json.dumps(OPTIONS)}, greedy players), tournament {tid}:"
    )
    print(
        "| run | games | moves | wall s | s per round | referee CPU ms/game | scoring CPU ms/game |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, played, start, end in (
        ("baseline before (no tournament)", before, cpu0, cpu1),
        ("with `rummy tournaments`", swiss, cpu2, cpu3),
        ("baseline after (no tournament)", after, cpu4, cpu5),
    ):
        rounds = " / ".join(f"{s:.1f}" for s in played.rounds)
        print(
            f"| {name} | {played.games} | {played.moves:,} | {played.seconds:.1f} | {rounds} "
            f"| {per_game(end['referee'] - start['referee'], played.games):.0f} "
            f"| {per_game(end['scoring'] - start['scoring'], played.games):.0f} |"
        )
    service = per_game(service_cpu, swiss.games)
    referee = per_game(cpu3["referee"] - cpu2["referee"], swiss.games)
    base = (before.seconds + after.seconds) / 2
    print(
        f"wall time: {ratio(swiss.seconds, base):.2f}x the baselines' mean "
        f"({ratio(swiss.seconds, before.seconds):.2f}x the one before, "
        f"{ratio(swiss.seconds, after.seconds):.2f}x the one after); the tournament "
        f"service's CPU: {service_cpu:.2f} s, {service:.1f} ms per game "
        f"({ratio(service, referee) * 100:.1f} % of the referee's CPU per game)"
    )
    resting = idle["tournaments"] * swiss.seconds
    print(
        "idle, just started before the tournament, each process spent (ms of CPU a second): "
        + ", ".join(f"{name} {rate * 1000:.0f}" for name, rate in idle.items())
        + f"; the tournament service's idle rate over the tournament's wall time is {resting:.2f}"
        f" s, leaving {per_game(max(service_cpu - resting, 0.0), swiss.games):.1f} ms per game"
    )
    state = (
        "holds"
        if verdict.get("ok")
        else f"FAILED ({len(verdict.get('differences', []))} differences)"
    )
    audited = len(verdict.get("games", []))
    print(
        f"rummy audit --tournament {tid}: {audit_seconds:.1f} s for {audited} games and "
        f"{verdict.get('events')} tournament events; {state}"
    )
    if args.plot:
        chart = plot(swiss, before, after, f"{args.entrants} players, {args.rounds} rounds")
        Path(args.plot).write_text(chart, encoding="utf-8")
        print(f"drew {args.plot}")


if __name__ == "__main__":
    main()
