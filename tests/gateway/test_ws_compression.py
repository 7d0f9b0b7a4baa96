"""WebSocket compression is the host's choice (``RUMMY_WS_COMPRESS``): off by default, so a
browser's offer of permessage-deflate is declined and its frames go as they are (no compressor
kept per socket); on, the offer is taken, and the views arrive the same."""

from __future__ import annotations

import pytest

from tests.gateway.conftest import MakeStack


@pytest.mark.parametrize("enabled", [False, True])
async def test_compression_is_used_only_when_the_host_turns_it_on(
    make_stack: MakeStack, enabled: bool
) -> None:
    stack = await make_stack(ws_compress=enabled)
    game_id, _, tokens = await stack.api.new_game("robbers", 2)
    path = f"/api/games/{game_id}/ws?token={tokens[0]}"
    ws = await stack.client.ws_connect(path, compress=15)  # as a browser offers it
    try:
        assert ws.compress == (15 if enabled else 0)
        frame = await ws.receive_json(timeout=10)
        assert frame["type"] == "view" and frame["view"]["you"] == 0
        assert len(frame["view"]["hand"]) > 0
    finally:
        await ws.close()
