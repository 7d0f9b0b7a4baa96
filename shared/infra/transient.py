"""Failures that are Redis's, not the entry's: Redis out of memory (``noeviction`` refuses every
write that adds data), unreachable, loading its data, read-only after a failover, or a cluster
moving slots. Handling the entry again later succeeds; nothing about the entry is wrong.

A consumer counts an entry's failed deliveries to give up on a poison entry (one that fails
every time) after ``max_deliveries``. A delivery that failed for Redis's reasons must not count:
an out-of-memory spell as long as a few deliveries would otherwise dead-letter a turn's timeout
or a round's score sheet that only needed Redis to have room. ``forgive`` puts such a delivery
back (``XCLAIM ... RETRYCOUNT``, which Redis never refuses for memory); the entry stays pending
and is claimed again after ``claim_idle_ms``.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import (
    BusyLoadingError,
    ClusterDownError,
    MasterDownError,
    OutOfMemoryError,
    ReadOnlyError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from shared.infra.client import RedisClient

TRANSIENT: tuple[type[BaseException], ...] = (
    OutOfMemoryError,
    RedisConnectionError,  # the project's WireDown too
    RedisTimeoutError,
    BusyLoadingError,
    ReadOnlyError,
    MasterDownError,
    ClusterDownError,
    TryAgainError,
)


class WritesRefused(Exception):
    """Some writes of a step were refused (each error in ``errors``, in order)."""

    def __init__(self, what: str, errors: list[BaseException]) -> None:
        reasons = "; ".join(sorted({f"{type(e).__name__}: {e}"[:200] for e in errors}))
        super().__init__(f"{what}: {len(errors)} write(s) refused ({reasons})")
        self.errors = errors


def transient(err: BaseException) -> bool:
    """Whether ``err`` says Redis could not do it now (so trying again later will do)."""
    if isinstance(err, WritesRefused):
        return bool(err.errors) and all(transient(e) for e in err.errors)
    return isinstance(err, TRANSIENT)


def refused(what: str, results: list[Any]) -> None:
    """Raise ``WritesRefused`` if any of a pipeline's ``results`` is an error."""
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise WritesRefused(what, errors)


async def forgive(
    client: RedisClient, stream: str, group: str, consumer: str, entry_id: Any
) -> bool:
    """Take back the last delivery of ``entry_id`` (still pending for ``consumer``) from its
    delivery count; whether it was pending there."""
    pending = await client.xpending_range(stream, group, min=entry_id, max=entry_id, count=1)
    if not pending or _text(pending[0]["consumer"]) != consumer:
        return False  # acknowledged meanwhile, or a peer took it over: its count is theirs
    delivered = int(pending[0]["times_delivered"])
    await client.xclaim(
        stream,
        group,
        consumer,
        min_idle_time=0,
        message_ids=[entry_id],
        retrycount=max(delivered - 1, 0),
        justid=True,
    )
    return True


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
