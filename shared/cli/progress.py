"""The long commands' progress bars (``rummy simulate``, ``loadtest``, ``audit --all``,
``rebuild``): how far, how fast and how long is left (an ETA), drawn by tqdm on stderr, so the
command's own output on stdout stays clean to pipe.

A bar is drawn only when its stream is a terminal: in a pipe, a log file or CI it writes nothing
at all (not even the carriage returns a bar redraws with). The stream is a parameter, so a test
gives it a pseudo-terminal or a stream that says it is one.
"""

from __future__ import annotations

import sys
from typing import IO, Any

from tqdm import tqdm

REDRAW_SECONDS = 0.25  # at most four redraws a second: a bar must not cost the run it measures


def terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal someone watches."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


def bar(
    total: float | None,
    what: str,
    unit: str = "it",
    stream: IO[str] | None = None,
    quiet: bool = False,
    **shown: Any,
) -> tqdm[Any]:
    """A bar counting ``unit``s of ``what`` up to ``total`` (None: no end known, no ETA) on
    ``stream`` (stderr by default), silent unless that is a terminal (or always, ``quiet``: a
    run too short to need one); ``shown``: tqdm's own keywords (``bar_format``...). Use it as a
    context manager, or close it; print through its ``write`` while it is drawn."""
    out = sys.stderr if stream is None else stream
    return tqdm(
        total=total,
        desc=what,
        unit=unit,
        file=out,
        disable=quiet or not terminal(out),
        dynamic_ncols=True,
        mininterval=REDRAW_SECONDS,
        leave=True,
        **shown,
    )
