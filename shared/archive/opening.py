"""Which archive a setting names: ``postgresql://...`` (or ``postgres://``) is PostgreSQL,
``sqlite:///abs/path`` (``sqlite://rel/path``) or a plain file path is the embedded SQLite file."""

from __future__ import annotations

from shared.archive.base import Archive


class ArchiveUrlError(ValueError):
    """An archive URL that names no backend this program has."""


def open_archive(url: str) -> Archive:
    """The (not yet opened) archive ``url`` names; :class:`ArchiveUrlError` if it names none."""
    if not isinstance(url, str) or not url.strip():
        raise ArchiveUrlError("the archive URL is empty: postgresql://... or sqlite:///path")
    scheme, sep, rest = url.partition("://")
    if sep and scheme in ("postgresql", "postgres"):
        from shared.archive.postgres import PostgresArchive

        return PostgresArchive(url)
    if sep and scheme == "sqlite":
        path = rest  # sqlite:///var/lib/a.db is /var/lib/a.db, sqlite://a.db is ./a.db
        if not path:
            raise ArchiveUrlError(f"{url!r} names no file: sqlite:///path/to/archive.db")
        from shared.archive.sqlite import SqliteArchive

        return SqliteArchive(path)
    if sep:
        raise ArchiveUrlError(
            f"archive URL scheme {scheme!r} is not known: postgresql://... or sqlite:///path"
        )
    from shared.archive.sqlite import SqliteArchive

    return SqliteArchive(url)
