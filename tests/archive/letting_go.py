"""Running an archiver in a test until what it should let go of has left Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from services.archiver.archiver import Archiver
from shared.archive.base import Archive
from shared.infra.keys import Keys
from shared.infra.settings import Settings
from tests.servers import until

GONE_WAIT = 20.0  # a safety net: a game never let go fails the test, nothing is timed


async def archive_until(
    redis: Any,
    settings: Settings,
    archive: Archive,
    gone: Callable[[], Awaitable[bool]],
    sweep_seconds: float | None = None,
    wait: float = GONE_WAIT,
) -> Archiver:
    """Run an archiver (passes every 50 ms; its sweeps every ``sweep_seconds`` if given) until
    ``gone`` says so; the archiver, stopped, for its metrics."""
    archiver = Archiver(redis, settings, archive)
    archiver.pass_seconds = 0.05
    if sweep_seconds is not None:
        archiver.sweep_seconds = sweep_seconds
    running = asyncio.create_task(archiver.run())
    try:
        await until(gone, wait, every=0.05)
    finally:
        archiver.stop()
        await running
    return archiver


async def archive_games(
    redis: Any, settings: Settings, archive: Archive, game_ids: Iterable[str]
) -> Archiver:
    """Run an archiver until every game of ``game_ids`` (finished) has its log and head out of
    Redis."""
    keys = Keys(settings.prefix)
    held = [key for game_id in game_ids for key in (keys.events(game_id), keys.head(game_id))]

    async def gone() -> bool:
        return not await redis.exists(*held)

    return await archive_until(redis, settings, archive, gone)
