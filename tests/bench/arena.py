"""Bot arena: whole games between the bots through ``rummy simulate``, so a stronger bot is shown
to be stronger.

Run with `make bench` (a short run) or `python tests/bench/arena.py --games 2000` (the figures
in docs/solver.md). Every line is one ``rummy simulate --same-deals`` run: each deal is played once
per seating of the bots (two bots in two seats: the same deal twice, seats swapped), so neither
the deal nor the seat favours a bot. For each bot: wins, win rate per seat with its 95% Wilson
interval (a bot as strong as the others would win 1/players of its seats), mean penalty value
left in hand at a round's end, and the deals it won from every seat. One core, one process.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shared.cli.simulate import simulate

LINES: tuple[tuple[str, int, str, dict[str, object]], ...] = (
    # rules, players, bots, options
    ("rummikub", 2, "hoarder,solver", {"match_rounds": 1}),
    ("rummikub", 2, "patient,solver", {"match_rounds": 1}),
    ("rummikub", 2, "solver,greedy", {"match_rounds": 1}),
)


def run_line(
    rules: str, players: int, bots: str, options: dict[str, object], games: int, seed: int
) -> dict[str, Any]:
    """One arena line: the figures of ``rummy simulate --same-deals --no-check``."""
    args = argparse.Namespace(
        rules=rules,
        players=players,
        games=games,
        seed=seed,
        bots=bots,
        options=json.dumps(options),
        timeout_rate=0.0,
        no_check=True,
        same_deals=True,
        json=True,
    )
    return simulate(args)


def command(
    rules: str, players: int, bots: str, options: dict[str, object], games: int, seed: int
) -> str:
    """The ``rummy simulate`` command line that plays the same games."""
    return (
        f"rummy simulate --rules {rules} --players {players} --bots {bots} --games {games} "
        f"--options '{json.dumps(options)}' --same-deals --no-check --seed {seed}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=40, help="games per line (even)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", help="run only the lines whose bots are this list")
    args = parser.parse_args()
    print(f"bot arena: {args.games} games per line (every deal once per seating)")
    for rules, players, bots, options in LINES:
        if args.only and bots != args.only:
            continue
        result = run_line(rules, players, bots, options, args.games, args.seed)
        line = command(rules, players, bots, options, args.games, args.seed)
        print(f"\n{line}   ({result['seconds']} s)")
        print(
            f"  {'bot':8} {'wins':>6} {'win rate (95% CI)':>24} {'mean penalty':>13} "
            f"{'deals swept':>12}"
        )
        for bot, wins in result["wins"].items():
            low, high = result["win_rate_ci95"][bot]
            rate = f"{result['win_rate'][bot]:.3f} ({low:.3f}-{high:.3f})"
            swept = (result["deals_swept"] or {}).get(bot, "-")
            print(f"  {bot:8} {wins:>6} {rate:>24} {result['mean_penalty'][bot]:>13} {swept:>12}")


if __name__ == "__main__":
    main()
