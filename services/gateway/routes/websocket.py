"""``GET /api/games/{id}/ws``: a game's live view on a WebSocket, and the commands, syncs and
authentications its client sends on it."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Mapping
from typing import Any

from aiohttp import WSMsgType, web

from services.gateway.errors import ApiError, error_body, error_frame
from services.gateway.hub import Watcher, watcher_info
from services.gateway.outbox import CLOSE_SECONDS, Outbox
from services.gateway.params import bearer_token, seat_of, whole_number
from services.gateway.ratelimit import SocketLimits
from services.gateway.state import CATCH_UP_PAGE, GATEWAY, Gateway
from shared.infra import jsontext
from shared.infra.settings import Settings
from shared.infra.transient import transient

HEARTBEAT_SECONDS = 20.0
"""A socket silent this long is pinged, and closed if no pong comes within half of it: a client
gone without a close (a lost network) does not keep its socket, its outbox and its place in the
hub. Each is due at its own socket's time (``shared.infra.serving.ROUNDED_TIMEOUTS``)."""


async def websocket(request: web.Request) -> web.StreamResponse:
    gw = request.app[GATEWAY]
    address = await gw.limits.at_address(request)  # a connection costs a load and a first push
    if gw.sockets.get(address, 0) >= gw.settings.sockets_per_address:
        raise ApiError(
            429,
            "too_many_sockets",
            f"this address has {gw.settings.sockets_per_address} WebSockets open, the most it "
            "may (RUMMY_SOCKETS_PER_ADDRESS); close one first",
        )
    gw.sockets[address] = gw.sockets.get(address, 0) + 1  # counted before anything awaits
    try:
        return await _serve_socket(gw, request, address)
    finally:
        if (left := gw.sockets.pop(address, 1) - 1) > 0:
            gw.sockets[address] = left


async def _serve_socket(gw: Gateway, request: web.Request, address: str) -> web.StreamResponse:
    game_id = request.match_info["game_id"]
    await gw.load(game_id)
    _check_origin(request, gw.settings)
    role = await gw.viewer(request, game_id, required=False)
    after_text = request.query.get("after")
    after = whole_number(after_text, "after") if after_text is not None else 0
    ws = web.WebSocketResponse(
        heartbeat=HEARTBEAT_SECONDS,
        max_msg_size=gw.settings.max_body_bytes,
        timeout=CLOSE_SECONDS,
        # Off unless asked for: each compressing socket keeps a zlib compressor of its own
        # (about 230 KiB once used) and costs the gateway a quarter more CPU a turn, for
        # frames of about a kilobyte.
        compress=gw.settings.ws_compress,
    )
    await ws.prepare(request)
    outbox = Outbox(ws, gw.settings.socket_queue, request.transport)
    watcher = Watcher(outbox, game_id, seat_of(role), after)
    watcher.token = bearer_token(request) if role is not None else ""
    watcher.catch_up = after_text is not None
    outbox.on_too_slow = lambda: gw.too_slow(watcher)
    outbox.start()
    limits = SocketLimits(gw.limits, address)
    gw.hub.add(watcher)
    gw.metrics.sockets.inc()
    try:
        await _or_error(gw, watcher, gw.push(watcher, force=True))
        async for message in ws:
            if outbox.closing:  # closed for being too slow (or the server is going away)
                break
            if message.type == WSMsgType.BINARY:  # answered, as any frame that is not JSON
                outbox.put(error_frame("bad_json", "send messages as text frames of JSON"))
            elif message.type == WSMsgType.TEXT:
                await _or_error(gw, watcher, _on_ws_message(gw, watcher, message.data, limits))
    finally:
        gw.hub.remove(watcher)
        gw.metrics.sockets.dec()
        try:
            await outbox.finish()
        finally:  # (also when the handler is cancelled there: its connection lost)
            _let_go(request)
    return ws


async def _or_error(gw: Gateway, watcher: Watcher, work: Awaitable[None]) -> None:
    """Await the socket's own ``work`` (its first push, a message's answer). A failure (Redis
    or the archive away, a bug) is answered with an error frame: the client is not left with
    nothing, nor its socket ended without a word, and may ask again."""
    try:
        await work
    except Exception as err:
        if transient(err):  # Redis full, read-only, loading or away
            gw.log.warning("a socket's request refused", error=str(err)[:200])
            why = f"Redis cannot take the request now ({type(err).__name__}); retry"
            watcher.outbox.put(error_frame("unavailable", why))
            return
        gw.log.exception("a socket's request failed", **watcher_info(watcher))
        failed = error_frame("internal", "the server failed to answer; retrying may help")
        watcher.outbox.put(failed)


def _let_go(request: web.Request) -> None:
    """Break the cycle aiohttp leaves of a finished socket: its connection's protocol keeps the
    socket's data callback (protocol -> socket -> protocol). Left, every closed socket, with its
    request, connection and buffers, would wait for a full collection, which walks the whole
    heap at once: a pause that grows with the sockets and games alive."""
    protocol = request.protocol
    if getattr(protocol, "_data_received_cb", None) is not None:
        protocol._data_received_cb = None


async def _on_ws_message(gw: Gateway, watcher: Watcher, text: str, limits: SocketLimits) -> None:
    """One message from a socket. Every answer goes through the socket's outbox: reading the
    socket never waits for its writing."""
    outbox = watcher.outbox
    try:
        body = jsontext.loads(text)
    except ValueError:
        outbox.put(error_frame("bad_json", "not JSON"))
        return
    if not isinstance(body, dict):
        outbox.put(error_frame("bad_json", "not a JSON object"))
        return
    if "token" in body and body.get("type") in (None, "auth"):
        if refused := await limits.sync():
            outbox.put(jsontext.dumps(refused.frame(body.get("id"))))
            await gw.tarpit.hold(limits.address, refused.retry_after)  # this socket's reads wait
            return
        role = await gw.tokens.role(watcher.game_id, str(body["token"]))
        if role is None:
            outbox.put(error_frame("unauthorized", "unknown token"))
            return
        watcher.viewer = seat_of(role)
        watcher.token = str(body["token"])
        await gw.push(watcher, force=True, since=0)
        return
    if body.get("type") == "sync":
        after = body.get("after", 0)
        since = (
            after if isinstance(after, int) and not isinstance(after, bool) and after >= 0 else 0
        )
        loaded = await gw.games.load(watcher.game_id, fresh=True)  # (the push's too)
        pages = max(1, math.ceil((loaded.version - since) / CATCH_UP_PAGE))
        if refused := await limits.sync(pages):
            outbox.put(jsontext.dumps(refused.frame(body.get("id"))))
            await gw.tarpit.hold(limits.address, refused.retry_after)  # this socket's reads wait
            return
        watcher.catch_up = True
        await gw.push(watcher, force=True, since=since, loaded=loaded)
        return
    command_id = body.get("id")
    if watcher.viewer is None:
        answer = error_body("forbidden", "authenticate with a seat token to send commands")
        outbox.put(_answer(command_id, 403, answer))
        return
    if refused := await limits.command(watcher.token):  # the same limits as over HTTP
        outbox.put(jsontext.dumps(refused.frame(command_id)))
        await gw.tarpit.hold(limits.address, refused.retry_after)
        return
    watcher.in_flight += 1  # (the hub holds this socket's views back for the answer)
    try:
        status, reply = await gw.submit(watcher.game_id, watcher.viewer, body)
    finally:
        watcher.in_flight -= 1
    version = reply.get("version")
    changed = version if isinstance(version, int) and not isinstance(version, bool) else None
    gw.answer(watcher, _answer(command_id, status, reply), changed)


def _answer(command_id: Any, status: int, body: Mapping[str, Any]) -> str:
    """A command's answer over a socket: what the POST would have answered."""
    return jsontext.dumps({"type": "answer", "id": command_id, "status": status, "body": body})


def _check_origin(request: web.Request, settings: Settings) -> None:
    """Browsers send Origin on WebSockets: accept our own host (and nothing else), so a page
    elsewhere cannot drive a player's socket. Non-browser clients send no Origin."""
    origin = request.headers.get("Origin")
    if origin is None:
        return
    host = request.headers.get("Host", "")
    if origin.split("://", 1)[-1] != host:
        raise ApiError(403, "origin_not_allowed", f"origin {origin!r} is not this server")
