"""The players' tests run on the gateway tests' in-process stack, with argon2 made cheap (the
hash's cost is a parameter of the hash, not of what is tested)."""

from __future__ import annotations

import re
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


class Counted:
    """A client that notes every command sent and every reply (as text): what a read reads.
    ``prefix``: the keys' (the test's own)."""

    def __init__(self, client: Any, prefix: str = "") -> None:
        self.client = client
        self.prefix = prefix
        self.commands: list[str] = []
        self.replies: list[str] = []

    def __getattr__(self, name: str) -> Any:
        command = getattr(self.client, name)
        if name == "register_script" or not callable(command):
            return command

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.commands.append(name)
            reply = await command(*args, **kwargs)
            self.replies.append(repr(reply))
            return reply

        return counted

    @staticmethod
    def mention(who: str, reply: str) -> bool:
        """Whether a reply holds ``who``'s id (not merely the start of a longer one)."""
        return re.search(re.escape(who) + r"(?![\w-])", reply) is not None
