"""`rummy simulate`: whole games between bots, in process, with every invariant checked."""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import Counter
from typing import Any

from shared.core.bots import BOTS
from shared.core.rulesets import RuleSetError, check_seats, rule_set
from shared.core.selfplay import SelfPlay
from shared.core.views import standings


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy simulate`."""
    p = sub.add_parser(
        "simulate",
        help="play whole games between bots and report figures and invariant checks",
        description="Bots take the seats in turn (seat i of game g plays bots[(i + g) % k], so "
        "every bot sits everywhere). Prints a summary; --json prints one JSON object.",
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
    p.add_argument("--no-check", action="store_true", help="skip the invariant checks")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def simulate(args: argparse.Namespace) -> dict[str, Any]:
    """Play the games and gather the figures."""
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
    totals = Counter[str]()
    violations: list[str] = []
    started = time.perf_counter()
    show = sys.stderr.isatty() and not args.json
    for g in range(args.games):
        seat_kinds = [kinds[(i + g) % len(kinds)] for i in range(args.players)]
        bots = [BOTS[k]() for k in seat_kinds]
        seed = hashlib.sha256(f"simulate/{args.seed}/{g}".encode()).digest()
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
        )
        for seat in report.state.winners:
            wins[seat_kinds[seat]] += 1
        for seat, score in enumerate(standings(report.state)):
            seats_played[seat_kinds[seat]] += 1
            penalty[seat_kinds[seat]] += score or 0
        violations += [f"game {g}: {v}" for v in report.violations]
        if show:
            done = (g + 1) * 30 // args.games
            print(
                f"\r[{'#' * done}{'.' * (30 - done)}] {g + 1}/{args.games}",
                end="",
                file=sys.stderr,
                flush=True,
            )
    if show:
        print(file=sys.stderr)
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
        "mean_turns_per_round": round(totals["turns"] / max(totals["rounds"], 1), 2),
        "rejected": totals["rejected"],
        "timeouts": totals["timeouts"],
        "invariant_violations": len(violations),
        "violations": violations[:20],
        "seconds": round(seconds, 3),
        "turns_per_second": round(totals["turns"] / seconds, 1) if seconds else None,
    }


def run(args: argparse.Namespace) -> int:
    """Print the figures; exit 1 when an invariant broke, 2 on bad arguments."""
    try:
        result = simulate(args)
    except (ValueError, RuleSetError) as err:
        print(f"rummy simulate: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>22}: {value}")
    return 1 if result["invariant_violations"] else 0
