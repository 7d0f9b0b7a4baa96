"""Every rejection code the engine returns, in one place; the API returns them unchanged.

``RECORDED`` codes are refusals by the rules of a move the seat was entitled to try: they are
recorded as ``CommandRejected`` events (disputes need the attempts) and answered with 422. The
others are refused without an event (409 for a conflict with the game's state).
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.core.judgement import REJECTION_CODES as LAYOUT_CODES


@dataclass(frozen=True, slots=True)
class Rejection:
    """A refused command: a stable code and a sentence for people."""

    code: str
    message: str


REJECTIONS: dict[str, str] = {
    "illegal_layout": "the proposed table is not legal; the message gives the rules core's reason "
    "(and, for the rejected layout one past max_rejections, that the referee ended the turn)",
    "not_your_turn": "it is another seat's turn",
    "game_not_started": "the game is still waiting for players or for the host to start it",
    "game_finished": "the game is over",
    "game_exists": "a game with this id already exists",
    "game_full": "every seat is taken",
    "game_started": "the game has started; seats can no longer be taken",
    "seats_empty": "the game cannot start while a seat is empty",
    "bad_seed": "the seed given does not match the game's commitment",
    "bad_options": "the rule set or an option is not allowed (the message names it)",
    "round_over": "the round is over; the next one is dealt once the score sheet is recorded",
    "no_scores_yet": "the round's score sheet is not recorded yet",
    "scores_recorded": "this round's score sheet is already recorded",
    "scores_wrong": "the score sheet does not match the round",
    "stock_empty": "the stock is empty: pass instead of drawing",
    "stock_not_empty": "passing is only allowed when the stock is empty",
    "pile_empty": "the discard pile is empty",
    "already_drawn": "the seat has already drawn this turn",
    "must_draw_first": "in the discard-pile variant every turn begins with a draw",
    "must_discard": "the seat has drawn and must end the turn with a discard",
    "must_draw_or_place": "end needs a placement or a draw first; with nothing placed, draw",
    "not_in_these_rules": "this kind of move does not exist in this rule set",
    "card_not_in_hand": "the card is not in the seat's hand",
    "card_taken_from_pile": "a card taken from the pile cannot be discarded in the same turn",
    "timer_not_expired": "the turn's deadline has not passed",
    "stale_timeout": "that turn is already over",
    "not_bot_seat": "a bot may move only for a seat it plays now",
    "seat_reserved": "the seats of a rematch or a tournament table are kept for their players",
    "seat_taken": "that seat is taken",
    "not_seated": "the seat is not taken, or its player has left the game",
    "not_away": "the seat's player is not away",
    "game_cancelled": "the game was cancelled",
    "not_waiting": "only a game still waiting for players can be cancelled or left",
    "game_not_over": "a rematch can only be offered once the game is over",
    "rematch_offered": "a rematch of this game was offered already (the message names it)",
    "bad_command": "the command is malformed (the message names the field)",
    "stale_version": "expected_version is not the game's current version",
    "command_id_reused": "the command id was used before for a different command",
}
RECORDED = frozenset({"illegal_layout"})

ALL_CODES: dict[str, str] = REJECTIONS | {f"illegal_layout/{k}": v for k, v in LAYOUT_CODES.items()}
