"""The published JSON error shape, ``{"error": {"code": ..., "message": ...}}``: one shape for
every refusal, whether a gateway handler or the HTTP server under it (a health server's too)
gives it. The codes a client may meet are listed in ``services/gateway/errors.py``."""

from __future__ import annotations

from typing import Any


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The JSON of an error answer."""
    return {"error": {"code": code, "message": message}, **extra}
