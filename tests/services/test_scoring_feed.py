"""Scoring never misses a round end: not when it was down, not when the feed entry was trimmed;
and bad or failing feed entries neither stop it nor stay pending forever."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from services.scoring.scoring import ASK_AGAIN_SECONDS, Scoring
from shared.infra.bus import SCORING, partition_of
from shared.infra.keys import awaiting_member
from shared.infra.protocol import CommandEntry
from tests.services.conftest import Stack, settled
from tests.services.driver import create_game, drive, round_ended


async def types_of(stack: Stack, game_id: str) -> Counter[str]:
    return Counter(e.type for e in await stack.games.store.read(game_id))


async def asks_to_carry_on(stack: Stack, game_id: str) -> Counter[str]:
    """The asks for the game's next deal on its command stream, by command id."""
    stream = stack.requester.bus.command_stream(game_id)
    entries = [CommandEntry.decode(fields) for _, fields in await stack.client.xrange(stream)]
    return Counter(e.cid for e in entries if e.game == game_id and e.kind == "continue")


async def drive_to_a_round_end(stack: Stack) -> str:
    """A new two-round game of two, played to its first round's end; its id. (No tie-break
    rounds: a tie after two rounds would add a third, Decision 8.)"""
    options = {"match_rounds": 2, "tie_break_rounds": 0}
    return await round_ended(stack.requester, stack.games, "robbers", 2, options)


async def test_a_round_that_ended_while_scoring_was_down_is_scored_by_the_sweep(
    stack: Stack,
) -> None:
    await stack.stop(stack.scoring)
    options = {"match_rounds": 2, "tie_break_rounds": 0}  # two rounds, whatever the scores
    game_id = await round_ended(stack.requester, stack.games, "robbers", 3, options)
    awaiting = stack.keys.awaiting_scores()
    assert await stack.client.smembers(awaiting) == {awaiting_member(game_id, 1).encode()}
    # The news of the round's end is gone (trimmed) before scoring comes back.
    feed = stack.keys.feed(partition_of(game_id, stack.settings.partitions))
    await stack.client.xtrim(feed, maxlen=0, approximate=False)
    assert (await types_of(stack, game_id))["ScoresRecorded"] == 0

    revived = stack.start_scoring("scoring-2", sweep_seconds=0.2)
    await stack.until(lambda: _scored(stack, game_id, 1))
    await stack.until(lambda: _is_empty(stack.client.smembers(awaiting)))
    driven = await drive(stack.requester, stack.games, game_id, ["greedy"] * 3)
    assert driven.commands > 0
    types = await types_of(stack, game_id)
    assert types["RoundEnded"] == types["ScoresRecorded"] == 2
    assert types["MatchEnded"] == 1
    await stack.until(lambda: _is_empty(stack.client.smembers(awaiting)))

    # The sweep forgets rounds long carried on (a redelivered command announces its RoundEnded
    # again) and members that are not rounds at all; it keeps a round still waiting.
    await stack.stop(revived)
    waiting = await round_ended(stack.requester, stack.games, "robbers-classic", 2)
    stale = [awaiting_member(game_id, 1), awaiting_member(game_id, 2), "junk", "a{b}|1", "g|x"]
    await stack.client.sadd(awaiting, *stale)
    scorer = Scoring(stack.client, stack.settings)
    assert await scorer.sweep() == 1  # scored now; the next deal is asked for
    assert await stack.client.smembers(awaiting) == {awaiting_member(waiting, 1).encode()}
    await stack.until(lambda: _finished(stack, waiting))
    assert await scorer.sweep() == 0
    assert await stack.client.smembers(awaiting) == set()
    assert (await types_of(stack, waiting))["ScoresRecorded"] == 1


async def test_bad_and_failing_feed_entries_are_acknowledged(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    catch_up = Scoring.catch_up

    async def failing(self: Scoring, game_id: str) -> Any:
        if game_id.startswith("poison"):
            calls[game_id] += 1
            raise RuntimeError("poisoned")
        return await catch_up(self, game_id)

    monkeypatch.setattr(Scoring, "catch_up", failing)
    feed = stack.keys.feed(0)
    for doc in (
        b"\xff junk",
        b"[1]",
        json.dumps({"game": "a{b}", "types": ["RoundEnded"]}).encode(),
        json.dumps({"game": 5, "types": "RoundEnded"}).encode(),
        json.dumps({"game": "g1", "types": [["RoundEnded"], {"a": 1}]}).encode(),
        json.dumps({"game": "poison-1", "types": ["RoundEnded"]}).encode(),
        json.dumps({"game": "no-such-game", "types": ["RoundEnded"]}).encode(),
    ):
        await stack.client.xadd(feed, {b"c": doc})
    await stack.until(lambda: settled(stack.client, feed, SCORING), timeout=15)
    # Redis counts deliveries, not handling attempts: re-reading the group's own pending entries
    # and XAUTOCLAIM both deliver, so the entry may be given up after fewer handling calls.
    assert set(calls) == {"poison-1"}
    assert 1 <= calls["poison-1"] <= stack.settings.max_deliveries
    registry = stack.scoring.registry

    async def counted() -> bool:  # counted just after the acknowledgement's answer
        return (
            registry.get_sample_value("scoring_given_up_total") == 1
            and registry.get_sample_value("scoring_feed_entries_total") == 6
        )

    await stack.until(counted, timeout=5)
    # And it goes on scoring.
    game_id = await create_game(stack.requester, "robbers-classic", 2)
    await drive(stack.requester, stack.games, game_id, ["greedy", "random"])
    types = await types_of(stack, game_id)
    assert types["RoundEnded"] == types["ScoresRecorded"] >= 1


async def _scored(stack: Stack, game_id: str, rounds: int) -> bool:
    return (await types_of(stack, game_id))["ScoresRecorded"] >= rounds


async def _finished(stack: Stack, game_id: str) -> bool:
    return (await stack.games.load(game_id, fresh=True)).state.status == "finished"


async def _is_empty(members: Any) -> bool:
    return not await members


async def test_the_feed_pending_gauge_counts_what_the_scorers_hold_unacknowledged(
    stack: Stack,
) -> None:
    """``scoring_feed_pending`` (which an alert watches) is the scorers' group's pending count
    per partition: entries a scorer read and has not acknowledged."""
    scoring = stack.scoring
    game_id = await create_game(stack.requester, "robbers", 2)
    partition = partition_of(game_id, stack.settings.partitions)
    feed = stack.keys.feed(partition)
    await stack.until(lambda: _group_read(stack, feed))
    await stack.client.xadd(feed, {b"x": b"1"})
    await stack.client.xadd(feed, {b"x": b"2"})
    # Another scorer of the group takes both and never acknowledges them.
    await stack.client.xreadgroup(SCORING, "held-by-test", {feed: ">"}, count=2)
    labels = {"partition": str(partition)}
    await scoring.update_feed_gauges()
    pending = scoring.registry.get_sample_value("scoring_feed_pending", labels)
    assert pending is not None and pending >= 2
    await stack.client.xack(feed, SCORING, *[e for e, _ in await _pending_ids(stack, feed)])
    await scoring.update_feed_gauges()
    assert scoring.registry.get_sample_value("scoring_feed_pending", labels) == 0


async def _group_read(stack: Stack, feed: str) -> bool:
    groups = await stack.client.xinfo_groups(feed)
    return any(_name(g["name"]) == SCORING for g in groups)


def _name(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def _pending_ids(stack: Stack, feed: str) -> list[tuple[Any, Any]]:
    rows = await stack.client.xpending_range(feed, SCORING, min="-", max="+", count=100)
    return [(row["message_id"], row["consumer"]) for row in rows]


async def test_scoring_asks_for_each_next_round_once(stack: Stack) -> None:
    """A round's end is asked to carry on once, not again on the news of its own score sheet
    (which comes while the next deal is not in yet): the referee answers a repeated command id
    by reading the game's whole log again, a cost that grows with the game, every round."""
    await stack.stop(stack.scoring)
    game_id = await drive_to_a_round_end(stack)
    # No referee to deal the next round: the game stays at "next" while scoring records the
    # sheet, asks for the next round and then reads the news of its own sheet.
    await stack.stop(stack.referee)
    stack.start_scoring("scoring-2")
    feed = stack.keys.feed(partition_of(game_id, stack.settings.partitions))
    await stack.until(lambda: _scored(stack, game_id, 1))
    await stack.until(lambda: settled(stack.client, feed, SCORING))
    assert (asked := await asks_to_carry_on(stack, game_id)) == {"continue:1": 1}, asked
    # The referee back, the game plays on to its end, each round asked for once.
    stack.start_referee("referee-2")
    await drive(stack.requester, stack.games, game_id, ["greedy"] * 2)
    assert (await types_of(stack, game_id))["MatchEnded"] == 1
    asked = await asks_to_carry_on(stack, game_id)
    assert asked == {"continue:1": 1, "continue:2": 1}, asked


async def test_scoring_asks_again_for_a_next_round_that_did_not_come(stack: Stack) -> None:
    """An ask for the next deal that came to nothing (lost, or refused) is made again once
    ``ASK_AGAIN_SECONDS`` have passed by scoring's clock, not before."""
    game_id = await drive_to_a_round_end(stack)
    await stack.stop(stack.referee)
    await stack.stop(stack.scoring)
    now = [1000.0]
    scorer = Scoring(stack.client, stack.settings, clock=lambda: now[0])

    async def asked() -> int:
        return sum((await asks_to_carry_on(stack, game_id)).values())

    before = await asked()
    assert (await scorer.catch_up(game_id)).phase == "next"  # the sheet recorded, the deal asked
    assert await asked() == before + 1
    now[0] += ASK_AGAIN_SECONDS - 0.5
    await scorer.catch_up(game_id)
    assert await asked() == before + 1
    now[0] += 1.0
    await scorer.catch_up(game_id)
    assert await asked() == before + 2
