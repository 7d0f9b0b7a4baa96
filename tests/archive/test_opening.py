"""Which backend an archive URL names."""

from __future__ import annotations

import pytest

from shared.archive.opening import ArchiveUrlError, open_archive
from shared.archive.postgres import PostgresArchive
from shared.archive.sqlite import SqliteArchive


def test_urls_name_their_backend() -> None:
    pg = open_archive("postgresql://u@db:5432/rummy")
    assert isinstance(pg, PostgresArchive) and pg.url == "postgresql://u@db:5432/rummy"
    assert isinstance(open_archive("postgres://db/rummy"), PostgresArchive)
    absolute = open_archive("sqlite:///var/lib/rummy/archive.db")
    assert isinstance(absolute, SqliteArchive) and absolute.path == "/var/lib/rummy/archive.db"
    relative = open_archive("sqlite://data/archive.db")
    assert isinstance(relative, SqliteArchive) and relative.path == "data/archive.db"
    plain = open_archive("archive.db")
    assert isinstance(plain, SqliteArchive) and plain.path == "archive.db"


@pytest.mark.parametrize(
    ("url", "why"),
    [("", "empty"), ("mysql://db/x", "scheme 'mysql'"), ("sqlite://", "names no file")],
)
def test_a_url_of_no_backend_is_refused(url: str, why: str) -> None:
    with pytest.raises(ArchiveUrlError, match=why):
        open_archive(url)
