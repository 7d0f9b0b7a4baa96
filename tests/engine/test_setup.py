"""Creating, seating and starting a game: option checks (Decision 12), the refusals of the
set-up commands, the seeded deal (commitment, reproducibility, hand sizes, stock), who deals and
who starts (Decision 11), and the published shuffle algorithm ``rr-shuffle-v1`` re-implemented
here from its description alone."""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import pytest

from shared.core import shuffle
from shared.core.cards import JOKER
from shared.core.codes import Rejection
from shared.core.commands import Context, Continue, CreateGame, Draw, Play, Sit, Start
from shared.core.decide import decide
from shared.core.events import (
    Event,
    GameCreated,
    GameStarted,
    PlayerSeated,
    RoundDealt,
    StarterChosen,
    TurnStarted,
    to_data,
)
from shared.core.evolve import fold
from shared.core.shuffle import commitment, shuffle_key, shuffled
from shared.core.state import GameState

from .helpers import SEED, T0, Game, cards, go_out, record_scores, start_game

T = TypeVar("T")

# --- rr-shuffle-v1, written again from the module's published description -----------------------


def rr_key(server_seed: bytes, game_id: str, player_seeds: Sequence[str]) -> bytes:
    """key = HMAC-SHA256(server_seed, "rr-shuffle-v1" 0x00 game_id 0x00 seed_1 0x00 ...)."""
    message = b"rr-shuffle-v1" + b"\x00" + game_id.encode("utf-8")
    for player_seed in player_seeds:
        message += b"\x00" + player_seed.encode("utf-8")
    return hmac.new(server_seed, message, hashlib.sha256).digest()


def rr_words(key: bytes, purpose: str) -> Iterator[int]:
    """The purpose's stream of blocks HMAC-SHA256(key, purpose 0x00 i_be64), read as u32s."""
    i = 0
    while True:
        block = hmac.new(
            key, purpose.encode("utf-8") + b"\x00" + i.to_bytes(8, "big"), hashlib.sha256
        ).digest()
        for k in range(8):
            yield int.from_bytes(block[4 * k : 4 * k + 4], "big")
        i += 1


def rr_fisher_yates(items: Sequence[T], words: Iterator[int]) -> list[T]:
    """Fisher-Yates from the top, each index uniform by rejection sampling (no modulo bias)."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        n = i + 1
        largest_multiple = (2**32 // n) * n
        while True:
            word = next(words)
            if word < largest_multiple:
                break
        j = word % n
        out[i], out[j] = out[j], out[i]
    return out


def rr_shuffle(items: Sequence[T], key: bytes, purpose: str) -> list[T]:
    """The whole published algorithm."""
    return rr_fisher_yates(items, rr_words(key, purpose))


def full_deck(jokers: int) -> list[int]:
    """Two copies of each of the 52 naturals plus the jokers (the card ints of ``cards``)."""
    return sorted([*range(52), *range(52)]) + [JOKER] * jokers


# --- the shuffle -------------------------------------------------------------------------------


def test_commitment_is_sha256_hex() -> None:
    """The commitment published at creation is SHA-256 of the secret seed, hex."""
    assert commitment(b"abc") == hashlib.sha256(b"abc").hexdigest()


@pytest.mark.parametrize("purpose", ["deal/1", "deal/2", "cut/1", "draw_tile/3", "reshuffle/17"])
@pytest.mark.parametrize("size", [0, 1, 2, 3, 13, 106, 108])
def test_shuffle_matches_the_published_algorithm(purpose: str, size: int) -> None:
    """``shuffled`` is exactly rr-shuffle-v1 as its docstring publishes it (key derivation,
    stream, rejection sampling, Fisher-Yates): anyone can recompute a deal from the seed."""
    seeds = ("alice", "bø", "")
    key = rr_key(SEED, "game-7", seeds)
    assert shuffle_key(SEED, "game-7", seeds) == key
    items = list(range(size))
    assert shuffled(items, key, purpose) == rr_shuffle(items, key, purpose)


def test_shuffle_known_answer() -> None:
    """A fixed test vector, so that a change to both implementations at once still shows."""
    key = rr_key(b"seed", "g", ["a", "b"])
    assert shuffled(list(range(10)), key, "deal/1") == [0, 3, 9, 1, 4, 5, 7, 2, 6, 8]
    assert key.hex()[:16] == "b08a549f9af58db8"


def test_shuffle_rejects_biased_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rejection sampling: for a bound of 3 the word 2**32-1 lies above the largest multiple of
    3 and is skipped (a modulo would have used it and swapped another position)."""
    words = [2**32 - 1, 4, 7]

    def crafted(key: bytes, purpose: str) -> Iterator[int]:
        return iter(words)

    monkeypatch.setattr(shuffle, "_stream", crafted)
    assert shuffled(["a", "b", "c"], b"k", "p") == ["a", "c", "b"]
    assert rr_fisher_yates(["a", "b", "c"], iter(words)) == ["a", "c", "b"]


def test_player_seeds_and_game_id_change_the_key() -> None:
    """The key mixes the server seed, the game id and every player seed, in seat order."""
    base = shuffle_key(SEED, "g", ["a", "b"])
    assert shuffle_key(SEED, "g", ["b", "a"]) != base
    assert shuffle_key(SEED, "h", ["a", "b"]) != base
    assert shuffle_key(SEED, "g", ["a", "c"]) != base
    assert shuffle_key(b"other", "g", ["a", "b"]) != base


# --- creation and options ------------------------------------------------------------------------


def create(
    rules: str, options: dict[str, Any], seats: int, state: GameState | None = None
) -> list[Event] | Rejection:
    """Decide a ``CreateGame``."""
    command = CreateGame("g1", rules, options, seats, commitment(SEED))
    return decide(state or GameState(), command, Context(T0))


@pytest.mark.parametrize(
    ("rules", "options", "seats", "named"),
    [
        ("poker", {}, 2, "rule set"),
        ("robbers", {"colour": "red"}, 2, "'colour'"),
        ("robbers", {"jokers": 9}, 2, "'jokers'"),
        ("robbers", {"jokers": -1}, 2, "'jokers'"),
        ("robbers", {"opening_points": 101}, 2, "'opening_points'"),
        ("robbers", {"ace": "high"}, 2, "'ace'"),
        ("robbers", {"discard_pile": "yes"}, 2, "'discard_pile'"),
        ("robbers", {"turn_seconds": 1}, 2, "'turn_seconds'"),
        ("robbers", {"max_players": 9}, 2, "'max_players'"),
        ("robbers", {"failed_turn_draw": 0}, 2, "'failed_turn_draw'"),
        ("robbers", {}, 6, "seats"),
        ("robbers", {}, 1, "seats"),
        ("robbers", {"min_players": 4}, 3, "seats"),
        ("robbers", {"max_players": 8}, 9, "seats"),
        ("rummikub", {}, 5, "seats"),
        ("robbers", {"hand_size": 52, "jokers": 0}, 2, "hand_size"),
        ("robbers", {"jokers": 0, "max_players": 8, "hand_size": 13}, 8, "hand_size"),
        ("robbers", {"jokers": 1, "hand_size": 52, "discard_pile": True}, 2, "hand_size"),
        ("robbers-classic", {"opening_points": 30}, 2, "'opening_points'"),
    ],
)
def test_bad_options_are_refused_naming_the_option(
    rules: str, options: dict[str, Any], seats: int, named: str
) -> None:
    """Decision 12: a game whose options break a limit is refused at creation with
    ``bad_options``, and the message names the option."""
    answer = create(rules, options, seats)
    assert isinstance(answer, Rejection)
    assert answer.code == "bad_options"
    assert named in answer.message


@pytest.mark.parametrize(
    ("options", "seats", "stock"),
    [
        ({"jokers": 0, "max_players": 8, "hand_size": 12}, 8, 104 - 96),
        ({"jokers": 0, "hand_size": 51}, 2, 2),
        ({"jokers": 1, "hand_size": 52}, 2, 1),
        ({"jokers": 0, "hand_size": 51, "discard_pile": True, "max_players": 2}, 2, 1),
        ({"jokers": 8, "opening_points": 100}, 2, 112 - 26),
        ({"jokers": 0, "opening_points": 0}, 5, 104 - 55),
    ],
)
def test_limits_are_inclusive(options: dict[str, Any], seats: int, stock: int) -> None:
    """Decision 12's limits are accepted right up to the edge: a deal that leaves a single card
    in the stock is allowed, and so are 8 seats, 8 jokers and a 100-point opening."""
    game = start_game("robbers", options, seats)
    assert len(game.state.stock) == stock


def test_game_exists() -> None:
    """A second ``CreateGame`` on the same game is refused."""
    game = start_game("robbers")
    assert isinstance(create("robbers", {}, 2, game.state), Rejection)
    game.refuse(CreateGame("g1", "robbers", {}, 2, commitment(SEED)), "game_exists")


def test_game_created_holds_only_the_commitment() -> None:
    """``GameCreated`` holds the commitment to the seed, never the seed itself."""
    answer = create("robbers", {"jokers": 2}, 3)
    assert isinstance(answer, list)
    [event] = answer
    assert isinstance(event, GameCreated)
    assert event.commitment == hashlib.sha256(SEED).hexdigest()
    text = repr(to_data(event))
    assert SEED.hex() not in text
    assert repr(SEED) not in text
    assert set(to_data(event)) == {"game_id", "rules", "options", "seats", "commitment"}
    assert event.options == {"jokers": 2}


def test_sit_and_start_refusals() -> None:
    """``game_not_started`` before creation, ``seats_empty`` until every seat is taken,
    ``game_full`` beyond the seats, ``bad_seed`` for a seed that does not match the commitment
    (or none), ``game_started`` for sitting or starting again once started."""
    game = Game()
    game.refuse(Sit("ann"), "game_not_started")
    game.refuse(Start(), "game_not_started")
    game.do(CreateGame("g1", "robbers", {}, 2, commitment(SEED)))
    game.refuse(Play(0, ()), "game_not_started")
    game.refuse(Draw(0), "game_not_started")
    game.refuse(Start(), "seats_empty")
    assert game.do(Sit("ann", "a-seed")) == [PlayerSeated(0, "ann", "a-seed")]
    game.refuse(Start(), "seats_empty")
    assert game.do(Sit("bo")) == [PlayerSeated(1, "bo", "")]
    game.refuse(Sit("cy"), "game_full")
    wrong = decide(game.state, Start(), Context(T0, b"wrong seed"))
    assert isinstance(wrong, Rejection) and wrong.code == "bad_seed"
    missing = decide(game.state, Start(), Context(T0, None))
    assert isinstance(missing, Rejection) and missing.code == "bad_seed"
    events = game.do(Start())
    assert [type(e) for e in events] == [GameStarted, StarterChosen, RoundDealt, TurnStarted]
    game.refuse(Sit("cy"), "game_started")
    game.refuse(Start(), "game_started")


# --- the deal ----------------------------------------------------------------------------------


def dealt(game: Game) -> RoundDealt:
    """The first ``RoundDealt`` of a game."""
    return next(e for e in game.events if isinstance(e, RoundDealt))


def test_deal_is_reproducible() -> None:
    """The same seed, game id and player seeds give identical events; changing one player seed,
    the game id or the server seed gives a different deal."""
    first = start_game("robbers", seats=3, player_seeds=["a", "b", "c"])
    again = start_game("robbers", seats=3, player_seeds=["a", "b", "c"])
    assert first.events == again.events
    other_player = start_game("robbers", seats=3, player_seeds=["a", "b", "d"])
    other_game = start_game("robbers", seats=3, player_seeds=["a", "b", "c"], game_id="g2")
    other_seed = start_game(
        "robbers", seats=3, player_seeds=["a", "b", "c"], seed=b"another secret"
    )
    for other in (other_player, other_game, other_seed):
        assert dealt(other).hands != dealt(first).hands
        assert dealt(other).stock != dealt(first).stock


def test_deal_is_recomputable_from_the_seed() -> None:
    """The deal is the published shuffle of the ordered deck for purpose ``deal/1``, dealt in
    turn order from the starter, hands kept sorted, the rest the stock: anyone holding the
    revealed seed recomputes it with the independent implementation above."""
    game = start_game("robbers", seats=4, player_seeds=["w", "x", "y", "z"])
    deal = dealt(game)
    key = rr_key(SEED, "g1", ["w", "x", "y", "z"])
    order = rr_shuffle(full_deck(4), key, "deal/1")
    seats = [(deal.starter + i) % 4 for i in range(4)]
    for i, seat in enumerate(seats):
        assert deal.hands[seat] == tuple(sorted(order[11 * i : 11 * (i + 1)]))
    assert deal.stock == tuple(order[44:])
    assert deal.discard == ()


@pytest.mark.parametrize(
    ("rules", "options", "seats", "size", "jokers"),
    [
        ("robbers", {}, 2, 13, 4),
        ("robbers", {}, 3, 13, 4),
        ("robbers", {}, 4, 11, 4),
        ("robbers", {}, 5, 11, 4),
        ("robbers", {"jokers": 0}, 5, 11, 0),
        ("robbers", {"jokers": 6, "hand_size": 7}, 3, 7, 6),
        ("robbers-classic", {}, 2, 13, 4),
        ("robbers-classic", {}, 6, 13, 4),
        ("robbers-classic", {"hand_size": 11}, 4, 11, 4),
        ("rummikub", {}, 2, 14, 2),
        ("rummikub", {}, 4, 14, 2),
    ],
)
def test_hand_sizes_and_stock(
    rules: str, options: dict[str, Any], seats: int, size: int, jokers: int
) -> None:
    """Hand sizes per rule set and seat count (robbers 13 for 2-3 seats, 11 for 4-5; classic 13;
    rummikub 14), and the stock is exactly the deck minus the hands."""
    game = start_game(rules, options, seats)
    deal = dealt(game)
    assert [len(h) for h in deal.hands] == [size] * seats
    assert deal.discard == ()
    everything = [*deal.stock, *(c for h in deal.hands for c in h)]
    assert sorted(everything) == full_deck(jokers)
    assert len(deal.stock) == 104 + jokers - seats * size
    assert game.state.stock == deal.stock and game.state.hands == deal.hands


@pytest.mark.parametrize("rules", ["robbers", "robbers-classic", "rummikub"])
def test_discard_pile_variant_turns_one_card_up(rules: str) -> None:
    """Decision 10: after the deal one card lies face up on the pile; the stock is the rest."""
    game = start_game(rules, {"discard_pile": True}, 3)
    deal = dealt(game)
    assert len(deal.discard) == 1
    jokers = game.state.rules.jokers
    everything = [*deal.stock, *deal.discard, *(c for h in deal.hands for c in h)]
    assert sorted(everything) == full_deck(jokers)
    assert game.state.discard == deal.discard


def test_first_turn_is_the_starters() -> None:
    """Turn 1 belongs to the starter of round 1, and the state knows the round's seats."""
    for players in (2, 3, 5):
        game = start_game("robbers", seats=players)
        deal = dealt(game)
        assert game.events[-1] == TurnStarted(deal.starter, 1, None)
        assert game.state.round_seats == tuple(range(players))
        assert game.state.round == 1 and game.state.phase == "turns"


# --- Decision 11: who deals and who starts -------------------------------------------------------


def starter_of(game: Game) -> StarterChosen:
    """The ``StarterChosen`` event of a game."""
    return next(e for e in game.events if isinstance(e, StarterChosen))


def check_cuts(chosen: StarterChosen, seats: int, jokers: int, key: bytes) -> int:
    """Check every attempt of a cut or tile draw against the rules and the seeded shuffle and
    return the winner: each attempt deals from a fresh shuffle (``<method>/<attempt>``) one card
    per contender in seat order, a contender who cuts a joker cuts again at once, the next
    attempt is among exactly the seats tied for the highest rank, and the last has one winner."""
    contenders = list(range(seats))
    assert chosen.draws, "a cut records its cards"
    for number, attempt in enumerate(chosen.draws, start=1):
        source = iter(rr_shuffle(full_deck(jokers), key, f"{chosen.method}/{number}"))
        best: dict[int, int] = {}
        position = 0
        for seat in contenders:
            while True:
                drawn_seat, card = attempt[position]
                position += 1
                assert drawn_seat == seat
                assert card == next(source)
                if card != JOKER:
                    best[seat] = card % 13 + 1  # K (13) high, A (1) low
                    break
        assert position == len(attempt)
        top = max(best.values())
        contenders = [s for s in contenders if best[s] == top]
        last = number == len(chosen.draws)
        assert (len(contenders) == 1) == last
    return contenders[0]


def find_game(
    rules: str, seats: int, wanted: Callable[[StarterChosen], bool], options: dict[str, Any]
) -> Game:
    """The first game (over player-seed variations, deterministic) whose cut ``wanted``."""
    for n in range(400):
        game = start_game(rules, options, seats, player_seeds=[f"s{n}-{i}" for i in range(seats)])
        if wanted(starter_of(game)):
            return game
    raise AssertionError("no such cut in 400 games")


def has_tie(chosen: StarterChosen) -> bool:
    """A cut that needed a re-cut among tied seats."""
    return len(chosen.draws) > 1


def has_joker(chosen: StarterChosen) -> bool:
    """A cut in which someone cut a joker."""
    return any(card == JOKER for attempt in chosen.draws for _, card in attempt)


def plain(chosen: StarterChosen) -> bool:
    """A cut decided at once."""
    return not has_tie(chosen) and not has_joker(chosen)


@pytest.mark.parametrize("kind", [plain, has_tie, has_joker])
@pytest.mark.parametrize("seats", [2, 4])
def test_robbers_cut_picks_the_dealer(kind: Callable[[StarterChosen], bool], seats: int) -> None:
    """Decision 11 (robbers): every seat cuts, K high and A low, jokers and ties cut again among
    the tied; the highest deals and the next seat starts. The cuts are in ``StarterChosen`` and
    come from the seeded shuffle, so they replay."""
    game = find_game("robbers", seats, kind, {})
    chosen = starter_of(game)
    key = rr_key(SEED, "g1", game.state.seeds)
    winner = check_cuts(chosen, seats, 4, key)
    assert chosen.method == "cut"
    assert chosen.dealer == winner
    assert chosen.starter == (winner + 1) % seats
    assert dealt(game).dealer == winner and dealt(game).starter == chosen.starter


@pytest.mark.parametrize("kind", [plain, has_tie, has_joker])
def test_rummikub_highest_tile_starts(kind: Callable[[StarterChosen], bool]) -> None:
    """Decision 11 (rummikub): every seat draws a tile, the highest number starts; jokers and
    ties draw again. No dealer."""
    options = {"jokers": 6} if kind is has_joker else {}
    game = find_game("rummikub", 3, kind, options)
    chosen = starter_of(game)
    key = rr_key(SEED, "g1", game.state.seeds)
    winner = check_cuts(chosen, 3, game.state.rules.jokers, key)
    assert chosen.method == "draw_tile"
    assert chosen.dealer is None
    assert chosen.starter == winner
    assert dealt(game).starter == winner and dealt(game).dealer is None


def test_robbers_classic_starter_is_the_shuffles_pick() -> None:
    """Decision 11 (robbers-classic): the seeded shuffle picks the first seat (the first of the
    seats shuffled for purpose ``starter``), with no cuts and no dealer; over many seeds every
    seat gets to start."""
    starters: Counter[int] = Counter()
    for n in range(60):
        seeds = [f"c{n}-{i}" for i in range(4)]
        game = start_game("robbers-classic", seats=4, player_seeds=seeds)
        chosen = starter_of(game)
        assert chosen.method == "random" and chosen.draws == () and chosen.dealer is None
        assert chosen.starter == rr_shuffle([0, 1, 2, 3], rr_key(SEED, "g1", seeds), "starter")[0]
        starters[chosen.starter] += 1
    assert set(starters) == {0, 1, 2, 3}


def test_starter_option_overrides_the_preset() -> None:
    """``starter`` is an option like any other: robbers with ``draw_tile`` has no dealer."""
    game = start_game("robbers", {"starter": "draw_tile"}, 3)
    chosen = starter_of(game)
    assert chosen.method == "draw_tile" and chosen.dealer is None


def test_fold_of_the_setup_is_the_live_state() -> None:
    """The state after set-up is the fold of its events (nothing is kept outside them)."""
    game = start_game("rummikub", seats=3)
    assert fold(game.events) == game.state
    assert game.state.status == "playing"
    assert game.state.names == ("p0", "p1", "p2")
    assert game.state.seeds == ("ps0", "ps1", "ps2")
    assert game.state.first_starter == starter_of(game).starter


def test_cards_helper() -> None:
    """The notation helper of these tests reads cards the way the API does."""
    assert cards("AS 10H KC JK") == (0, 13 + 9, 39 + 12, JOKER)


def deals_over_rounds(rules: str, seats: int, rounds: int) -> list[RoundDealt]:
    """The deals of ``rounds`` rounds, each ended by someone going out and scored."""
    game = start_game(rules, {"match": "first_out", "match_target": 10}, seats)
    for _ in range(rounds - 1):
        go_out(game)
        record_scores(game)
        game.do(Continue())
    return [e for e in game.events if isinstance(e, RoundDealt)]


@pytest.mark.parametrize("seats", [2, 3, 5])
def test_robbers_deal_moves_one_seat_each_round(seats: int) -> None:
    """Decision 11 (robbers): the deal moves one seat on each round and the seat after the dealer
    starts; each round's first turn is its starter's."""
    deals = deals_over_rounds("robbers", seats, 7)
    first = deals[0].dealer
    assert first is not None
    for number, deal in enumerate(deals, start=1):
        assert deal.round == number
        assert deal.dealer == (first + number - 1) % seats
        assert deal.starter == (first + number) % seats


@pytest.mark.parametrize("seats", [2, 4])
def test_rummikub_start_moves_one_seat_each_round(seats: int) -> None:
    """Decision 11 (rummikub): the first turn moves one seat on each round; no dealer."""
    deals = deals_over_rounds("rummikub", seats, 6)
    first = deals[0].starter
    for number, deal in enumerate(deals, start=1):
        assert deal.dealer is None
        assert deal.starter == (first + number - 1) % seats


def test_each_round_begins_with_its_starters_turn() -> None:
    """After ``Continue`` the new round's first ``TurnStarted`` is its starter's, numbered on
    from the previous round's turns (turns count across the whole game)."""
    game = start_game("robbers", {"match": "first_out", "match_target": 10}, 3)
    go_out(game)
    record_scores(game)
    before = game.state.turn_number
    deal, turn = game.do(Continue())
    assert isinstance(deal, RoundDealt) and isinstance(turn, TurnStarted)
    assert turn.seat == deal.starter
    assert turn.number == before + 1
    assert deal.hands != dealt(game).hands
