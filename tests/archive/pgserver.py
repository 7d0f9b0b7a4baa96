"""A PostgreSQL server of one test: its own cluster (``initdb``) in a temporary directory, on a
spare port, that the test may crash and start again (a real restart, which cutting the
connections of the machine's server only imitates). Never the machine's server on 5432.

PostgreSQL refuses to run as root: as root, its programs run as the ``postgres`` user, which
owns the directory. Without its programs the test is skipped (``.ci/run`` has them: the machine
kind's PostgreSQL package).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

import psycopg
import pytest

from tests.ports import spare_port
from tests.servers import wait_until


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


class PostgresServer:
    """One test's PostgreSQL: ``start``, ``crash`` (``pg_ctl stop -m immediate``: no clean
    shutdown, as a killed server), ``stop``; as a context manager it always stops."""

    def __init__(self) -> None:
        initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            pytest.skip("no PostgreSQL programs (initdb, pg_ctl) on this machine")
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.root = Path(tempfile.mkdtemp(prefix="rummy-pg-"))
        self.data = self.root / "data"
        self.port = spare_port()
        self.user: str | None = None
        if os.geteuid() == 0:
            self.user = "postgres"
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run(self.initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        command = list(args)
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = self.root / "server.log"
        self._run(self.pg_ctl, "-D", str(self.data), "-o", options, "-l", str(log), "-w", "start")
        wait_until(self.answers, 30, message="the test's PostgreSQL answers")

    def answers(self) -> bool:
        try:
            with psycopg.connect(self.url, connect_timeout=2):
                return True
        except psycopg.Error:
            return False

    def crash(self) -> None:
        """Stop at once, as a killed server (started again, it recovers from its WAL)."""
        self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop")

    def __enter__(self) -> PostgresServer:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
