"""Standings: each rule family ranks its entrants by its own source text, then by the common
tournament tie-breaks (docs/tournaments.md; Decisions 20 to 24 of docs/rules.md).

- ``rummikub``: the most game wins (our rounds won, ``MatchEnded.wins``), ties by the higher
  cumulative score (``totals``);
- ``robbers``: the lowest cumulative penalty (``totals``), ties by the most rounds gone out
  (``outs``); the text's extra round cannot be played in a tournament, so the common tie-breaks
  stand in for it;
- ``robbers-classic``: the most tables won (``MatchEnded.winners``);

then, where the texts are silent: Buchholz (the opponents' first criterion summed over every
opponent met at a table that counted), head-to-head among the entrants still tied (placed above
minus placed below, at the tables they shared), and the rating at registration.

Only rounds that are over count (every table finished or annulled), so a row never changes
while a round is half played. Each entrant has one line per round counted: its table's (after
any forfeit against it), or a bye's. A bye, and a table that counts for nobody (annulled, or its
game cancelled), score the round's mean line; a forfeit scores the worst line at its table (the
round's worst, at a table without results); each round after a withdrawal scores the round's
worst line. Values are exact fractions while computed and shown as floats.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from shared.core.rulesets import ALIASES
from shared.tournament.events import SeatResult, Standing
from shared.tournament.state import Round, Table, Tournament

FAMILIES = ("rummikub", "robbers", "robbers-classic")

# Per family: each criterion's name and whether more is better, in the order they rank.
CRITERIA: dict[str, tuple[tuple[str, bool], ...]] = {
    "rummikub": (
        ("game wins", True),
        ("cumulative score", True),
        ("Buchholz", True),
        ("head-to-head", True),
        ("rating", True),
    ),
    "robbers": (
        ("penalty", False),
        ("rounds gone out", True),
        ("Buchholz", False),
        ("head-to-head", True),
        ("rating", True),
    ),
    "robbers-classic": (
        ("tables won", True),
        ("Buchholz", True),
        ("head-to-head", True),
        ("rating", True),
    ),
}

Lines = Mapping[str, tuple["Line", ...]]


@dataclass(frozen=True, slots=True)
class Line:
    """What one round gave one entrant. ``how``: ``table`` (its table's result), ``forfeit``
    (scored as last), ``bye``, ``annulled`` or ``cancelled`` (its table counted for nobody:
    scored as a bye), ``withdrawn`` (a round after it left). ``wins``, ``total``, ``outs`` and
    ``won`` (1 for a table won) are what it adds up; ``opponents`` the entrants it met at a table
    that counted, ``above`` and ``below`` those of them it placed above and below there."""

    round: int
    table: int
    how: str
    wins: Fraction
    total: Fraction
    outs: Fraction
    won: Fraction
    opponents: tuple[str, ...] = ()
    above: tuple[str, ...] = ()
    below: tuple[str, ...] = ()


def family(rules: str) -> str:
    """The rule family (a preset's name) a tournament's rule set ranks by."""
    name = ALIASES.get(rules, rules)
    return name if name in FAMILIES else "robbers"


def criteria(rules: str) -> tuple[str, ...]:
    """The names of the criteria a tournament of ``rules`` ranks by, in order (the columns of
    ``Standing.keys``)."""
    return tuple(name for name, _ in CRITERIA[family(rules)])


def _place_key(fam: str, result: SeatResult) -> tuple[int, ...]:
    """Lower places higher at a table, by the family's ranking of a table."""
    total = result.total or 0
    if fam == "rummikub":
        return (-result.wins, -total, -result.outs)
    if fam == "robbers":
        return (total, -result.outs)
    return (0 if result.winner else 1,)


def _worst_total(fam: str, totals: Iterable[int]) -> int:
    values = list(totals)
    if not values:
        return 0
    return min(values) if fam == "rummikub" else max(values) if fam == "robbers" else 0


def _forfeited(fam: str, result: SeatResult, worst: int) -> SeatResult:
    return SeatResult(result.player, result.seat, False, worst, 0, 0)


def _table_lines(state: Tournament, fam: str, table: Table) -> dict[str, Line]:
    entrants = state.players()
    against = {r.player for r in state.rulings if r.kind == "forfeit" and _at(r, table)}
    worst = _worst_total(fam, (r.total or 0 for r in table.results))
    results = [_forfeited(fam, r, worst) if r.player in against else r for r in table.results]
    # A forfeit places its player below everyone at the table, whatever the values say.
    places = {r.player: (r.player in against, *_place_key(fam, r)) for r in results}
    lines: dict[str, Line] = {}
    for result in results:
        if result.player not in entrants:
            continue  # a seat the fill gave a bot
        key = places[result.player]
        others = tuple(r.player for r in results if r is not result and r.player in entrants)
        above = tuple(p for p in others if places[p] > key)
        below = tuple(p for p in others if places[p] < key)
        lines[result.player] = Line(
            table.round,
            table.table,
            "forfeit" if result.player in against else "table",
            Fraction(result.wins),
            Fraction(result.total or 0),
            Fraction(result.outs),
            Fraction(1 if result.winner else 0),
            others,
            above,
            below,
        )
    return lines


def _at(ruling: object, table: Table) -> bool:
    return getattr(ruling, "round", None) == table.round and getattr(ruling, "table", None) == (
        table.table
    )


def _mean(lines: Sequence[Line]) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    if not lines:
        return (Fraction(0), Fraction(0), Fraction(0), Fraction(0))
    n = len(lines)
    return (
        sum((line.wins for line in lines), Fraction(0)) / n,
        sum((line.total for line in lines), Fraction(0)) / n,
        sum((line.outs for line in lines), Fraction(0)) / n,
        sum((line.won for line in lines), Fraction(0)) / n,
    )


def _round_lines(state: Tournament, fam: str, paired: Round) -> dict[str, Line]:
    """Every entrant's line of round ``paired`` (which is over)."""
    counted: dict[str, Line] = {}
    void: list[Table] = []
    for table in paired.tables:
        if table.status == "finished" and table.results:
            counted.update(_table_lines(state, fam, table))
        else:
            void.append(table)
    played = list(counted.values())
    mean = _mean(played)
    worst = Fraction(0)  # robbers-classic: no total; the worst line wins no table
    if fam == "robbers" and played:
        worst = max(line.total for line in played)
    elif fam == "rummikub" and played:
        worst = min(line.total for line in played)
    lines = dict(counted)
    entrants = state.players()
    for table in void:
        how = "annulled" if table.status == "annulled" else "cancelled"
        against = {r.player for r in state.rulings if r.kind == "forfeit" and _at(r, table)}
        for player in table.seats:
            if player in lines or player not in entrants:
                continue
            if player in against:
                lines[player] = Line(
                    paired.number,
                    table.table,
                    "forfeit",
                    Fraction(0),
                    worst,
                    Fraction(0),
                    Fraction(0),
                )
            else:
                lines[player] = Line(paired.number, table.table, how, *mean)
    for player in paired.byes:
        lines[player] = Line(paired.number, 0, "bye", *mean)
    for entrant in state.entrants:
        gone = entrant.withdrawn
        if entrant.player not in lines and gone is not None and gone < paired.number:
            lines[entrant.player] = Line(
                paired.number, 0, "withdrawn", Fraction(0), worst, Fraction(0), Fraction(0)
            )
    return lines


def lines(state: Tournament) -> dict[str, tuple[Line, ...]]:
    """Every entrant's lines, one per round that is over, in round order: what its standing
    is computed from."""
    fam = family(state.rules)
    out: dict[str, list[Line]] = {e.player: [] for e in state.entrants}
    for paired in state.played:
        if not paired.over:
            continue
        for player, line in _round_lines(state, fam, paired).items():
            if player in out:
                out[player].append(line)
    return {player: tuple(rows) for player, rows in out.items()}


def _first(fam: str, rows: Sequence[Line]) -> Fraction:
    """The family's first criterion, as shown."""
    if fam == "rummikub":
        return sum((r.wins for r in rows), Fraction(0))
    if fam == "robbers":
        return sum((r.total for r in rows), Fraction(0))
    return sum((r.won for r in rows), Fraction(0))


def _own_keys(fam: str, rows: Sequence[Line]) -> tuple[Fraction, ...]:
    """The family's own criteria, as shown."""
    if fam == "rummikub":
        return (_first(fam, rows), sum((r.total for r in rows), Fraction(0)))
    if fam == "robbers":
        return (_first(fam, rows), sum((r.outs for r in rows), Fraction(0)))
    return (_first(fam, rows),)


def _notes(state: Tournament, player: str, rows: Sequence[Line]) -> tuple[str, ...]:
    notes: list[str] = []
    seated: set[tuple[int, int]] = set()
    for paired in state.played:
        for table in paired.tables:
            if player in table.seats:
                seated.add((table.round, table.table))
    for row in rows:
        if row.how == "bye":
            notes.append(f"round {row.round}: bye, scored as the round's mean")
        elif row.how == "cancelled":
            notes.append(
                f"round {row.round} table {row.table}: game cancelled, scored as the round's mean"
            )
        elif row.how == "withdrawn":
            notes.append(f"round {row.round}: withdrawn, scored as the round's worst")
    for ruling in state.rulings:
        where = f"round {ruling.round} table {ruling.table}"
        if (ruling.round, ruling.table) not in seated:
            continue
        if ruling.kind == "annul":
            notes.append(f"{where}: annulled, scored as the round's mean ({ruling.reason})")
        elif ruling.kind == "forfeit" and ruling.player == player:
            notes.append(f"{where}: forfeit against {player}, scored as last ({ruling.reason})")
        elif ruling.kind == "verdict":
            notes.append(
                f"{where}: verdict on turn {ruling.turn}: {ruling.verdict} ({ruling.reason})"
            )
    return tuple(notes)


def standings(state: Tournament) -> tuple[Standing, ...]:
    """The standings after the rounds that are over, best first; entrants with equal values on
    every criterion share a rank (and are listed in registration order)."""
    fam = family(state.rules)
    rows = lines(state)
    order = {e.player: i for i, e in enumerate(state.entrants)}
    own = {player: _own_keys(fam, rows[player]) for player in rows}
    first = {player: keys[0] for player, keys in own.items()}
    buchholz = {
        player: sum(
            (first[o] for row in rows[player] for o in row.opponents if o in first), Fraction(0)
        )
        for player in rows
    }
    better = [more for _, more in CRITERIA[fam]]

    def signed(values: Sequence[Fraction | float]) -> tuple[Fraction | float, ...]:
        return tuple(v if more else -v for v, more in zip(values, better, strict=False))

    # Sort by the family's criteria and Buchholz, then head-to-head inside each tied group.
    partial = {player: (*own[player], buchholz[player]) for player in rows}
    ranked = sorted(rows, key=lambda p: (tuple(-x for x in signed(partial[p])), order[p]))
    h2h: dict[str, int] = {}
    i = 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and partial[ranked[j]] == partial[ranked[i]]:
            j += 1
        group = set(ranked[i:j])
        for player in ranked[i:j]:
            score = 0
            for row in rows[player]:
                for other in row.opponents:
                    if other in group:
                        score += (other in row.above) - (other in row.below)
            h2h[player] = score
        i = j
    ratings = {e.player: e.rating for e in state.entrants}
    full: dict[str, tuple[Fraction | float, ...]] = {
        p: (*partial[p], Fraction(h2h[p]), ratings[p]) for p in rows
    }
    ranked.sort(key=lambda p: (tuple(-x for x in signed(full[p])), order[p]))
    out: list[Standing] = []
    rank = 0
    for index, player in enumerate(ranked):
        if index == 0 or full[player] != full[ranked[index - 1]]:
            rank = index + 1
        entrant = state.entrant(player)
        assert entrant is not None
        player_rows = rows[player]
        out.append(
            Standing(
                rank=rank,
                player=player,
                name=entrant.name,
                score=float(full[player][0]),
                keys=tuple(float(v) for v in full[player]),
                tables=sum(1 for r in player_rows if r.how in ("table", "forfeit") and r.table),
                byes=sum(1 for r in player_rows if r.how in ("bye", "annulled", "cancelled")),
                forfeits=sum(1 for r in player_rows if r.how == "forfeit"),
                withdrawn=entrant.withdrawn is not None,
                notes=_notes(state, player, player_rows),
            )
        )
    return tuple(out)


def pairing_order(state: Tournament) -> tuple[str, ...]:
    """The active entrants in the order a Swiss pairs them: by score (the family's own
    criteria, over the rounds that are over), then by rating, then registration order."""
    fam = family(state.rules)
    rows = lines(state)
    better = [more for _, more in CRITERIA[fam]]
    order = {e.player: i for i, e in enumerate(state.entrants)}
    active = state.active()

    def key(player: str, rating: float) -> tuple[object, ...]:
        own = _own_keys(fam, rows.get(player, ()))
        signed = tuple(-v if more else v for v, more in zip(own, better, strict=False))
        return (signed, -rating, order[player])

    return tuple(e.player for e in sorted(active, key=lambda e: key(e.player, e.rating)))


def meetings(state: Tournament) -> dict[tuple[str, str], int]:
    """How often each pair of entrants (sorted ids) shared a table that was not annulled."""
    met: dict[tuple[str, str], int] = defaultdict(int)
    entrants = {e.player for e in state.entrants}
    for paired in state.played:
        for table in paired.tables:
            if table.status == "annulled":
                continue
            seated = sorted({p for p in table.seats if p in entrants})
            for i, a in enumerate(seated):
                for b in seated[i + 1 :]:
                    met[(a, b)] += 1
    return dict(met)
