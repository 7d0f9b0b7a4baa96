"""Every error the API returns: ``{"error": {"code": ..., "message": ...}}`` with a code from the
published list (the engine's rejection codes, the rules core's layout codes, and these)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from shared.core.codes import REJECTIONS
from shared.infra import jsontext
from shared.infra.errorshape import error_body as error_body  # the shape, used from here
from shared.tournament.commands import CODES as TOURNAMENT_CODES

GATEWAY_ERRORS: dict[str, str] = {
    "unauthorized": "a token is missing where one is needed, or it is not a token of this game",
    "forbidden": "the token is valid but has no right to do this",
    "not_found": "no such game or path",
    "bad_json": "the body is not a JSON object",
    "bad_request": "a field is missing or wrong (the message names it), or the request is not "
    "valid HTTP (a malformed request line or header)",
    "body_too_large": "the request body is larger than the server accepts",
    "url_too_large": "the request line (path and query) is longer than the server reads (414)",
    "header_too_large": "a request header (name and value) is longer than the server reads (431)",
    "rate_limited": "over a rate limit (per address, token, seat or socket); wait Retry-After s",
    "too_many_sockets": "the client address holds as many WebSockets as it may; close one",
    "timeout": "the referee did not answer in time; retry with the same command id or key",
    "command_failed": "the referees could not handle the command (it is in the dead letters)",
    "game_archived": "the game's log has left Redis (archived once over, or lost with Redis's "
    "data): it takes no more commands; an archived game stays readable",
    "internal": "the server failed to answer (a bug, or its Redis is away); retrying may help",
    "unavailable": "the service's Redis cannot take the request now (out of memory, read-only, "
    "loading or unreachable); send it again after Retry-After seconds (the same command id "
    "or Idempotency-Key)",
    "stale_version": "expected_version is not the game's current version",
    "command_id_reused": "the command id was used before for a different command",
    "idempotency_key_reused": "the Idempotency-Key was used before with a different body",
    "name_taken": "another account has that display name (names are unique, case-insensitive)",
    "bad_credentials": "the name and password do not match an account (which was wrong is "
    "not said)",
    "origin_not_allowed": "the request's Origin is not allowed",
    "hints_off": "hints are switched off for this game",
    "not_finished": "the game record is available once the game has ended",
    "rematch_closed": "the finished game is archived and takes no more moves, so no rematch "
    "can be offered now (one offered before is still joined)",
    "solver_busy": "every worker that computes hints and replays is busy; retry after "
    "Retry-After seconds",
    "hint_timeout": "the solver found no play it could prove best within the hint budget "
    "(RUMMY_HINT_SECONDS); no partial hint is given",
    "replay_timeout": "the replay took longer than its budget (RUMMY_REPLAY_SECONDS)",
    "export_timeout": "the game record took longer than its budget (RUMMY_REPLAY_SECONDS)",
}

# A tournament's refusals as the tournament service gives them (its malformed commands are
# bad_request, an unknown tournament not_found).
TOURNAMENT_ERRORS = {
    code: text
    for code, text in TOURNAMENT_CODES.items()
    if code not in ("bad_command", "no_tournament")
}

ERROR_CODES: dict[str, str] = REJECTIONS | GATEWAY_ERRORS | TOURNAMENT_ERRORS

# Refusals that are a conflict with the game's state (409) rather than a rules refusal (422).
UNAVAILABLE_RETRY_SECONDS = 1  # Retry-After of a request Redis could not take

CONFLICTS = frozenset(
    {
        "not_your_turn",
        "stale_version",
        "command_id_reused",
        "game_finished",
        "game_started",
        "game_full",
        "seats_empty",
        "round_over",
        "game_not_started",
        "game_exists",
        "no_scores_yet",
        "stale_timeout",
        "not_finished",
        "not_bot_seat",
        "seat_reserved",
        "seat_taken",
        "not_seated",
        "not_away",
        "game_cancelled",
        "game_archived",
        "not_waiting",
        "game_not_over",
        "rematch_offered",
        "rematch_closed",
        "name_taken",
    }
)


def error_frame(code: str, message: str) -> str:
    """An error over a WebSocket: the published error shape, typed ``"error"``."""
    return jsontext.dumps({"type": "error", **error_body(code, message)})


def unavailable(err: BaseException) -> web.Response:
    """The answer to a request that failed for Redis's reasons (``transient``): a 503 the
    client may retry after a second, not an ``internal`` failure of ours."""
    message = f"Redis cannot take the request now ({type(err).__name__}); retry"
    response = error(503, "unavailable", message)
    response.headers["Retry-After"] = str(UNAVAILABLE_RETRY_SECONDS)
    return response


def error(status: int, code: str, message: str, **extra: Any) -> web.Response:
    """An error response with the published shape."""
    return web.json_response(error_body(code, message, **extra), status=status)


class ApiError(web.HTTPException):
    """Raised inside a handler to answer with an error of the published shape."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        self.status_code = status
        super().__init__(
            text=json.dumps(error_body(code, message, **extra)), content_type="application/json"
        )


def status_for(code: str) -> int:
    """The HTTP status of a refusal code."""
    if code in ("unauthorized",):
        return 401
    if code in ("forbidden", "origin_not_allowed"):
        return 403
    if code == "not_found":
        return 404
    if code in ("command_failed", "internal"):
        return 500
    if code == "unavailable":
        return 503
    return 409 if code in CONFLICTS else 422
