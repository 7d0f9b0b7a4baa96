"""A game's lobby summary: the few fields a listing shows of it, kept per game.

A listing of finished games is read from these instead of from the games' logs (a fold of each
whole log per cold request otherwise). A finished game never changes, so its summary, written
once by the referee that appends its end (and by a listing that finds none: an older referee's
game, or one whose summary expired), stays true; it outlives the game's log in Redis by
``SUMMARY_SECONDS``, so archived games are listed from it too.
"""

from __future__ import annotations

from typing import Any

from shared.core.state import GameState
from shared.infra import jsontext
from shared.infra.keys import Keys

SUMMARY_SECONDS = 30 * 24 * 3600
"""How long a summary is kept after it is written (a listing that misses it writes it again)."""


def listed_status(state: GameState) -> str:
    """The lobby status a game is listed under (``cancelled``: under none)."""
    return "waiting" if state.status in ("new", "waiting") else state.status


def summary_of(game_id: str, state: GameState) -> dict[str, Any]:
    """What a lobby listing shows of a game."""
    return {
        "game_id": game_id,
        "rules": state.rules.name,
        "options": state.rules.options(),
        "status": listed_status(state),
        "seats": state.seats,
        "seated": state.seated(),
        "names": [name for name in state.names if name],
        "round": state.round,
        **won_by(state),
    }


def won_by(state: GameState) -> dict[str, list[str]]:
    """A finished game's winners by name (the lobby shows them), else nothing."""
    if state.status != "finished":
        return {}
    return {"won_by": [state.names[s] or f"seat {s + 1}" for s in state.winners]}


def summary_key(keys: Keys, game_id: str) -> str:
    """The key of a game's summary (of its slot: written with the game's own writes)."""
    return keys.game(game_id, "summary")


def encode_summary(summary: dict[str, Any]) -> bytes:
    return jsontext.dumps_bytes(summary)


def decode_summary(raw: Any, game_id: str) -> dict[str, Any] | None:
    """A kept summary of ``game_id``, or None if there is none or it is not one (it is then
    made again from the game)."""
    if not isinstance(raw, bytes | str):
        return None
    try:
        summary = jsontext.loads(raw)
    except ValueError:
        return None
    if not isinstance(summary, dict) or summary.get("game_id") != game_id:
        return None
    return summary
