"""The API's OpenAPI 3.1 description, served at /openapi.json (a public contract).

The bodies that have a type in the code (the view, the gateway's requests and answers, the error)
are described by the JSON Schema worked out from those types (``schema.py``), so the document
says what the code builds; the routes and their statuses are listed here.
"""

from __future__ import annotations

from typing import Any

from services.gateway import bodies, tournament_view
from services.gateway.errors import ERROR_CODES
from services.gateway.lobby import MAX_CURSOR, MAX_PAGE, STATUSES
from services.gateway.params import MAX_NUMBER
from services.gateway.schema import Schema, Schemas
from shared.core.judgement import REJECTION_CODES
from shared.core.rulesets import ALIASES, OPTIONS, PRESETS
from shared.infra import tournaments

# Component names kept from the document's first versions where the type's name differs.
NAMES: dict[type, str] = {bodies.SeatCommand: "Command", bodies.CreateGame: "NewGame"}
ERROR = {"$ref": "#/components/schemas/Error"}


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


def _whole(name: str, minimum: int = 0, maximum: int = MAX_NUMBER) -> dict[str, Any]:
    """A query parameter that is a whole number (``params.whole_number`` reads it)."""
    schema = {"type": "integer", "minimum": minimum, "maximum": maximum}
    return {"name": name, "in": "query", "schema": schema}


def _body(schema: Schema) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


# The players' part: accounts, sessions, an account's games, leaderboards and player pages
# (the routes of ``routes.accounts`` and ``routes.players``).
SESSION: list[dict[str, list[str]]] = [{"bearer": []}, {"cookie": []}]
COOKIE_SCHEME = {
    "type": "apiKey",
    "in": "cookie",
    "name": "rummy_session",
    "description": "the web client's session (HttpOnly, SameSite=Lax); the same token as the "
    "bearer one",
}


def _path(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def player_paths(types: Schemas) -> dict[str, Any]:
    """The paths, their bodies' schemas added to ``types``."""
    credentials = types.of(bodies.Credentials)
    session = types.of(bodies.AccountSession)
    player = types.of(bodies.PlayerRef)
    sessions = types.of(bodies.SessionList)
    delete = types.of(bodies.DeleteAccount)
    games = types.of(bodies.MyGames)
    seat_token = types.of(bodies.SeatToken)
    board = types.of(bodies.Leaderboard)
    page = types.of(bodies.PlayerPage)
    rules = {
        "name": "rules",
        "in": "query",
        "schema": {"type": "string", "enum": sorted([*PRESETS, *ALIASES]), "default": "robbers"},
    }
    return {
        "/api/leaderboard": {
            "get": {
                "summary": "One rule set's leaderboard of accounts, or of bots (pool=bots)",
                "description": "By rating (Weng-Lin, mu - 3 sigma), from finished games; guests "
                "are unrated. Accounts and bots play rated games together and are listed apart.",
                "parameters": [
                    rules,
                    {
                        "name": "pool",
                        "in": "query",
                        "schema": {"type": "string", "enum": ["players", "bots"]},
                    },
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": 200},
                    },
                ],
                "responses": {"200": _answer("the board", board), **_errors(422), **_limited()},
            }
        },
        "/api/players/{player_id}": {
            "get": {
                "summary": "A player's page: rating and its history, games, wins, recent games",
                "description": "An account's id, or bot:<name> for a bot. A deleted account "
                "shows as a pseudonym.",
                "parameters": [_path("player_id")],
                "responses": {
                    "200": _answer("the page", page),
                    **_errors(404, 422),
                    **_limited(),
                },
            }
        },
        "/api/accounts": {
            "post": {
                "summary": "Register: a new account, logged in (a session token and cookie)",
                "description": "Names are unique per server, case-insensitively; registrations "
                "count against the login limits (per address and per name).",
                "requestBody": _body(credentials),
                "responses": {
                    "201": _answer("the account and its first session", session),
                    **_errors(400, 409, 422),
                    **_limited(),
                },
            }
        },
        "/api/sessions": {
            "post": {
                "summary": "Log in: a new session for a name and its password",
                "description": "A wrong name and a wrong password answer alike (401 "
                "bad_credentials). Limited per client address and per account name, so "
                "guessing is slow from one address and from many.",
                "requestBody": _body(credentials),
                "responses": {
                    "201": _answer("a new session", session),
                    **_errors(400, 401, 422),
                    **_limited(),
                },
            }
        },
        "/api/me/logout": {
            "post": {
                "summary": "Log out: end the session the request came with",
                "security": SESSION,
                "responses": {"204": _answer("ended"), **_errors(401)},
            }
        },
        "/api/me": {
            "get": {
                "summary": "Who the session belongs to",
                "security": SESSION,
                "responses": {"200": _answer("the account", player), **_errors(401)},
            },
            "delete": {
                "summary": "Delete the account",
                "description": "Its password once more. Its sessions end, its name is free; its "
                "games stay (the logs are immutable) under a pseudonym: its id no longer "
                "resolves to its name.",
                "security": SESSION,
                "requestBody": _body(delete),
                "responses": {"204": _answer("deleted"), **_errors(400, 401, 422), **_limited()},
            },
        },
        "/api/me/sessions": {
            "get": {
                "summary": "The owner's live sessions (never their tokens)",
                "security": SESSION,
                "responses": {"200": _answer("the sessions", sessions), **_errors(401)},
            }
        },
        "/api/me/sessions/{session_id}": {
            "delete": {
                "summary": "Revoke one of the owner's sessions",
                "security": SESSION,
                "parameters": [_path("session_id")],
                "responses": {"204": _answer("revoked"), **_errors(401, 404)},
            }
        },
        "/api/me/games": {
            "get": {
                "summary": "The seats the account took, newest first (to resume anywhere)",
                "security": SESSION,
                "responses": {"200": _answer("the games", games), **_errors(401)},
            }
        },
        "/api/me/games/{game_id}/token": {
            "post": {
                "summary": "A fresh seat token for the account's own seat of a game",
                "security": SESSION,
                "parameters": [_path("game_id")],
                "responses": {
                    "201": _answer("the seat and its token", seat_token),
                    "403": _answer("the seat is no longer the account's", ERROR),
                    **_errors(401, 404),
                    **_limited(),
                },
            }
        },
    }


def tournament_paths(types: Schemas) -> dict[str, Any]:
    """The tournaments' paths (``routes.tournaments`` and ``routes.tournament_pages``), their
    bodies' schemas added to ``types``."""
    view = types.of(bodies.TournamentView)
    lobby = types.of(bodies.TournamentLobby)
    log = types.of(bodies.TournamentEvents)
    tournament_id = _path("tournament_id")
    director = "The tournament's director only (others: 403 not_director). "
    refusals = "The tournament service judges it: a refusal (409 for the tournament's state) "
    refusals += "changes nothing."

    def write(summary: str, description: str, body: type | None, ok: int) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "summary": summary,
            "description": f"{description} {refusals}",
            "security": SESSION,
            "parameters": [tournament_id, IDEMPOTENCY_KEY],
            "responses": {
                str(ok): _answer("the tournament after it", view),
                **_errors(400, 401, 403, 404, 409, 413, 422, 504),
                **_limited(),
            },
        }
        if body is not None:
            doc["requestBody"] = _body(types.of(body))
        return doc

    return {
        "/api/tournaments": {
            "post": {
                "summary": "Create a tournament: the session's account is its director",
                "description": "Every table plays the rule set with the options; format swiss "
                "(by score, then rating; no repeated meetings where avoidable) or round_robin; "
                "fill: byes, or bots:<name> for short tables' seats. Counts against the "
                "games-created limit per address. A retry with the same Idempotency-Key names "
                "the same tournament.",
                "security": SESSION,
                "parameters": [IDEMPOTENCY_KEY],
                "requestBody": _body(types.of(bodies.NewTournament)),
                "responses": {
                    "201": _answer("created (status 'created': open registration next)", view),
                    **_errors(400, 401, 413, 422, 504),
                    **_limited(),
                },
            },
            "get": {
                "summary": "The tournament lobby: one status's tournaments (or all), newest first",
                "parameters": [
                    {
                        "name": "status",
                        "in": "query",
                        "schema": {
                            "type": "string",
                            "enum": [tournaments.ALL, *tournaments.STATUSES],
                            "default": tournaments.ALL,
                        },
                    },
                    _whole("cursor", maximum=tournament_view.MAX_CURSOR),
                    _whole("limit", minimum=1, maximum=tournaments.MAX_PAGE),
                ],
                "responses": {"200": _answer("a page and the next cursor", lobby), **_errors(422)},
            },
        },
        "/api/tournaments/{tournament_id}": {
            "get": {
                "summary": "A tournament: entrants, rounds and their tables (game ids, links to "
                "watch and replay), live standings, their history and every ruling's reason",
                "description": "The same for everyone: nothing in it is secret (no hand, stock "
                "or seed of any game).",
                "parameters": [tournament_id],
                "responses": {"200": _answer("the tournament", view), **_errors(404)},
            }
        },
        "/api/tournaments/{tournament_id}/registration": {
            "post": write(
                "Open (open: true) or close (open: false) registration",
                director + "Closing starts the tournament: the director then starts round 1.",
                bodies.Registration,
                200,
            )
        },
        "/api/tournaments/{tournament_id}/entrants": {
            "post": write(
                "Register: the session's account (with its rating now), or by the director "
                "another account or a bot (player)",
                "While registration is open; a guest cannot register (401).",
                bodies.Entry,
                201,
            ),
            "delete": {
                **write(
                    "Withdraw: the session's account, or by the director ?player=",
                    "Before the start, or between rounds (later rounds count as forfeits).",
                    None,
                    200,
                ),
                "parameters": [
                    tournament_id,
                    IDEMPOTENCY_KEY,
                    {"name": "player", "in": "query", "schema": {"type": "string"}},
                ],
            },
        },
        "/api/tournaments/{tournament_id}/rounds": {
            "post": write(
                "Start the next round: pair it (the service seats its tables and starts their "
                "games)",
                director + "After registration closed and once the last round is over; "
                "'round' (default: the one due) makes a repeat a refusal, not a new round.",
                bodies.PairRound,
                201,
            )
        },
        "/api/tournaments/{tournament_id}/rulings": {
            "post": write(
                "Record a ruling with its reason: annul a table's game, a forfeit against a "
                "player, or a disputed turn's verdict",
                director + "It is an event of the tournament's log and shows in the "
                "standings' history with its reason.",
                bodies.NewRuling,
                201,
            )
        },
        "/api/tournaments/{tournament_id}/events": {
            "get": {
                "summary": "The tournament's log after a version, hash-chained (for audit)",
                "description": "Counts against the replays-and-event-pages limit per address.",
                "parameters": [
                    tournament_id,
                    _whole("after"),
                    _whole("limit", minimum=1, maximum=tournament_view.EVENTS_PAGE),
                ],
                "responses": {
                    "200": _answer("events, version and head", log),
                    **_errors(404, 422),
                    **_limited(),
                },
            }
        },
    }


def openapi_document() -> dict[str, Any]:
    """The whole document."""
    game_id = {"name": "game_id", "in": "path", "required": True, "schema": {"type": "string"}}
    types = Schemas(NAMES)
    view = types.of(bodies.View)
    types.of(bodies.Error)  # the component that ERROR refers to
    command = types.of(bodies.SeatCommand)
    new_game = types.of(bodies.CreateGame)
    created = types.of(bodies.Created)
    sit = types.of(bodies.Sit)
    seated = types.of(bodies.Seated)
    accepted = types.of(bodies.Accepted)
    leave = types.of(bodies.Leave)
    rematch = types.of(bodies.Rematch)
    rematch_seat = types.of(bodies.RematchSeat)
    players = player_paths(types)
    tournament_routes = tournament_paths(types)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Robbers' Rummy referee",
            "version": "1",
            "description": "Create games, take seats, play by commands, follow by WebSocket. "
            "Every view and command answer carries the chain head (version, head) as a receipt.",
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "cookie": COOKIE_SCHEME,
            },
            "schemas": types.components,
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
                    "requestBody": _body(new_game),
                    "responses": {
                        "201": _answer("created", created),
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
                            "schema": {"type": "string", "enum": list(STATUSES)},
                        },
                        _whole("cursor", maximum=MAX_CURSOR),
                        _whole("limit", minimum=1, maximum=MAX_PAGE),
                    ],
                    "responses": {
                        "200": _answer(
                            "a page of games and the next cursor (a finished game's "
                            "won_by: its winners' names)"
                        ),
                        **_errors(422),
                    },
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
                    "summary": "Take the next free seat (or, with 'bot' and the host token, give "
                    "it to a bot)",
                    "security": [{}, {"bearer": []}],
                    "parameters": [game_id, IDEMPOTENCY_KEY],
                    "requestBody": _body(sit),
                    "responses": {
                        "201": _answer("seated: seat number and its token", seated),
                        **_errors(400, 401, 403, 404, 409, 413, 422, 500, 504),
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
                    "requestBody": _body(command),
                    "responses": {
                        "200": _answer("accepted", accepted),
                        **_errors(400, 401, 403, 404, 409, 413, 422, 504),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/leave": {
                "post": {
                    "summary": "Give up a seat of a waiting game (its tokens stop working)",
                    "description": "A seat's token leaves its own seat; the host's token frees a "
                    "bot's seat given as 'seat' (rules Decision 15).",
                    "parameters": [game_id],
                    "security": [{"bearer": []}],
                    "requestBody": _body(leave),
                    "responses": {
                        "200": _answer("the spectator view", view),
                        **_errors(400, 401, 403, 404, 409, 413, 422, 504),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/cancel": {
                "post": {
                    "summary": "Cancel a waiting game (host token; rules Decision 18)",
                    "parameters": [game_id],
                    "security": [{"bearer": []}],
                    "responses": {
                        "200": _answer("the spectator view", view),
                        **_errors(401, 403, 404, 409, 504),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/rematch": {
                "post": {
                    "summary": "Offer a rematch of a finished game and take a seat in it",
                    "description": "Same rules and options, the seats rotated by one, linked "
                    "both ways (rules Decision 19); offered again, the same rematch is joined. "
                    "A game archived and gone from Redis takes no more moves: 409 "
                    "rematch_closed, and no game is made (a rematch offered before is joined).",
                    "parameters": [game_id],
                    "security": [{"bearer": []}],
                    "requestBody": _body(rematch),
                    "responses": {
                        "201": _answer("the seat in the rematch and its token", rematch_seat),
                        **_errors(400, 401, 403, 404, 409, 413, 422, 504),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/rematch/seat": {
                "post": {
                    "summary": "Take one's reserved seat in the rematch (old seat's token)",
                    "description": "The rematch starts once every seat is taken.",
                    "parameters": [game_id],
                    "security": [{"bearer": []}],
                    "requestBody": _body(rematch),
                    "responses": {
                        "201": _answer("the seat in the rematch and its token", rematch_seat),
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
                        _whole("after"),
                    ],
                    "responses": {
                        "200": _answer("events, version and head"),
                        **_errors(401, 404, 422),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/ws": {
                "get": {
                    "summary": "WebSocket: views pushed after every change; commands accepted",
                    "description": "Frames: view, events (with 'after', or after a sync "
                    "message), answer, error. Clients send text frames of JSON: a binary frame "
                    "or text that is not a JSON object is answered with an error frame "
                    "(bad_json); events that cannot be read, or a frame the server fails to "
                    "answer, with one (internal). A socket that lets its queue of frames fill up "
                    "(RUMMY_SOCKET_QUEUE) is closed with 4008 'too slow: reconnect with "
                    "?after=<version>'; on shutdown with 1001 (going away). "
                    "Each command frame is answered {type: answer, id, status, "
                    "body}; a frame over a rate limit (commands per token, syncs and re-auths per "
                    "socket, everything per address) is answered with status 429, the error body "
                    "and retry_after (seconds).",
                    "parameters": [
                        game_id,
                        {"name": "token", "in": "query", "schema": {"type": "string"}},
                        _whole("after"),
                    ],
                    "responses": {
                        "101": _answer("switching protocols"),
                        **_errors(400, 401, 403, 404, 422),
                        **_limited(),
                    },
                },
            },
            "/api/games/{game_id}/replay": {
                "get": {
                    "summary": "One turn (or version) before and after, with re-judged verdicts",
                    "description": "From the viewer's point of view while the game is live (a "
                    "seat sees its own hand only); everything once it has ended.",
                    "parameters": [
                        game_id,
                        _whole("turn", minimum=1),
                        _whole("version", minimum=1),
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
            "/api/games/{game_id}/turns/{turn}.svg": {
                "get": {
                    "summary": "A picture of one turn (SVG): the table before and after, the "
                    "hands, the stock and pile, what happened",
                    "description": "The replay of the turn, drawn, shown as the replay is: a seat "
                    "token sees its own hand (the others as backs and counts), none or the host "
                    "token what a spectator sees; everyone everything once the game has ended. "
                    "The stock is never drawn. The token may also come as ?token=.",
                    "parameters": [
                        game_id,
                        {
                            "name": "turn",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_NUMBER},
                        },
                    ],
                    "security": [{}, {"bearer": []}],
                    "responses": {
                        "200": {"description": "the picture", "content": {"image/svg+xml": {}}},
                        **_errors(401, 404, 422),
                        "503": _answer(
                            "replay_timeout: longer than RUMMY_REPLAY_SECONDS to draw; "
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
                            "schema": {"type": "string", "enum": ["cards", "points", "opening"]},
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
                    "description": "Also ``seeded_games``: whether this server accepts a "
                    "fixed deal seed on create (started with --allow-seeded-games).",
                    "responses": {"200": _answer("presets and options")},
                },
            },
            "/": {
                "get": {"summary": "The web client", "responses": {"200": {"description": "HTML"}}}
            },
            "/how-to-play": {
                "get": {
                    "summary": "How to play: the three rule sets, each with its own page",
                    "responses": {"200": {"description": "HTML"}},
                }
            },
            "/how-to-play/{rules}": {
                "get": {
                    "summary": "How to play one rule set: melds, opening, jokers, a turn, "
                    "scoring, and every variant with this rule set's default",
                    "parameters": [
                        {
                            "name": "rules",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "enum": [*PRESETS, *ALIASES]},
                        }
                    ],
                    "responses": {"200": {"description": "HTML"}, **_errors(404)},
                }
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
                    "responses": {"200": {"description": "a file"}, **_errors(404)},
                }
            },
            **players,
            **tournament_routes,
            "/openapi.json": {"get": {"responses": {"200": _answer("this document")}}},
            "/healthz": {"get": {"responses": {"200": _answer("the process runs")}}},
            "/readyz": {
                "get": {"responses": {"200": _answer("ready"), "503": _answer("not ready")}}
            },
            "/metrics": {"get": {"responses": {"200": _answer("Prometheus metrics")}}},
        },
    }
