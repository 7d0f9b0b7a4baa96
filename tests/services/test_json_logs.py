"""Every log line is one JSON object: structlog's events and the standard library's records
(aiohttp, asyncio, any library) go through the same renderer, a traceback inside its line."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from shared.infra.observability import json_handler

ROOT = Path(__file__).resolve().parents[2]


def lines_of(text: str) -> list[dict[str, Any]]:
    """Every line as a JSON object (an assertion names the first that is not)."""
    docs = []
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}\nin:\n{text}") from None
        assert isinstance(doc, dict), line
        docs.append(doc)
    return docs


def test_a_library_record_with_a_traceback_is_one_json_line() -> None:
    stream = io.StringIO()
    logger = logging.getLogger("tests.json_logs.library")
    logger.propagate = False
    logger.addHandler(json_handler(stream))
    try:
        try:
            raise KeyError("missing")
        except KeyError:
            logger.exception("Error handling request from %s", "127.0.0.1")
        logger.warning("two\nlines of text")
    finally:
        logger.handlers.clear()
    failed, warned = lines_of(stream.getvalue())
    assert failed["event"] == "Error handling request from 127.0.0.1"
    assert failed["level"] == "error" and failed["logger"] == "tests.json_logs.library"
    assert failed["timestamp"].endswith("Z")
    assert failed["exception"].startswith("Traceback (most recent call last):")
    assert "KeyError: 'missing'" in failed["exception"]
    assert warned["event"] == "two\nlines of text" and warned["level"] == "warning"


PROGRAM = textwrap.dedent(
    """
    import asyncio, logging, warnings
    import structlog
    from shared.infra.observability import configure_logging

    configure_logging("info")
    logging.getLogger("aiohttp.server").info("a library's line")
    try:
        1 / 0
    except ZeroDivisionError:
        logging.getLogger("aiohttp.server").exception("Error handling request")
        structlog.get_logger("gateway").exception("request failed", path="/x")
    logging.getLogger("redis").debug("below the level: not written")
    warnings.warn("a library's warning")

    async def main():
        asyncio.get_running_loop().call_soon(lambda: 1 / 0)  # asyncio logs the traceback
        await asyncio.sleep(0.05)

    asyncio.run(main())
    raise RuntimeError("the process crashes")
    """
)


def test_a_process_writes_only_json_lines_tracebacks_included() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1, done
    assert done.stderr == "", done.stderr  # nothing bypasses the JSON lines
    docs = lines_of(done.stdout)
    events = [(d.get("logger"), d["level"], "exception" in d) for d in docs]
    assert events == [
        ("aiohttp.server", "info", False),
        ("aiohttp.server", "error", True),
        (None, "error", True),  # structlog's own event
        ("py.warnings", "warning", False),
        ("asyncio", "error", True),
        ("rummy", "critical", True),
    ], docs
    assert (
        "ZeroDivisionError" in docs[1]["exception"] and "ZeroDivisionError" in docs[2]["exception"]
    )
    assert docs[2]["event"] == "request failed" and docs[2]["path"] == "/x"
    assert "a library's warning" in docs[3]["event"]
    assert "RuntimeError: the process crashes" in docs[5]["exception"]
