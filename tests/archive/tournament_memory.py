"""What one finished tournament keeps in Redis: its log, its command outcomes, its place in the
tournaments' index and listing, measured with ``MEMORY USAGE`` on a real Redis.

The tournament is run through the tournament service's own commands, in process, as the service
appends them (create, open, a registration per entrant, close, then each round's pairing, each
table's start and result, the standings, the finish), with random results of the rule family in
place of the tables' games (they are games, archived as games). Nothing is played, so it takes
seconds; the log is the one the service would write.

    REDIS_URL=redis://127.0.0.1:6379/0 python tests/archive/tournament_memory.py \
        [--entrants 256] [--rounds 3] [--seats 4]

Every key it writes is under a prefix of its own, deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from services.tournament.service import TournamentService  # noqa: E402
from shared.infra.connection import connect, disconnect  # noqa: E402
from shared.infra.keys import Keys  # noqa: E402
from shared.infra.settings import Settings  # noqa: E402
from shared.infra.tournaments import ALL, STATUSES  # noqa: E402
from shared.tournament.commands import FinishTable, StartTable  # noqa: E402
from shared.tournament.decide import next_command  # noqa: E402
from shared.tournament.events import SeatResult  # noqa: E402
from tests.services.conftest import delete_prefixed  # noqa: E402
from tests.tournament.desk import create_payload, random_lines  # noqa: E402

DIRECTOR = "d" * 32
TOURNAMENT = "t" + "5" * 16


async def run_tournament(service: TournamentService, entrants: int, rounds: int, seats: int) -> int:
    """The tournament through the service's commands to its finish; its events."""
    rng = random.Random(1)

    async def send(kind: str, payload: dict[str, Any], actor: str, cid: str) -> None:
        answer = await service.apply(TOURNAMENT, kind, cid, payload, actor)
        assert answer["status"] == "accepted", (kind, answer)

    await send("create", create_payload(rounds, seats, TOURNAMENT), DIRECTOR, f"{DIRECTOR}:create")
    await send("open", {}, DIRECTOR, f"{DIRECTOR}:open")
    for i in range(entrants):
        player = f"{i + 1:032x}"
        body = {"player": player, "name": f"Entrant {i}", "rating": 1500.0 + rng.random() * 300}
        await send("register", body, player, f"{player}:register:{uuid.uuid4().hex[:24]}")
    await send("close", {}, DIRECTOR, f"{DIRECTOR}:close")
    while True:
        state = (await service.log.load(TOURNAMENT)).state
        if state.status == "finished":
            break
        following = next_command(state)
        if following is not None:  # the next pairing, or the finish
            assert (await service.step(TOURNAMENT, following))["status"] == "accepted"
            continue
        for table in state.played[-1].tables:
            await service.step(TOURNAMENT, StartTable(table.round, table.table, table.game_id))
            lines = random_lines(rng, state.rules, len(table.seats))
            results = tuple(
                SeatResult(who, seat, line["winner"], line["total"], line["outs"], line["wins"])
                for seat, (who, line) in enumerate(zip(table.seats, lines, strict=True))
            )
            head = (200 + rng.randrange(100), f"{rng.getrandbits(256):064x}")
            finish = FinishTable(table.round, table.table, table.game_id, results, head)
            await service.step(TOURNAMENT, finish)
    state = (await service.log.load(TOURNAMENT)).state
    assert state.status == "finished", state.status
    return state.version


async def measure(entrants: int, rounds: int, seats: int) -> None:
    url = os.environ.get("REDIS_URL")
    if not url:
        sys.exit("set REDIS_URL (a real Redis: MEMORY USAGE is what is measured)")
    prefix = f"h10:measure{uuid.uuid4().hex[:8]}:"
    settings = Settings(redis_url=url, prefix=prefix)
    client = connect(settings)
    try:
        service = TournamentService(client, settings)
        events = await run_tournament(service, entrants, rounds, seats)
        await service.referees.close()
        keys = Keys(prefix)
        logs = Keys(keys.tournament_logs())
        own = {
            "log (events stream)": logs.events(TOURNAMENT),
            "head": logs.head(TOURNAMENT),
            "command outcomes": logs.commands(TOURNAMENT),
        }
        sizes = {
            name: int(await client.memory_usage(key, samples=0) or 0) for name, key in own.items()
        }
        # The index and listing keys hold this one tournament only: their whole size is its.
        shared = {
            "index (tour:games)": logs.games(),
            "listing rows (summaries)": keys.tournament_summaries(),
            **{f"listing {s}": keys.tournaments(s) for s in (*STATUSES, ALL)},
        }
        for name, key in shared.items():
            sizes[name] = int(await client.memory_usage(key, samples=0) or 0)
        commands = int(await client.hlen(logs.commands(TOURNAMENT)))
        total = sum(sizes.values())
        print(f"tournament: {entrants} entrants, {rounds} rounds, tables of {seats}")
        print(f"  events {events}, command outcomes {commands}")
        for name, size in sizes.items():
            if size:
                print(f"  {name:<28} {size:>10,} bytes")
        print(f"  {'total':<28} {total:>10,} bytes ({total / 2**20:.2f} MiB)")
        print(f"  one a day for a year: {total * 365 / 2**20:,.0f} MiB")
    finally:
        await delete_prefixed(client, prefix)
        await disconnect(client)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entrants", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seats", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(measure(args.entrants, args.rounds, args.seats))


if __name__ == "__main__":
    main()
