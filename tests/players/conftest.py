"""The players' tests run on the gateway tests' in-process stack, with argon2 made cheap (the
hash's cost is a parameter of the hash, not of what is tested)."""

from __future__ import annotations

from typing import Any

import pytest
from argon2 import PasswordHasher

from services.gateway.routes.accounts import ACCOUNTS
from tests.gateway.api import Api, Reply
from tests.gateway.conftest import LimitClock, MakeStack, Stack, make_stack  # noqa: F401

CHEAP = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)


def cheapen(stack: Stack) -> Stack:
    """``stack`` with a cheap password hasher."""
    stack.server.app[ACCOUNTS].hasher = CHEAP
    return stack


@pytest.fixture
async def stack(make_stack: MakeStack) -> Stack:  # noqa: F811
    return cheapen(await make_stack())


async def register(api: Api, name: str, password: str = "correct horse") -> tuple[str, str]:
    """A new account: (its id, its session token)."""
    reply = await api.call("POST", "/api/accounts", {"name": name, "password": password})
    assert reply.status == 201, reply
    return reply.body["player"]["id"], reply.body["token"]


def forget_cookies(stack: Stack) -> None:
    """The test client as a fresh browser (bearer tokens only from here)."""
    stack.client.session.cookie_jar.clear()


async def as_player(api: Api, method: str, path: str, token: str, body: Any = None) -> Reply:
    return await api.call(method, path, body, token=token)
