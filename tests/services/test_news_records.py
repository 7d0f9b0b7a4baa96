"""The feed's news says what changed (fields p, h, s, d1, d2 ...: the chain head before and
after, each new event's schema and packed data), not whole records: every feed entry of a played
game folds onto the state before it into the log's state at its version, and ``GameLog`` folds
news onto a cached state only where it follows it (a gap, another chain or an unknown game leaves
the store to be read). News of older appenders, with the events as stored (fields e1, e2 ...),
still folds."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import msgpack  # type: ignore[import-untyped]  # msgpack ships no type information
import pytest

from shared.core.commands import Context, CreateGame, Sit, Start
from shared.core.decide import decide
from shared.core.evolve import evolve
from shared.core.shuffle import commitment
from shared.core.state import GameState
from shared.infra import codec, jsontext
from shared.infra.bus import Bus, stream_batches
from shared.infra.gamelog import GameLog, fold_stored, to_new
from shared.infra.keys import Keys
from shared.infra.protocol import Change, MalformedEntry, News
from shared.infra.store.memory import MemoryEventStore
from tests.services.conftest import Stack
from tests.services.driver import create_game, drive


def test_news_fields_carry_records_in_order() -> None:
    bus = Bus(cast(Any, None), Keys("t:"), 4)
    key, fields = bus.news("g1", 7, ["Drawn", "TurnStarted"], [b"one", b"two"])
    assert key.startswith("t:feed:")
    assert News.decode(fields) == News("g1", 7, ("Drawn", "TurnStarted"), (b"one", b"two"))
    assert News.decode(bus.news("g1", 7, [])[1]).records == ()


CHANGE = Change("a" * 64, "b" * 64, (1, 2), (b"\x80", b"\x81\xa1k\x01"))


def test_a_change_round_trips_beside_the_document_old_readers_know() -> None:
    bus = Bus(cast(Any, None), Keys("t:"), 4)
    _, fields = bus.news("g1", 7, ["Drawn", "TurnStarted"], change=CHANGE)
    assert News.decode(fields) == News("g1", 7, ("Drawn", "TurnStarted"), (), CHANGE)
    # The JSON document is what it always was: a reader that knows no change still reads it.
    assert jsontext.loads(fields[b"c"]) == {
        "game": "g1",
        "version": 7,
        "types": ["Drawn", "TurnStarted"],
    }


@pytest.mark.parametrize(
    ("drop", "changes", "message"),
    [
        (b"h", {}, "come together"),
        (None, {b"p": b"A" * 64}, "'p' must be 64 lower-case hex"),
        (None, {b"h": b"ab"}, "'h' must be 64 lower-case hex"),
        (None, {b"s": b"1,x"}, "'s' must be the events' schemas"),
        (None, {b"s": b"1,0"}, "'s' must be the events' schemas"),
        (None, {b"s": b"1"}, "names 2 events but carries 1 schemas and 2 data"),
        (b"d2", {}, "names 2 events but carries 2 schemas and 1 data"),
    ],
)
def test_a_malformed_change_is_refused_naming_the_field(
    drop: bytes | None, changes: dict[bytes, bytes], message: str
) -> None:
    _, fields = Bus(cast(Any, None), Keys("t:"), 4).news(
        "g1", 7, ["Drawn", "TurnStarted"], change=CHANGE
    )
    fields = {k: v for k, v in fields.items() if k != drop} | changes
    with pytest.raises(MalformedEntry, match=message):
        News.decode(fields)


async def _check_news(stack: Stack, game_id: str, kinds: set[str]) -> int:
    """Check every feed entry of ``game_id`` of the appenders that write ``kinds`` (``{"referee"}``:
    all but the score sheets; ``{"scoring"}``: the score sheets): small (no whole records),
    saying what changed, and folding onto the state before it into the log's state at its
    version. Returns how many events the checked news announced."""
    stored = await stack.games.store.read(game_id)
    states = [fold_stored(stored[:count]) for count in range(len(stored) + 1)]
    feed = [stack.keys.feed(p) for p in range(stack.settings.partitions)]
    announced = 0
    for stream in feed:
        for _, entries in stream_batches(await stack.client.xread({stream: "0-0"}, count=10_000)):
            for _, fields in entries:
                try:
                    news = News.decode(fields)
                except MalformedEntry:
                    continue
                by = "scoring" if "ScoresRecorded" in news.types else "referee"
                if news.game != game_id or by not in kinds:
                    continue
                change = news.change
                assert not news.records  # small: no whole records
                if change is None:  # a repeat's news says only that the game changed
                    continue
                first = news.version - len(news.types)
                events = stored[first : news.version]
                assert change.prev == states[first].head and change.head == events[-1].hash
                assert list(news.types) == [e.type for e in events]
                assert list(change.schemas) == [e.schema for e in events]
                for event, data in zip(events, change.data, strict=True):
                    assert codec.unpack_data(data) == event.data
                    assert data in codec.encode(event)  # the record's own bytes of it
                announced += len(events)
                if first == 0:
                    continue  # (a state at version 0 is never cached)
                # Folded onto the state before it, the news gives the log's state at its version.
                log = GameLog(MemoryEventStore(), trust_news=1.0)
                log.remember(game_id, states[first])
                assert log.take_news(news)
                after = await log.load(game_id)
                assert after == states[news.version]
    return announced


async def test_every_news_entry_says_what_its_events_changed(stack: Stack) -> None:
    game_id = await create_game(stack.requester, "robbers", 2, {})
    await drive(
        stack.requester, stack.games, game_id, ["greedy", "random"], until=lambda s: s.version > 40
    )
    stored = await stack.games.store.read(game_id)
    announced = await _check_news(stack, game_id, {"referee"})
    assert announced >= len(stored) - 1  # every append announced its events (a repeat may not)


async def test_scorings_news_says_what_the_score_sheet_changed(stack: Stack) -> None:
    """Scoring's news of a score sheet is as small as the referee's: the change, no record."""
    game_id = await create_game(stack.requester, "robbers", 2, {})
    await drive(
        stack.requester, stack.games, game_id, ["greedy", "greedy"], until=lambda s: s.round >= 2
    )
    stored = await stack.games.store.read(game_id)
    sheets = sum(1 for e in stored if e.type == "ScoresRecorded")
    assert sheets >= 1
    assert await _check_news(stack, game_id, {"scoring"}) == sheets


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


def _news_of(stored: list[Any], before: Any, count: int) -> News:
    """The news an appender gives of ``stored`` events after state ``before``."""
    events = stored[before.version : before.version + count]
    change = Change(
        before.head,
        events[-1].hash,
        tuple(e.schema for e in events),
        tuple(msgpack.packb(e.data) for e in events),
    )
    return News("g1", events[-1].version, tuple(e.type for e in events), (), change)


async def test_news_folds_only_onto_the_state_it_follows() -> None:
    log, game, stored = await _log_of_a_game(4)
    two = fold_stored(stored[:2])
    assert not log.take_news(_news_of(stored, two, 2))  # nothing cached yet
    log.remember(game, two)
    three = fold_stored(stored[:3])
    assert not log.take_news(_news_of(stored, three, 1))  # a gap (version 3 missing)
    forged = replace(_news_of(stored, two, 1), change=replace(CHANGE, prev="0" * 64))
    assert not log.take_news(forged)  # not our chain's head
    assert (await log.load(game)).version == 2
    assert log.take_news(_news_of(stored, two, 2))
    assert await log.load(game) == fold_stored(stored)
    assert log.take_news(_news_of(stored, two, 2))  # known already: nothing to do
    assert (await log.load(game, fresh=True)).version == 4  # trusted: no read needed


async def test_news_of_data_to_upcast_or_not_foldable_leaves_the_store_to_decide() -> None:
    log, game, stored = await _log_of_a_game(4)
    two = fold_stored(stored[:2])
    log.remember(game, two)
    upcasters = codec.Upcasters()
    upcasters.register(stored[2].type, 1, lambda data: data)
    log.store.upcasters = upcasters  # the news' schema 1 is not today's: the store upcasts it
    assert not log.take_news(_news_of(stored, two, 1))
    assert (await log.load(game)).version == 2
    log.store.upcasters = codec.UPCASTERS
    news = _news_of(stored, two, 1)
    assert news.change is not None
    broken = replace(news, change=replace(news.change, data=(msgpack.packb({"x": 1}),)))
    assert not log.take_news(broken)
    assert not log.cached(game)  # dropped: the next load reads the store


async def test_news_of_older_appenders_with_whole_records_still_folds() -> None:
    log, game, stored = await _log_of_a_game(4)
    log.remember(game, fold_stored(stored[:2]))
    old = News(game, 4, tuple(e.type for e in stored[2:]), tuple(map(codec.encode, stored[2:])))
    assert log.take_news(old)
    assert await log.load(game) == fold_stored(stored)
