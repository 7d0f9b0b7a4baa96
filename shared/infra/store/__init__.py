"""Event stores: one interface (:mod:`.base`), an in-memory and a Redis implementation."""

from shared.infra.store.base import (
    AppendResult,
    EventStore,
    HeadMismatch,
    StoreError,
    VersionConflict,
)
from shared.infra.store.memory import MemoryEventStore
from shared.infra.store.redis import RedisEventStore

__all__ = [
    "AppendResult",
    "EventStore",
    "HeadMismatch",
    "MemoryEventStore",
    "RedisEventStore",
    "StoreError",
    "VersionConflict",
]
