"""The gateway's routes, one module per part of the API; ``add_routes`` puts them on the app."""

from __future__ import annotations

from aiohttp import web

from services.gateway.routes import events, games, hint, replay, seats, static, websocket


def add_routes(app: web.Application) -> None:
    """Every route of the public API, the web client and its files (health routes apart)."""
    app.router.add_post("/api/games", games.create_game)
    app.router.add_get("/api/games", games.list_games)
    app.router.add_get("/api/games/{game_id}", games.get_game)
    app.router.add_post("/api/games/{game_id}/seats", seats.take_seat)
    app.router.add_post("/api/games/{game_id}/start", games.start_game)
    app.router.add_post("/api/games/{game_id}/commands", seats.send_command)
    app.router.add_get("/api/games/{game_id}/events", events.list_events)
    app.router.add_get("/api/games/{game_id}/ws", websocket.websocket)
    app.router.add_get("/api/games/{game_id}/replay", replay.replay_turn)
    app.router.add_get("/api/games/{game_id}/export", replay.export_game)
    app.router.add_get("/api/games/{game_id}/hint", hint.hint)
    app.router.add_get("/openapi.json", static.openapi)
    static.add_routes(app)  # the web client at / (and /web/, /api/rules)
