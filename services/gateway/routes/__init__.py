"""The gateway's routes, one module per part of the API; ``add_routes`` puts them on the app."""

from __future__ import annotations

from aiohttp import web

from services.gateway.routes import (
    accounts,
    events,
    games,
    hint,
    howto,
    lifecycle,
    pictures,
    players,
    replay,
    seats,
    static,
    tournament_pages,
    tournaments,
    websocket,
)


def add_routes(app: web.Application) -> None:
    """Every route of the public API, the web client and its files (health routes apart)."""
    app.router.add_post("/api/games", games.create_game)
    app.router.add_get("/api/games", games.list_games)
    app.router.add_get("/api/games/{game_id}", games.get_game)
    app.router.add_post("/api/games/{game_id}/seats", seats.take_seat)
    app.router.add_post("/api/games/{game_id}/start", games.start_game)
    app.router.add_post("/api/games/{game_id}/commands", seats.send_command)
    app.router.add_post("/api/games/{game_id}/leave", lifecycle.leave_game)
    app.router.add_post("/api/games/{game_id}/cancel", lifecycle.cancel_game)
    app.router.add_post("/api/games/{game_id}/rematch", lifecycle.offer_rematch)
    app.router.add_post("/api/games/{game_id}/rematch/seat", lifecycle.join_rematch)
    app.router.add_get("/api/games/{game_id}/events", events.list_events)
    app.router.add_get("/api/games/{game_id}/ws", websocket.websocket)
    app.router.add_get("/api/games/{game_id}/replay", replay.replay_turn)
    app.router.add_get("/api/games/{game_id}/export", replay.export_game)
    app.router.add_get("/api/games/{game_id}/turns/{turn}.svg", pictures.turn_picture)
    app.router.add_get("/api/games/{game_id}/hint", hint.hint)
    accounts.attach(app)
    app.router.add_post("/api/accounts", accounts.register)
    app.router.add_post("/api/sessions", accounts.log_in)
    app.router.add_post("/api/me/logout", accounts.log_out)
    app.router.add_get("/api/me", accounts.me)
    app.router.add_delete("/api/me", accounts.delete_account)
    app.router.add_get("/api/me/sessions", accounts.list_sessions)
    app.router.add_delete("/api/me/sessions/{session_id}", accounts.revoke_session)
    app.router.add_get("/api/me/games", accounts.my_games)
    app.router.add_post("/api/me/games/{game_id}/token", accounts.seat_token)
    app.router.add_get("/api/leaderboard", players.leaderboard)
    app.router.add_get("/api/players/{player_id}", players.player_page)
    app.router.add_post("/api/tournaments", tournaments.create_tournament)
    app.router.add_get("/api/tournaments", tournament_pages.list_tournaments)
    app.router.add_get("/api/tournaments/{tournament_id}", tournament_pages.get_tournament)
    app.router.add_post("/api/tournaments/{tournament_id}/registration", tournaments.registration)
    app.router.add_post("/api/tournaments/{tournament_id}/entrants", tournaments.enter)
    app.router.add_delete("/api/tournaments/{tournament_id}/entrants", tournaments.withdraw)
    app.router.add_post("/api/tournaments/{tournament_id}/rounds", tournaments.start_round)
    app.router.add_post("/api/tournaments/{tournament_id}/rulings", tournaments.rule)
    app.router.add_get("/api/tournaments/{tournament_id}/events", tournament_pages.list_events)
    app.router.add_get("/openapi.json", static.openapi)
    howto.add_routes(app)  # how to play each rule set
    static.add_routes(app)  # the web client at / (and /web/, /api/rules)
