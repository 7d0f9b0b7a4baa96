"""Every Redis key the services use, in one place.

All keys of one game share the hash tag ``{<game_id>}``, so a script or transaction over them runs
on one Redis Cluster slot; no command needs keys of two games. Keys that are not about one game
(the games index; later the command stream partitions, the feed, dead letters, timers) are single
keys of their own, each with its own method here, so they can be spread over the cluster by
partition.

Every key starts with a prefix (default ``rr:``) so that several deployments or test runs can share
one Redis without touching each other's keys. The prefix and game ids may not contain ``{`` or
``}``: Redis hashes the first ``{...}`` of a key, which must be the game's tag.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PREFIX = "rr:"
MAX_GAME_ID = 128


def check_game_id(game_id: str) -> str:
    """``game_id`` if it can be a game's hash tag, else ``ValueError`` quoting it."""
    if (
        not isinstance(game_id, str)
        or not game_id
        or len(game_id) > MAX_GAME_ID
        or not game_id.isprintable()
        or "{" in game_id
        or "}" in game_id
        or " " in game_id
    ):
        raise ValueError(
            f"a game id is 1-{MAX_GAME_ID} printable characters without spaces or braces, "
            f"got {game_id!r}"
        )
    return game_id


def awaiting_member(game_id: str, round_number: int) -> str:
    """The member of the awaiting-scores set for round ``round_number`` of a game."""
    return f"{game_id}|{round_number}"


def _untagged(part: str) -> str:
    """``part`` if it cannot move the key's hash slot (no braces), else ``ValueError``."""
    if not part or "{" in part or "}" in part:
        raise ValueError(f"a key part may not be empty or contain braces, got {part!r}")
    return part


@dataclass(frozen=True, slots=True)
class Keys:
    """The key templates under one prefix."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, str) or "{" in self.prefix or "}" in self.prefix:
            raise ValueError(f"a key prefix may not contain braces, got {self.prefix!r}")

    def game(self, game_id: str, what: str) -> str:
        """``{prefix}game:{<game_id>}:<what>``: a key of one game, tagged with its id."""
        return f"{self.prefix}game:{{{check_game_id(game_id)}}}:{what}"

    def events(self, game_id: str) -> str:
        """The game's event stream: one entry per event, ID ``<version>-0``, never trimmed."""
        return self.game(game_id, "events")

    def head(self, game_id: str) -> str:
        """Hash of the game's chain head: fields ``version`` and ``hash``."""
        return self.game(game_id, "head")

    def commands(self, game_id: str) -> str:
        """Hash of the command ids the game has applied -> the outcome of their append."""
        return self.game(game_id, "commands")

    def game_keys(self, game_id: str) -> tuple[str, ...]:
        """Every key of one game (for the append script, and to delete a game)."""
        return (self.events(game_id), self.head(game_id), self.commands(game_id))

    def games(self) -> str:
        """Set of the ids of every game that was ever appended to (a single cross-game key)."""
        return f"{self.prefix}games"

    # --- keys of one game beyond its log ---------------------------------------------------

    def seed(self, game_id: str) -> str:
        """The game's secret seed (hex), kept out of the log until it is revealed."""
        return self.game(game_id, "seed")

    def tokens(self, game_id: str) -> str:
        """Hash of sha256(token) -> role ("host" or the seat number)."""
        return self.game(game_id, "tokens")

    def standings(self, game_id: str) -> str:
        """The scoring projection of one game: fields ``version`` and ``standings`` (JSON)."""
        return self.game(game_id, "standings")

    # --- cross-game keys: single keys, spread over the cluster by partition ------------------

    def command_stream(self, partition: int) -> str:
        """Commands for the referees, one stream per partition."""
        return f"{self.prefix}commands:{partition}"

    def feed(self, partition: int) -> str:
        """News of appended events, one stream per partition (trimmed)."""
        return f"{self.prefix}feed:{partition}"

    def timers(self, partition: int) -> str:
        """Turn deadlines of the partition's games: sorted set ``game|turn`` -> deadline."""
        return f"{self.prefix}timers:{partition}"

    def lease(self, partition: int) -> str:
        """Which referee reads the partition's commands (its name, with a time to live)."""
        return f"{self.prefix}lease:{partition}"

    def referees(self) -> str:
        """Live referees: sorted set name -> last heartbeat (unix seconds)."""
        return f"{self.prefix}referees"

    def scorers(self) -> str:
        """Live scoring processes: sorted set name -> last heartbeat (unix seconds)."""
        return f"{self.prefix}scorers"

    # --- the bots service's keys: its own leases, members and moves due, by partition --------

    def bot_lease(self, partition: int) -> str:
        """Which ``rummy bots`` process plays the bot seats of the partition's games."""
        return f"{self.prefix}bots:lease:{partition}"

    def bot_players(self) -> str:
        """Live ``rummy bots`` processes: sorted set name -> last heartbeat (unix seconds)."""
        return f"{self.prefix}bots:members"

    def bot_moves(self, partition: int) -> str:
        """The partition's games whose bot seat is to move: sorted set game -> when (Redis's
        unix seconds); the durable side of the bots' pacing, so a move survives a restart."""
        return f"{self.prefix}bots:moves:{partition}"

    def replies(self, sender: str) -> str:
        """The reply stream one sender (a gateway process) reads its answers from."""
        return f"{self.prefix}replies:{sender}"

    def archivers(self) -> str:
        """Live archivers: sorted set name -> last heartbeat (unix seconds)."""
        return f"{self.prefix}archivers"

    def archive_due(self) -> str:
        """Sorted set of finished games waiting to be archived -> when to try (unix seconds)."""
        return f"{self.prefix}archive:due"

    def archive_kept(self) -> str:
        """Sorted set of archived games still held in Redis -> when their archive row was read
        back (unix seconds): each leaves Redis ``RUMMY_RETAIN_SECONDS`` after that."""
        return f"{self.prefix}archive:kept"

    def dead_letters(self) -> str:
        """Commands that could not be handled, with the reason."""
        return f"{self.prefix}deadletters"

    def awaiting_scores(self) -> str:
        """Set of ended rounds (``awaiting_member``) still waiting for their score sheet or the
        next deal: the referee adds one when it appends ``RoundEnded``, scoring removes it once
        the round is scored and carried on, and sweeps the set so no round end is missed."""
        return f"{self.prefix}awaiting-scores"

    def lobby(self, status: str) -> str:
        """Sorted set of game ids by creation time, one per lobby status."""
        return f"{self.prefix}lobby:{status}"

    # --- tournaments: their logs under a prefix of their own, never listed as games ----------

    def tournament_logs(self) -> str:
        """The key prefix of the tournaments' event store: a tournament's log keys are a game's
        (``{prefix}tour:game:{<tournament_id>}:events`` ...), tagged with its id, and its index
        of ids is ``{prefix}tour:games``, apart from the games' own."""
        return f"{self.prefix}tour:"

    def tournament_commands(self) -> str:
        """The stream of commands for the tournament service (one stream: tournaments are few
        and their commands small)."""
        return f"{self.prefix}tournaments:commands"

    def tournaments(self, status: str) -> str:
        """Sorted set of tournament ids by creation time, one per status (the listing)."""
        return f"{self.prefix}tournaments:{_untagged(status)}"

    def tournament_summaries(self) -> str:
        """Hash tournament id -> its listing's row (JSON), written with each listing, so a
        page of the listing reads rows instead of folding logs."""
        return f"{self.prefix}tournaments:summaries"

    def tournament_tables(self) -> str:
        """Hash game id -> ``<tournament>|<round>|<table>``: which table a game is the game of,
        so the service knows a finished game as a table's."""
        return f"{self.prefix}tournaments:tables"

    def tournament_services(self) -> str:
        """Live ``rummy tournaments`` processes: sorted set name -> last heartbeat."""
        return f"{self.prefix}tournaments:members"

    # --- the public edge's bounds: single keys, each on a slot of its own ---------------------

    def limit(self, name: str, subject: str) -> str:
        """One rate-limit bucket: limit ``name`` for ``subject`` (an address, a token's hash, a
        seat, a socket). One key per bucket, without a hash tag: buckets spread over a cluster."""
        return f"{self.prefix}limit:{name}:{_untagged(subject)}"

    def idempotency(self, scope: str, digest: str) -> str:
        """What an ``Idempotency-Key`` of a game creation is bound to (``digest``: a hash of the
        key and its scope, never the key itself)."""
        return f"{self.prefix}idem:{scope}:{_untagged(digest)}"

    def seat_idempotency(self, game_id: str, digest: str) -> str:
        """What an ``Idempotency-Key`` of a sit in ``game_id`` is bound to (on the game's slot)."""
        return self.game(game_id, f"idem:{_untagged(digest)}")
