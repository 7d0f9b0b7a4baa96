"""A game's log as the services use it: domain events in and out of the event store, and a
bounded cache of live game states (rebuilt from the stream on a miss, topped up on a conflict).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from shared.core.events import Event, event_from, to_data
from shared.core.evolve import evolve
from shared.core.state import GameState
from shared.infra import codec
from shared.infra.protocol import Change, News
from shared.infra.store.base import AppendResult, EventStore
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent


def to_new(event: Event, actor: str | None) -> NewEvent:
    """A domain event as the store takes it."""
    return NewEvent(event.TYPE, to_data(event), event.SCHEMA, actor)


def to_domain(stored: StoredEvent) -> Event:
    """A stored (and upcast) event as the engine folds it."""
    return event_from(stored.type, stored.data)


@dataclass(frozen=True, slots=True)
class Loaded:
    """A game state together with the hash of the event it stands at."""

    state: GameState
    head: str

    @property
    def version(self) -> int:
        return self.state.version


def change_of(before: Loaded, result: AppendResult) -> Change:
    """What an append changed, as the feed's news tells it (see :class:`Change`)."""
    schemas = tuple(e.schema for e in result.events)
    return Change(before.head, result.head, schemas, result.packed_data)


def fold_stored(events: Sequence[StoredEvent], start: Loaded | None = None) -> Loaded:
    """Fold stored events onto ``start`` (a fresh game by default)."""
    state = start.state if start else GameState()
    head = start.head if start else GENESIS_HASH
    for stored in events:
        if stored.version != state.version + 1:
            raise ValueError(f"event {stored.version} does not follow version {state.version}")
        state = evolve(state, to_domain(stored))
        head = stored.hash
    return Loaded(state, head)


class GameLog:
    """Loads, caches and appends to games of one store.

    With ``trust_news`` (seconds), a reader that follows the feed (the gateway) tells the log
    of every version it hears of (``note``); a fresh load then skips the store while the cached
    state is at least that new and was checked less than ``trust_news`` seconds ago. Every
    append is announced on the feed, so this only saves reads of nothing new.
    """

    def __init__(
        self, store: EventStore, cache_size: int = 10_000, trust_news: float | None = None
    ) -> None:
        self.store = store
        self.cache_size = cache_size
        self.trust_news = trust_news
        self._cache: OrderedDict[str, Loaded] = OrderedDict()
        self._heard: dict[str, int] = {}  # newest version heard of, per game
        self._checked: dict[str, float] = {}  # when the store was last read, per game

    def note(self, game_id: str, version: int) -> None:
        """A version of ``game_id`` exists (heard on the feed, or in a command's answer)."""
        if version > self._heard.get(game_id, 0):
            self._heard[game_id] = version

    async def load(self, game_id: str, fresh: bool = False) -> Loaded:
        """The game's state: the cached one (topped up from the store when ``fresh``)."""
        cached = self._cache.get(game_id)
        if cached is not None and (not fresh or self._up_to_date(game_id, cached)):
            self._cache.move_to_end(game_id)
            return cached
        after = cached.version if cached else 0
        loaded = fold_stored(await self.store.read(game_id, after=after), cached)
        self.remember(game_id, loaded)
        if self.trust_news is not None:
            self._checked[game_id] = time.monotonic()
            self.note(game_id, loaded.version)
        return loaded

    def _up_to_date(self, game_id: str, cached: Loaded) -> bool:
        if self.trust_news is None:
            return False
        checked = self._checked.get(game_id)
        return (
            checked is not None
            and time.monotonic() - checked < self.trust_news
            and cached.version >= self._heard.get(game_id, 0)
        )

    def extend(self, game_id: str, events: Sequence[StoredEvent]) -> bool:
        """Fold news of ``game_id`` (its new events, as the feed carried them) onto the cached
        state when they follow it, so the next fresh load needs no read of the store. Events
        the cache already holds are skipped; a gap (or no cached state) changes nothing and
        the next load reads the store. Whether the cache is now at the newest event given."""
        cached = self._cache.get(game_id)
        if cached is None or not events:
            return False
        fresh = [e for e in events if e.version > cached.version]
        if not fresh:
            return True
        first = fresh[0]
        if first.version != cached.version + 1 or first.prev_hash != cached.head:
            return False  # a gap, or not our chain: the store decides
        if any(e.game_id != game_id for e in fresh):
            return False
        try:
            loaded = fold_stored(fresh, cached)
        except Exception:  # not contiguous, or not foldable: drop the cache, read the store
            self.forget(game_id)
            return False
        self.remember(game_id, loaded)
        if self.trust_news is not None:
            self._checked[game_id] = time.monotonic()
            self.note(game_id, loaded.version)
        return True

    def take_news(self, news: News) -> bool:
        """Fold what ``news`` says changed onto the cached state of its game when it follows it
        (as :meth:`extend` does; from its :class:`Change` or, sent by an older appender, its
        records). Whether the cache now stands at the news' version."""
        change = news.change
        if change is None:
            events = [codec.decode(r, self.store.upcasters) for r in news.records]
            return self.extend(news.game, events)
        cached = self._cache.get(news.game)
        if cached is None:
            return False
        if cached.version >= news.version:
            return True
        upcasters = self.store.upcasters
        if (
            cached.version != news.version - len(news.types)
            or cached.head != change.prev
            or any(
                upcasters.current_schema(kind, schema) != schema
                for kind, schema in zip(news.types, change.schemas, strict=True)
            )
        ):
            return False  # a gap, another chain, or data to upcast: the store decides
        state = cached.state
        try:
            for kind, data in zip(news.types, change.data, strict=True):
                state = evolve(state, event_from(kind, codec.unpack_data(data)))
        except Exception:  # not foldable: drop the cache, read the store
            self.forget(news.game)
            return False
        if state.version != news.version:
            self.forget(news.game)
            return False
        self.remember(news.game, Loaded(state, change.head))
        if self.trust_news is not None:
            self._checked[news.game] = time.monotonic()
            self.note(news.game, news.version)
        return True

    def remember(self, game_id: str, loaded: Loaded) -> None:
        """Keep ``loaded`` as the game's latest state, evicting the least recently used."""
        if loaded.version == 0:
            return
        self._cache[game_id] = loaded
        self._cache.move_to_end(game_id)
        while len(self._cache) > self.cache_size:
            evicted, _ = self._cache.popitem(last=False)
            self._heard.pop(evicted, None)
            self._checked.pop(evicted, None)

    def cached(self, game_id: str) -> bool:
        """Whether a state of ``game_id`` is in the cache."""
        return game_id in self._cache

    def cached_version(self, game_id: str) -> int:
        """The version of the cached state of ``game_id`` (0 when none is cached)."""
        cached = self._cache.get(game_id)
        return cached.version if cached is not None else 0

    def forget(self, game_id: str) -> None:
        """Drop a game from the cache (its next load rebuilds it)."""
        self._cache.pop(game_id, None)

    def clear(self) -> int:
        """Drop every game from the cache; how many there were."""
        count = len(self._cache)
        self._cache.clear()
        self._heard.clear()
        self._checked.clear()
        return count

    async def append(
        self,
        game_id: str,
        loaded: Loaded,
        events: Sequence[Event],
        actor: str | None,
        command_id: str | None,
        fingerprint: str | None,
        now: float,
        salt_key: bytes | None = None,
    ) -> tuple[AppendResult, Loaded]:
        """Append the decided events after ``loaded``, salted by ``salt_key`` (the game's seed)
        when given; raises ``VersionConflict`` when another writer got there first. A duplicate
        command id returns the original outcome."""
        result = await self.store.append(
            game_id,
            [to_new(e, actor) for e in events],
            expected_version=loaded.version,
            command_id=command_id,
            fingerprint=fingerprint,
            time=now,
            expected_head=loaded.head,
            salt_key=salt_key,
        )
        if result.duplicate:
            return result, await self.load(game_id, fresh=True)
        # Evolve from the events as decided: the same state as folding them back from their
        # stored form (``to_data`` and ``event_from`` are inverses), without rebuilding them.
        state = loaded.state
        for event in events:
            state = evolve(state, event)
        if state.version != result.last_version:  # never expected: trust the store's form
            after = fold_stored(result.events, loaded)
        else:
            after = Loaded(state, result.head)
        self.remember(game_id, after)
        return result, after
