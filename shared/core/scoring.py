"""Score sheets and match standings: what a round is worth and when a match is won.

Pure functions over plain values, so the scoring service, ``rummy score`` and ``rummy simulate``
compute the same sheet from the same facts, and replaying a match's events reproduces it.

Seats are numbered ``0..n-1`` in turn order. A round record (``RoundScore``) names the seats that
took part, because a tie-break round is played among the tied seats only (RULES.md Decision 8);
its ``scores`` are parallel to its ``seats``. Scores follow the sign convention of the rule set:
``penalty`` points (lower is better), ``plus_minus`` (higher is better), or none at all.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from shared.core.cards import JOKER
from shared.core.melds import card_values
from shared.core.rulesets import RuleSet

MIN_ROUND_SEATS = 2
_VALUES = {kind: card_values(kind) for kind in ("cards", "tiles")}


class ScoringError(ValueError):
    """Round or match facts that cannot be true (a seat out with cards left, a round after the
    match ended, ...); the message says which fact is wrong."""


def hand_penalty(rules: RuleSet, hand: Sequence[int]) -> int:
    """Value of the cards left in a hand: naturals by the rule set's point values, each joker
    ``joker_penalty``. A rule set without point values (``none``) gives every hand 0."""
    for card in hand:
        if not 0 <= card <= JOKER:
            raise ScoringError(f"{card!r} is not a card (0..{JOKER})")
    if rules.point_values == "none":
        return 0
    values = _VALUES[rules.point_values]
    return sum(rules.joker_penalty if card == JOKER else values[card] for card in hand)


def stall_winner(
    rules: RuleSet,
    hands: Sequence[Sequence[int]],
    last_player: int | None,
    barred: Collection[int] = (),
) -> int:
    """The position (index into ``hands``, in turn order) that wins a stalled round (Decision 7).

    ``fewest_cards``: fewest cards, then the lower total; ``lowest_total``: the lower total, then
    fewer cards. A tie left after that goes to the tied seat that comes first in turn order after
    ``last_player``, the position that made the round's last play (so that seat itself comes last).
    With no play in the round (``None``) the order starts at position 0, as if the last play had
    been made by the last position; a caller whose round began elsewhere passes the position just
    before the round's first seat. Positions in ``barred`` (seats that resigned, Decision 16)
    cannot win.
    """
    count = len(hands)
    if count == 0:
        raise ScoringError("a stalled round needs at least one hand")
    if last_player is not None and not 0 <= last_player < count:
        raise ScoringError(f"the last play is by position {last_player}, not one of 0..{count - 1}")
    last = count - 1 if last_player is None else last_player

    def key(position: int) -> tuple[int, int, int]:
        cards, total = len(hands[position]), hand_penalty(rules, hands[position])
        after = (position - last - 1) % count
        if rules.stall_winner == "fewest_cards":
            return (cards, total, after)
        return (total, cards, after)

    candidates = [position for position in range(count) if position not in barred]
    if not candidates:
        raise ScoringError("every seat of the round has resigned: nobody can win it")
    return min(candidates, key=key)


@dataclass(frozen=True, slots=True)
class RoundScore:
    """The score sheet of one round: who took part, who won, whether by going out, the scores.

    ``went_out`` is false for the winner of a stalled round: it scores as a winner but has not gone
    out (Decision 7), which matters to ``first_out`` matches and to the "most rounds gone out"
    tie-break. ``scores`` is parallel to ``seats``; ``None`` where the rule set does not score.
    """

    seats: tuple[int, ...]
    winner: int
    went_out: bool
    scores: tuple[int, ...] | None

    def __post_init__(self) -> None:
        if len(self.seats) < MIN_ROUND_SEATS:
            raise ScoringError(f"a round needs at least {MIN_ROUND_SEATS} seats, got {self.seats}")
        if self.seats[0] < 0 or any(a >= b for a, b in pairwise(self.seats)):
            raise ScoringError(f"a round's seats must be distinct and in turn order: {self.seats}")
        if self.winner not in self.seats:
            raise ScoringError(f"the winner, seat {self.winner}, did not play in {self.seats}")
        if self.scores is not None and len(self.scores) != len(self.seats):
            raise ScoringError(f"{len(self.scores)} scores for {len(self.seats)} seats")

    def score_of(self, seat: int) -> int | None:
        """The round score of ``seat`` (``None`` where the rule set does not score)."""
        if seat not in self.seats:
            raise ScoringError(f"seat {seat} did not play in this round")
        return None if self.scores is None else self.scores[self.seats.index(seat)]


def score_round(
    rules: RuleSet,
    hands: Sequence[Sequence[int]],
    out: int | None,
    redeemed: Sequence[int] | None = None,
    last_player: int | None = None,
    *,
    seats: Sequence[int] | None = None,
    resigned: Collection[int] = (),
) -> RoundScore:
    """Score one round from its facts: the hands left, who went out (``None``: the table stalled),
    jokers redeemed per seat, and who made the last play (the stall tie-break).

    ``seats`` are the seats that took part, in turn order (default ``0..len(hands)-1``); ``hands``
    and ``redeemed`` are parallel to them, and ``out`` and ``last_player`` are seat numbers.

    - ``penalty``: the winner 0, every other seat its hand penalty; then each seat, the winner
      too, loses ``redeem_bonus`` per joker it redeemed (Decision 9), so a score may go below 0.
    - ``plus_minus``: each loser minus the difference between its rack total and the lowest rack
      total (0 when someone went out, so simply minus its rack), the winner plus the sum of those
      differences: a round always sums to zero. Redemptions do not count (the bonus is a rule of
      penalty scoring).
    - ``none``: a winner only.

    ``resigned``: seats of the round that left the game (Decision 16): they score their hand as
    losers and cannot win a stalled round, nor one that ended because one seat was left (that
    seat wins it, as a stalled round's winner: it has not gone out).
    """
    order = tuple(range(len(hands))) if seats is None else tuple(seats)
    if len(order) != len(hands):
        raise ScoringError(f"{len(hands)} hands for {len(order)} seats")
    if len(order) < MIN_ROUND_SEATS:
        raise ScoringError(f"a round needs at least {MIN_ROUND_SEATS} seats, got {len(order)}")
    position = {seat: i for i, seat in enumerate(order)}
    bonuses = tuple(redeemed) if redeemed is not None else (0,) * len(order)
    if len(bonuses) != len(order):
        raise ScoringError(f"{len(bonuses)} redemption counts for {len(order)} seats")
    if any(n < 0 for n in bonuses):
        raise ScoringError(f"redemption counts cannot be negative: {bonuses}")
    empty = [order[i] for i, hand in enumerate(hands) if not hand]
    if out is not None:
        if out not in position:
            raise ScoringError(f"seat {out} went out but did not play in this round ({order})")
        left = len(hands[position[out]])
        if left:
            raise ScoringError(f"seat {out} cannot have gone out: its hand holds {left} cards")
        others = [seat for seat in empty if seat != out]
        if others:
            raise ScoringError(
                f"seat {others[0]} has an empty hand too, but only one seat can go out"
            )
        win = position[out]
    else:
        if empty:
            raise ScoringError(
                f"seat {empty[0]} has an empty hand, so it went out: the round did not stall"
            )
        if last_player is not None and last_player not in position:
            raise ScoringError(f"the last play is by seat {last_player}, not in this round")
        last = None if last_player is None else position[last_player]
        barred = {position[seat] for seat in resigned if seat in position}
        win = stall_winner(rules, hands, last, barred)
    totals = [hand_penalty(rules, hand) for hand in hands]
    scores: tuple[int, ...] | None
    if rules.scoring == "penalty":
        scores = tuple(
            (0 if i == win else total) - rules.redeem_bonus * bonus
            for i, (total, bonus) in enumerate(zip(totals, bonuses, strict=True))
        )
    elif rules.scoring == "plus_minus":
        lowest = min(totals)
        losses = [0 if i == win else total - lowest for i, total in enumerate(totals)]
        scores = tuple(sum(losses) if i == win else -loss for i, loss in enumerate(losses))
    else:
        scores = None
    return RoundScore(order, order[win], out is not None, scores)


@dataclass(frozen=True, slots=True)
class MatchStandings:
    """Per seat, over every round it took part in (tie-break rounds too): the cumulative score
    (``None`` where the rule set does not score), rounds gone out (only rounds won by emptying
    the hand), rounds won (stalled rounds too) and rounds played."""

    totals: tuple[int, ...] | None
    outs: tuple[int, ...]
    wins: tuple[int, ...]
    played: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MatchStatus:
    """Where a match stands after the rounds so far.

    ``winners`` is empty until the match is over and holds several seats when tied seats share
    the win. ``next_seats`` are the seats that play the next round (empty once over): every seat,
    or only the tied seats in a tie-break round (``next_is_tie_break``).
    """

    over: bool
    winners: tuple[int, ...]
    standings: MatchStandings
    next_seats: tuple[int, ...]
    next_is_tie_break: bool
    rounds_played: int
    tie_break_rounds_played: int


def _rank_key(rules: RuleSet, standings: MatchStandings, seat: int) -> tuple[int, ...]:
    """Lower is better: the ranking of a ``lowest_total`` or ``most_wins`` match."""
    total = 0 if standings.totals is None else standings.totals[seat]
    better_total = -total if rules.scoring == "plus_minus" else total
    if rules.match == "most_wins":
        return (-standings.wins[seat], better_total, -standings.outs[seat])
    return (better_total, -standings.outs[seat])


def _leaders(rules: RuleSet, standings: MatchStandings, among: Sequence[int]) -> tuple[int, ...]:
    keys = {seat: _rank_key(rules, standings, seat) for seat in among}
    best = min(keys.values())
    return tuple(seat for seat in among if keys[seat] == best)


def match_result(
    rules: RuleSet,
    seats: int,
    rounds: Sequence[RoundScore],
    resigned: Mapping[int, int] | None = None,
) -> MatchStatus:
    """The standings and the result of a match after ``rounds`` (in the order played).

    - ``single``: one round; its winner wins.
    - ``first_out``: the first seat to go out ``match_target`` times wins; a stalled round's
      winner has not gone out, so it does not count (Decision 8). No round limit.
    - ``lowest_total``: ``rules.rounds_for(seats)`` rounds; the best cumulative score wins (the
      lowest penalty, or the highest plus/minus score), then the most rounds gone out.
    - ``most_wins``: ``rules.rounds_for(seats)`` games; the most game wins, then the better
      cumulative score, then the most rounds gone out (Decision 8 binds every preset).

    A tie left after that is broken by up to ``tie_break_rounds`` extra rounds among the tied
    seats only; after those the tied seats share the win. Decision 8's "one additional round
    among the tied players" is read as more of the same match for those seats: each extra round
    counts in their standings like any other, and the match's ranking is applied again among the
    seats still tied. As they were level before it, the extra round alone decides: in
    ``lowest_total`` the lower penalty in it (then going out in it), in ``most_wins`` its
    winner. Seats that tie again play the next extra round; seats that fall behind drop out.

    ``resigned`` maps a seat that left the match (Decision 16) to the round it left in: it plays
    no round after that one, cannot win the match, and once a single seat is left that seat wins
    it (whatever the standings). A resigned seat's rounds before count as they were played.

    Raises ``ScoringError`` for a round whose seats are not the ones due to play, a round after
    the match ended, or scores that do not match the rule set.
    """
    gone = dict(resigned or {})

    def still_in(among: Sequence[int], after: int) -> tuple[int, ...]:
        """The seats of ``among`` that have not left by the end of round ``after``."""
        return tuple(seat for seat in among if gone.get(seat, after + 1) > after)

    if seats < MIN_ROUND_SEATS:
        raise ScoringError(f"a match needs at least {MIN_ROUND_SEATS} seats, got {seats}")
    everyone = tuple(range(seats))
    regular = 1 if rules.match == "single" else rules.rounds_for(seats)
    scored = rules.scoring != "none"
    totals, outs, wins, played = [0] * seats, [0] * seats, [0] * seats, [0] * seats

    def standings() -> MatchStandings:
        return MatchStandings(
            tuple(totals) if scored else None, tuple(outs), tuple(wins), tuple(played)
        )

    expected: tuple[int, ...] = everyone
    winners: tuple[int, ...] = ()
    over = False
    for number, record in enumerate(rounds, start=1):
        if over:
            raise ScoringError(f"round {number} was played after the match ended")
        if record.seats != expected:
            raise ScoringError(
                f"round {number} was played by seats {record.seats}, but seats {expected} "
                "were due to play it"
            )
        if (record.scores is not None) != scored:
            raise ScoringError(
                f"round {number} has {'no ' if scored else ''}scores, but {rules.name} "
                f"scoring is {rules.scoring!r}"
            )
        for i, seat in enumerate(record.seats):
            played[seat] += 1
            if record.scores is not None:
                totals[seat] += record.scores[i]
        wins[record.winner] += 1
        if record.went_out:
            outs[record.winner] += 1
        if rules.match == "single":
            over, winners = True, (record.winner,)
        elif rules.match == "first_out":
            if record.went_out and outs[record.winner] >= rules.match_target:
                over, winners = True, (record.winner,)
        elif number >= regular:
            tied = _leaders(rules, standings(), still_in(expected, number) or expected)
            if len(tied) == 1 or number - regular >= rules.tie_break_rounds:
                over, winners = True, tied
            else:
                expected = tied
        left = still_in(everyone, number)
        if not over and len(left) <= 1:
            over, winners = True, left  # the last seat left wins
        expected = still_in(expected, number)
    done = len(rounds)
    ranked = rules.match in ("lowest_total", "most_wins")
    return MatchStatus(
        over=over,
        winners=winners,
        standings=standings(),
        next_seats=() if over else expected,
        next_is_tie_break=ranked and not over and done >= regular,
        rounds_played=done,
        tie_break_rounds_played=max(0, done - regular) if ranked else 0,
    )
