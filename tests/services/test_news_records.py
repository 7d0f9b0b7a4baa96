"""The feed's news carries the new events as stored (fields e1, e2 ...): every feed entry of a
played game holds exactly the records of the log's events it announces (so a gateway folds them
without reading the log back), and ``GameLog.extend`` folds news onto a cached state only where
it follows it (a gap or an unknown game leaves the store to be read)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from shared.core.commands import Context, CreateGame, Sit, Start
from shared.core.decide import decide
from shared.core.evolve import evolve
from shared.core.shuffle import commitment
from shared.core.state import GameState
from shared.infra import codec
from shared.infra.bus import Bus, news_records, parse_json_field, stream_batches
from shared.infra.gamelog import GameLog, fold_stored, to_new
from shared.infra.keys import Keys
from shared.infra.store.memory import MemoryEventStore
from tests.services.conftest import Stack
from tests.services.driver import create_game, drive


def test_news_fields_carry_records_in_order() -> None:
    bus = Bus(None, Keys("t:"), 4)
    key, fields = bus.news("g1", 7, ["Drawn", "TurnStarted"], [b"one", b"two"])
    assert key.startswith("t:feed:")
    assert news_records(fields) == [b"one", b"two"]
    assert parse_json_field(fields) == {
        "game": "g1",
        "version": 7,
        "types": ["Drawn", "TurnStarted"],
    }
    assert news_records(bus.news("g1", 7, [])[1]) == []


async def test_every_news_entry_carries_the_events_it_announces(stack: Stack) -> None:
    game_id = await create_game(stack.requester, "robbers", 2, {})
    await drive(
        stack.requester, stack.games, game_id, ["greedy", "random"], until=lambda s: s.version > 40
    )
    stored = {e.version: e for e in await stack.games.store.read(game_id)}
    feed = [stack.keys.feed(p) for p in range(stack.settings.partitions)]
    carried = 0
    for stream in feed:
        for _, entries in stream_batches(await stack.client.xread({stream: "0-0"}, count=10_000)):
            for _, fields in entries:
                doc = parse_json_field(fields)
                if not doc or doc["game"] != game_id:
                    continue
                records = news_records(fields)
                events = [codec.decode(r) for r in records]
                # The announced version is the last event's; the records end there, in order.
                if events:
                    assert events[-1].version == doc["version"]
                    assert [e.version for e in events] == list(
                        range(doc["version"] - len(events) + 1, doc["version"] + 1)
                    )
                for event in events:
                    assert event == stored[event.version]
                carried += len(events)
    assert carried >= len(stored) - 1  # every append announced its events (a repeat may not)


async def _log_of_a_game(count: int) -> tuple[GameLog, str, list[Any]]:
    """A log with a real game's first ``count`` events in a memory store (the store read back)."""
    store = MemoryEventStore()
    seed = bytes(32)
    state = GameState()
    events: list[Any] = []
    for command in (
        CreateGame("g1", "robbers", {}, 2, commitment(seed)),
        Sit("a"),
        Sit("b"),
        Start(),
    ):
        decided = decide(state, command, Context(0.0, seed))
        assert isinstance(decided, list), decided
        for event in decided:
            state = evolve(state, event)
        events.extend(decided)
    assert len(events) >= count
    for version, event in enumerate(events[:count], 1):
        await store.append("g1", [to_new(event, None)], expected_version=version - 1)
    return GameLog(store, trust_news=1.0), "g1", await store.read("g1")


async def test_extend_folds_news_that_follows_the_cached_state() -> None:
    log, game, stored = await _log_of_a_game(4)
    assert not log.extend(game, stored[2:])  # nothing cached yet: the store will be read
    log.remember(game, fold_stored(stored[:2]))
    assert not log.extend(game, stored[3:])  # a gap (version 3 missing): unchanged
    assert (await log.load(game)).version == 2
    assert log.extend(game, stored[1:])  # version 2 is known already, 3 and 4 follow
    whole = fold_stored(stored)
    assert (await log.load(game)).state == whole.state
    assert (await log.load(game)).head == whole.head
    assert log.extend(game, stored[3:])  # all known: nothing to do
    assert (await log.load(game, fresh=True)).version == 4  # trusted: no read needed


async def test_extend_refuses_news_of_another_chain_or_game() -> None:
    log, game, stored = await _log_of_a_game(4)
    log.remember(game, fold_stored(stored[:2]))
    forged = replace(stored[2], prev_hash="0" * 64)
    assert not log.extend(game, [forged])  # does not follow our head: the store decides
    assert not log.extend(game, [replace(stored[2], game_id="other")])
    assert (await log.load(game)).version == 2
    assert log.extend(game, stored[2:])
