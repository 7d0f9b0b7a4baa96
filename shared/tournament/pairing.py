"""Pairing: who sits at which table in a round, for a Swiss and for a round robin of tables.

Both seat tables of ``table_seats`` (2 up to the rule set's maximum). When the entrants do not
fill them, the fill decides: ``byes`` (the entrants left over sit the round out) or
``bots:<name>`` (as many tables as it takes, the entrants spread evenly over them, and the short
tables' empty seats given to the bot). Who sits out, or sits at a short table, is whoever has
done so least often so far, then the lowest in the pairing order: nobody gets a second bye
while others have none, where the numbers allow.

The seating is greedy and then mended: each table takes the first entrant not yet seated and
fills up with whoever has met its table least (then the nearest in the order); then swaps
between tables, nearest tables first, are made while one lowers the number of pairs who meet
again. That is polynomial (a round of 256 entrants at tables of 4 is a few hundred thousand
steps) and deterministic: the same log pairs the same round, with no randomness and no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shared.tournament.commands import fill_bot
from shared.tournament.events import BOT
from shared.tournament.standings import meetings, pairing_order
from shared.tournament.state import Tournament

Meetings = Mapping[tuple[str, str], int]
MEND_PASSES = 20  # rounds of swaps at most (each must lower the repeats, so it ends anyway)
MAX_TRIES = 12  # orders a round robin's round is seated in, the fewest repeats kept
PAIR_SEARCH = 20_000  # steps of the search for tables of two that meet nobody again
TRY_BUDGET = 1 << 18  # ... fewer for many entrants: about this many steps a round


@dataclass(frozen=True, slots=True)
class Pairing:
    """A round's seating: each table's seats (entrants' ids, then any bot seats), and the
    entrants with a bye."""

    tables: tuple[tuple[str, ...], ...]
    byes: tuple[str, ...]


def _met(met: Meetings, a: str, b: str) -> int:
    return met.get((a, b) if a < b else (b, a), 0)


def table_sizes(entrants: int, seats: int, bots: bool) -> tuple[tuple[int, ...], int]:
    """The number of entrants at each table, and the number of byes. With byes every table is
    full and ``entrants % seats`` sit out; with bots ``ceil(entrants / seats)`` tables share the
    entrants evenly (the fuller first), and none sits out."""
    if not bots:
        tables = entrants // seats
        return (seats,) * tables, entrants - tables * seats
    tables = -(-entrants // seats)
    base, extra = divmod(entrants, tables) if tables else (0, 0)
    return (base + 1,) * extra + (base,) * (tables - extra), 0


def _short(
    order: Sequence[str], count: int, history: Mapping[str, int]
) -> tuple[list[str], set[str]]:
    """The ``count`` entrants who sit out (or sit short): fewest times so far, then the lowest
    in ``order``; and the entrants of the last tier taken (as many times as the last one
    chosen), any of whom could take a chosen one's place as fairly."""
    if count <= 0:
        return [], set()
    position = {p: i for i, p in enumerate(order)}
    ranked = sorted(order, key=lambda p: (history.get(p, 0), -position[p]))
    chosen = ranked[:count]
    tier = history.get(chosen[-1], 0)
    return sorted(chosen, key=position.__getitem__), {p for p in order if history.get(p, 0) == tier}


def _pairs(order: Sequence[str], met: Meetings) -> list[list[str]] | None:
    """Tables of two with nobody meeting again, each entrant in turn taking the first in the
    order it has not met (backtracking when the rest cannot be paired, as a Swiss director
    does), or None when none is found within ``PAIR_SEARCH`` steps."""
    budget = [PAIR_SEARCH]

    def search(rest: list[str]) -> list[list[str]] | None:
        if not rest:
            return []
        first, others = rest[0], rest[1:]
        for i, other in enumerate(others):
            if _met(met, first, other):
                continue
            budget[0] -= 1
            if budget[0] < 0:
                return None
            found = search(others[:i] + others[i + 1 :])
            if found is not None:
                return [[first, other], *found]
        return None

    return search(list(order))


def seat_tables(order: Sequence[str], sizes: Sequence[int], met: Meetings) -> list[list[str]]:
    """Seat ``order`` at tables of ``sizes``, keeping neighbours in the order together and
    keeping apart those who met (``met``: times each pair shared a table) where it can."""
    if sizes and set(sizes) == {2} and len(order) == 2 * len(sizes):
        found = _pairs(order, met)
        if found is not None:
            return found
    unseated = list(order)
    tables: list[list[str]] = []
    for size in sizes:
        table = [unseated.pop(0)]
        while len(table) < size:
            best, best_cost = 0, -1
            for i, candidate in enumerate(unseated):
                cost = sum(_met(met, candidate, p) for p in table)
                if best_cost < 0 or cost < best_cost:
                    best, best_cost = i, cost
                    if cost == 0:
                        break
            table.append(unseated.pop(best))
        tables.append(table)
    return tables


def _cost(table: Sequence[str], met: Meetings) -> int:
    return sum(_met(met, a, b) for i, a in enumerate(table) for b in table[i + 1 :])


def mend(
    tables: list[list[str]], met: Meetings, short: int = 0, free: frozenset[str] = frozenset()
) -> None:
    """Swap entrants between tables while a swap lowers the repeated meetings, nearest tables
    first. The last ``short`` tables are the short ones: an entrant moves between a short table
    and a full one only if both swapped are in ``free`` (as fairly short as each other)."""
    costs = [_cost(t, met) for t in tables]
    first_short = len(tables) - short
    for _ in range(MEND_PASSES):
        improved = False
        for distance in range(1, len(tables)):
            for a in range(len(tables) - distance):
                b = a + distance
                if costs[a] == 0 and costs[b] == 0:
                    continue
                across = a < first_short <= b
                improved |= _swap_best(tables, costs, a, b, met, free if across else None)
        if not improved:
            return


def _swap_best(
    tables: list[list[str]],
    costs: list[int],
    a: int,
    b: int,
    met: Meetings,
    free: frozenset[str] | None,
) -> bool:
    ta, tb = tables[a], tables[b]
    for i, x in enumerate(ta):
        if free is not None and x not in free:
            continue
        rest_a = ta[:i] + ta[i + 1 :]
        out_a = sum(_met(met, x, p) for p in rest_a)
        for j, y in enumerate(tb):
            if free is not None and y not in free:
                continue
            rest_b = tb[:j] + tb[j + 1 :]
            before = out_a + sum(_met(met, y, p) for p in rest_b)
            after = sum(_met(met, y, p) for p in rest_a) + sum(_met(met, x, p) for p in rest_b)
            if after < before:
                ta[i], tb[j] = y, x
                costs[a], costs[b] = _cost(ta, met), _cost(tb, met)
                return True
    return False


def _seat(
    order: Sequence[str],
    seats: int,
    met: Meetings,
    short_history: Mapping[str, int],
    bot: str | None,
) -> tuple[int, Pairing]:
    """Seat one round of ``order`` and say how many repeated meetings it has: choose who sits
    out or short, seat the full tables and the short ones (filled with the bot's seats), then
    mend the whole."""
    sizes, byes = table_sizes(len(order), seats, bot is not None)
    full_sizes = [s for s in sizes if s == seats]
    short_sizes = [s for s in sizes if s < seats]
    shorts, tier = _short(order, byes + sum(short_sizes), short_history)
    chosen = set(shorts)
    rest = [p for p in order if p not in chosen]
    tables = seat_tables(rest, full_sizes, met)
    if bot is None:
        mend(tables, met)
        cost = sum(_cost(t, met) for t in tables)
        return cost, Pairing(tuple(tuple(t) for t in tables), tuple(shorts))
    short_tables = seat_tables(shorts, short_sizes, met)
    everything = tables + short_tables
    mend(everything, met, len(short_tables), frozenset(tier))
    cost = sum(_cost(t, met) for t in everything)
    filled = [tuple(t) + (f"{BOT}{bot}",) * (seats - len(t)) for t in everything]
    return cost, Pairing(tuple(filled), ())


def circle(players: Sequence[str], number: int) -> list[tuple[str, str]]:
    """Round ``number`` (from 1) of the circle method over ``players`` (even in number): the
    first stays put and the others turn one place a round, so over ``len(players) - 1`` rounds
    every pair meets exactly once."""
    n = len(players)
    if n % 2:
        raise ValueError("the circle method needs an even number of players")
    k = (number - 1) % (n - 1)
    ring = list(players[1:])
    ring = ring[k:] + ring[:k]
    line = [players[0], *ring]
    return [(line[i], line[n - 1 - i]) for i in range(n // 2)]


def _sat_short(state: Tournament) -> dict[str, int]:
    """Times each entrant sat out (a bye) or sat at a table with a bot's seat."""
    counts: dict[str, int] = {}
    entrants = state.players()
    for paired in state.played:
        for player in paired.byes:
            counts[player] = counts.get(player, 0) + 1
        for table in paired.tables:
            if any(p.startswith(BOT) and p not in entrants for p in table.seats):
                for player in table.seats:
                    counts[player] = counts.get(player, 0) + 1
    return counts


def swiss(state: Tournament) -> Pairing:
    """The next round of a Swiss: by score then rating (``standings.pairing_order``), nobody
    meeting again where it can be helped, byes or bot seats to those who had them least."""
    order = pairing_order(state)
    bot = fill_bot(state.fill)
    return _seat(order, state.table_seats, meetings(state), _sat_short(state), bot)[1]


def round_robin(state: Tournament, number: int) -> Pairing:
    """Round ``number`` of a round robin of tables over the entrants in registration order.
    Two seats: the circle method (an odd number of entrants, or a withdrawal, leaves one
    without an opponent each round: a bye, or the fill's bot). More seats: each round is seated
    as evenly as it can be, by the meetings so far (who met least sit together), in a few
    orders of the entrants (``_orders``), keeping the seating with the fewest repeats."""
    everyone = [e.player for e in state.entrants]
    active = {e.player for e in state.active()}
    bot = fill_bot(state.fill)
    if state.table_seats == 2:
        ring = everyone + ([""] if len(everyone) % 2 else [])
        tables: list[tuple[str, ...]] = []
        byes: list[str] = []
        for a, b in circle(ring, number):
            pair = [p for p in (a, b) if p in active]
            if len(pair) == 2:
                tables.append((pair[0], pair[1]))
            elif len(pair) == 1 and bot is not None:
                tables.append((pair[0], f"{BOT}{bot}"))
            elif len(pair) == 1:
                byes.append(pair[0])
        return Pairing(tuple(tables), tuple(byes))
    playing = [p for p in everyone if p in active]
    met, history = meetings(state), _sat_short(state)
    best: tuple[int, Pairing] | None = None
    for order in _orders(playing, number):
        tried = _seat(order, state.table_seats, met, history, bot)
        if best is None or tried[0] < best[0]:
            best = tried
            if tried[0] == 0:
                break
    assert best is not None
    return best[1]


def _orders(players: Sequence[str], number: int) -> list[list[str]]:
    """The orders a round robin's round is tried in (the least repeats wins; the first on a
    tie): the entrants turned and strided by the round number, a few ways."""
    n = len(players)
    if n == 0:
        return [[]]
    tries = max(1, min(MAX_TRIES, TRY_BUDGET // (n * n)))
    orders = []
    strides = [k for k in range(1, n + 1) if _coprime(k, n)] or [1]
    for t in range(tries):
        stride = strides[(number - 1 + t) % len(strides)]
        shift = (number - 1) * (t + 1) % n
        orders.append([players[(shift + i * stride) % n] for i in range(n)])
    return orders


def _coprime(a: int, b: int) -> bool:
    while b:
        a, b = b, a % b
    return a == 1


def pair(state: Tournament, number: int) -> Pairing:
    """Round ``number``'s seating by the tournament's format."""
    if state.format == "round_robin":
        return round_robin(state, number)
    return swiss(state)
