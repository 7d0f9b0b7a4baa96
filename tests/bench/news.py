"""News figures: what a follower of the feed (a gateway, the bots) spends taking one news of a
game it has cached, and the entry's size: news with the events' whole records (decoded, checked
and folded: how news was) against news of what changed (``Change``: folded as announced), in
turns over one real game's two-event appends.

    python tests/bench/news.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shared.infra import codec
from shared.infra.chain import sealed_chain
from shared.infra.gamelog import GameLog, fold_stored, to_new
from shared.infra.protocol import Change, News
from shared.infra.store.memory import MemoryEventStore
from shared.infra.stored import GENESIS_HASH
from shared.play.bots import Bot, GreedyBot, RandomBot
from shared.play.selfplay import SelfPlay

START = 10  # events before the first news: the follower's cached state


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    seed = hashlib.sha256(b"bench/news").digest()
    bots: list[Bot] = [GreedyBot(), RandomBot()]
    report = SelfPlay("robbers", {}, bots, seed, random.Random(1), check=False).play()
    new = [to_new(e, "seat:0") for e in report.events]
    stored, sealed = sealed_chain("g1", new, 1, GENESIS_HASH, "cmd", 1.0, b"k" * 32)
    with_records, with_change = [], []
    for i in range(START, len(stored) - 1, 2):
        events, packed = stored[i : i + 2], sealed[i : i + 2]
        types = tuple(e.type for e in events)
        version = events[-1].version
        with_records.append(News("g1", version, types, tuple(s.record for s in packed)))
        schemas = tuple(e.schema for e in events)
        change = Change(stored[i - 1].hash, events[-1].hash, schemas, tuple(s.data for s in packed))
        with_change.append(News("g1", version, types, (), change))
    start = fold_stored(stored[:START])

    def take(newses: list[News], records: bool) -> float:
        log = GameLog(MemoryEventStore(), trust_news=1.0)
        log.remember("g1", start)
        entries = [news.encode() for news in newses]
        begin = time.perf_counter()
        for fields in entries:
            news = News.decode(fields)
            if records:
                taken = log.extend("g1", [codec.decode(r) for r in news.records])
            else:
                taken = log.take_news(news)
            assert taken
        return (time.perf_counter() - begin) / len(entries)

    old, now = [], []
    for _ in range(args.rounds):
        old.append(take(with_records, True))
        now.append(take(with_change, False))

    def size(newses: list[News]) -> float:
        return statistics.mean(sum(map(len, n.encode().values())) for n in newses)

    print(f"{len(with_change)} news of two events each (robbers, 2 bots)")
    print("| news | bytes per entry | us per news taken (median) |")
    print("|---|---|---|")
    print(f"| whole records | {size(with_records):.0f} | {statistics.median(old) * 1e6:.1f} |")
    print(f"| what changed | {size(with_change):.0f} | {statistics.median(now) * 1e6:.1f} |")
    print(
        f"\nwhat changed / whole records: {size(with_change) / size(with_records):.2f}x the "
        f"bytes, {statistics.median(now) / statistics.median(old):.2f}x the time"
    )


if __name__ == "__main__":
    main()
