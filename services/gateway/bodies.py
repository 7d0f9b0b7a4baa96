"""The shapes of the gateway's own request and answer bodies (the game's view is the rules
core's, ``shared.core.gameview``): the routes build and read them as these types, and
``openapi.py`` publishes their JSON Schema from the same types.

No ``from __future__ import annotations`` here: on Python 3.11, a TypedDict only knows which of
its keys are ``NotRequired`` from annotations that are evaluated.
"""

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from services.gateway.errors import ERROR_CODES
from shared.core.botnames import BOT_NAMES
from shared.core.commands import MAX_NAME, MAX_SEED, SEAT_COMMANDS
from shared.core.gameview import Card, GameView, OptionValue
from shared.core.rulesets import ALIASES, MAX_SEATS, MIN_SEATS, PRESETS, RuleSet
from shared.core.shapes import FieldsOf, Keywords, described

MAX_COMMAND_ID = 64
MAX_GAME_SEED = 128  # hex characters of a fixed seed at creation

Head = Annotated[str, described("the game's chain head (a hash): a receipt with 'version'")]


class View(GameView):
    """A seat's view (with 'hand') or the spectator's ('you': null), with its receipt."""

    head: Head


class CreateGame(TypedDict):
    """A new game: a rule set, its seat count, and options that differ from the preset."""

    rules: Annotated[str, Keywords({"enum": sorted([*PRESETS, *ALIASES])})]
    seats: Annotated[int, Keywords({"minimum": MIN_SEATS, "maximum": MAX_SEATS})]
    options: NotRequired[Annotated[dict[str, OptionValue], FieldsOf(RuleSet, frozenset({"name"}))]]
    bots: NotRequired[
        Annotated[
            list[Annotated[str, Keywords({"enum": list(BOT_NAMES)})]],
            Keywords(
                {
                    "maxItems": MAX_SEATS - 1,
                    "description": "bots that take the first seats at once (fewer than seats)",
                }
            ),
        ]
    ]
    seed: NotRequired[
        Annotated[
            str,
            Keywords(
                {
                    "maxLength": MAX_GAME_SEED,
                    "description": "hex; only on servers started with --allow-seeded-games",
                }
            ),
        ]
    ]


class Created(TypedDict):
    """The game made, and the token that may start it."""

    game_id: str
    host_token: str


class Sit(TypedDict):
    """A seat taken by a named player (``seed``: the player's part of the deal's seed), or
    given to a bot by the host (``bot``, with the host token; ``name`` then defaults to
    ``"<bot> bot"``)."""

    name: NotRequired[
        Annotated[
            str,
            Keywords(
                {
                    "minLength": 1,
                    "maxLength": MAX_NAME,
                    "description": "required without 'bot' or a session (whose account's "
                    "name is shown instead)",
                }
            ),
        ]
    ]
    seed: NotRequired[Annotated[str, Keywords({"maxLength": MAX_SEED})]]
    bot: NotRequired[
        Annotated[
            str,
            Keywords(
                {
                    "enum": list(BOT_NAMES),
                    "description": "a bot plays the seat (host token only, while the game waits)",
                }
            ),
        ]
    ]


class Seated(TypedDict):
    """The seat taken, the token that plays it (none for a bot's seat: the bots service plays
    it), and the receipt."""

    seat: int
    token: NotRequired[str]
    bot: NotRequired[Annotated[str, Keywords({"enum": list(BOT_NAMES)})]]
    version: int
    head: Head


class Leave(TypedDict):
    """Give up a seat of a waiting game: a seat's token its own; the host's a bot's ``seat``."""

    seat: NotRequired[Annotated[int, Keywords({"minimum": 0, "maximum": MAX_SEATS - 1})]]


class Rematch(TypedDict):
    """Offer or join a rematch: nothing but the seat's token."""


class RematchSeat(TypedDict):
    """The seat taken in the rematch, and the token that plays it."""

    game_id: str
    seat: int
    token: str


class SeatCommand(TypedDict):
    """A seat's command: ``play`` (the whole new table as ``layout``), ``draw`` (from
    ``source``), ``end``, ``pass``, ``discard`` (``card``), ``resign`` (leave the game under
    way), ``return`` (an absent player takes its seat back)."""

    id: Annotated[
        str,
        Keywords(
            {
                "minLength": 1,
                "maxLength": MAX_COMMAND_ID,
                "description": "the client's id: a retry with the same id applies once",
            }
        ),
    ]
    type: Annotated[str, Keywords({"enum": sorted(SEAT_COMMANDS)})]
    layout: NotRequired[list[list[Card]]]
    card: NotRequired[Card]
    source: NotRequired[Literal["stock", "pile"]]
    expected_version: NotRequired[
        Annotated[int, described("refused as stale_version unless it is the game's version")]
    ]


class Accepted(TypedDict):
    """A command the referee accepted, and the receipt."""

    accepted: Literal[True]
    version: int
    head: Head


class Credentials(TypedDict):
    """A registration or login: the display name (unique, case-insensitive) and password."""

    name: Annotated[str, Keywords({"minLength": 2, "maxLength": 40})]
    password: Annotated[str, Keywords({"minLength": 8, "maxLength": 256})]


class PlayerRef(TypedDict):
    """A player as anyone may see it: an opaque id and the name shown."""

    id: str
    name: str


class AccountSession(TypedDict):
    """A new session: its token (a bearer token; the web client gets it as an HttpOnly cookie
    too) and whose it is."""

    player: PlayerRef
    token: Annotated[str, described("starts with 'rs_'; send as 'Authorization: Bearer ...'")]


class SessionInfo(TypedDict):
    """One of the owner's sessions (never its token): ``id`` revokes it."""

    id: str
    created: float
    expires: float
    label: Annotated[str, described("the User-Agent that opened it")]
    current: Annotated[bool, described("the session this request came with")]


class SessionList(TypedDict):
    """The owner's live sessions, oldest first."""

    sessions: list[SessionInfo]


class DeleteAccount(TypedDict):
    """Delete the account: its password once more."""

    password: str


class MyGame(TypedDict):
    """A seat the account took."""

    game_id: str
    seat: int
    status: Annotated[str, described("the game's status, or 'archived' once Redis let it go")]
    rules: str
    taken: Annotated[float, described("when the seat was taken (unix seconds)")]


class MyGames(TypedDict):
    """The account's seats, newest first."""

    games: list[MyGame]


class SeatToken(TypedDict):
    """A fresh token for the account's own seat (to resume from another device)."""

    game_id: str
    seat: int
    token: str


class LeaderboardEntry(TypedDict):
    """One place on a board: an account (its id and name) or a bot (``bot:<name>``)."""

    rank: int
    id: str
    name: Annotated[str, described("a deleted account shows as a pseudonym")]
    bot: bool
    rating: Annotated[float, described("mu - 3 sigma: 0 for a newcomer, rising as it wins")]
    mu: float
    sigma: float
    games: int
    wins: int


class Leaderboard(TypedDict):
    """One rule set's board of accounts or of bots, by rating."""

    rules: str
    pool: Literal["players", "bots"]
    entries: list[LeaderboardEntry]


class RatingPoint(TypedDict):
    """The rating after one rated game."""

    game_id: str
    finished: float
    rating: float


class RatedGame(TypedDict):
    """A recent game and where to replay it."""

    game_id: str
    finished: float
    seat: int
    won: bool
    replay: Annotated[str, described("the web client's replay of the game")]


class RulesRecord(TypedDict):
    """A player's figures in one rule set."""

    rating: float
    mu: float
    sigma: float
    games: int
    wins: int
    history: list[RatingPoint]
    recent: list[RatedGame]


class PlayerPage(TypedDict):
    """A player's (or a bot's) page: figures per rule set, nothing of the account itself."""

    id: str
    name: str
    bot: bool
    rules: dict[str, RulesRecord]


class ErrorDetail(TypedDict):
    """What went wrong: a published code and a message that names the field."""

    code: Annotated[str, Keywords({"enum": sorted(ERROR_CODES)})]
    message: str


class Error(TypedDict):
    """Every refusal's body."""

    error: ErrorDetail
    version: NotRequired[Annotated[int, described("a command refused by the referee: receipt")]]
    head: NotRequired[Head]
    option: NotRequired[Annotated[str, described("bad_options: the option (or field) refused")]]
    idempotency_key: NotRequired[
        Annotated[str, described("a create or sit that timed out: retry with this Idempotency-Key")]
    ]


# --- tournaments (``routes.tournaments``): a director's many tables, from the tournament's log


class NewTournament(TypedDict):
    """A tournament the logged-in account directs: every table plays ``rules`` with
    ``options``; ``format`` pairs the rounds; ``fill`` says what a short table gets."""

    name: Annotated[str, Keywords({"minLength": 1, "maxLength": 80})]
    rules: Annotated[str, Keywords({"enum": sorted([*PRESETS, *ALIASES])})]
    options: NotRequired[Annotated[dict[str, OptionValue], FieldsOf(RuleSet, frozenset({"name"}))]]
    format: NotRequired[
        Annotated[
            Literal["swiss", "round_robin"],
            described("swiss (default): by score, then rating; round_robin: a cycle of tables"),
        ]
    ]
    rounds: NotRequired[
        Annotated[
            int,
            Keywords(
                {
                    "minimum": 0,
                    "maximum": 64,
                    "description": "at least 1 for Swiss; 0 in a round robin: the whole cycle",
                }
            ),
        ]
    ]
    table_seats: Annotated[int, Keywords({"minimum": MIN_SEATS, "maximum": MAX_SEATS})]
    fill: NotRequired[
        Annotated[
            str,
            Keywords(
                {
                    "pattern": "^(byes|bots:[a-z]+)$",
                    "description": "byes (default): those left over sit the round out; "
                    "bots:<name>: short tables get that bot's seats",
                }
            ),
        ]
    ]


class Registration(TypedDict):
    """The director opens (true) or closes (false) registration; closing starts the
    tournament."""

    open: bool


class Entry(TypedDict):
    """Register: the session's own account (no body), or, by the director, ``player`` (an
    account id or ``bot:<name>``)."""

    player: NotRequired[Annotated[str, Keywords({"maxLength": 64})]]


class PairRound(TypedDict):
    """Start (pair) round ``round``: the one due (the next after the last), its default."""

    round: NotRequired[Annotated[int, Keywords({"minimum": 1})]]


class NewRuling(TypedDict):
    """A director's ruling on one table of one round, always with its reason: ``annul`` (the
    table's game counts for nobody), ``forfeit`` (``player`` scores as last there), ``verdict``
    (a disputed ``turn`` replayed and what was found, noted in the standings)."""

    kind: Literal["annul", "forfeit", "verdict"]
    round: Annotated[int, Keywords({"minimum": 1})]
    table: Annotated[int, Keywords({"minimum": 1, "description": "numbered from 1"})]
    reason: Annotated[str, Keywords({"minLength": 1, "maxLength": 500})]
    player: NotRequired[Annotated[str, described("forfeit only: the entrant it is against")]]
    turn: NotRequired[Annotated[int, Keywords({"minimum": 1, "description": "verdict only"})]]
    verdict: NotRequired[
        Annotated[str, Keywords({"maxLength": 500, "description": "verdict only"})]
    ]


class Someone(TypedDict):
    """A player as shown: an account (a pseudonym once deleted) or ``bot:<name>``."""

    player: str
    name: str


class TournamentSummary(TypedDict):
    """A tournament as the lobby lists it."""

    tournament_id: str
    name: str
    status: Literal["created", "registering", "running", "finished"]
    rules: str
    format: str
    rounds: Annotated[int, described("0 in a round robin until registration closes")]
    round: Annotated[int, described("the last round paired (0 before the first)")]
    table_seats: int
    fill: str
    entrants: Annotated[int, described("entrants registered (those withdrawn too)")]
    director: Someone
    version: Annotated[int, described("the tournament log's version")]


class TournamentLobby(TypedDict):
    """A page of the lobby, newest first, and the cursor of the next (null: the last)."""

    tournaments: list[TournamentSummary]
    next: str | None


class EntrantRow(TypedDict):
    """An entrant, with the rating it registered with (its pairings replay from it)."""

    player: str
    name: str
    rating: float
    withdrawn: Annotated[
        int | None,
        described("the last round paired when it withdrew (0: before round 1); null: it plays"),
    ]


class TableSeat(TypedDict):
    """Who sits in one seat of a table (the game's seat number)."""

    seat: int
    player: str
    name: str
    bot: bool


class TableResult(TypedDict):
    """One seat's line of a finished table, read from its game's MatchEnded."""

    player: str
    name: str
    seat: int
    winner: bool
    total: int | None
    outs: int
    wins: int


class TableView(TypedDict):
    """A table of a round: its game (play, watch, replay) and, once over, its results and
    the game log's head they were read from."""

    table: int
    game_id: str
    status: Literal["paired", "started", "finished", "annulled"]
    seats: list[TableSeat]
    results: list[TableResult]
    head: Annotated[list[int | str] | None, described("[version, hash] of the game's log")]
    watch: Annotated[str, described("the web client's spectator view of the game")]
    replay: Annotated[str, described("the web client's replay of the game")]


class RoundView(TypedDict):
    """A paired round."""

    round: int
    tables: list[TableView]
    byes: list[Someone]


class RulingView(TypedDict):
    """A recorded ruling and its reason."""

    kind: Literal["annul", "forfeit", "verdict"]
    round: int
    table: int
    player: str
    player_name: str
    reason: str
    turn: int | None
    verdict: str


class StandingRow(TypedDict):
    """One entrant's place: ``score`` is the rule family's first criterion, ``keys`` every
    criterion in order (tie-breaks after it); ``notes``: each ruling that touched the row, with
    its reason."""

    rank: int
    player: str
    name: str
    score: float
    keys: list[float]
    tables: int
    byes: int
    forfeits: int
    withdrawn: bool
    notes: list[str]


class StandingsAfter(TypedDict):
    """The standings recorded after a round (again after a later ruling changed them)."""

    round: int
    standings: list[StandingRow]


class TournamentView(TypedDict):
    """A tournament as everyone may see it: nothing secret (its games keep their own hands
    and seeds); ``version`` and ``head``: its log's, a receipt."""

    tournament_id: str
    name: str
    status: Literal["created", "registering", "running", "finished"]
    director: Someone
    rules: str
    options: dict[str, OptionValue]
    format: str
    rounds: int
    round: int
    table_seats: int
    fill: str
    entrants: list[EntrantRow]
    played: list[RoundView]
    criteria: Annotated[
        list[str], described("what the standings rank by, in order: the names of their 'keys'")
    ]
    standings: Annotated[
        list[StandingRow], described("live: worked out from every result and ruling so far")
    ]
    history: list[StandingsAfter]
    rulings: list[RulingView]
    version: int
    head: Head


class TournamentEvent(TypedDict):
    """One event of a tournament's log, with its place in the hash chain."""

    version: int
    time: float
    hash: str
    type: str
    data: dict[str, Any]


class TournamentEvents(TypedDict):
    """A page of a tournament's log after a version (for audit: ``rummy audit --tournament``
    recomputes it)."""

    tournament_id: str
    events: list[TournamentEvent]
    version: int
    head: Head
