"""The frames sent to sockets: each event encoded once per (game, viewer, over) and each view
once per version and viewer; a viewer never gets another's text; bounded in events kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.gateway.frames import Frames
from shared.infra import jsontext


@dataclass(frozen=True)
class Event:
    version: int


class Log:
    """A game log of ``length`` events per game; counts its reads."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.reads: list[tuple[str, int, int | None]] = []

    async def read(self, game_id: str, after: int = 0, limit: int | None = None) -> list[Any]:
        self.reads.append((game_id, after, limit))
        end = self.length if limit is None else min(self.length, after + limit)
        return [Event(v) for v in range(after + 1, end + 1)]


def shown(stored: Any, viewer: int | None, over: bool) -> dict[str, Any]:
    return {"version": stored.version, "for": viewer, "over": over}


def page(frame: str | None) -> list[dict[str, Any]]:
    assert frame is not None
    doc = jsontext.loads(frame)
    assert doc["type"] == "events"
    events: list[dict[str, Any]] = doc["events"]
    return events


async def test_a_catch_up_made_once_is_not_read_again() -> None:
    log = Log(250)
    frames = Frames(log, shown)
    first = await frames.events_page("g1", None, False, 0, 100)
    again = await frames.events_page("g1", None, False, 0, 100)
    assert first == again
    assert first[0] == 100
    assert [e["version"] for e in page(first[1])] == list(range(1, 101))
    assert log.reads == [("g1", 0, 100)]
    # A page inside what is kept needs no read either; one past it does.
    inside = await frames.events_page("g1", None, False, 40, 50)
    assert [e["version"] for e in page(inside[1])] == list(range(41, 91))
    await frames.events_page("g1", None, False, 50, 100)
    assert log.reads == [("g1", 0, 100), ("g1", 50, 100)]


async def test_the_frame_is_the_text_the_documents_would_give() -> None:
    frames = Frames(Log(3), shown)
    count, frame = await frames.events_page("g1", 1, True, 0, 10)
    assert count == 3
    expected = {"type": "events", "events": [shown(Event(v), 1, True) for v in (1, 2, 3)]}
    assert frame == jsontext.dumps(expected)


async def test_each_viewer_and_the_end_of_the_game_have_texts_of_their_own() -> None:
    log = Log(5)
    frames = Frames(log, shown)
    for viewer in (None, 0, 1):
        for over in (False, True):
            _, frame = await frames.events_page("g1", viewer, over, 0, 5)
            assert {(e["for"], e["over"]) for e in page(frame)} == {(viewer, over)}
    assert len(log.reads) == 6


async def test_an_empty_log_gives_no_frame() -> None:
    frames = Frames(Log(0), shown)
    assert await frames.events_page("g1", None, False, 0, 100) == (0, None)


async def test_the_games_least_recently_caught_up_are_forgotten_past_the_bound() -> None:
    log = Log(10)
    frames = Frames(log, shown, size=25)
    for game in ("g1", "g2", "g3"):
        await frames.events_page(game, None, False, 0, 10)
    await frames.events_page("g1", None, False, 0, 10)  # g1 was forgotten for g3
    assert log.reads[-1] == ("g1", 0, 10)
    await frames.events_page("g3", None, False, 0, 10)  # g3 is still kept
    assert log.reads[-1] == ("g1", 0, 10)


async def test_one_log_longer_than_the_bound_is_still_served_whole() -> None:
    log = Log(30)
    frames = Frames(log, shown, size=10)
    got = []
    after = 0
    while after < 30:
        count, frame = await frames.events_page("g1", None, False, after, 20)
        got += [e["version"] for e in page(frame)]
        after += count
    assert got == list(range(1, 31))


def test_a_view_is_built_once_per_version_and_viewer() -> None:
    frames = Frames(Log(0), shown, views=2)
    built: list[tuple[int | None, int]] = []

    def view(
        game_id: str, viewer: int | None, version: int
    ) -> str:  # a view of the version, its own part counted
        def public() -> dict[str, Any]:
            return {"version": version, "turn": None, "you": None, "head": f"h{version}"}

        def own() -> dict[str, Any]:
            built.append((viewer, version))
            return {"turn": None, "you": viewer}

        return frames.view(game_id, viewer, version, f"h{version}", public, own)

    one = view("g1", None, 7)
    assert view("g1", None, 7) == one
    assert jsontext.loads(one) == {
        "type": "view",
        "view": {"version": 7, "turn": None, "you": None, "head": "h7"},
    }
    seat = view("g1", 0, 7)
    assert jsontext.loads(seat)["view"]["you"] == 0
    view("g1", None, 8)
    assert built == [(None, 7), (0, 7), (None, 8)]
    view("g2", None, 1)  # the bound: (g1, 0) is forgotten
    view("g1", 0, 7)
    assert built[-1] == (0, 7)


def _played_states() -> list[tuple[Any, str]]:
    """Every (state, chain head) of a self-played robbers game of three seats, in order."""
    from shared.infra.gamelog import fold_stored
    from tests.audit.games import play_game

    stored = play_game(7, "robbers", {"match_rounds": 2}).events
    loaded = fold_stored(stored[:1])
    out = [(loaded.state, loaded.head)]
    for event in stored[1:]:
        loaded = fold_stored([event], loaded)
        out.append((loaded.state, loaded.head))
    return out


def test_a_view_from_the_public_part_and_the_seats_own_is_the_whole_views_text() -> None:
    """The public part of a view is built once per change and each viewer's own part (its turn,
    who it is, its hand) spliced in: every frame is byte for byte the text of the viewer's whole
    view, and within what that viewer may know (the secrecy standard), whichever viewer asked
    first and however the game's viewers take turns."""
    from shared.core.views import seat_part, view_json
    from tests.secrecy import assert_within, visible

    frames = Frames(Log(0), shown)
    built = {"public": 0}

    def public(state: Any, head: str) -> dict[str, Any]:
        built["public"] += 1
        return {**view_json(state, None), "head": head}

    states = _played_states()
    assert len(states) > 100
    orders = [[0, None, 1, 2], [2, 1, None, 0], [None, 0, 2, 1]]
    checked = 0
    for number, (state, head) in enumerate(states):
        for viewer in orders[number % len(orders)]:
            frame = frames.view(
                "g1",
                viewer,
                state.version,
                head,
                lambda s=state, h=head: public(s, h),
                lambda s=state, v=viewer: seat_part(s, v),
            )
            whole = {**view_json(state, viewer), "head": head}
            assert frame == jsontext.dumps({"type": "view", "view": whole}), (number, viewer)
            if state.phase == "turns":  # (an ended round's hands are shown to everyone)
                assert_within(jsontext.loads(frame), visible(state, viewer), (number, viewer))
                checked += 1
    assert built["public"] == len(states)  # once per change, for all four viewers
    assert checked > 4 * 100


def test_no_seats_frame_carries_another_seats_hand() -> None:
    from shared.core.cards import cards_str, sorted_cards
    from shared.core.views import seat_part, view_json

    state, head = next(s for s in _played_states() if s[0].hands and s[0].turn is not None)
    frames = Frames(Log(0), shown)
    texts = {
        viewer: frames.view(
            "g1",
            viewer,
            state.version,
            head,
            lambda: {**view_json(state, None), "head": head},
            lambda v=viewer: seat_part(state, v),
        )
        for viewer in (0, 1, 2, None)
    }
    for viewer, text in texts.items():
        view = jsontext.loads(text)["view"]
        assert view["you"] == viewer
        if viewer is None:
            assert "hand" not in view
        else:
            assert view["hand"] == cards_str(sorted_cards(state.hands[viewer]))
