"""The gateway's costly answers (hints, replays, exports): worked out in its worker pool, each
within its wall-clock budget, never on the event loop; and kept, by exactly what they answer, so
the same question costs nothing twice.

A key names the game, its version, the question and the viewer it was answered for (a seat's
hint for that seat, a replay for the viewer the replay rules chose), so an answer kept for one
viewer is never given to another, and a game that moved on is a new question. The same question
asked again while it is being worked out waits for that one job instead of starting another. An
answer that ran past its budget is kept as such: asking again at the same version would only
spend the same budget again. A refusal of the pool (every worker busy, a worker lost) is not
kept: 503 ``solver_busy`` with ``Retry-After``.

Whose refusal it is decides whether it costs the client its hint or replay allowance. An answer
to the question counts, refusals included: a turn the game has not reached, a game not
finished, an answer that ran past its budget (``*_timeout``: a worker spent the whole budget on
it, and asking again gets the same answer at once). ``solver_busy`` says nothing about the
question, only that the service had no room for it then (every worker busy, a worker lost, the
address's share of the pool taken by its other questions): nothing was worked out, and waiting
``Retry-After`` is all the client can do, so it gives back the pass its route's limit took (as
does a failure of the service's own: the game's log could not be read). The per-address limit
every route shares still counts it: the gateway did handle the request, and that limit still
bounds a client that loops on its 503s, each held before it is sent as a rate limit's refusal
is (``tarpit``).

One client cannot take the whole pool: a client address may have at most
``RUMMY_SOLVER_PER_ADDRESS`` answers being worked out at once (asking a question someone is
already having worked out does not count), and the workers run at a lower CPU priority than the
gateway (``RUMMY_SOLVER_NICE``), so on a machine short of cores the other requests go first.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter

from services.gateway import jobs
from services.gateway.errors import ApiError
from services.gateway.jobs import Answer
from services.gateway.ratelimit import Pass
from shared.infra.settings import Settings
from shared.infra.workpool import JobTimeout, PoolBusy, PoolError, WorkPool

Job = tuple[Callable[..., Answer], tuple[Any, ...]]  # a function of ``jobs`` and its arguments

KEPT = 512  # answers kept (a replay's text is some tens of kilobytes at most)

LATE = {
    "hint": (
        "hint_timeout",
        "the solver found no play it could prove best within {budget:g} s; this position "
        "costs too much to hint (ask again once the game has moved on)",
    ),
    "replay": ("replay_timeout", "the replay took longer than {budget:g} s to work out"),
    "export": ("export_timeout", "the game record took longer than {budget:g} s to build"),
}


class Answers:
    """The worker pool, the answers kept and the questions being worked out."""

    def __init__(self, settings: Settings, registry: CollectorRegistry | None) -> None:
        self.pool = WorkPool(
            settings.solver_workers,
            settings.solver_queue,
            initializer=jobs.prepare,
            niceness=settings.solver_nice,
            registry=registry,
            namespace="gateway_pool",
        )
        self.per_address = settings.solver_per_address
        self.kept: OrderedDict[Hashable, Answer] = OrderedDict()
        self._working: dict[Hashable, asyncio.Future[Answer]] = {}
        self._owned: dict[str, int] = {}  # answers being worked out, by the address that asked
        self.looked_up = Counter(
            "gateway_answers_total",
            "Costly answers asked for, by kind and whether one kept was given",
            ["kind", "kept"],
            registry=registry,
        )

    async def start(self, warm: bool = False) -> None:
        await self.pool.start(warm)

    async def stop(self) -> None:
        await self.pool.stop()

    async def answer(
        self,
        kind: str,
        key: Hashable | None,
        job: Callable[[], Awaitable[Job]],
        budget: float,
        owner: str,
        taken: Pass | None = None,
    ) -> Answer:
        """The answer to ``key``, a question of ``kind`` (``hint``, ``replay``, ``export``):
        kept, being worked out, or worked out now for ``owner`` (the client address):
        ``await job()`` gives the function and its arguments (called only then: a kept answer
        needs no log read), run in the pool within ``budget`` seconds. ``key=None``: never
        kept (an export's time stamp changes). ``taken``: the pass the request took from its
        route's limit, given back if the answer is ``solver_busy`` or the service failed to
        answer (a 500, a 503 from Redis: the log could not be read), never for a refusal of
        the question itself."""
        try:
            return await self._answer(kind, key, job, budget, owner)
        except Exception as err:
            ours = isinstance(err, SolverBusy) or not isinstance(err, ApiError)
            if ours and taken is not None:
                try:
                    await taken.give_back()
                except Exception as lost:  # Redis away: the pass is lost, the failure stands
                    err.add_note(f"the pass could not be given back: {lost}")
            raise

    async def _answer(
        self,
        kind: str,
        key: Hashable | None,
        job: Callable[[], Awaitable[Job]],
        budget: float,
        owner: str,
    ) -> Answer:
        name = (kind, key)
        if key is not None:
            kept = self.kept.get(name)
            if kept is not None:
                self.kept.move_to_end(name)
                self.looked_up.labels(kind, "yes").inc()
                return kept
        self.looked_up.labels(kind, "no").inc()
        working = self._working.get(name) if key is not None else None
        if working is None:
            if self._owned.get(owner, 0) >= self.per_address:
                raise _busy(
                    f"this address already has {self.per_address} answer(s) being worked out; "
                    "ask again when it has come",
                    budget,
                )
            self._owned[owner] = self._owned.get(owner, 0) + 1
            working = asyncio.ensure_future(self._work(kind, key, job, budget))
            working.add_done_callback(lambda _: self._disown(owner))
            if key is not None:
                self._working[name] = working
                working.add_done_callback(lambda _: self._working.pop(name, None))
            working.add_done_callback(_retrieve)
        try:
            return await asyncio.shield(working)  # a caller who leaves stops nobody's answer
        except PoolBusy as err:
            raise _busy(str(err), budget) from None
        except PoolError as err:  # a worker lost, the pool stopping: try again
            raise _busy(f"the answer could not be worked out ({err})", budget) from None

    def _disown(self, owner: str) -> None:
        left = self._owned.pop(owner, 1) - 1
        if left > 0:
            self._owned[owner] = left

    async def _work(
        self, kind: str, key: Hashable | None, job: Callable[[], Awaitable[Job]], budget: float
    ) -> Answer:
        fn, args = await job()
        try:
            # Within the asker's budget, a wait for a busy worker included (``PoolBusy``
            # then: a matter of load, not of the question, so not kept).
            answer = await self.pool.run(kind, fn, *args, budget=budget)
        except JobTimeout:
            code, message = LATE[kind]
            answer = Answer(message.format(budget=budget), 503, code)
        if key is not None:
            self.kept[(kind, key)] = answer
            while len(self.kept) > KEPT:
                self.kept.popitem(last=False)
        return answer


def respond(answer: Answer, **response: Any) -> web.Response:
    """The HTTP answer: the body (with ``response``'s content type and headers), or the refusal
    in the published error shape."""
    if answer.code:
        raise ApiError(answer.status, answer.code, answer.text)
    response.setdefault("content_type", "application/json")
    return web.Response(text=answer.text, status=answer.status, **response)


class SolverBusy(ApiError):
    """503 ``solver_busy``: the service had no room to work the answer out (see above)."""


def _busy(message: str, budget: float) -> SolverBusy:
    err = SolverBusy(503, "solver_busy", message)
    err.headers["Retry-After"] = str(max(1, math.ceil(budget)))
    return err


def _retrieve(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()
