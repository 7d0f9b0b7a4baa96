"""What a request carries, read the one way every route reads it: its bearer token, its
whole-number query parameters, its JSON body, and the seat a token's role names."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from services.gateway.auth import HOST
from services.gateway.errors import ApiError
from shared.infra import jsontext


def bearer_token(request: web.Request) -> str:
    """The request's bearer token (header, else the ``token`` query parameter), or ""."""
    header = request.headers.get("Authorization", "")
    token = header[7:].strip() if header.lower().startswith("bearer ") else ""
    return token or request.query.get("token", "")


MAX_NUMBER = 10**12  # the largest whole number a query parameter may give by default


def whole_number(text: str, name: str, maximum: int = MAX_NUMBER, minimum: int = 0) -> int:
    """A query parameter that must be a whole number (ASCII digits, ``minimum`` to
    ``maximum``); its length is checked before it is read (a number of thousands of digits is
    refused, not converted)."""
    digits = text.isascii() and text.isdigit() and len(text) <= len(str(maximum))
    if not digits or not minimum <= int(text) <= maximum:
        span = f"up to {maximum}" if minimum == 0 else f"from {minimum} to {maximum}"
        raise ApiError(422, "bad_request", f"{name} must be a whole number {span}, got {text!r}")
    return int(text)


def seat_of(role: str | None) -> int | None:
    """The seat a role names (None: the host or no token)."""
    return int(role) if role is not None and role != HOST else None


async def json_body(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object (400 ``bad_json`` otherwise; no body is ``{}``)."""
    raw = await request.read()
    try:
        body = jsontext.loads(raw or b"{}")
    except ValueError:
        raise ApiError(400, "bad_json", "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "bad_json", "the body must be a JSON object")
    return body
