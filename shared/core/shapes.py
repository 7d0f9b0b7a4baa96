"""What a typed JSON structure (a view, an answer, a request body) says about itself beyond its
Python types, for the JSON Schema the API publishes from those types.

A field's type says most of it (``int``, ``str | None``, a ``Literal``, a nested ``TypedDict``);
these markers, put in ``Annotated[type, marker]``, add what no Python type says: a format, the
allowed values of a plain string, a description, or that an object holds some of the fields of a
dataclass. Type checkers ignore them; ``services/gateway/schema.py`` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, eq=False)  # hashed by identity: ``Annotated`` metadata must hash
class Keywords:
    """JSON Schema keywords added to what the field's type gives (``{"format": "date-time"}``,
    ``{"enum": [...]}``, ``{"description": ...}``)."""

    words: Mapping[str, Any]


@dataclass(frozen=True)
class FieldsOf:
    """An object holding some of the fields of the dataclass ``of`` (none required, no others),
    each of its field's type; ``without``: fields it never holds."""

    of: type
    without: frozenset[str] = field(default_factory=frozenset)


def described(text: str) -> Keywords:
    """A field's description."""
    return Keywords({"description": text})
