"""The gateway: the only public entry point. It authenticates, shapes and forwards commands to
the referees, and serves each viewer exactly what that viewer may see. It never judges rules.

``make_app(client, settings)`` is the app factory; the shared state is ``state.Gateway`` and the
routes are in ``routes``. Resources live in ``cleanup_ctx`` and every WebSocket is closed with
GOING_AWAY in ``on_shutdown`` (before the server waits for handlers).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web

from services.gateway import archived
from services.gateway.answers import SolverBusy
from services.gateway.errors import ApiError, error, unavailable
from services.gateway.ratelimit import Clock, RateLimited
from services.gateway.routes import add_routes
from services.gateway.state import GATEWAY, Gateway
from shared.infra.client import RedisClient
from shared.infra.observability import health_routes
from shared.infra.settings import Settings
from shared.infra.transient import transient

WARM = web.AppKey("warm", bool)


@web.middleware
async def errors_and_metrics(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every error as published JSON; every request counted and timed by route."""
    gw = request.app[GATEWAY]
    started = time.perf_counter()
    route = request.match_info.route.resource
    name = route.canonical if route is not None else "unmatched"
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except RateLimited as err:
        status = err.status_code
        await gw.tarpit.hold(gw.limits.address_of(request), err.retry_after)
        raise
    except SolverBusy as err:  # no room to work it out: a client looping on it is held too
        status = err.status_code
        retry_after = float(err.headers.get("Retry-After", "1"))
        await gw.tarpit.hold(gw.limits.address_of(request), retry_after)
        raise
    except ApiError as err:
        status = err.status_code
        raise
    except web.HTTPRequestEntityTooLarge:
        status = 413
        return error(413, "body_too_large", f"at most {gw.settings.max_body_bytes} bytes")
    except web.HTTPNotFound:
        status = 404
        return error(404, "not_found", f"no such path {request.path!r}")
    except web.HTTPMethodNotAllowed as err:
        status = 405
        return error(405, "bad_request", f"method {err.method} not allowed here")
    except web.HTTPException as err:
        # Raised by aiohttp itself (e.g. a plain GET on the WebSocket route): published shape.
        status = err.status_code
        if status < 400:
            raise
        code = {401: "unauthorized", 403: "forbidden", 404: "not_found"}.get(status, "bad_request")
        return error(status, code, err.text or err.reason)
    except Exception as err:
        if transient(err):  # Redis full, read-only, loading or away: one line, no traceback
            status = 503
            gw.log.warning(
                "request refused: Redis cannot take it now",
                path=request.path,
                method=request.method,
                error=str(err)[:200],
            )
            return unavailable(err)
        status = 500
        gw.log.exception("request failed", path=request.path, method=request.method)
        return error(500, "internal", "the server failed to answer; retrying may help")
    finally:
        gw.metrics.requests.labels(name, str(status)).inc()
        gw.metrics.latency.labels(name).observe(time.perf_counter() - started)


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    gw = app[GATEWAY]
    stopping = asyncio.Event()
    await gw.readiness.check(gw.heartbeat)  # ready at once if Redis takes writes
    beats = asyncio.create_task(gw.readiness.follow(gw.heartbeat, stopping), name="readiness")
    await gw.requester.start()
    await gw.hub.start()
    await gw.answers.start(app[WARM])
    yield
    stopping.set()
    beats.cancel()
    await asyncio.gather(beats, return_exceptions=True)
    await gw.answers.stop()  # every worker process ended and reaped
    await gw.hub.stop()
    await gw.tournaments.close()
    await gw.requester.close()


async def _going_away(app: web.Application) -> None:
    await app[GATEWAY].hub.close_sockets()


def make_app(
    client: RedisClient, settings: Settings, *, clock: Clock | None = None, warm: bool = False
) -> web.Application:
    """The gateway's aiohttp application over ``client``; ``clock``: the rate limits' time
    (seconds; tests move it), else Redis's own. ``warm``: start the solver's workers with the
    app (a service's first hint then waits for no worker to start) rather than with the
    first job (a test's app never runs one)."""
    app = web.Application(client_max_size=settings.max_body_bytes, middlewares=[errors_and_metrics])
    gateway = Gateway(client, settings, clock)
    app[GATEWAY] = gateway
    app[WARM] = warm
    app.cleanup_ctx.append(_lifecycle)
    app.on_shutdown.append(_going_away)
    archived.attach(app)  # finished games Redis no longer holds, from the archive
    add_routes(app)
    health_routes(app, gateway.metrics.registry, gateway.ready)
    return app
