"""Fixtures of the fault tests: a deployment of real processes on a redis-server of the test's
own, everything stopped at the end (whatever the test did to it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.faults.harness import Deployment
from tests.servers import RedisServer

MakeDeployment = Callable[..., Deployment]


@pytest.fixture
def make_deployment(tmp_path: Path) -> Iterator[MakeDeployment]:
    """``make_deployment(aof=False, fsync="always", **settings)``: a started redis-server and an
    empty deployment on it (start its processes with ``.start``)."""
    made: list[Deployment] = []

    def make(aof: bool = False, fsync: str = "always", **settings: str) -> Deployment:
        server = RedisServer(tmp_path / f"redis{len(made)}", aof=aof, fsync=fsync)
        deployment = Deployment(server, tmp_path, settings)
        made.append(deployment)
        server.start()
        return deployment

    try:
        yield make
    finally:
        for deployment in made:
            deployment.close()
            deployment.redis.close()
