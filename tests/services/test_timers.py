"""Turn timers: deadlines live in Redis, fire once whoever fires them, and survive a restart.

The referees share a clock the test advances (``Clock``), so no test waits for a real deadline.
"""

from __future__ import annotations

import uuid
from collections import Counter

from shared.infra.bus import REFEREES, partition_of
from shared.infra.chain import verify_chain
from shared.infra.protocol import CommandEntry
from tests.services.conftest import Stack
from tests.services.conftest import settled as streams_settled
from tests.services.driver import create_game

TURN_SECONDS = 5  # the option's minimum


async def timed_out(stack: Stack, game_id: str) -> Counter[int]:
    """How many TurnTimedOut events each turn number has."""
    events = await stack.games.store.read(game_id)
    assert verify_chain(events) is None
    return Counter(e.data["number"] for e in events if e.type == "TurnTimedOut")


async def settled(stack: Stack) -> bool:
    """No command is waiting in any partition (read or not)."""
    for partition in range(stack.settings.partitions):
        if not await streams_settled(stack.client, stack.keys.command_stream(partition), REFEREES):
            return False
    return True


async def test_a_deadline_fires_once_across_racing_referees_and_a_restart(stack: Stack) -> None:
    game_id = await create_game(stack.requester, "rummikub", 2, {"turn_seconds": TURN_SECONDS})
    partition = partition_of(game_id, stack.settings.partitions)
    timers = stack.keys.timers(partition)
    state = (await stack.games.load(game_id, fresh=True)).state
    assert state.turn is not None and state.turn.deadline is not None
    first, deadline = state.turn.number, state.turn.deadline
    assert abs(deadline - (stack.clock() + TURN_SECONDS)) < 2
    assert await stack.client.zscore(timers, f"{game_id}|{first}") == deadline

    # Fired early (a peer's clock runs ahead): refused, and the deadline stays in Redis.
    assert await stack.referee.fire_timers(partition, now=deadline + 1) == 1
    await stack.until(lambda: settled(stack))
    assert await stack.until(lambda: stack.client.zscore(timers, f"{game_id}|{first}"))
    assert await timed_out(stack, game_id) == Counter()

    # The deadline passes; two referees (and their own timer loops) fire it at once.
    second = stack.start_referee("referee-2")
    stack.clock.advance(TURN_SECONDS + 1)
    fired = [
        await stack.referee.fire_timers(partition),
        await second.fire_timers(partition),
        await stack.referee.fire_timers(partition),
    ]
    assert sum(fired) >= 1
    await stack.until(lambda: _has(stack, game_id, first))
    await stack.until(lambda: settled(stack))
    # A crash between queueing the timeout and removing the timer: it fires again, harmlessly.
    await stack.client.zadd(timers, {f"{game_id}|{first}": deadline})
    assert await second.fire_timers(partition) == 1
    await stack.until(lambda: settled(stack))
    assert await timed_out(stack, game_id) == Counter({first: 1})
    assert await stack.client.zscore(timers, f"{game_id}|{first}") is None

    # The next turn has its own deadline; every referee stops before it passes.
    state = (await stack.games.load(game_id, fresh=True)).state
    assert state.turn is not None and state.turn.number == first + 1
    later = state.turn.number
    assert await stack.client.zscore(timers, f"{game_id}|{later}") == state.turn.deadline
    await stack.stop(stack.referee)
    await stack.stop(second)
    stack.clock.advance(TURN_SECONDS + 1)
    assert await timed_out(stack, game_id) == Counter({first: 1})

    # A new referee on the same Redis fires it (its loop), exactly once, even fired again.
    restarted = stack.start_referee("referee-3")
    await stack.until(lambda: _has(stack, game_id, later))
    await restarted.fire_timers(partition)
    await stack.until(lambda: settled(stack))
    assert await timed_out(stack, game_id) == Counter({first: 1, later: 1})
    state = (await stack.games.load(game_id, fresh=True)).state
    assert state.turn is not None and state.turn.number == later + 1
    fired_here = restarted.metrics.registry.get_sample_value("referee_timers_fired_total")
    assert fired_here is not None and fired_here >= 1


async def _has(stack: Stack, game_id: str, number: int) -> bool:
    return (await timed_out(stack, game_id))[number] >= 1


async def test_a_turn_that_ends_in_time_takes_its_deadline_with_it(stack: Stack) -> None:
    game_id = await create_game(stack.requester, "rummikub", 2, {"turn_seconds": TURN_SECONDS})
    timers = stack.keys.timers(partition_of(game_id, stack.settings.partitions))
    members = []
    for _ in range(4):
        state = (await stack.games.load(game_id, fresh=True)).state
        assert state.turn is not None
        members.append(f"{game_id}|{state.turn.number}")
        assert await stack.client.zscore(timers, members[-1]) == state.turn.deadline
        seat = state.turn.seat
        entry = CommandEntry(game_id, "seat", f"{seat}:{uuid.uuid4().hex}", {"type": "draw"}, seat)
        answer = await stack.requester.request(entry, 10)
        assert answer["status"] == "accepted", answer
    # Only the turn in play has a deadline left: the ended ones were removed with their end
    # (once the command's other side effects, its answer among them, were written).

    async def ended_removed() -> set[str] | None:
        left = {m.decode() for m in await stack.client.zrange(timers, 0, -1)}
        return left if not left & set(members) else None

    left = await stack.until(ended_removed)
    state = (await stack.games.load(game_id, fresh=True)).state
    assert state.turn is not None and f"{game_id}|{state.turn.number}" in left


async def test_a_stale_timeout_puts_back_the_deadline_of_the_turn_in_play(stack: Stack) -> None:
    """A deadline that fires for a turn that is over makes sure the turn in play has its own
    (should a failure have kept it from being written)."""
    game_id = await create_game(stack.requester, "rummikub", 2, {"turn_seconds": TURN_SECONDS})
    timers = stack.keys.timers(partition_of(game_id, stack.settings.partitions))
    state = (await stack.games.load(game_id, fresh=True)).state
    assert state.turn is not None
    seat, ended = state.turn.seat, state.turn.number
    draw = CommandEntry(game_id, "seat", f"{seat}:{uuid.uuid4().hex}", {"type": "draw"}, seat)
    assert (await stack.requester.request(draw, 10))["status"] == "accepted"
    state = (await stack.games.load(game_id, fresh=True)).state
    assert state.turn is not None and state.turn.number == ended + 1
    member = f"{game_id}|{state.turn.number}"
    await stack.until(lambda: stack.client.zscore(timers, member))
    await stack.client.zrem(timers, member)  # lost
    stale = CommandEntry(game_id, "timeout", f"timeout:{ended}", {"number": ended})
    answer = await stack.requester.request(stale, 10)
    assert answer["status"] == "refused" and answer["code"] == "stale_timeout", answer
    assert await stack.client.zscore(timers, member) == state.turn.deadline
