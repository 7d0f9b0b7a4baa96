"""JSON Schema (the 2020-12 dialect OpenAPI 3.1 uses) from Python type hints, so the published
description of a body is worked out from the type the code builds it as and cannot drift from it.

What it reads: ``TypedDict`` classes (an object with exactly those keys, ``NotRequired`` ones
optional; each becomes a named component, referred to by ``$ref``), dataclasses (every field
present), ``int``/``float``/``str``/``bool``/``None``, ``Literal`` (an ``enum``), unions (``X |
None`` is nullable), ``list``/``tuple``/``Sequence`` (an array), ``dict``/``Mapping`` with string
keys (an object of any keys), enums, ``Any``; and the markers of ``shared.core.shapes`` in
``Annotated``. Anything else is refused (a ``TypeError`` naming it), never guessed.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, Required, get_args, get_origin, get_type_hints

from shared.core.shapes import FieldsOf, Keywords

Schema = dict[str, Any]
REF = "#/components/schemas/"
_PLAIN: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}
_ARRAYS = (list, tuple, Sequence, set, frozenset)
_OBJECTS = (dict, Mapping)


class Schemas:
    """The component schemas met so far (by name) and the schema of each hint asked for.

    ``names``: the component name of a class where it is not the class's own name."""

    def __init__(self, names: Mapping[type, str] | None = None) -> None:
        self.names = dict(names or {})
        self.components: dict[str, Schema] = {}
        self._named: dict[str, type] = {}

    def ref(self, cls: type) -> Schema:
        """A ``$ref`` to the component of ``cls`` (a TypedDict), worked out on first use."""
        name = self.names.get(cls, cls.__name__)
        known = self._named.get(name)
        if known is not None and known is not cls:
            raise TypeError(f"two types are both named {name!r}: {known!r} and {cls!r}")
        if known is None:
            self._named[name] = cls
            self.components[name] = {}  # a placeholder: a type may refer to itself
            self.components[name] = self._typed_dict(cls)
        return {"$ref": REF + name}

    def of(self, hint: Any) -> Schema:
        """The JSON Schema of a type hint."""
        origin = get_origin(hint)
        args = get_args(hint)
        if origin is typing.Annotated:
            return self._annotated(args[0], args[1:])
        if origin in (NotRequired, Required):
            return self.of(args[0])
        if hint is Any:
            return {}
        if hint is None or hint is types.NoneType:
            return {"type": "null"}
        if origin is typing.Literal:
            return _literal(args)
        if origin in (typing.Union, types.UnionType):
            return _union([self.of(arg) for arg in args])
        if isinstance(hint, type) and hint in _PLAIN:
            return {"type": _PLAIN[hint]}
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return _literal(tuple(member.value for member in hint))
        if typing.is_typeddict(hint):
            return self.ref(hint)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self._dataclass(hint)
        if origin is not None and _is(origin, _ARRAYS):
            if origin is tuple and (len(args) != 2 or args[1] is not Ellipsis):
                items = [self.of(arg) for arg in args]
                return {"type": "array", "prefixItems": items, "items": False}
            return {"type": "array", "items": self.of(args[0]) if args else {}}
        if origin is not None and _is(origin, _OBJECTS):
            if args and args[0] is not str:
                raise TypeError(f"a JSON object's keys are strings, not {args[0]!r}")
            return {"type": "object", "additionalProperties": self.of(args[1]) if args else {}}
        raise TypeError(f"no JSON Schema for the type {hint!r}")

    def _annotated(self, hint: Any, metadata: tuple[Any, ...]) -> Schema:
        schema = self.of(hint)
        for marker in metadata:
            if isinstance(marker, Keywords):
                schema = {**schema, **marker.words}
            elif isinstance(marker, FieldsOf):
                schema = self._fields_of(marker)
        return schema

    def _typed_dict(self, cls: type) -> Schema:
        hints = get_type_hints(cls, include_extras=True)
        total = getattr(cls, "__total__", True)
        required = [name for name, hint in hints.items() if _required(hint, total)]
        schema: Schema = {"type": "object"}
        doc = _own_doc(cls)
        if doc:
            schema["description"] = doc
        schema["properties"] = {name: self.of(hint) for name, hint in hints.items()}
        schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def _dataclass(self, cls: type) -> Schema:
        hints = get_type_hints(cls, include_extras=True)
        fields = [f.name for f in dataclasses.fields(cls)]
        return {
            "type": "object",
            "properties": {name: self.of(hints[name]) for name in fields},
            "required": fields,
            "additionalProperties": False,
        }

    def _fields_of(self, marker: FieldsOf) -> Schema:
        hints = get_type_hints(marker.of, include_extras=True)
        names = [f.name for f in dataclasses.fields(marker.of) if f.name not in marker.without]
        return {
            "type": "object",
            "properties": {name: self.of(hints[name]) for name in names},
            "additionalProperties": False,
        }


def _is(origin: Any, kinds: tuple[type, ...]) -> bool:
    return isinstance(origin, type) and issubclass(origin, kinds)


def _required(hint: Any, total: bool) -> bool:
    """Whether a TypedDict key is required (read from the hint itself: on Python 3.11 a class
    whose annotations are strings does not know its ``NotRequired`` keys)."""
    while get_origin(hint) is typing.Annotated:
        hint = get_args(hint)[0]
    if get_origin(hint) is NotRequired:
        return False
    if get_origin(hint) is Required:
        return True
    return total


def _own_doc(cls: type) -> str:
    doc = cls.__dict__.get("__doc__")
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (types.NoneType, "null"),
)


def _json_type(value: Any) -> str:
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    raise TypeError(f"no JSON type for the literal {value!r}")


def _literal(values: tuple[Any, ...]) -> Schema:
    kinds = sorted({_json_type(v) for v in values})
    typed = kinds[0] if len(kinds) == 1 else kinds
    if len(values) == 1:
        return {"type": typed, "const": values[0]}
    return {"type": typed, "enum": list(values)}


def _union(members: list[Schema]) -> Schema:
    """One schema for any of ``members``: a list of types where each is a plain type (or a
    literal that ``null`` joins), else ``anyOf``."""
    if all(m.keys() == {"type"} for m in members):
        kinds: list[str] = []
        for member in members:
            for kind in _types(member):
                if kind not in kinds:
                    kinds.append(kind)
        return {"type": kinds[0] if len(kinds) == 1 else kinds}
    null = {"type": "null"}
    others = [m for m in members if m != null]
    if len(others) == 1 and len(members) == 2 and "enum" in others[0]:
        enum_schema = others[0]
        return {
            **enum_schema,
            "type": [*_types(enum_schema), "null"],
            "enum": [*enum_schema["enum"], None],
        }
    return {"anyOf": members}


def _types(schema: Schema) -> list[str]:
    kind = schema["type"]
    return [kind] if isinstance(kind, str) else list(kind)
