"""Serving an aiohttp application on a port, every answer in the published error shape.

aiohttp answers some requests itself, before any middleware runs: a request it cannot parse
(a malformed request line, a header or a URL over its limits) gets ``handle_error`` of its
connection protocol, ``web.RequestHandler``, which answers plain text and logs a traceback; an
``HTTPException`` raised outside the middlewares (an unknown ``Expect``, the router's 404 on an
app without an error middleware) goes out as aiohttp's text. aiohttp has no hook for either
(aio-libs/aiohttp#3287), so every process starts its site with ``start_http``, whose
connections are ``JsonRefusals`` and whose outermost handler turns such exceptions into JSON.

How the protocol class gets in: ``web.Server`` (the protocol factory an ``AppRunner`` makes)
always builds a plain ``RequestHandler``; ``start_http`` gives the runner's server the class
``_JsonServer``, which gives each protocol it builds the class ``JsonRefusals`` (a subclass that
adds no state, so its instances have the same layout). Only public names are used
(``RequestHandler.handle_error``, ``Server.__call__``, ``Server.request_handler``,
``AppRunner.server``); ``tests/services/test_http_refusals.py`` fails loudly if aiohttp changes
them, and ``pyproject.toml`` bounds aiohttp below 4.0, which reworks them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong

from shared.infra.errorshape import error_body

MAX_REQUEST_LINE = 16 * 1024
"""The longest request target (path and query) a server reads, in bytes: longer is a
``414 url_too_large``. Distinct from ``MAX_HEADER``: aiohttp names only the limit exceeded."""

MAX_HEADER = 8 * 1024
"""The longest header (name and value together) a server reads: longer is a
``431 header_too_large``."""

ROUNDED_TIMEOUTS = 3600.0
"""Seconds above which aiohttp rounds a connection's timeout up to a whole second of the loop's
clock (its ``timeout_ceil_threshold``, 5 by default), so that timeouts due about the same time
fire together. Every socket's heartbeat (20 s) was then due on a whole second: at 10,000 sockets
some 500 pings in one burst each second, which every command in flight waited out (20-45 ms at
5,000 live games). Only timeouts of over an hour are rounded now; a heartbeat is due at its
own socket's time."""

_log = structlog.get_logger("http")

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


def code_for_status(status: int) -> str:
    """The published code of an answer aiohttp chose only the status of."""
    if status >= 500:
        return "internal"
    return {
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        413: "body_too_large",
        414: "url_too_large",
        429: "rate_limited",
        431: "header_too_large",
    }.get(status, "bad_request")


def refusal(status: int, code: str, message: str, headers: Any = None) -> web.Response:
    """An answer of the published shape that closes the connection (after a request aiohttp
    could not parse, nothing else on that connection can be trusted)."""
    response = web.json_response(error_body(code, message), status=status, headers=headers)
    response.force_close()
    return response


def unparsable(
    exc: BaseException | None, line_limit: int, field_limit: int
) -> tuple[int, str, str]:
    """Status, code and message for a request the HTTP parser refused."""
    if isinstance(exc, LineTooLong):
        limit = exc.args[1] if len(exc.args) > 1 else None
        if limit == field_limit and field_limit != line_limit:
            return 431, "header_too_large", f"a header (name and value) over {field_limit} bytes"
        if limit == line_limit:
            return 414, "url_too_large", f"a request line (path and query) over {line_limit} bytes"
    detail = exc.message if isinstance(exc, HttpProcessingError) else ""
    message = "not a valid HTTP/1.1 request" + (f": {detail}" if detail else "")
    return 400, "bad_request", message[:300]


class JsonRefusals(web.RequestHandler):
    """aiohttp's connection protocol, answering what it refuses by itself in JSON: a request
    it could not parse, a handler that raised past every middleware."""

    __slots__ = ()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:
            # A bug: the traceback belongs in the log (one JSON line, ``exception``).
            _log.error("request failed", path=request.path, status=status, exc_info=exc)
            code, text = "internal", "the server failed to answer; retrying may help"
        else:
            # The client's mistake (or an attack): a line, no traceback.
            status, code, text = unparsable(exc, self.max_line_size, self.max_field_size)
            _log.info("request refused", remote=request.remote, status=status, code=code)
        if request.writer.output_size > 0:  # as aiohttp: nothing more can be sent
            raise ConnectionError("an answer was sent already; cannot send the error")
        return refusal(status, code, text)


class _JsonServer(web.Server):
    """aiohttp's low-level server whose connections are ``JsonRefusals``."""

    def __call__(self) -> web.RequestHandler:
        protocol = super().__call__()
        protocol.__class__ = JsonRefusals
        return protocol


def published(handler: Handler) -> Handler:
    """The outermost handler: an ``HTTPException`` that comes out of the application as
    aiohttp's text (raised before or without an error middleware) goes out as JSON."""

    async def answer(request: web.BaseRequest) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException as err:
            if err.status < 400 or err.content_type == "application/json":
                raise
            kept = {k: v for k, v in err.headers.items() if k.lower() not in _BODY_HEADERS}
            told = err.text if err.text and err.text != f"{err.status}: {err.reason}" else None
            message = told or _plain_message(err.status, request) or err.reason
            return web.json_response(
                error_body(code_for_status(err.status), message), status=err.status, headers=kept
            )

    return answer


_BODY_HEADERS = frozenset({"content-type", "content-length"})


def _plain_message(status: int, request: web.BaseRequest) -> str | None:
    if status == 404:
        return f"no such path {request.path!r}"
    if status == 405:
        return f"method {request.method} not allowed here"
    return None


async def start_http(app: web.Application, host: str, port: int) -> web.AppRunner:
    """Start ``app`` on ``host:port``: no access log, the request limits above, timeouts left
    unrounded, every answer JSON. Returns the runner (``await runner.cleanup()`` to stop)."""
    runner = web.AppRunner(
        app,
        access_log=None,
        max_line_size=MAX_REQUEST_LINE,
        max_field_size=MAX_HEADER,
        timeout_ceil_threshold=ROUNDED_TIMEOUTS,
    )
    await runner.setup()
    server = runner.server
    assert server is not None  # set up above
    server.__class__ = _JsonServer
    server.request_handler = published(server.request_handler)
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError:  # a busy port: nothing is left running
        await runner.cleanup()
        raise
    return runner
