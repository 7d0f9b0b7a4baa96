"""The real-Redis connection (shared/infra/connection.py): commands packed in C say exactly what
redis-py's own packer says, and a client from ``connect`` works end to end (on the real Redis at
REDIS_URL, under a key prefix of this run)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from redis.asyncio.connection import Connection
from redis.exceptions import DataError

from shared.infra.connection import PackedConnection, connect
from shared.infra.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "args",
    [
        ("SET", "key", "value"),
        ("XADD", b"stream", "MAXLEN", "~", 10_000, "*", b"c", b'{"a":1}'),
        ("EVALSHA", "f" * 40, 3, "k1", "k2", "k3", 0, "", "caf\u00e9", b"\x00\xff" * 300),
        ("CONFIG GET", "maxmemory"),
        (b"CLIENT SETNAME", b"x"),
        ("SET", "n", 1.5),
        ("SET", "big", b"x" * 100_000),
    ],
)
def test_packed_commands_match_redis_py(args: tuple[object, ...]) -> None:
    ours = b"".join(PackedConnection().pack_command(*args))
    theirs = b"".join(bytes(part) for part in Connection().pack_command(*args))
    assert ours == theirs


def test_an_unpackable_argument_is_a_data_error() -> None:
    with pytest.raises(DataError):
        PackedConnection().pack_command("SET", "key", object())


async def test_a_connected_client_round_trips() -> None:
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL is not set: no real Redis to test against")
    client = connect(Settings(redis_url=url))
    key = f"test-connection-{uuid.uuid4().hex}"
    try:
        assert client.connection_pool.connection_class is PackedConnection
        await client.set(key, "caf\u00e9")
        assert await client.get(key) == "caf\u00e9".encode()
        pipe = client.pipeline(transaction=False)
        pipe.incr(f"{key}:n").incr(f"{key}:n").get(f"{key}:n")
        assert await pipe.execute() == [1, 2, b"2"]
    finally:
        await client.delete(key, f"{key}:n")
        await client.aclose()


# A process of a real Redis: the services' modules loaded, a client built from REDIS_URL (the
# single and the cluster client; neither connects yet) and handed to each service.
REAL_REDIS_PROCESS = """
import sys
import services.gateway.main, services.referee.main, services.scoring.main, services.main
from services.gateway.app import make_app
from services.referee.referee import Referee
from services.scoring.scoring import Scoring
from shared.infra.connection import connect
from shared.infra.settings import Settings

for cluster in ("0", "1"):
    settings = Settings.from_env(dict(REDIS_URL=sys.argv[1], RUMMY_REDIS_CLUSTER=cluster))
    client = connect(settings)
    make_app(client, settings), Referee(client, settings), Scoring(client, settings)
print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] in ("fakeredis", "lupa"))))
"""


@pytest.mark.parametrize(
    ("url", "loads_the_stand_in"), [("redis://127.0.0.1:9/0", False), ("", True)]
)
def test_only_the_embedded_stand_in_imports_fakeredis(url: str, loads_the_stand_in: bool) -> None:
    """A service of a real Redis never loads fakeredis; without REDIS_URL it is loaded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REDIS_", "RUMMY_"))}
    done = subprocess.run(
        [sys.executable, "-c", REAL_REDIS_PROCESS, url],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert ("fakeredis" in loaded) is loads_the_stand_in, loaded
