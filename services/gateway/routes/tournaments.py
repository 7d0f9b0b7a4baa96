"""Tournaments' routes that change one: create (the session's account directs it), open and
close registration, register and withdraw, start (pair) the next round, record a ruling.

Every change is a command to the tournament service, sent through the desk
(``shared.infra.tournaments``): a malformed one is refused here with the field at fault and
nothing sent; the rest is judged by the service with the tournament core (who may, and whether
the tournament is where it can take it), whose refusal comes back in the same error shape.
Nothing changes on a refusal.
Command ids (which the desk scopes by who sends them) are derived from what the command is
(``open``, ``pair:<round>``) or bound to the request's ``Idempotency-Key``, so a retry is
applied once and answered as it was.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from aiohttp import web

from services.gateway.accounts import Player
from services.gateway.bodies import Entry, NewRuling, NewTournament, PairRound, Registration
from services.gateway.errors import ApiError
from services.gateway.idempotency import request_key
from services.gateway.params import json_body
from services.gateway.routes.accounts import ACCOUNTS, session_token, signed_in
from services.gateway.routes.tournament_pages import loaded, view_response
from services.gateway.state import GATEWAY
from shared.core.rulesets import ALIASES
from shared.infra.ratings import Ratings
from shared.tournament.commands import TournamentError, command_from
from shared.tournament.events import BOT
from shared.tournament.state import Tournament

# The service's refusals by HTTP status (the rest are 422: a field names what was wrong).
FORBIDDEN = frozenset({"not_director", "not_allowed"})
CONFLICTS = frozenset(
    {
        "tournament_exists",
        "already_open",
        "already_closed",
        "not_registering",
        "already_registered",
        "not_registered",
        "already_withdrawn",
        "tournament_full",
        "too_few_entrants",
        "table_in_play",
        "not_running",
        "round_paired",
        "round_not_due",
        "round_in_play",
        "table_started",
        "table_finished",
        "table_annulled",
        "ruling_recorded",
        "rounds_left",
        "tournament_finished",
    }
)


def refusal(code: str, message: str, field: str = "") -> ApiError:
    """A tournament refusal in the gateway's error shape (``option``: the field at fault)."""
    extra = {"option": field} if field else {}
    if code == "command_id_reused":
        return ApiError(409, code, message, **extra)
    if code == "bad_command":
        return ApiError(422, "bad_request", message, **extra)
    if code == "no_tournament":
        return ApiError(404, "not_found", message)
    status = 403 if code in FORBIDDEN else 409 if code in CONFLICTS else 422
    return ApiError(status, code, message, **extra)


def _checked(kind: str, payload: dict[str, Any]) -> None:
    """Refuse a malformed command here, before anything is sent."""
    try:
        command_from(kind, payload)
    except TournamentError as err:
        raise refusal(err.code, err.message, err.field) from None


def _only(body: dict[str, Any], allowed: Any) -> None:
    unknown = body.keys() - set(allowed.__annotations__)
    if unknown:
        names = ", ".join(sorted(allowed.__annotations__)) or "none"
        raise ApiError(422, "bad_request", f"unknown fields {sorted(unknown)}; allowed: {names}")


async def _player(request: web.Request) -> Player:
    player = await signed_in(request)
    if player is None:
        raise ApiError(
            401, "unauthorized", "log in first: tournaments are for accounts (no live session)"
        )
    return player


async def _send(
    request: web.Request,
    tournament_id: str,
    kind: str,
    payload: dict[str, Any],
    actor: str,
    command_id: str,
) -> None:
    """Send one command through the desk and wait for the service's answer; a refusal is
    raised (and nothing changed)."""
    gw = request.app[GATEWAY]
    _checked(kind, payload)
    try:
        answer = await gw.tournaments.send(tournament_id, kind, command_id, payload, actor)
    except TimeoutError:
        raise ApiError(
            504,
            "timeout",
            "the tournament service did not answer in time; send the request again (with the "
            "same Idempotency-Key, if it had one): it is applied once",
        ) from None
    if answer.get("status") != "accepted":
        code = str(answer.get("code") or "bad_command")
        raise refusal(code, str(answer.get("message") or code), str(answer.get("field") or ""))


async def _after(request: web.Request, tournament_id: str, status: int = 200) -> web.Response:
    """The tournament as it is after a command."""
    return await view_response(request, await loaded(request, tournament_id), status)


def _keyed(what: str, key: str) -> str:
    """A command id bound to the request's ``Idempotency-Key`` (as a digest: the key is the
    client's secret, and the log keeps command ids)."""
    return f"{what}:{hashlib.sha256(key.encode()).hexdigest()[:24]}"


async def _limited(request: web.Request) -> None:
    """A write's limits: per address (every write), then per session (as a seat's commands
    are per token)."""
    gw = request.app[GATEWAY]
    await gw.limits.at_address(request)
    await gw.limits.token(session_token(request))


async def create_tournament(request: web.Request) -> web.Response:
    """A new tournament, directed by the session's account."""
    gw = request.app[GATEWAY]
    player = await _player(request)
    address = await gw.limits.at_address(request, gw.limits.create)
    key = request_key(request)
    body = await json_body(request)
    _only(body, NewTournament)
    payload = {
        "name": body.get("name"),
        "rules": body.get("rules"),
        "options": body.get("options") or {},
        "format": body.get("format", "swiss"),
        "table_seats": body.get("table_seats"),
        "fill": body.get("fill", "byes"),
    }
    if "rounds" in body:
        payload["rounds"] = body["rounds"]
    # A retry with the same key names the same tournament (its create is answered as it was).
    new_id = "t" + secrets.token_hex(8)
    tournament_id = await gw.idempotency.create(address, f"tournament:{key}", payload, new_id)
    payload["tournament_id"] = tournament_id
    await _send(request, tournament_id, "create", payload, player.id, "create")
    return await _after(request, tournament_id, 201)


async def registration(request: web.Request) -> web.Response:
    """The director opens or closes registration (closing starts the tournament)."""
    player = await _player(request)
    await _limited(request)
    tournament_id = request.match_info["tournament_id"]
    body = await json_body(request)
    _only(body, Registration)
    is_open = body.get("open")
    if not isinstance(is_open, bool):
        raise ApiError(
            422, "bad_request", f"open is {is_open!r}; allowed: true or false", option="open"
        )
    await loaded(request, tournament_id)
    kind = "open" if is_open else "close"
    await _send(request, tournament_id, kind, {}, player.id, kind)
    return await _after(request, tournament_id)


async def _rating(request: web.Request, state: Tournament, player: str) -> float:
    """The player's rating in the tournament's rule set now (0 for a newcomer)."""
    gw = request.app[GATEWAY]
    rules = ALIASES.get(state.rules, state.rules)
    standing = await Ratings(gw.client, gw.settings.prefix).standing(rules, player)
    return standing.rating if standing is not None else 0.0


async def enter(request: web.Request) -> web.Response:
    """Register the session's account (or, by the director, ``player``: another account or a
    bot) with its rating now, kept in the log so the pairings replay."""
    player = await _player(request)
    gw = request.app[GATEWAY]
    await gw.limits.at_address(request, gw.limits.seat)
    await gw.limits.token(session_token(request))
    key = request_key(request)
    tournament_id = request.match_info["tournament_id"]
    body = await json_body(request)
    _only(body, Entry)
    who = body.get("player", player.id)
    if not isinstance(who, str) or not who or len(who) > 64:
        raise ApiError(
            422,
            "bad_request",
            f"player is {who!r}; allowed: an account id or 'bot:<name>'",
            option="player",
        )
    state = (await loaded(request, tournament_id)).state
    if who == player.id:
        name = player.name
    elif who.startswith(BOT):
        name = f"{who[len(BOT) :]} bot"
    else:
        other = await request.app[ACCOUNTS].player(who)
        if other is None or other.deleted:
            raise ApiError(404, "not_found", f"no account {who!r}")
        name = other.name
    payload = {"player": who, "name": name, "rating": await _rating(request, state, who)}
    await _send(
        request, tournament_id, "register", payload, player.id, _keyed(f"register:{who}", key)
    )
    return await _after(request, tournament_id, 201)


async def withdraw(request: web.Request) -> web.Response:
    """Withdraw the session's account (or, by the director, ``?player=``): before the start,
    or between rounds."""
    player = await _player(request)
    await _limited(request)
    key = request_key(request)
    tournament_id = request.match_info["tournament_id"]
    who = request.query.get("player", player.id)
    await loaded(request, tournament_id)
    payload = {"player": who}
    await _send(
        request, tournament_id, "withdraw", payload, player.id, _keyed(f"withdraw:{who}", key)
    )
    return await _after(request, tournament_id)


async def start_round(request: web.Request) -> web.Response:
    """The director starts the next round: the service pairs it, seats its tables and starts
    their games."""
    player = await _player(request)
    await _limited(request)
    tournament_id = request.match_info["tournament_id"]
    body = await json_body(request)
    _only(body, PairRound)
    state = (await loaded(request, tournament_id)).state
    number = body.get("round", state.current + 1)
    payload = {"round": number}
    await _send(request, tournament_id, "pair", payload, player.id, f"pair:{number}")
    return await _after(request, tournament_id, 201)


async def rule(request: web.Request) -> web.Response:
    """The director records a ruling, with its reason: it shows in the standings' history."""
    player = await _player(request)
    await _limited(request)
    key = request_key(request)
    tournament_id = request.match_info["tournament_id"]
    body = await json_body(request)
    _only(body, NewRuling)
    await loaded(request, tournament_id)
    await _send(request, tournament_id, "rule", body, player.id, _keyed("rule", key))
    return await _after(request, tournament_id, 201)
