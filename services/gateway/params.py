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


def whole_number(text: str, name: str, maximum: int = 10**12) -> int:
    """A query parameter that must be a whole number (ASCII digits, at most ``maximum``)."""
    if not (text.isascii() and text.isdigit()) or int(text) > maximum:
        raise ApiError(422, "bad_request", f"{name} must be a whole number up to {maximum}")
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
