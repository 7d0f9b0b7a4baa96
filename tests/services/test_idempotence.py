"""At-least-once delivery, exactly-once effects: command ids, expected versions, several
referees on one consumer group, scoring under redelivery, and projections rebuilt from the logs.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from services.scoring.scoring import Scoring
from shared.core.cards import card_str
from shared.infra.bus import SCORING, partition_of
from shared.infra.chain import verify_chain
from shared.infra.consumer import Delivery
from shared.infra.gamelog import fold_stored
from shared.infra.protocol import CommandEntry
from shared.infra.stored import StoredEvent
from tests.services.conftest import Stack
from tests.services.driver import create_game, drive, round_ended


async def events_of(stack: Stack, game_id: str) -> list[StoredEvent]:
    events = await stack.games.store.read(game_id)
    assert verify_chain(events) is None
    assert [e.version for e in events] == list(range(1, len(events) + 1))
    return events


def same_answer(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Two answers to one command id agree on everything but the request id and the flag."""
    skip = {"rid", "duplicate"}
    return {k: v for k, v in first.items() if k not in skip} == {
        k: v for k, v in second.items() if k not in skip
    }


async def test_a_repeated_command_id_gets_the_first_answer_and_applies_once(
    stack: Stack,
) -> None:
    game_id = await create_game(stack.requester, "robbers", 2)
    loaded = await stack.games.load(game_id, fresh=True)
    assert loaded.state.turn is not None
    seat = loaded.state.turn.seat
    card = card_str(loaded.state.hands[seat][0])
    commands = [
        # a recorded rejection (a meld of one card) and an accepted draw
        CommandEntry(game_id, "seat", f"{seat}:bad", {"type": "play", "layout": [[card]]}, seat),
        CommandEntry(game_id, "seat", f"{seat}:draw", {"type": "draw"}, seat),
    ]
    for entry in commands:
        first = await stack.requester.request(entry, 10)
        second = await stack.requester.request(entry, 10)
        assert first["status"] in ("rejected", "accepted"), first
        assert first["duplicate"] is False and second["duplicate"] is True
        assert same_answer(first, second), (first, second)
        # Later, after the game moved on, the answer is still the first one.
        third = await stack.requester.request(entry, 10)
        assert same_answer(first, third) and third["duplicate"] is True
    events = await events_of(stack, game_id)
    by_command = Counter(e.command_id for e in events)
    assert by_command[f"{seat}:bad"] == 1  # one CommandRejected
    assert by_command[f"{seat}:draw"] == 2  # CardDrawn and the next TurnStarted, once
    assert [e.type for e in events if e.command_id == f"{seat}:bad"] == ["CommandRejected"]

    # The same id with another body is refused, and appends nothing.
    reused = CommandEntry(game_id, "seat", f"{seat}:draw", {"type": "pass"}, seat)
    answer = await stack.requester.request(reused, 10)
    assert answer["status"] == "refused" and answer["code"] == "command_id_reused", answer
    assert len(await events_of(stack, game_id)) == len(events)


async def test_concurrent_commands_on_two_referees_never_double_apply(stack: Stack) -> None:
    second = stack.start_referee("referee-2")
    game_id = f"g-race-{stack.settings.prefix[:-1]}"
    create = CommandEntry(game_id, "create", "create", {"rules": "robbers", "seats": 5})
    answers = await asyncio.gather(*(stack.requester.request(create, 10) for _ in range(6)))
    assert sorted(a["duplicate"] for a in answers) == [False] + [True] * 5
    assert all(same_answer(answers[0], a) for a in answers)

    # Ten would-be players for five seats, each sending its sit three times at once.
    sits = [CommandEntry(game_id, "sit", f"sit:{n}", {"name": f"p{n}"}) for n in range(10)]
    answers = await asyncio.gather(
        *(stack.requester.request(entry, 10) for entry in sits for _ in range(3))
    )
    by_cid: dict[str, list[dict[str, Any]]] = {}
    for entry, answer in zip([e for e in sits for _ in range(3)], answers, strict=True):
        by_cid.setdefault(entry.cid, []).append(answer)
    seated = [cid for cid, got in by_cid.items() if got[0]["status"] == "accepted"]
    assert len(seated) == 5
    for cid in seated:
        got = by_cid[cid]
        assert all(a["status"] == "accepted" for a in got), got
        assert sum(not a["duplicate"] for a in got) == 1, got
        assert len({a["seat"] for a in got}) == 1
    assert sorted(by_cid[cid][0]["seat"] for cid in seated) == [0, 1, 2, 3, 4]
    for cid, got in by_cid.items():
        if cid not in seated:
            assert {a["code"] for a in got} == {"game_full"}, got
    events = await events_of(stack, game_id)
    assert [e.type for e in events] == ["GameCreated"] + ["PlayerSeated"] * 5
    assert sorted(e.command_id for e in events[1:]) == sorted(seated)

    # Both referees execute the same turn commands at the same moment, several times over.
    start = CommandEntry(game_id, "start", "start")
    await asyncio.gather(stack.referee.execute(start), second.execute(start))
    for _ in range(15):
        state = (await stack.games.load(game_id, fresh=True)).state
        assert state.turn is not None
        seat = state.turn.seat
        draw = CommandEntry(game_id, "seat", f"{seat}:t{state.turn.number}", {"type": "draw"}, seat)
        other = CommandEntry(
            game_id, "seat", f"{seat}:x{state.turn.number}", {"type": "draw"}, seat
        )
        outcomes = await asyncio.gather(
            stack.referee.execute(draw),
            second.execute(draw),
            second.execute(other),
            stack.referee.execute(draw),
        )
        applied = [o for o in outcomes if o.status == "accepted" and not o.duplicate]
        assert len(applied) == 1, outcomes
        same = [o for i, o in enumerate(outcomes) if i != 2]
        if all(o.status == "accepted" for o in same):
            assert len({(o.version, o.head) for o in same}) == 1, outcomes
    events = await events_of(stack, game_id)
    drawn = Counter(e.command_id for e in events if e.type == "CardDrawn")
    assert drawn and max(drawn.values()) == 1
    assert sum(drawn.values()) == 15
    state = fold_stored(events).state
    cards = [*state.hands, state.stock, state.discard, *state.table]
    assert sum(len(c) for c in cards) == 108

    # A referee whose cached state lags the other's write still takes a command that names
    # the game's true version (it looks again before refusing it as stale).
    await stack.referee.games.load(game_id, fresh=True)
    assert state.turn is not None
    seat = state.turn.seat
    moved = await second.execute(CommandEntry(game_id, "seat", "lag:1", {"type": "draw"}, seat))
    assert moved.status == "accepted"
    assert stack.referee.games._cache[game_id].version < moved.version
    nxt = (seat + 1) % 5
    body = {"type": "draw", "expected_version": moved.version}
    outcome = await stack.referee.execute(CommandEntry(game_id, "seat", "lag:2", body, nxt))
    assert outcome.status == "accepted", outcome
    stale = {"type": "draw", "expected_version": moved.version}
    outcome = await second.execute(CommandEntry(game_id, "seat", "lag:3", stale, (nxt + 1) % 5))
    assert (outcome.status, outcome.code) == ("refused", "stale_version")


async def test_scoring_records_a_sheet_once_under_redelivery(stack: Stack) -> None:
    await stack.stop(stack.scoring)  # nobody scores until this test says so
    game_id = await round_ended(stack.requester, stack.games, "robbers", 3, {"match_rounds": 2})
    feed = stack.keys.feed(partition_of(game_id, stack.settings.partitions))
    entries = await stack.client.xrange(feed)
    ended = [
        (entry_id, fields)
        for entry_id, fields in entries
        if "RoundEnded" in json.loads(fields[b"c"])["types"]
        and json.loads(fields[b"c"])["game"] == game_id
    ]
    assert len(ended) == 1

    scorers = [Scoring(stack.client, stack.settings_for(f"scorer-{n}")) for n in range(2)]
    # Two scorers catch the same game up at the same time, twice over, and the same feed
    # entry is handled again and again (a redelivery).
    await asyncio.gather(*(s.catch_up(game_id) for s in scorers for _ in range(2)))
    for scorer in scorers:
        for _ in range(2):
            await scorer.reader.handle(Delivery(feed, SCORING, *ended[0], deliveries=1))
    assert sum(s.registry.get_sample_value("scoring_sheets_total") or 0 for s in scorers) == 1

    await stack.until(lambda: _round(stack, game_id, 2))
    events = await events_of(stack, game_id)
    types = Counter(e.type for e in events)
    assert types["RoundEnded"] == 1 and types["ScoresRecorded"] == 1
    assert types["RoundDealt"] == 2  # the continue commands (several) dealt one round
    assert [e.command_id for e in events if e.type == "ScoresRecorded"] == ["scores:1"]
    summary = await stack.client.xpending(feed, SCORING)
    assert int(summary["pending"]) == 0


async def test_rebuilt_projections_match_the_live_ones(stack: Stack) -> None:
    games = []
    for rules, seats, options in (("robbers", 3, {"match_rounds": 2}), ("rummikub", 2, {})):
        game_id = await create_game(stack.requester, rules, seats, options)
        await drive(stack.requester, stack.games, game_id, ["greedy", "random", "greedy"])
        games.append(game_id)
    projections = stack.scoring.projections

    async def caught_up() -> bool:
        snap = await projections.snapshot(games)
        return all(snap["games"][g] and snap["games"][g]["status"] == "finished" for g in games)

    await stack.until(caught_up)
    live = await projections.snapshot(games)

    report = await stack.scoring.rebuild()
    assert report == {"games": 2, "differences": [], "games_differing": []}
    assert await projections.snapshot(games) == live

    # Dropped projections come back from the logs alone.
    await stack.client.delete(stack.keys.standings(games[0]))
    report = await stack.scoring.rebuild()
    assert report["games"] == 2
    assert report["differences"] == ["games"]
    assert report["games_differing"] == [games[0]]
    assert await projections.snapshot(games) == live
    # A redelivered ending of a finished game counts nothing twice.
    await stack.scoring.catch_up(games[0])
    assert await projections.snapshot(games) == live


async def _round(stack: Stack, game_id: str, number: int) -> bool:
    state = (await stack.games.load(game_id, fresh=True)).state
    return state.round >= number and state.phase == "turns"
