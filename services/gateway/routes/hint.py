"""``GET /api/games/{id}/hint``: the solver's best play for a seat, from that seat's own view.

A seat token only (the host token, a spectator or no token get 401/403): the hint is computed
from exactly what ``seat_view`` shows that seat (its own hand, the table, whether it has opened),
so it reveals nothing a seat does not already see. Hints are a house rule: a game created with
the option ``"hints": false`` answers 409 ``hints_off``.

Query: ``goal`` = ``cards`` (default) | ``points`` | ``opening``; ``min_disruption`` = ``true`` |
``false``. The answer mirrors `rummy solve`: ``layout`` (a whole table the referee accepts for
that seat), ``played``, ``to_hand``, ``points``, ``seconds``, plus ``found``, ``my_turn`` and the
game ``version`` it was computed at.

The solver runs in the gateway's worker processes (``answers.Answers``), never on the event loop,
within ``RUMMY_HINT_SECONDS``: past it the worker is stopped and the answer is 503
``hint_timeout`` (kept for that seat and version: asking again before the game moves on gets the
same answer at once). Every worker busy and the queue full: 503 ``solver_busy`` with
``Retry-After``, which gives back the pass the seat's hint limit took.
"""

from __future__ import annotations

from aiohttp import web

from services.gateway import jobs
from services.gateway.answers import Job, respond
from services.gateway.errors import ApiError
from services.gateway.state import GATEWAY
from shared.core.views import seat_view

GOALS = ("cards", "points", "opening")


async def hint(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    game_id = request.match_info["game_id"]
    address = await gw.limits.at_address(request)
    loaded = await gw.load(game_id)
    role = await gw.viewer(request, game_id, required=True)
    if role is None or not role.isdigit():
        raise ApiError(403, "forbidden", "hints are for seats: send a seat token")
    seat = int(role)
    taken = await gw.limits.seat_hint(game_id, seat)
    state = loaded.state
    if not state.rules.hints:
        raise ApiError(409, "hints_off", "hints are switched off for this game")
    if state.status == "finished":
        raise ApiError(409, "game_finished", "the game is over")
    if not state.hands or seat >= len(state.hands):
        raise ApiError(409, "game_not_started", "there is no hand to hint at before the deal")
    goal = request.query.get("goal", "cards")
    if goal not in GOALS:
        raise ApiError(422, "bad_request", f"goal must be one of {', '.join(GOALS)}")
    flag = request.query.get("min_disruption", "false")
    if flag not in ("true", "false"):
        raise ApiError(422, "bad_request", "min_disruption must be true or false")
    view = seat_view(state, seat)
    about = {"seat": seat, "version": loaded.version, "my_turn": view.my_turn, "goal": goal}
    key = (game_id, loaded.version, seat, goal, flag)

    async def job() -> Job:
        args = (view.rules, view.table, view.hand, view.opened, goal, flag == "true", about)
        return jobs.hint, args

    budget = gw.settings.hint_seconds
    return respond(await gw.answers.answer("hint", key, job, budget, address, taken))
