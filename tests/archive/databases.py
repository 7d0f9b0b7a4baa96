"""PostgreSQL databases for the tests: each one created for a test (or a run) and dropped after.

``RUMMY_TEST_POSTGRES_URL`` names the server (a URL whose database the tests may connect to, to
create and drop their own); ``.ci/run`` exports it when 127.0.0.1:5432 answers, so CI never skips
the PostgreSQL tests. Without it the tests try that address themselves and skip only when no
PostgreSQL answers. A set URL that does not answer fails the tests instead: CI asked for them.
Databases are named ``RUMMY_TEST_DB_PREFIX`` (default ``rummy_test_``) + a random suffix, and
the tests never touch any other.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def server_url() -> str | None:
    """The URL of the PostgreSQL the tests use, or None (and a reason to skip) if none answers."""
    url = os.environ.get("RUMMY_TEST_POSTGRES_URL")
    if url:
        return url
    try:
        with psycopg.connect(DEFAULT_URL, connect_timeout=2):
            return DEFAULT_URL
    except psycopg.Error:
        return None


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    query = url.partition("?")[2]
    return f"{base}/{name}" + (f"?{query}" if query else "")


@contextmanager
def fresh_database(tag: str = "db") -> Iterator[str]:
    """A new empty database for the block (its URL), dropped after even if the block fails."""
    url = server_url()
    if url is None:
        pytest.skip("no PostgreSQL answers at 127.0.0.1:5432 (set RUMMY_TEST_POSTGRES_URL)")
    prefix = os.environ.get("RUMMY_TEST_DB_PREFIX", "rummy_test_")
    name = f"{prefix}{tag}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def terminate_connections(url: str) -> int:
    """Cut every connection to ``url``'s database but this one (the database "going away", as
    in a restart): how many were cut. Only ever the tests' own database."""
    name = url.rpartition("/")[2].partition("?")[0]
    admin_url = _with_database(url, "postgres")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return sum(1 for (cut,) in rows if cut)
