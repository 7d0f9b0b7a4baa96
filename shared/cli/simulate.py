"""`rummy simulate`: whole games between bots, in process, with every invariant checked."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import time
from collections import Counter
from typing import Any

from shared.core.events import RoundEnded
from shared.core.rulesets import RuleSetError, check_seats, rule_set
from shared.core.scoring import hand_penalty
from shared.core.views import standings
from shared.play.bots import BOTS
from shared.play.selfplay import SelfPlay


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy simulate`."""
    p = sub.add_parser(
        "simulate",
        help="play whole games between bots and report figures and invariant checks",
        description="Bots take the seats in turn (seat i of game g plays bots[(i + g) % k], so "
        "every bot sits everywhere). Prints a summary with each bot's wins, win rate per seat "
        "(95% Wilson interval; 1/players if all were equal) and mean penalty left in hand at "
        "a round's end; --json prints one JSON object. --same-deals plays every deal once per "
        "seating (games g and g+1 of two bots swap seats on one deal), the fair way to compare "
        "two bots.",
    )
    p.add_argument("--rules", default="robbers", help="rule set (robbers, robbers-classic, ...)")
    p.add_argument("--players", type=int, default=4)
    p.add_argument("--games", type=int, default=10)
    p.add_argument("--seed", type=int, default=0, help="makes the whole run reproducible")
    p.add_argument("--bots", default="greedy,random", help=f"comma list of {', '.join(BOTS)}")
    p.add_argument("--options", default="{}", help="rule options as a JSON object")
    p.add_argument(
        "--timeout-rate", type=float, default=0.0, help="share of turns left to time out"
    )
    p.add_argument(
        "--same-deals",
        action="store_true",
        help="deal g // k for game g: each deal is played with every rotation of the bots",
    )
    p.add_argument("--no-check", action="store_true", help="skip the invariant checks")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw what was measured, game by game, as an SVG chart into FILE",
    )


def wilson(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a win rate."""
    if n == 0:
        return (0.0, 1.0)
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def simulate(
    args: argparse.Namespace, course: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Play the games and gather the figures; ``course``, if given, gets each game's figures
    as they stood after it (its turns, each bot's win rate so far)."""
    options = json.loads(args.options)
    rules = rule_set(args.rules, options)
    check_seats(rules, args.players)
    kinds = [k.strip() for k in args.bots.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in BOTS]
    if unknown or not kinds:
        raise ValueError(f"unknown bot {unknown}; allowed: {', '.join(BOTS)}")
    rng = random.Random(args.seed)
    wins: Counter[str] = Counter()
    seats_played: Counter[str] = Counter()
    penalty: Counter[str] = Counter()
    left: Counter[str] = Counter()  # penalty value of the hands at the rounds' ends
    seat_rounds: Counter[str] = Counter()
    totals = Counter[str]()
    violations: list[str] = []
    started = time.perf_counter()
    from shared.cli.progress import bar

    progress = bar(args.games, "games", unit="game")
    course = [] if course is None else course
    same_deals = bool(getattr(args, "same_deals", False))
    deal_wins: dict[int, Counter[str]] = {}  # with --same-deals: each deal's wins per bot
    for g in range(args.games):
        seat_kinds = [kinds[(i + g) % len(kinds)] for i in range(args.players)]
        bots = [BOTS[k]() for k in seat_kinds]
        deal = g // len(kinds) if same_deals else g
        seed = hashlib.sha256(f"simulate/{args.seed}/{deal}".encode()).digest()
        report = SelfPlay(
            args.rules,
            options,
            bots,
            seed,
            rng,
            timeout_rate=args.timeout_rate,
            check=not args.no_check,
        ).play()
        totals.update(
            games=1,
            rounds=report.rounds,
            turns=report.turns,
            rejected=report.rejected,
            events=len(report.events),
            timeouts=report.timeouts,
            forfeits=report.forfeits,
        )
        for seat in report.state.winners:
            wins[seat_kinds[seat]] += 1
            deal_wins.setdefault(deal, Counter())[seat_kinds[seat]] += 1
        for event in report.events:
            if isinstance(event, RoundEnded):
                for seat, hand in zip(event.seats, event.hands, strict=True):
                    left[seat_kinds[seat]] += hand_penalty(report.state.rules, hand)
                    seat_rounds[seat_kinds[seat]] += 1
        for seat, score in enumerate(standings(report.state)):
            seats_played[seat_kinds[seat]] += 1
            penalty[seat_kinds[seat]] += score or 0
        violations += [f"game {g}: {v}" for v in report.violations]
        course.append(
            {
                "turns": report.turns,
                "win_rate": {k: wins[k] / max(seats_played[k], 1) for k in kinds},
            }
        )
        progress.update(1)
        progress.set_postfix(turns=totals["turns"], refresh=False)
    progress.close()
    seconds = time.perf_counter() - started
    return {
        "rules": rules.name,
        "options": rules.options(),
        "players": args.players,
        "games": totals["games"],
        "rounds": totals["rounds"],
        "turns": totals["turns"],
        "events": totals["events"],
        "wins": {k: wins[k] for k in kinds},
        "mean_score": {k: round(penalty[k] / max(seats_played[k], 1), 2) for k in kinds},
        "win_rate": {k: round(wins[k] / max(seats_played[k], 1), 4) for k in kinds},
        "win_rate_ci95": {
            k: [round(x, 4) for x in wilson(wins[k], seats_played[k])] for k in kinds
        },
        "mean_penalty": {k: round(left[k] / max(seat_rounds[k], 1), 2) for k in kinds},
        # --same-deals: deals (played once per seating) whose every game this bot won; with
        # two bots these are the deals where the seating did not decide, the paired comparison
        "deals_swept": (
            {k: sum(1 for c in deal_wins.values() if c[k] >= len(kinds)) for k in kinds}
            if same_deals and args.games % len(kinds) == 0
            else None
        ),
        "mean_turns_per_round": round(totals["turns"] / max(totals["rounds"], 1), 2),
        "rejected": totals["rejected"],
        "timeouts": totals["timeouts"],
        "forfeits": totals["forfeits"],
        "invariant_violations": len(violations),
        "violations": violations[:20],
        "seconds": round(seconds, 3),
        "turns_per_second": round(totals["turns"] / seconds, 1) if seconds else None,
    }


def plot(result: dict[str, Any], course: list[dict[str, Any]]) -> str:
    """The run as a chart: each bot's win rate so far, and the turns of each game."""
    from shared.pictures.chart import Panel, Series, chart

    games = range(1, len(course) + 1)
    rates = [
        Series(bot, [(g, after["win_rate"][bot]) for g, after in zip(games, course, strict=True)])
        for bot in result["wins"]
    ]
    turns = [Series("turns", [(g, after["turns"]) for g, after in zip(games, course, strict=True)])]
    options = ", ".join(f"{k}={v}" for k, v in result["options"].items())
    note = (
        f"{result['rules']}{' (' + options + ')' if options else ''}, {result['players']} "
        f"players, {result['games']} games, {result['invariant_violations']} invariant violations"
    )
    return chart(
        "rummy simulate",
        [
            Panel("Win rate so far, by bot", "games played", "win rate", rates),
            Panel("Turns in each game", "game", "turns", turns),
        ],
        note,
    )


def run(args: argparse.Namespace) -> int:
    """Print the figures; exit 1 when an invariant broke, 2 on bad arguments."""
    course: list[dict[str, Any]] = []
    try:
        result = simulate(args, course)
    except (ValueError, RuleSetError) as err:
        print(f"rummy simulate: {err}", file=sys.stderr)
        return 2
    if getattr(args, "plot", None):
        try:
            with open(args.plot, "w", encoding="utf-8") as out:
                out.write(plot(result, course))
        except OSError as err:
            print(f"rummy simulate: cannot write the plot: {err}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>22}: {value}")
        print(
            f"{'bot':>22}  {'wins':>6}  {'win rate (95% CI)':>24}  {'mean penalty':>12}  "
            f"{'mean score':>10}"
        )
        for k in result["wins"]:
            low, high = result["win_rate_ci95"][k]
            rate = f"{result['win_rate'][k]:.3f} ({low:.3f}-{high:.3f})"
            print(
                f"{k:>22}  {result['wins'][k]:>6}  {rate:>24}  "
                f"{result['mean_penalty'][k]:>12}  {result['mean_score'][k]:>10}"
            )
    return 1 if result["invariant_violations"] else 0
