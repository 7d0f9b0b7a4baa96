"""The account store on the test's Redis (the real one with REDIS_URL: its Lua scripts as Redis
runs them): a name taken once, sessions expiring by the injected clock, the oldest session ended
past the cap, and a deletion that frees the name and ends every session."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.gateway.accounts import (
    MAX_SESSIONS,
    SESSION_SECONDS,
    AccountError,
    Accounts,
    pseudonym,
)
from tests.players.conftest import CHEAP
from tests.services.conftest import delete_prefixed, redis_client


class Now:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def store() -> AsyncIterator[tuple[Accounts, Now]]:
    client: Any = redis_client()
    prefix = f"wt-players:{uuid.uuid4().hex[:8]}:"
    now = Now()
    try:
        yield Accounts(client, prefix, hasher=CHEAP, clock=now), now
    finally:
        await delete_prefixed(client, prefix)
        await client.aclose()


async def test_a_name_is_taken_once(store: tuple[Accounts, Now]) -> None:
    accounts, _ = store
    first = await accounts.register("Uma", "password1")
    with pytest.raises(AccountError) as refused:
        await accounts.register(" UMA ", "password2")
    assert refused.value.code == "name_taken" and refused.value.field == "name"
    assert (await accounts.authenticate("uma", "password1")).id == first.id
    with pytest.raises(AccountError):
        await accounts.authenticate("uma", "password2")


async def test_sessions_expire_and_are_capped(store: tuple[Accounts, Now]) -> None:
    accounts, now = store
    player = await accounts.register("Vic", "password1")
    first = await accounts.open_session(player)
    assert (await accounts.session_player(first)) == player
    now.now += 1
    later = [await accounts.open_session(player) for _ in range(MAX_SESSIONS)]
    assert await accounts.session_player(first) is None  # the oldest, ended past the cap
    assert len(await accounts.sessions(player.id)) == MAX_SESSIONS
    now.now += SESSION_SECONDS + 1
    assert await accounts.session_player(later[-1]) is None
    assert await accounts.sessions(player.id) == []


async def test_deletion_frees_the_name_and_ends_every_session(store: tuple[Accounts, Now]) -> None:
    accounts, _ = store
    player = await accounts.register("Wes", "password1")
    tokens = [await accounts.open_session(player) for _ in range(3)]
    with pytest.raises(AccountError):
        await accounts.delete(player, "wrong one")
    assert await accounts.session_player(tokens[0]) == player
    assert await accounts.delete(player, "password1") == 3
    assert all([await accounts.session_player(t) is None for t in tokens])
    assert (await accounts.player(player.id)) is not None
    assert (await accounts.names([player.id])) == {player.id: pseudonym(player.id)}
    again = await accounts.register("wes", "password2")
    assert again.id != player.id
