"""The frames pushed to sockets, encoded once for each kind of viewer and reused.

Why: a catch-up from the start of a long game reads, decodes, filters for its viewer and encodes
every event of the log, on the event loop, a page at a time; sockets that ask for it again and
again (``sync`` from 0, on every socket an address may open) had the gateway redo the same work
for the same text, and every other request waited behind each page (the edge bench's slow-socket
attack: a few milliseconds a page, dozens of pages in a burst). An event never changes once in
the log, and what a viewer may see of it depends only on who the viewer is (a seat, or nobody)
and whether the game is over: so each event's text is kept by (game, viewer, over), and a
catch-up made once costs a join of strings after that. A view is kept the same way for its
version, so the watchers of one game who see it alike share one encoding per change; and what
of a view is public (everything but the turn as a seat sees it, who it is and its hand) is
built and encoded once per change for all of the game's viewers, each viewer's frame that
text with its own part spliced in (byte for byte the text of its whole view).

Bounded: at most ``size`` event texts in all (the games least recently caught up are forgotten
first, which costs a read of the log later) and one view per (game, viewer) of the games most
recently pushed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from shared.core.views import SEAT_KEYS
from shared.infra import jsontext

EVENT_TEXTS = 50_000  # event texts kept in all (a few hundred bytes each: tens of MB at most)
VIEW_TEXTS = 4_096  # views kept: one per (game, viewer)

Viewer = int | None


class Log(Protocol):
    """Where the events come from (the gateway's event store)."""

    async def read(self, game_id: str, after: int = 0, limit: int | None = None) -> list[Any]: ...


Shown = Callable[[Any, Viewer, bool], dict[str, Any]]  # a stored event as a viewer sees it


class Frames:
    """Event and view texts by who sees them."""

    def __init__(
        self, store: Log, shown: Shown, size: int = EVENT_TEXTS, views: int = VIEW_TEXTS
    ) -> None:
        self.store = store
        self.shown = shown
        self.size = size
        self.views = views
        self._events: OrderedDict[tuple[str, Viewer, bool], dict[int, str]] = OrderedDict()
        self._count = 0  # event texts kept, over every key
        self._views: OrderedDict[tuple[str, Viewer], tuple[int, str, str]] = OrderedDict()
        # game -> (version, head, the frame's text before and after a viewer's own keys)
        self._publics: OrderedDict[str, tuple[int, str, str, str]] = OrderedDict()
        self.reads = 0  # pages read from the log (for tests and benchmarks)

    async def events_page(
        self, game_id: str, viewer: Viewer, over: bool, after: int, limit: int
    ) -> tuple[int, str | None]:
        """The frame of up to ``limit`` events after version ``after`` as ``viewer`` sees them
        (``over``: the game has ended, nothing is hidden any more), and how many it holds
        (0 and None when the log has none)."""
        key = (game_id, viewer, over)
        texts = self._events.get(key)
        wanted = range(after + 1, after + limit + 1)
        if texts is None or any(v not in texts for v in wanted):
            self.reads += 1
            stored = await self.store.read(game_id, after=after, limit=limit)
            if not stored:
                return 0, None
            texts = self._keep(key, stored, viewer, over)
            chosen = [texts[s.version] for s in stored]
        else:
            self._events.move_to_end(key)
            chosen = [texts[v] for v in wanted]
        return len(chosen), '{"type":"events","events":[' + ",".join(chosen) + "]}"

    def view(
        self,
        game_id: str,
        viewer: Viewer,
        version: int,
        head: str,
        public: Callable[[], Mapping[str, Any]],
        own: Callable[[], Mapping[str, Any]],
    ) -> str:
        """The view frame of ``game_id`` at ``version`` (chain head ``head``) for ``viewer``:
        ``public()`` makes the part every viewer shares (the view's keys in order, the
        viewer's own keys among them with any value: they mark where ``own()``'s go), built
        once per version for all viewers; ``own()`` the viewer's keys."""
        key = (game_id, viewer)
        kept = self._views.get(key)
        if kept is not None and kept[0] == version and kept[1] == head:
            self._views.move_to_end(key)
            return kept[2]
        before, after = self._public(game_id, version, head, public)
        text = before + jsontext.dumps(own())[1:-1] + after
        self._views[key] = (version, head, text)
        self._views.move_to_end(key)
        while len(self._views) > self.views:
            self._views.popitem(last=False)
        return text

    def _public(
        self, game_id: str, version: int, head: str, public: Callable[[], Mapping[str, Any]]
    ) -> tuple[str, str]:
        """The text of the frame before and after the viewer's own keys (each ends or starts
        with the comma that joins them), kept per game for its latest version."""
        kept = self._publics.get(game_id)
        if kept is not None and kept[0] == version and kept[1] == head:
            self._publics.move_to_end(game_id)
            return kept[2], kept[3]
        view = public()
        keys = list(view)
        first = min(keys.index(k) for k in SEAT_KEYS if k in view)
        last = max(keys.index(k) for k in SEAT_KEYS if k in view)
        shown = {k: view[k] for k in keys[:first]}
        rest = {k: view[k] for k in keys[last + 1 :]}
        before = '{"type":"view","view":' + jsontext.dumps(shown)[:-1] + ("," if shown else "")
        after = ("," if rest else "") + jsontext.dumps(rest)[1:] + "}"
        self._publics[game_id] = (version, head, before, after)
        self._publics.move_to_end(game_id)
        while len(self._publics) > self.views:
            self._publics.popitem(last=False)
        return before, after

    def _keep(
        self, key: tuple[str, Viewer, bool], stored: list[Any], viewer: Viewer, over: bool
    ) -> dict[int, str]:
        texts = self._events.setdefault(key, {})
        self._events.move_to_end(key)
        for s in stored:
            if s.version not in texts:
                texts[s.version] = jsontext.dumps(self.shown(s, viewer, over))
                self._count += 1
        while self._count > self.size and len(self._events) > 1:
            _, dropped = self._events.popitem(last=False)
            self._count -= len(dropped)
        if self._count > self.size:  # one game's log alone is over the bound: keep this page
            keep = {s.version for s in stored}
            for version in [v for v in texts if v not in keep]:
                del texts[version]
            self._count = len(texts)
        return texts
