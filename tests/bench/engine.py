"""Engine figures: events applied per second when rebuilding a game from its events, the time
to rebuild a 200-event game (folding events in memory, and from its stored records: decoded
too, as a service's rebuild is), and simulated turns per second (bots, invariant checks off).

Run with `make bench` (or `python tests/bench/engine.py`).
"""

from __future__ import annotations

import hashlib
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shared.core.events import Event
from shared.core.evolve import fold
from shared.infra import codec
from shared.infra.chain import sealed_chain
from shared.infra.gamelog import fold_stored, to_new
from shared.infra.stored import GENESIS_HASH
from shared.play.bots import GreedyBot, RandomBot
from shared.play.selfplay import SelfPlay


def main() -> None:
    rng = random.Random(3)
    games = []
    started = time.perf_counter()
    turns = 0
    for number in range(20):
        seed = hashlib.sha256(f"bench/{number}".encode()).digest()
        report = SelfPlay(
            "robbers",
            {},
            [GreedyBot(), RandomBot(), GreedyBot(), RandomBot()],
            seed,
            rng,
            check=False,
        ).play()
        turns += report.turns
        games.append(report.events)
    seconds = time.perf_counter() - started
    print(f"simulated turns/s (4 bots, robbers, checks off): {turns / seconds:>10,.0f}")

    events = [e for g in games for e in g]
    start = time.perf_counter()
    for g in games:
        fold(g)
    rate = len(events) / (time.perf_counter() - start)
    print(f"events applied/s (rebuild from events):          {rate:>10,.0f}")

    first_200 = [g[:200] for g in games if len(g) >= 200]
    samples = []
    for _ in range(10):
        for g in first_200:
            begin = time.perf_counter()
            fold(g)
            samples.append(time.perf_counter() - begin)
    print(
        f"200-event game folded (events in memory): median {statistics.median(samples) * 1e3:.2f}"
        f" ms, max {max(samples) * 1e3:.2f} ms"
    )

    # A rebuild as the services do one: from the stored records, decoded, upcast and folded.
    stored = [records_of(g) for g in first_200]
    samples = []
    for _ in range(10):
        for records in stored:
            begin = time.perf_counter()
            fold_stored([codec.decode(r) for r in records])
            samples.append(time.perf_counter() - begin)
    print(
        f"200-event game rebuilt from its records:  median {statistics.median(samples) * 1e3:.2f}"
        f" ms, max {max(samples) * 1e3:.2f} ms"
    )


def records_of(events: list[Event]) -> list[bytes]:
    """A game's events as a store holds them: chained, salted and encoded."""
    new = [to_new(e, None) for e in events]
    _, sealed = sealed_chain("bench-game", new, 1, GENESIS_HASH, "bench", 1.0, b"k" * 32)
    return [s.record for s in sealed]


if __name__ == "__main__":
    main()
