"""The names of the bots a seat can be given, in one place the rules core can read.

A seat played by a bot is part of the game's record (``PlayerSeated.bot``, ``SeatHandedToBot``),
so the rules core checks the name; the bots themselves live above it (``shared.play.bots``), and
a test keeps the two lists the same.
"""

from __future__ import annotations

BOT_NAMES: tuple[str, ...] = (
    "random",
    "greedy",
    "clumsy",
    "stubborn",
    "solver",
    "patient",
    "hoarder",
)
DEFAULT_BOT = "greedy"  # the bot an absent seat is handed to unless the game names another
BOT_COMMAND_PREFIX = "bot:"  # a bot's command id starts "bot:<name>:" (no API client can send one)


BOTS_ALLOWED = "one of " + ", ".join(repr(n) for n in BOT_NAMES)  # for error messages


def bot_command_id(bot: str, key: str) -> str:
    """The command id of a move by ``bot``: ``key`` makes it unique in the game and the same
    for the same move under redelivery (e.g. the game's version and the turn it answers)."""
    return f"{BOT_COMMAND_PREFIX}{bot}:{key}"


def bot_of_command_id(command_id: str) -> str | None:
    """The bot a command id names (``bot:<name>:<rest>``), or None for anyone else's."""
    if not command_id.startswith(BOT_COMMAND_PREFIX):
        return None
    name, _, rest = command_id[len(BOT_COMMAND_PREFIX) :].partition(":")
    return name if rest else None
