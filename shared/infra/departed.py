"""Departed consumers: a dead process's name removed from the consumer groups it read in.

Why: every process start is a new consumer (``<host>-<pid>``), and Redis keeps a consumer in
its group until told otherwise: after a few weeks of restarts and scaling, every group lists
hundreds of the dead (``XINFO CONSUMERS``, and every ``XPENDING`` summary, grow with them).

How: a consumer that is not alive (``alive(name)`` says no: not a live member, holding no lease)
is deleted from a stream's group (``XGROUP DELCONSUMER``) only once nothing is pending for it:
its pending entries are claimed first by the survivors (``shared/infra/consumer.py``'s claim).
The check and the deletion are one script, so an entry read between them cannot be dropped
with the consumer; a consumer deleted while in fact alive (a heartbeat refused by a full Redis)
loses nothing and is made again by its next read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from shared.infra.client import RedisClient

# KEYS[1]: the stream; ARGV[1]: the group, ARGV[2]: the consumer. Deletes the consumer only if
# nothing is pending for it; 1 if deleted.
FORGET = """
if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then return 0 end
return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2]) >= 0 and 1 or 0
"""


class Departed:
    """Forgets the departed consumers of one group."""

    def __init__(self, client: RedisClient, group: str) -> None:
        self.client = client
        self.group = group
        self._forget = client.register_script(FORGET)

    async def forget(self, streams: Iterable[str], alive: Callable[[str], bool]) -> list[str]:
        """Delete from the group, on every stream, each consumer not ``alive`` with nothing
        pending; the names deleted (``stream consumer``)."""
        gone: list[str] = []
        for stream in streams:
            try:
                consumers = await self.client.xinfo_consumers(stream, self.group)
            except Exception as err:  # no such stream or group (yet): nobody to forget
                if "NOGROUP" in str(err) or "no such key" in str(err).lower():
                    continue
                raise
            for consumer in consumers:
                name = _text(consumer["name"])
                if alive(name) or int(consumer.get("pending") or 0) > 0:
                    continue
                if await self._forget(keys=[stream], args=[self.group, name]):
                    gone.append(f"{stream} {name}")
        return gone


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
