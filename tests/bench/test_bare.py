"""The bare pipelines run end to end with tiny parameters: each message is answered, and the
turn-shaped one makes the messages a turn of the stack makes (its Redis writes and the frames
on both seats' sockets). Their figures are not checked: they are the machine's."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bench.bare import measure
from tests.servers import RedisServer

pytestmark = pytest.mark.slow


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("the bench runs a private redis-server")
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield f"redis://127.0.0.1:{server.port}/0"
    finally:
        server.stop()


def test_the_bare_pipeline_answers_every_message(redis_url: str) -> None:
    figures = measure(redis_url, 4, 1.0, None)
    assert figures["per_second"] > 0 and figures["mode"] == "closed"
    assert len(figures["cpu_ms"]) == 3  # front, worker, clients (no Redis pid given)
    # A message: its XADD, the answer's XADD, its XACK, and a share of the batched reads.
    assert 3 <= figures["redis_per_turn"]["commands"] < 6, figures


def test_the_turn_shaped_pipeline_appends_announces_and_answers(redis_url: str) -> None:
    figures = measure(redis_url, 3, 1.0, None, shape="turn")
    assert figures["per_second"] > 0
    # A turn: the command's XADD, the log's, the feed's, the answer's, the XACK, and reads.
    # (At three games the reads are rarely shared: one XREADGROUP and two XREADs a turn.)
    assert 5 <= figures["redis_per_turn"]["commands"] < 10, figures
    # Two frames of a view's weight go out of Redis a turn (the feed entry and the answer).
    assert figures["redis_per_turn"]["bytes_out"] > 2_000, figures
