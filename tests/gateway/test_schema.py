"""The JSON Schema worked out from type hints (services/gateway/schema.py): each kind of hint
says what it should, and a hint it cannot describe is refused rather than guessed."""

# No ``from __future__ import annotations``: the TypedDicts below read their keys' hints.

import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest

from services.gateway.schema import Schemas
from shared.core.shapes import FieldsOf, Keywords, described


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Rules:
    name: str
    size: int | None
    kind: Literal["a", "b"]


class Inner(TypedDict):
    """An inner object."""

    n: int


class Outer(TypedDict):
    plain: str
    count: Annotated[int, described("how many")]
    maybe: str | None
    choice: Literal["x", "y"]
    choice_or_none: Literal["x", "y"] | None
    flag: Literal[True]
    colour: Colour
    inner: Inner
    inner_or_none: Inner | None
    many: list[Inner]
    by_seat: dict[str, int]
    when: Annotated[str | None, Keywords({"format": "date-time"})]
    some: Annotated[dict[str, Any], FieldsOf(Rules, frozenset({"name"}))]
    optional: NotRequired[float]
    pair: tuple[int, str]


def test_each_kind_of_hint() -> None:
    schemas = Schemas()
    assert schemas.of(Outer) == {"$ref": "#/components/schemas/Outer"}
    outer = schemas.components["Outer"]
    props = outer["properties"]
    assert outer["additionalProperties"] is False
    assert "optional" not in outer["required"] and "plain" in outer["required"]
    assert set(outer["required"]) == set(props) - {"optional"}
    assert props["plain"] == {"type": "string"}
    assert props["count"] == {"type": "integer", "description": "how many"}
    assert props["maybe"] == {"type": ["string", "null"]}
    assert props["choice"] == {"type": "string", "enum": ["x", "y"]}
    assert props["choice_or_none"] == {"type": ["string", "null"], "enum": ["x", "y", None]}
    assert props["flag"] == {"type": "boolean", "const": True}
    assert props["colour"] == {"type": "string", "enum": ["red", "blue"]}
    assert props["inner"] == {"$ref": "#/components/schemas/Inner"}
    assert props["inner_or_none"] == {
        "anyOf": [{"$ref": "#/components/schemas/Inner"}, {"type": "null"}]
    }
    assert props["many"] == {"type": "array", "items": {"$ref": "#/components/schemas/Inner"}}
    assert props["by_seat"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["when"] == {"type": ["string", "null"], "format": "date-time"}
    assert props["some"] == {
        "type": "object",
        "properties": {
            "size": {"type": ["integer", "null"]},
            "kind": {"type": "string", "enum": ["a", "b"]},
        },
        "additionalProperties": False,
    }
    assert props["optional"] == {"type": "number"}
    assert props["pair"] == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False,
    }
    assert schemas.components["Inner"]["description"] == "An inner object."
    assert "description" not in outer  # no docstring of its own


def test_names_can_be_given_and_must_not_clash() -> None:
    schemas = Schemas({Inner: "Renamed"})
    assert schemas.of(list[Inner]) == {
        "type": "array",
        "items": {"$ref": "#/components/schemas/Renamed"},
    }
    with pytest.raises(TypeError, match="both named 'Inner'"):
        Schemas().of(tuple[Inner, _another_inner()])


def _another_inner() -> type:
    class Inner(TypedDict):  # another type of the same name
        m: str

    return Inner


@pytest.mark.parametrize("hint", [bytes, dict[int, str], set[object], complex])
def test_a_hint_without_a_json_schema_is_refused(hint: Any) -> None:
    with pytest.raises(TypeError):
        Schemas().of(hint)
