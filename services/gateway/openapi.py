"""The API's OpenAPI 3.1 description, served at /openapi.json (a public contract)."""

from __future__ import annotations

from typing import Any

from services.gateway.errors import ERROR_CODES
from shared.core.judgement import REJECTION_CODES
from shared.core.rulesets import OPTIONS, PRESETS

ERROR = {"$ref": "#/components/schemas/Error"}
RECEIPT = {"version": {"type": "integer"}, "head": {"type": "string"}}


def _answer(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"description": description}
    if schema is not None:
        body["content"] = {"application/json": {"schema": schema}}
    return body


def _errors(*statuses: int) -> dict[str, Any]:
    return {str(s): _answer("an error (see the codes)", ERROR) for s in statuses}


def _limited() -> dict[str, Any]:
    """The 429 of a route under the rate limits."""
    answer = _answer("over a rate limit (rate_limited); nothing was done", ERROR)
    answer["headers"] = {
        "Retry-After": {
            "description": "whole seconds (at least 1) until the request may pass",
            "schema": {"type": "integer", "minimum": 1},
        }
    }
    return {"429": answer}


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "1-64 printable ASCII characters (bare or quoted; a random UUID is best). "
    "Sent again with the same key and body: the same game (a fresh host token) or the same seat "
    "(a fresh seat token); the same key with another body is 422 idempotency_key_reused. A sit's "
    "key counts within its game, a create's from the same client address; kept for "
    "RUMMY_IDEMPOTENCY_SECONDS. Without one, a 504 (or 500) names the key the gateway picked "
    "in 'idempotency_key': retry with it.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 64},
}


def openapi_document() -> dict[str, Any]:
    """The whole document."""
    game_id = {"name": "game_id", "in": "path", "required": True, "schema": {"type": "string"}}
    view = {"$ref": "#/components/schemas/View"}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Robbers' Rummy referee",
            "version": "1",
            "description": "Create games, take seats, play by commands, follow by WebSocket. "
            "Every view and command answer carries the chain head (version, head) as a receipt.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "properties": {
                                "code": {"type": "string", "enum": sorted(ERROR_CODES)},
                                "message": {"type": "string"},
                            },
                        },
                        **RECEIPT,
                        "idempotency_key": {
                            "type": "string",
                            "description": "a create or sit that timed out: retry with this "
                            "Idempotency-Key",
                        },
                    },
                },
                "View": {
                    "type": "object",
                    "description": "A seat's view (with 'hand') or the spectator's ('you': null).",
                    "properties": {
                        "game_id": {"type": "string"},
                        **RECEIPT,
                        "status": {"enum": ["waiting", "playing", "finished"]},
                        "rules": {"type": "object"},
                        "round": {"type": "integer"},
                        "turn": {"type": ["object", "null"]},
                        "you": {"type": ["integer", "null"]},
                        "hand": {"type": "array", "items": {"type": "string"}},
                        "table": {"type": "array"},
                        "seats": {"type": "array"},
                        "stock": {"type": "integer"},
                        "discard": {"type": ["string", "null"]},
                        "last_round": {"type": ["object", "null"]},
                        "winner": {"type": ["array", "null"]},
                    },
                },
                "Command": {
                    "type": "object",
                    "required": ["id", "type"],
                    "properties": {
                        "id": {"type": "string", "maxLength": 64},
                        "type": {"enum": ["play", "draw", "end", "pass", "discard"]},
                        "layout": {
                            "type": "array",
                            "items": {"type": "array", "items": {"type": "string"}},
                        },
                        "card": {"type": "string"},
                        "source": {"enum": ["stock", "pile"]},
                        "expected_version": {"type": "integer"},
                    },
                },
            },
            "x-layout-codes": REJECTION_CODES,
            "x-error-codes": ERROR_CODES,
            "x-rule-sets": sorted(PRESETS),
            "x-options": {name: spec.help for name, spec in OPTIONS.items()},
        },
        "paths": {
            "/api/games": {
                "post": {
                    "summary": "Create a game",
                    "parameters": [IDEMPOTENCY_KEY],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["rules", "seats"],
                                    "properties": {
                                        "rules": {"type": "string"},
                                        "seats": {"type": "integer"},
                                        "options": {"type": "object"},
                                        "seed": {
                                            "type": "string",
                                            "description": "hex; only on servers "
                                            "started with --allow-seeded-games",
                                        },
                                    },
                                }
                            }
                        }
                    },
                    "responses": {
                        "201": _answer(
                            "created",
                            {
                                "type": "object",
                                "properties": {
                                    "game_id": {"type": "string"},
                                    "host_token": {"type": "string"},
                                },
                            },
                        ),
                        **_errors(400, 413, 422, 500, 504),
                        **_limited(),
                    },
                },
                "get": {
                    "summary": "The lobby",
                    "parameters": [
                        {
                            "name": "status",
                            "in": "query",
                            "schema": {"enum": ["waiting", "playing", "finished"]},
                        },
                        {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    ],
                    "responses": {"200": _answer("a page of games and the next cursor")},
                },
            },
            "/api/games/{game_id}": {
                "get": {
                    "summary": "A seat's view (seat token) or the spectator view",
                    "parameters": [game_id],
                    "security": [{}, {"bearer": []}],
                    "responses": {"200": _answer("the view", view), **_errors(401, 404)},
                },
            },
            "/api/games/{game_id}/seats": {
                "post": {
                    "summary": "Take the next free seat",
                    "parameters": [game_id, IDEMPOTENCY_KEY],
                    "responses": {
                        "201": _answer("seated: seat number and its token"),
                        **_errors(404, 409, 422, 500, 504),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/start": {
                "post": {
                    "summary": "Start the game (host token)",
                    "parameters": [game_id],
                    "security": [{"bearer": []}],
                    "responses": {
                        "200": _answer("the spectator view", view),
                        **_errors(401, 403, 404, 409),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/commands": {
                "post": {
                    "summary": "A seat's command",
                    "parameters": [game_id],
                    "security": [{"bearer": []}],
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Command"}}
                        }
                    },
                    "responses": {
                        "200": _answer(
                            "accepted",
                            {
                                "type": "object",
                                "properties": {"accepted": {"const": True}, **RECEIPT},
                            },
                        ),
                        **_errors(400, 401, 403, 404, 409, 413, 422, 504),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/events": {
                "get": {
                    "summary": "Events after a version, filtered for the viewer",
                    "parameters": [
                        game_id,
                        {"name": "after", "in": "query", "schema": {"type": "integer"}},
                    ],
                    "responses": {
                        "200": _answer("events, version and head"),
                        **_errors(401, 404),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/ws": {
                "get": {
                    "summary": "WebSocket: views pushed after every change; commands accepted",
                    "description": "Frames: view, events (with 'after', or after a sync "
                    "message), answer, error. A socket that lets its queue of frames fill up "
                    "(RUMMY_SOCKET_QUEUE) is closed with 4008 'too slow: reconnect with "
                    "?after=<version>'; on shutdown with 1001 (going away). "
                    "Each command frame is answered {type: answer, id, status, "
                    "body}; a frame over a rate limit (commands per token, syncs and re-auths per "
                    "socket, everything per address) is answered with status 429, the error body "
                    "and retry_after (seconds).",
                    "parameters": [
                        game_id,
                        {"name": "token", "in": "query", "schema": {"type": "string"}},
                        {"name": "after", "in": "query", "schema": {"type": "integer"}},
                    ],
                    "responses": {"101": _answer("switching protocols"), **_limited()},
                },
            },
            "/api/games/{game_id}/replay": {
                "get": {
                    "summary": "One turn (or version) before and after, with re-judged verdicts",
                    "description": "From the viewer's point of view while the game is live (a "
                    "seat sees its own hand only); everything once it has ended.",
                    "parameters": [
                        game_id,
                        {"name": "turn", "in": "query", "schema": {"type": "integer"}},
                        {"name": "version", "in": "query", "schema": {"type": "integer"}},
                    ],
                    "security": [{}, {"bearer": []}],
                    "responses": {
                        "200": _answer("the replay"),
                        **_errors(401, 404, 422),
                        "503": _answer(
                            "replay_timeout: longer than RUMMY_REPLAY_SECONDS to work out; "
                            "solver_busy: every worker busy (see Retry-After)",
                            ERROR,
                        ),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/export": {
                "get": {
                    "summary": "The game record (.rrec, JSON lines)",
                    "description": "To anyone once the game has ended; at any time with the "
                    "operator token.",
                    "parameters": [game_id],
                    "security": [{}, {"bearer": []}],
                    "responses": {
                        "200": {
                            "description": "the record",
                            "content": {"application/x-ndjson": {}},
                        },
                        **_errors(404, 409),
                        "503": _answer(
                            "export_timeout: longer than RUMMY_REPLAY_SECONDS to build; "
                            "solver_busy: every worker busy (see Retry-After)",
                            ERROR,
                        ),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/hint": {
                "get": {
                    "summary": "The best play the solver finds for the seat to move",
                    "description": "Worked out within RUMMY_HINT_SECONDS; past it 503 "
                    "hint_timeout (no partial hint: only a play proven best is given).",
                    "parameters": [
                        game_id,
                        {
                            "name": "goal",
                            "in": "query",
                            "schema": {"enum": ["cards", "points", "opening"]},
                        },
                        {"name": "min_disruption", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    "security": [{"bearer": []}],
                    "responses": {
                        "200": _answer("a layout with played cards and points"),
                        **_errors(401, 403, 404, 409, 422),
                        "503": _answer(
                            "hint_timeout: no play proven best within RUMMY_HINT_SECONDS; "
                            "solver_busy: every worker busy (see Retry-After)",
                            ERROR,
                        ),
                        **_limited(),
                    },
                },
            },
            "/api/rules": {
                "get": {
                    "summary": "The rule sets, their options, defaults and allowed values",
                    "responses": {"200": _answer("presets and options")},
                },
            },
            "/": {
                "get": {"summary": "The web client", "responses": {"200": {"description": "HTML"}}}
            },
            "/web/{path}": {
                "get": {
                    "summary": "The web client's files",
                    "parameters": [
                        {
                            "name": "path",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {"200": {"description": "a file"}},
                }
            },
            "/openapi.json": {"get": {"responses": {"200": _answer("this document")}}},
            "/healthz": {"get": {"responses": {"200": _answer("the process runs")}}},
            "/readyz": {
                "get": {"responses": {"200": _answer("ready"), "503": _answer("not ready")}}
            },
            "/metrics": {"get": {"responses": {"200": _answer("Prometheus metrics")}}},
        },
    }
