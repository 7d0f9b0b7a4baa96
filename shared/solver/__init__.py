"""The exact solver: the best play for a table and a hand (``solve``), and whether cards can be
arranged (``arrange``). Pure; it depends on the rules core (``shared.core``) only.

Importing it loads nothing but the answers' types: the searches (``shared.solver.dp``, compiled
with mypyc where they were built, see ``compiled``) are loaded on the first ``solve`` or
``arrange``, by the choice the process made before (``configure``; the ``rummy`` command makes
it from ``RUMMY_SOLVER`` and ``RUMMY_SOLVER_BUILD``).
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.core.rulesets import RuleSet
from shared.solver.compiled import Choice, chosen, configure
from shared.solver.plays import GOALS, Arrangement, Goal, Layout, Meld, Play

__all__ = [
    "GOALS",
    "Arrangement",
    "Choice",
    "Goal",
    "Layout",
    "Meld",
    "Play",
    "arrange",
    "chosen",
    "configure",
    "runs_compiled",
    "solve",
]


def solve(
    rules: RuleSet,
    table: Sequence[Meld],
    hand: Sequence[int],
    opened: bool,
    goal: Goal = "cards",
    min_disruption: bool = False,
) -> Play:
    """The best play for the goal (``cards``: the most cards placed, then the fewest jokers,
    then the most points; ``points``: the most points; ``opening``: the opening play, see
    ``shared.solver.goals``), or ``found=False`` and the table as it is when no legal play
    exists. Every returned play is checked with ``judge_play``."""
    from shared.solver import goals

    return goals.solve(rules, table, hand, opened, goal, min_disruption)


def arrange(rules: RuleSet, cards: Sequence[int]) -> Arrangement:
    """Can every natural card of ``cards`` be laid out in valid melds (with at most the jokers
    given)? The layout uses the fewest jokers; the others are free."""
    from shared.solver import goals

    return goals.arrange(rules, cards)


def runs_compiled() -> bool:
    """Whether the solver's inner modules run compiled (they are loaded here if no search has
    loaded them yet)."""
    from shared.solver.dp import program

    return not (program.__file__ or "").endswith(".py")
