"""The archive of finished games: each stored as its verified record, for ever (a longer log of
the same history replaces it; another history never does).

Redis holds the live games; a finished game moves here (``services/archiver``) and whatever
reads a finished game falls back to it once Redis has let the game go. See ``docs/archive.md``.
"""

from shared.archive.base import (
    Archive,
    ArchiveConflict,
    ArchiveError,
    Entry,
    Page,
    Query,
    QueryError,
    entry_of,
)
from shared.archive.opening import ArchiveUrlError, open_archive

__all__ = [
    "Archive",
    "ArchiveConflict",
    "ArchiveError",
    "ArchiveUrlError",
    "Entry",
    "Page",
    "Query",
    "QueryError",
    "entry_of",
    "open_archive",
]
