"""Games with bot seats, for the bots service's tests: seat bots and people, play the people's
seats as a client would (the bots service plays the rest), check what the log shows of the
bots' moves, and run in-process bots services beside a test's stack (``Players``)."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from services.bots.bots import Bots
from shared.core.commands import command_json
from shared.core.views import seat_view
from shared.infra.bus import Requester
from shared.infra.gamelog import GameLog
from shared.infra.protocol import CommandEntry
from shared.infra.stored import StoredEvent
from shared.play.bots import BOTS
from tests.services.conftest import Stack

RULE_SETS = ("robbers", "robbers-classic", "rummikub")


async def seat_game(
    requester: Requester,
    rules: str,
    seats: int,
    bots: Mapping[int, str],
    options: dict[str, Any] | None = None,
    timeout: float = 10.0,
) -> str:
    """Create a game, give the seats in ``bots`` to those bots and the others to people, and
    start it; returns its id."""
    game_id = f"g{uuid.uuid4().hex[:10]}"
    body = {"rules": rules, "seats": seats, "options": options or {}}
    answer = await requester.request(CommandEntry(game_id, "create", "create", body), timeout)
    assert answer["status"] == "accepted", answer
    for seat in range(seats):
        who = {"bot": bots[seat]} if seat in bots else {"name": f"p{seat}"}
        sit = CommandEntry(game_id, "sit", f"sit:{seat}", who)
        answer = await requester.request(sit, timeout)
        assert answer["status"] == "accepted" and answer["seat"] == seat, answer
    answer = await requester.request(CommandEntry(game_id, "start", "start"), timeout)
    assert answer["status"] == "accepted", answer
    return game_id


async def play_people(
    requester: Requester,
    games: GameLog,
    game_id: str,
    seed: int = 0,
    max_commands: int = 5000,
    wait_seconds: float = 60.0,
    timeout: float = 10.0,
) -> int:
    """Play the seats no bot plays (greedy, as a person's client sends it) until the game is
    finished; the bots service must play the others, or this fails after ``wait_seconds``
    without a change. Returns how many commands the people sent."""
    rng = random.Random(seed)
    person = BOTS["greedy"]()
    loop = asyncio.get_running_loop()
    sent = 0
    seen, since = -1, loop.time()
    while sent < max_commands:
        state = (await games.load(game_id, fresh=True)).state
        if state.status == "finished":
            return sent
        if state.version != seen:
            seen, since = state.version, loop.time()
        elif loop.time() - since > wait_seconds:
            raise AssertionError(f"game {game_id} stuck at version {seen} ({state.phase})")
        turn = state.turn
        if state.phase != "turns" or turn is None or state.bot_at(turn.seat) is not None:
            await asyncio.sleep(0.01)
            continue
        view = seat_view(state, turn.seat)
        body = command_json(person.choose(view, rng), with_seat=False)
        body["expected_version"] = state.version
        cid = f"{turn.seat}:{uuid.uuid4().hex}"
        entry = CommandEntry(game_id, "seat", cid, body, seat=turn.seat)
        answer = await requester.request(entry, timeout)
        assert answer["status"] in ("accepted", "rejected", "refused"), answer
        sent += 1
    raise AssertionError(f"game {game_id} did not finish in {max_commands} commands")


def bot_commands(events: list[StoredEvent]) -> dict[str, list[StoredEvent]]:
    """The events of each bot command in a log, by command id."""
    found: dict[str, list[StoredEvent]] = {}
    for event in events:
        if event.command_id is not None and event.command_id.startswith("bot:"):
            found.setdefault(event.command_id, []).append(event)
    return found


def double_moves(events: list[StoredEvent]) -> list[str]:
    """What in a log shows a bot move applied twice, or at another position than the one it
    was worked out for (empty: none). A bot's command id is ``bot:<bot>:<turn>:<version>``
    (``:quick`` after it for a fallback move): its events must start at that version + 1, and
    one position must have at most one bot command applied."""
    problems = []
    positions: dict[int, str] = {}
    for cid, applied in bot_commands(events).items():
        parts = cid.split(":")
        version = int(parts[3])
        if applied[0].version != version + 1:
            problems.append(f"{cid} applied at version {applied[0].version}")
        if {e.version for e in applied} != set(range(version + 1, version + 1 + len(applied))):
            problems.append(f"{cid}'s events are not one append")
        if version in positions:
            problems.append(f"{cid} and {positions[version]} both applied at {version}")
        positions[version] = cid
        actors = {e.actor for e in applied}
        if actors != {f"bot:{parts[1]}"}:
            problems.append(f"{cid}'s events name {actors} as the actor")
    return problems


@dataclass
class Players:
    """The bots processes of one test, on the stack's Redis and clock."""

    stack: Stack
    running: dict[int, tuple[Bots, asyncio.Task[None]]] = field(default_factory=dict)

    def start(self, consumer: str = "bots-1", **settings: Any) -> Bots:
        """A bots process (``settings`` over the stack's, no pause by default), running."""
        stack = self.stack
        chosen = replace(stack.settings_for(consumer), **{"bot_delay_seconds": 0.0, **settings})
        bots = Bots(stack.clock.redis(stack.client), chosen, clock=stack.clock)
        self.running[id(bots)] = (bots, asyncio.create_task(bots.run()))
        return bots

    async def stop(self, bots: Bots) -> None:
        bots.stop()
        _, task = self.running.pop(id(bots))
        await asyncio.wait_for(task, 20)

    async def stop_all(self) -> None:
        for bots, _ in list(self.running.values()):
            await self.stop(bots)


async def holding(bots: Bots, partitions: int) -> bool:
    return len(bots.held) == partitions


async def log_of(stack: Stack, game_id: str) -> list[Any]:
    return await stack.games.store.read(game_id)
