"""A socket's outbox: frames written in order by the socket's own task; putting never waits for
the socket; over its bound the socket is closed with TOO_SLOW (once), after the frame being
written; a view supersedes a queued view; a client that never reads is cut off."""

from __future__ import annotations

import asyncio

import pytest

from services.gateway.outbox import TOO_SLOW, TOO_SLOW_REASON, Outbox

WAIT = 5.0


class FakeSocket:
    """A socket whose every send waits for ``gate`` (never set: a client that never reads)."""

    def __init__(self, open_gate: bool = False) -> None:
        self.gate = asyncio.Event()
        if open_gate:
            self.gate.set()
        self.started: list[str] = []  # sends begun
        self.sent: list[str] = []  # sends completed
        self.closes: list[tuple[int, bytes]] = []
        self.sending = asyncio.Event()

    async def send_str(self, data: str, compress: int | None = None) -> None:
        self.started.append(data)
        self.sending.set()
        await self.gate.wait()
        self.sent.append(data)

    async def close(self, *, code: int = 1000, message: bytes = b"", drain: bool = True) -> bool:
        self.closes.append((code, message))
        return True


class FakeTransport:
    def __init__(self) -> None:
        self.aborted = 0

    def abort(self) -> None:
        self.aborted += 1


async def stuck_outbox(limit: int, **kwargs: object) -> tuple[Outbox, FakeSocket]:
    """An outbox whose writer is stuck sending frame "f0"."""
    ws = FakeSocket()
    outbox = Outbox(ws, limit, **kwargs)  # type: ignore[arg-type]
    outbox.start()
    assert outbox.put("f0")
    await asyncio.wait_for(ws.sending.wait(), WAIT)
    assert ws.started == ["f0"] and outbox.queued == 0
    return outbox, ws


async def test_frames_are_written_in_order_by_the_writer() -> None:
    ws = FakeSocket(open_gate=True)
    outbox = Outbox(ws, 8)
    outbox.start()
    for n in range(5):
        assert outbox.put(f"f{n}")
    while len(ws.sent) < 5:
        await asyncio.sleep(0)
    assert ws.sent == [f"f{n}" for n in range(5)] and ws.closes == []
    await outbox.finish()


async def test_over_its_bound_a_socket_that_never_reads_is_closed_too_slow() -> None:
    slow: list[str] = []
    transport = FakeTransport()
    outbox, ws = await stuck_outbox(
        3, transport=transport, on_too_slow=lambda: slow.append("!"), close_seconds=0.01
    )
    # Putting never waits: three frames fit behind the stuck one, the fourth is one too many.
    assert [outbox.put(f"f{n}") for n in range(1, 4)] == [True, True, True]
    assert outbox.queued == 3 and not outbox.closing
    assert outbox.put("f4") is False
    assert outbox.closing and outbox.close_code == TOO_SLOW and slow == ["!"]
    assert outbox.queued == 0, "what was queued is dropped"
    assert outbox.put("f5") is False and outbox.put_view("v") is False and slow == ["!"]
    # The writer never finishes "f0": the connection is cut off instead of waiting for ever.
    await asyncio.wait_for(outbox.wait_closed(), WAIT)
    assert transport.aborted == 1
    assert ws.started == ["f0"] and ws.sent == [] and ws.closes == []
    await outbox.finish()


async def test_a_closing_socket_gets_the_frame_under_way_then_the_close_frame() -> None:
    transport = FakeTransport()
    outbox, ws = await stuck_outbox(2, transport=transport, close_seconds=WAIT * 10)
    assert outbox.put("f1") and outbox.put("f2")
    assert not outbox.put("f3")
    ws.gate.set()  # the client reads again
    await asyncio.wait_for(outbox.wait_closed(), WAIT)
    assert ws.sent == ["f0"], "the queued frames are dropped, the one being written finished"
    assert ws.closes == [(TOO_SLOW, TOO_SLOW_REASON.encode())]
    assert transport.aborted == 0
    await outbox.finish()


async def test_a_view_supersedes_the_queued_view_and_goes_after_the_events() -> None:
    outbox, ws = await stuck_outbox(4, close_seconds=0.01)
    assert outbox.put("events 1-3") and outbox.put_view("view 3")
    assert outbox.put("events 4") and outbox.put_view("view 4")
    for n in range(5, 50):  # many views, one queued: a slow spectator is never too slow
        assert outbox.put_view(f"view {n}")
    assert outbox.put("answer")
    assert outbox.put_view("view 50")
    assert outbox.queued == 4 and not outbox.closing
    ws.gate.set()
    while len(ws.sent) < 5:
        await asyncio.sleep(0)
    assert ws.sent == ["f0", "events 1-3", "events 4", "answer", "view 50"]
    assert not outbox.closing
    await outbox.finish()


async def test_events_are_never_coalesced_one_frame_over_the_bound_closes() -> None:
    outbox, _ = await stuck_outbox(3, close_seconds=0.01)
    assert outbox.put("events 1") and outbox.put_view("view 1")
    assert outbox.put("events 2") and outbox.put_view("view 2")
    assert outbox.put("events 3") and outbox.put_view("view 3"), "the view is not counted"
    assert outbox.queued == 4 and not outbox.closing
    assert not outbox.put("events 4") and outbox.close_code == TOO_SLOW
    await outbox.finish()


async def test_with_a_bound_of_one_a_catch_up_and_its_view_fit() -> None:
    outbox, _ = await stuck_outbox(1, close_seconds=0.01)
    assert outbox.put("events") and outbox.put_view("view") and not outbox.closing
    await outbox.finish()


async def test_closing_going_away_when_idle_sends_the_close_frame_at_once() -> None:
    ws = FakeSocket(open_gate=True)
    outbox = Outbox(ws, 4)
    outbox.start()
    assert outbox.put("f0")
    while not ws.sent:
        await asyncio.sleep(0)
    outbox.close(1001, "server shutting down")
    outbox.close(TOO_SLOW, TOO_SLOW_REASON)  # a second close changes nothing
    await asyncio.wait_for(outbox.wait_closed(), WAIT)
    assert ws.closes == [(1001, b"server shutting down")]
    await outbox.finish()
    assert outbox.closing and not outbox.put("late")


async def test_a_writer_whose_connection_fails_stops_and_refuses_more() -> None:
    class Broken(FakeSocket):
        async def send_str(self, data: str, compress: int | None = None) -> None:
            raise ConnectionResetError("Cannot write to closing transport")

    ws = Broken()
    outbox = Outbox(ws, 4)
    outbox.start()
    assert outbox.put("f0")
    while not outbox.closing:
        await asyncio.sleep(0)
    assert outbox.put("f1") is False and outbox.close_code is None
    await outbox.finish()


@pytest.mark.parametrize("limit", [1, 2])
async def test_the_bound_counts_queued_frames_not_the_one_being_written(limit: int) -> None:
    outbox, _ = await stuck_outbox(limit, close_seconds=0.01)
    for n in range(limit):
        assert outbox.put(f"f{n + 1}")
    assert not outbox.put("one too many")
    await outbox.finish()


@pytest.mark.parametrize("writing", [False, True])
async def test_a_finished_outbox_is_freed_without_the_cyclic_collector(writing: bool) -> None:
    """Every socket that closes must leave no reference cycle: the cyclic collector would find
    it only in a full collection, which walks the whole heap (with thousands of sockets, a pause
    of a second in one go). Idle or stuck in a send, the finished outbox, its socket and its
    writer's frames go as soon as the last reference does."""
    import gc
    import weakref

    gc.collect()
    gc.disable()
    try:
        if writing:
            outbox, ws = await stuck_outbox(4)
        else:
            ws = FakeSocket(open_gate=True)
            outbox = Outbox(ws, 4)  # type: ignore[arg-type]
            outbox.start()
            assert outbox.put("f0")
            while not ws.sent:
                await asyncio.sleep(0)
        await outbox.finish()
        gone = weakref.ref(outbox), weakref.ref(ws)
        del outbox, ws
        assert [ref() for ref in gone] == [None, None]
    finally:
        gc.enable()
