"""``decide(state, command, actor) -> events``: a tournament's rules applied to one command.

Pure and deterministic: the same state and command always give the same events (a pairing
replays from the log: no clock, no randomness). A refusal raises ``TournamentError`` and
changes nothing; a command repeated after it took effect is refused with a code that says so
(``already_open``, ``round_paired``, ``table_finished``, ``ruling_recorded``...), never applied
twice, so a sender that lost the answer may send it again.

Who may send what: anyone with an account creates (and directs) a tournament; the director
opens and closes registration and records rulings; a player registers and withdraws itself
(the director anyone, bots too); the tournament service (actor ``service``) or the director
pairs rounds, starts and finishes tables and finishes the tournament.
"""

from __future__ import annotations

from shared.tournament.commands import (
    MAX_ENTRANTS,
    MAX_ROUNDS,
    SERVICE,
    CloseRegistration,
    Command,
    CreateTournament,
    FinishTable,
    FinishTournament,
    OpenRegistration,
    PairRound,
    Register,
    Rule,
    StartTable,
    TournamentError,
    Withdraw,
    fill_bot,
)
from shared.tournament.events import (
    BOT,
    Event,
    PlayerRegistered,
    PlayerWithdrew,
    RegistrationClosed,
    RegistrationOpened,
    RoundPaired,
    RulingRecorded,
    SeatedTable,
    StandingsRecorded,
    TableFinished,
    TableStarted,
    TournamentCreated,
    TournamentFinished,
)
from shared.tournament.pairing import pair
from shared.tournament.standings import standings
from shared.tournament.state import Table, Tournament, evolve, full_cycle
from shared.tournament.tables import table_game_id


def minimum_entrants(state: Tournament) -> int:
    """Entrants a tournament needs to run: a full table with byes, two with a bot fill (the
    bots fill the rest of a table)."""
    return 2 if fill_bot(state.fill) else state.table_seats


def next_command(state: Tournament) -> PairRound | FinishTournament | None:
    """What the tournament service sends next once a round is over: the next round's pairing,
    or the finish after the last round (or when withdrawals left too few to pair one); None
    while a round is in play or the tournament is not running."""
    if state.status != "running" or not state.round_over():
        return None
    if state.current < state.rounds and len(state.active()) >= minimum_entrants(state):
        return PairRound(state.current + 1)
    return FinishTournament()


def _director(state: Tournament, actor: str, what: str) -> None:
    if actor != state.director:
        raise TournamentError("not_director", f"only the director may {what}", "actor")


def _director_or_service(state: Tournament, actor: str, what: str) -> None:
    if actor not in (state.director, SERVICE):
        raise TournamentError(
            "not_allowed", f"only the director or the tournament service may {what}", "actor"
        )


def _closed(state: Tournament) -> TournamentError:
    if state.status == "finished":
        return TournamentError("tournament_finished", "the tournament is over", "")
    return TournamentError(
        "already_closed", "registration is closed: the tournament is running", ""
    )


def decide(state: Tournament, command: Command, actor: str) -> list[Event]:
    """The events ``command`` from ``actor`` (an account id, or ``service``) makes; raises
    ``TournamentError`` for one that is refused."""
    if isinstance(command, CreateTournament):
        return _create(state, command, actor)
    if not state.status:
        raise TournamentError("no_tournament", "there is no such tournament", "tournament_id")
    match command:
        case OpenRegistration():
            _director(state, actor, "open registration")
            if state.status == "registering":
                raise TournamentError("already_open", "registration is open already", "")
            if state.status != "created":
                raise _closed(state)
            return [RegistrationOpened()]
        case Register():
            return _register(state, command, actor)
        case Withdraw():
            return _withdraw(state, command, actor)
        case CloseRegistration():
            _director(state, actor, "close registration")
            if state.status == "created":
                raise TournamentError("not_registering", "registration has not been opened yet", "")
            if state.status != "registering":
                raise _closed(state)
            need = minimum_entrants(state)
            if len(state.entrants) < need:
                raise TournamentError(
                    "too_few_entrants",
                    f"{len(state.entrants)} entrants; allowed: at least {need} to run "
                    f"tables of {state.table_seats} with fill {state.fill!r}",
                    "entrants",
                )
            if not state.rounds:
                cycle = full_cycle(len(state.entrants), state.table_seats)
                if cycle > MAX_ROUNDS:
                    raise TournamentError(
                        "tournament_full",
                        f"a round robin of {len(state.entrants)} entrants at tables of "
                        f"{state.table_seats} takes {cycle} rounds; allowed: at most "
                        f"{MAX_ROUNDS} (fewer entrants, or a Swiss)",
                        "entrants",
                    )
            return [RegistrationClosed()]
        case PairRound():
            return _pair(state, command, actor)
        case StartTable():
            _director_or_service(state, actor, "start a table")
            table = _table(state, command.round, command.table, command.game_id)
            if table.status != "paired":
                raise _table_over(table)
            return [TableStarted(command.round, command.table, command.game_id)]
        case FinishTable():
            return _finish_table(state, command, actor)
        case Rule():
            return _rule(state, command, actor)
        case FinishTournament():
            _director_or_service(state, actor, "finish the tournament")
            if state.status == "finished":
                raise TournamentError("tournament_finished", "the tournament is over", "")
            if state.status != "running":
                raise TournamentError("not_running", "the tournament has not started", "")
            if not state.round_over():
                raise TournamentError(
                    "round_in_play", f"round {state.current} has tables still in play", ""
                )
            stuck = len(state.active()) < minimum_entrants(state)
            if state.current < state.rounds and actor != state.director and not stuck:
                raise TournamentError(
                    "rounds_left",
                    f"{state.current} of {state.rounds} rounds played; only the director may "
                    "finish it early",
                    "",
                )
            return [TournamentFinished(standings(state))]
    raise TypeError(f"not a tournament command: {command!r}")


def _create(state: Tournament, command: CreateTournament, actor: str) -> list[Event]:
    if state.status:
        raise TournamentError(
            "tournament_exists",
            f"tournament {state.tournament_id} exists already",
            "tournament_id",
        )
    if not actor or actor == SERVICE or actor.startswith(BOT):
        raise TournamentError(
            "not_allowed", "a tournament is created by an account (its director)", "actor"
        )
    return [
        TournamentCreated(
            command.tournament_id,
            command.name,
            actor,
            command.rules,
            dict(command.options),
            command.format,
            command.rounds,
            command.table_seats,
            command.fill,
        )
    ]


def _register(state: Tournament, command: Register, actor: str) -> list[Event]:
    if actor != command.player and actor != state.director:
        raise TournamentError(
            "not_allowed", "a player registers itself (or the director enters it)", "player"
        )
    if command.player.startswith(BOT):
        if actor != state.director:
            raise TournamentError("not_director", "only the director enters a bot", "player")
        if command.player == f"{BOT}{fill_bot(state.fill)}":
            raise TournamentError(
                "bad_command",
                f"player {command.player!r} is the bot that fills short tables; allowed: "
                "another bot, or an account",
                "player",
            )
    if state.status == "created":
        raise TournamentError("not_registering", "registration is not open yet", "")
    if state.status != "registering":
        raise _closed(state)
    if state.entrant(command.player) is not None:
        raise TournamentError(
            "already_registered", f"{command.player} is an entrant already", "player"
        )
    if len(state.entrants) >= MAX_ENTRANTS:
        raise TournamentError(
            "tournament_full", f"the tournament has {MAX_ENTRANTS} entrants, its limit", ""
        )
    return [PlayerRegistered(command.player, command.name, command.rating)]


def _withdraw(state: Tournament, command: Withdraw, actor: str) -> list[Event]:
    if actor != command.player and actor != state.director:
        raise TournamentError(
            "not_allowed", "a player withdraws itself (or the director withdraws it)", "player"
        )
    if state.status == "finished":
        raise TournamentError("tournament_finished", "the tournament is over", "")
    entrant = state.entrant(command.player)
    if entrant is None:
        raise TournamentError("not_registered", f"{command.player} is not an entrant", "player")
    if entrant.withdrawn is not None:
        raise TournamentError("already_withdrawn", f"{command.player} withdrew already", "player")
    if state.status == "running" and state.played:
        for table in state.played[-1].tables:
            if command.player in table.seats and not table.over:
                raise TournamentError(
                    "table_in_play",
                    f"{command.player} sits at table {table.table} of round {table.round}, "
                    "still in play; allowed: withdraw once it is over (or resign its game)",
                    "player",
                )
    return [PlayerWithdrew(command.player)]


def _pair(state: Tournament, command: PairRound, actor: str) -> list[Event]:
    _director_or_service(state, actor, "pair a round")
    if state.status == "finished":
        raise TournamentError("tournament_finished", "the tournament is over", "")
    if state.status != "running":
        raise TournamentError("not_running", "registration has not closed yet", "")
    due = state.current + 1
    if command.round <= state.current:
        raise TournamentError("round_paired", f"round {command.round} is paired already", "round")
    if command.round != due or due > state.rounds:
        allowed = f"round {due}" if due <= state.rounds else "none: every round is paired"
        raise TournamentError(
            "round_not_due",
            f"round is {command.round}; the tournament has {state.rounds} rounds; allowed: "
            f"{allowed}",
            "round",
        )
    if not state.round_over():
        raise TournamentError(
            "round_in_play", f"round {state.current} has tables still in play", "round"
        )
    need = minimum_entrants(state)
    if len(state.active()) < need:
        raise TournamentError(
            "too_few_entrants",
            f"{len(state.active())} entrants still play; at least {need} are needed to pair",
            "round",
        )
    seating = pair(state, command.round)
    tables = tuple(
        SeatedTable(i, table_game_id(state.tournament_id, command.round, i), seats)
        for i, seats in enumerate(seating.tables, start=1)
    )
    return [RoundPaired(command.round, tables, seating.byes)]


def _table(state: Tournament, number: int, table: int, game_id: str | None) -> Table:
    found = state.table(number, table)
    if found is None:
        count = len(state.played[number - 1].tables) if 1 <= number <= state.current else 0
        raise TournamentError(
            "no_such_table",
            f"round {number} table {table} does not exist; allowed: a paired round (1 to "
            f"{state.current}) and a table of it (1 to {count})",
            "table" if count else "round",
        )
    if game_id is not None and found.game_id != game_id:
        raise TournamentError(
            "wrong_game",
            f"game_id is {game_id}; round {number} table {table} plays {found.game_id}",
            "game_id",
        )
    return found


def _table_over(table: Table) -> TournamentError:
    where = f"round {table.round} table {table.table}"
    if table.status == "started":
        return TournamentError("table_started", f"{where} has started already", "table")
    if table.status == "finished":
        return TournamentError("table_finished", f"{where} has finished already", "table")
    return TournamentError("table_annulled", f"{where} was annulled", "table")


def _with_standings(state: Tournament, events: list[Event]) -> list[Event]:
    """``events``, then the standings they make when they end a round (or change a round
    that is over), and the final standings again once the tournament is over."""
    after = state
    for event in events:
        after = evolve(after, event)
    counted = after.current if after.round_over() else after.current - 1
    if counted < 1:
        return events
    rows = standings(after)
    events = [*events, StandingsRecorded(counted, rows)]
    if after.status == "finished":
        events.append(TournamentFinished(rows))
    return events


def _finish_table(state: Tournament, command: FinishTable, actor: str) -> list[Event]:
    _director_or_service(state, actor, "record a table's result")
    table = _table(state, command.round, command.table, command.game_id)
    if table.over:
        raise _table_over(table)
    if command.results:
        players = sorted(r.player for r in command.results)
        seats = sorted(r.seat for r in command.results)
        if players != sorted(table.seats) or seats != list(range(len(table.seats))):
            raise TournamentError(
                "results_wrong",
                f"results name {players} at seats {seats}; allowed: one line per seat 0 to "
                f"{len(table.seats) - 1}, for {sorted(table.seats)}",
                "results",
            )
    event = TableFinished(
        command.round, command.table, command.game_id, command.results, command.head
    )
    after = evolve(state, event)
    if after.played[command.round - 1].over and command.round == state.current:
        return _with_standings(state, [event])
    return [event]


def _rule(state: Tournament, command: Rule, actor: str) -> list[Event]:
    _director(state, actor, "record a ruling")
    if state.status != "running" and state.status != "finished":
        raise TournamentError("not_running", "no round has been played yet", "")
    table = _table(state, command.round, command.table, None)
    for ruling in state.rulings:
        same = (ruling.kind, ruling.round, ruling.table) == (
            command.kind,
            command.round,
            command.table,
        )
        if same and (
            command.kind == "annul"
            or (command.kind == "forfeit" and ruling.player == command.player)
            or (
                command.kind == "verdict"
                and (ruling.turn, ruling.verdict) == (command.turn, command.verdict)
            )
        ):
            raise TournamentError(
                "ruling_recorded", f"this {command.kind} ruling is recorded already", "kind"
            )
    if command.kind == "forfeit" and command.player not in table.seats:
        raise TournamentError(
            "not_at_table",
            f"{command.player} does not sit at round {command.round} table {command.table}; "
            f"allowed: one of {list(table.seats)}",
            "player",
        )
    if command.kind == "forfeit" and state.entrant(command.player) is None:
        raise TournamentError(
            "not_registered", f"{command.player} is a bot's seat, not an entrant", "player"
        )
    event = RulingRecorded(
        command.kind,
        command.round,
        command.table,
        command.player,
        command.reason,
        command.turn,
        command.verdict,
    )
    return _with_standings(state, [event])
