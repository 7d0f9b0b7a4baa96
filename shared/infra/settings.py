"""Settings of every process, read from the environment (one dataclass; the table of them is in
docs/services.md).

A bad value is refused at start-up with a message naming the variable and what it allows.
"""

from __future__ import annotations

import ipaddress
import math
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, fields
from urllib.parse import SplitResult, urlsplit


class SettingsError(ValueError):
    """An environment variable with a value the service cannot use."""


@dataclass(frozen=True)
class Settings:
    """Every setting; the field name upper-cased with ``RUMMY_`` is its variable (but REDIS_URL)."""

    redis_url: str | None = None  # REDIS_URL; unset: the embedded stand-in (rummy serve)
    redis_cluster: bool = False  # talk to a Redis Cluster (REDIS_URL may list several seeds)
    prefix: str = "rr:"  # every key starts with it
    partitions: int = 8  # command stream and feed partitions
    consumer: str = ""  # consumer name in the groups; default host-pid
    http_host: str = "0.0.0.0"
    http_port: int = 0  # 0: the default (gateway 8080, referee 9101, ..., tournaments 9105)
    claim_idle_ms: int = 5000  # a pending command idle this long is claimed from a dead peer
    lease_ms: int = 3000  # a referee's hold on its partitions lasts this long unless renewed
    max_deliveries: int = 5  # deliveries an entry is handled on; the next dead-letters it
    cache_size: int = 10_000  # live game states kept in memory per process
    drain_seconds: float = 10.0  # on SIGTERM, finish in-flight work within this
    batch: int = 64  # stream entries read at once
    log_level: str = "info"
    allow_seeded_games: bool = False  # gateway: accept a fixed seed at creation (tests, demos)
    operator_token: str = ""  # gateway: a token that may export any game at any time
    max_body_bytes: int = 65_536  # gateway: larger requests get 413
    ws_compress: bool = False  # gateway: accept permessage-deflate on WebSockets (browsers ask)
    rate_per_second: float = 50.0  # gateway: commands per token per second (burst 2x)
    command_timeout: float = 10.0  # gateway: seconds to wait for the referee's answer
    # The public edge's bounds: every route that writes or computes is limited per client
    # address (and per token or seat where it has one), in Redis so limits hold across gateways.
    # 0 turns a limit off; per-second limits allow bursts of twice the rate, per-minute ones a
    # minute's worth.
    limit_address_per_second: float = 100.0  # gateway: writes and computations per address
    limit_create_per_minute: float = 30.0  # gateway: games created per client address
    limit_seat_per_minute: float = 60.0  # gateway: seats taken per client address
    limit_hint_per_minute: float = 30.0  # gateway: hints per seat
    limit_replay_per_minute: float = 60.0  # gateway: replays, exports and event pages per address
    limit_sync_per_minute: float = 60.0  # gateway: WebSocket syncs and re-auths per socket
    limit_read_per_second: float = 50.0  # gateway: views and lobby pages per address, per gateway
    refusal_delay: float = 1.0  # gateway: seconds a rate-limited request waits for its 429
    refusals_held: int = 64  # gateway: refusals held at once per address (the rest at once)
    trusted_proxies: str = ""  # gateway: addresses/CIDRs (commas) whose X-Forwarded-For counts
    solver_workers: int = 2  # gateway: worker processes for hints and live replays
    solver_queue: int = 4  # gateway: jobs that may wait for a busy worker before 503 solver_busy
    solver_per_address: int = 1  # gateway: jobs one client address may have worked out at once
    solver_nice: int = 10  # gateway: how much lower the workers' CPU priority is than its own
    sockets_per_address: int = 32  # gateway: WebSockets one client address may hold open
    hint_seconds: float = 2.0  # gateway: wall-clock budget of one hint
    replay_seconds: float = 5.0  # gateway: wall-clock budget of one live replay
    socket_queue: int = 64  # gateway: frames queued for one WebSocket before it is closed
    idempotency_seconds: int = 86_400  # gateway: how long an Idempotency-Key is remembered
    # The archive of finished games (``shared/archive``, ``services/archiver``, docs/archive.md).
    archive_url: str = ""  # postgresql://... or sqlite:///path; empty: none (serve: a file)
    retain_seconds: float = 3600.0  # an archived game stays in Redis this long; -1: for ever
    # The bots service (``rummy bots``): how it paces and bounds the moves of bot seats.
    bot_delay_seconds: float = 1.0  # bots: a human-like pause before each move (0: at once)
    bot_seconds: float = 2.0  # bots: wall-clock budget of one solver bot's move (then greedy's)
    bot_workers: int = 2  # bots: worker processes for the solver bots' moves
    bot_queue: int = 64  # bots: moves that may wait for a busy worker (then greedy's move)
    # The tournament service (``rummy tournaments``, docs/tournaments.md).
    tournament_sweep_seconds: float = 5.0  # tournaments: between two looks for steps not done
    # A game's expiry (rules Decision 18), kept by the referees' timers: a waiting game nobody
    # sits down at, or a game under way nobody (no player, no bot) moves in, is cancelled.
    waiting_expiry_seconds: int = 3600  # referee: a waiting game's time without a new seat
    playing_expiry_seconds: int = 7200  # referee: a game's time under way without a move
    # The process itself (read by ``shared.cli.main`` at start, and by worker processes spawned
    # for the solver at theirs: they inherit the environment).
    event_loop: str = "uvloop"  # networked commands: uvloop (where installed) or asyncio's own
    gc: str = "50000,20,20"  # networked commands: the cyclic collector's thresholds, or default
    solver: str = "auto"  # the compiled solver when built from these sources (auto), or python
    solver_build: str = ""  # the folder of the compiled solver; empty: build/solver/ of the tree

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Read every ``RUMMY_*`` variable (and ``REDIS_URL``); ``overrides`` win."""
        source = os.environ if env is None else env
        values: dict[str, object] = {}
        for f in fields(cls):
            name = "REDIS_URL" if f.name == "redis_url" else f"RUMMY_{f.name.upper()}"
            if name not in source or source[name] == "":
                continue
            raw = source[name]
            kind: type = type(f.default) if f.default is not None else str
            try:
                if kind is bool:
                    if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                        raise ValueError(raw)
                    values[f.name] = raw.lower() in ("1", "true", "yes")
                elif kind is int:
                    values[f.name] = int(raw)
                elif kind is float:
                    values[f.name] = float(raw)
                else:
                    values[f.name] = raw
            except ValueError:
                raise SettingsError(
                    f"{name}={raw!r} is not a valid {kind.__name__}"
                    + ("; allowed: true or false" if kind is bool else "")
                ) from None
        values.update(overrides)
        settings = cls(**values)  # type: ignore[arg-type]
        settings.check()
        return settings

    def check(self) -> None:
        """Refuse values no service could run with."""
        if self.redis_url is not None and "," in self.redis_url:
            if not self.redis_cluster:
                raise SettingsError(
                    "REDIS_URL lists several seed nodes, which only a Redis Cluster takes: "
                    "set RUMMY_REDIS_CLUSTER=true, or give one URL"
                )
            self.redis_seeds()
        if self.partitions < 1 or self.partitions > 1024:
            raise SettingsError("RUMMY_PARTITIONS must be 1-1024")
        if self.lease_ms < 100:
            raise SettingsError("RUMMY_LEASE_MS must be at least 100")
        if self.max_deliveries < 1:
            raise SettingsError("RUMMY_MAX_DELIVERIES must be at least 1")
        if self.drain_seconds <= 0:
            raise SettingsError("RUMMY_DRAIN_SECONDS must be positive")
        if "{" in self.prefix or "}" in self.prefix:
            raise SettingsError("RUMMY_PREFIX may not contain braces")
        if self.waiting_expiry_seconds < 1 or self.playing_expiry_seconds < 1:
            raise SettingsError(
                "RUMMY_WAITING_EXPIRY_SECONDS and RUMMY_PLAYING_EXPIRY_SECONDS must be positive"
            )
        if self.solver_workers < 1 or self.solver_workers > 64:
            raise SettingsError("RUMMY_SOLVER_WORKERS must be 1-64")
        if self.solver_queue < 0 or self.solver_queue > 10_000:
            raise SettingsError("RUMMY_SOLVER_QUEUE must be 0-10000")
        if self.solver_per_address < 1 or self.solver_per_address > 64:
            raise SettingsError("RUMMY_SOLVER_PER_ADDRESS must be 1-64")
        if self.solver_nice < 0 or self.solver_nice > 19:
            raise SettingsError("RUMMY_SOLVER_NICE must be 0-19")
        if self.refusal_delay < 0 or self.refusal_delay > 60:
            raise SettingsError("RUMMY_REFUSAL_DELAY must be 0-60 (seconds)")
        if self.refusals_held < 0:
            raise SettingsError("RUMMY_REFUSALS_HELD must be 0 or more")
        if self.sockets_per_address < 1:
            raise SettingsError("RUMMY_SOCKETS_PER_ADDRESS must be at least 1")
        if self.hint_seconds <= 0 or self.replay_seconds <= 0:
            raise SettingsError("RUMMY_HINT_SECONDS and RUMMY_REPLAY_SECONDS must be positive")
        if not math.isfinite(self.bot_delay_seconds) or not 0 <= self.bot_delay_seconds <= 600:
            raise SettingsError("RUMMY_BOT_DELAY_SECONDS must be 0-600 (seconds)")
        if not math.isfinite(self.bot_seconds) or self.bot_seconds <= 0:
            raise SettingsError("RUMMY_BOT_SECONDS must be positive (seconds)")
        if (
            not math.isfinite(self.tournament_sweep_seconds)
            or not 0.05 <= self.tournament_sweep_seconds <= 3600
        ):
            raise SettingsError("RUMMY_TOURNAMENT_SWEEP_SECONDS must be 0.05-3600 (seconds)")
        if self.bot_workers < 1 or self.bot_workers > 64:
            raise SettingsError("RUMMY_BOT_WORKERS must be 1-64")
        if self.bot_queue < 0 or self.bot_queue > 10_000:
            raise SettingsError("RUMMY_BOT_QUEUE must be 0-10000")
        if self.socket_queue < 1:
            raise SettingsError("RUMMY_SOCKET_QUEUE must be at least 1")
        if self.idempotency_seconds < 1:
            raise SettingsError("RUMMY_IDEMPOTENCY_SECONDS must be at least 1")
        if not math.isfinite(self.retain_seconds) or (
            self.retain_seconds < 0 and self.retain_seconds != -1
        ):
            raise SettingsError(
                "RUMMY_RETAIN_SECONDS must be 0 or more (seconds an archived game stays in "
                "Redis), or -1 (archived games stay in Redis for ever)"
            )
        if self.event_loop not in EVENT_LOOPS:
            raise SettingsError(
                f"RUMMY_EVENT_LOOP is {self.event_loop!r}; allowed: {_or(EVENT_LOOPS)}"
            )
        self.gc_thresholds()
        if self.solver not in SOLVERS:
            raise SettingsError(f"RUMMY_SOLVER is {self.solver!r}; allowed: {_or(SOLVERS)}")
        for name in RATES:
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise SettingsError(f"RUMMY_{name.upper()} must be 0 (off) or a positive number")
        for entry in filter(None, (part.strip() for part in self.trusted_proxies.split(","))):
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise SettingsError(
                    f"RUMMY_TRUSTED_PROXIES: {entry!r} is not an IP address or CIDR"
                    " (comma-separated, e.g. 10.0.0.0/8,192.168.1.7)"
                ) from None

    def gc_thresholds(self) -> tuple[int, int, int] | None:
        """``RUMMY_GC`` as the cyclic collector's three thresholds; None: Python's own."""
        if self.gc == "default":
            return None
        parts = [p.strip() for p in self.gc.split(",")]
        whole = len(parts) == 3 and all(p.isascii() and p.isdigit() for p in parts)
        if not whole or int(parts[0]) == 0:
            raise SettingsError(
                f"RUMMY_GC is {self.gc!r}; allowed: 'default', or three whole numbers "
                "(the collector's thresholds, the first above 0) such as '50000,20,20'"
            )
        return int(parts[0]), int(parts[1]), int(parts[2])

    def redis_seeds(self) -> Seeds:
        """``REDIS_URL`` as a cluster's seed nodes (one URL is one seed)."""
        if self.redis_url is None:
            raise SettingsError("REDIS_URL is not set")
        return parse_seeds(self.redis_url)

    def consumer_name(self) -> str:
        """This process's name in the consumer groups."""
        return self.consumer or f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class Seeds:
    """The nodes a cluster client may first ask for the cluster's map: any one that answers
    will do. ``url``: the first seed's URL, which carries the scheme, credentials and options
    of every connection; ``nodes``: every seed's (host, port), the first one's included."""

    url: str
    nodes: tuple[tuple[str, int], ...]


SEED_SCHEMES = ("redis", "rediss")
SEED_FORMS = "e.g. redis://a:6379,redis://b:6379 or redis://user:pass@a:6379,b:6379"


def parse_seeds(value: str) -> Seeds:
    """A comma-separated list of seed URLs (``redis://a:6379,redis://b:6379``; after the first,
    ``b:6379`` alone will do). Credentials, a database or options belong on the first seed
    only: a later seed's would be ignored, so they are refused."""
    parts = [part.strip() for part in value.split(",")]
    if any(not part for part in parts):
        raise SettingsError(f"REDIS_URL={value!r} has an empty seed; {SEED_FORMS}")
    first = _seed(parts[0], value, first=True)
    nodes = [_address(first, parts[0], value)]
    for part in parts[1:]:
        seed = _seed(part, value, first=False)
        if seed.scheme and seed.scheme != first.scheme:
            raise SettingsError(
                f"REDIS_URL={value!r}: seed {part!r} is {seed.scheme}://, the first is "
                f"{first.scheme}://; every seed of a cluster takes the same scheme"
            )
        if seed.username or seed.password or seed.path.strip("/") or seed.query:
            raise SettingsError(
                f"REDIS_URL={value!r}: seed {part!r} has credentials, a database or options; "
                "give them on the first seed only (they hold for every node)"
            )
        nodes.append(_address(seed, part, value))
    return Seeds(parts[0], tuple(nodes))


def _seed(part: str, value: str, first: bool) -> SplitResult:
    if "://" not in part:
        if first:
            raise SettingsError(
                f"REDIS_URL={value!r}: the first seed {part!r} must be a URL ({SEED_FORMS})"
            )
        part = f"//{part}"
    try:
        seed = urlsplit(part)
    except ValueError as err:
        raise SettingsError(f"REDIS_URL={value!r}: seed {part!r} is not a URL ({err})") from None
    if seed.scheme and seed.scheme not in SEED_SCHEMES:
        raise SettingsError(
            f"REDIS_URL={value!r}: seed {part!r} is {seed.scheme}://; a cluster's seeds are "
            "redis:// or rediss://"
        )
    return seed


def _address(seed: SplitResult, part: str, value: str) -> tuple[str, int]:
    try:
        port = seed.port
    except ValueError:
        port = -1
    if not seed.hostname or port == -1 or port == 0:
        raise SettingsError(
            f"REDIS_URL={value!r}: seed {part!r} needs a host and a port 1-65535 ({SEED_FORMS})"
        )
    return seed.hostname, 6379 if port is None else port


EVENT_LOOPS = {"uvloop": "uvloop where it is installed", "asyncio": "the standard loop"}
SOLVERS = {
    "auto": "the compiled solver when it is built from these sources, else plain Python",
    "python": "always plain Python",
}


def _or(choices: Mapping[str, str]) -> str:
    return " or ".join(f"{name!r} ({meaning})" for name, meaning in choices.items())


RATES = (
    "rate_per_second",
    "limit_address_per_second",
    "limit_create_per_minute",
    "limit_seat_per_minute",
    "limit_hint_per_minute",
    "limit_replay_per_minute",
    "limit_sync_per_minute",
    "limit_read_per_second",
)
"""The gateway's rate limits: each 0 (off) or positive."""

ENV_NAMES = frozenset(
    "REDIS_URL" if f.name == "redis_url" else f"RUMMY_{f.name.upper()}" for f in fields(Settings)
)
