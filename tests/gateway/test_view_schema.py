"""The published schemas hold for what the code really sends: every view of self-played games
(each viewer, after every command, in each rule family) validates against /openapi.json's View,
and so does every answer of whole games played over the API. The schemas are closed (no key
they do not list), so a field added to a view without its type fails here."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from services.gateway.openapi import openapi_document
from shared.core.gameview import TurnView
from shared.core.state import GameState
from shared.core.views import view_json
from shared.core.visibility import TURN
from shared.play.bots import BOTS
from shared.play.selfplay import SelfPlay
from tests.gateway.api import Api, Reply, play_to_end
from tests.gateway.conftest import MakeStack

jsonschema = pytest.importorskip("jsonschema", reason="comes with openapi-spec-validator (test)")

HEAD = "ab" * 32
# The rule families, and variants that reach the view's rarer fields (a deadline, a card taken
# from the pile, reshuffles, scores of several rounds).
GAMES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("robbers", {"match_rounds": 1}, ["greedy", "clumsy"]),
    (
        "robbers",
        {"discard_pile": True, "turn_seconds": 30, "match_rounds": 2},
        ["random", "stubborn", "greedy"],
    ),
    ("robbers-classic", {"match_rounds": 1}, ["greedy", "random"]),
    ("rummikub", {"match_rounds": 1}, ["greedy", "clumsy", "random"]),
    ("rummikub", {"scoring": "plus_minus", "match_rounds": 2}, ["greedy", "greedy"]),
]


def validator(component: str) -> Any:
    """A validator of the document's component ``component`` (its references resolved within
    the document, formats checked)."""
    doc = openapi_document()
    root = {"$ref": f"#/components/schemas/{component}", "components": doc["components"]}
    cls = jsonschema.Draft202012Validator
    cls.check_schema(root)
    return cls(root, format_checker=cls.FORMAT_CHECKER)


def errors_of(check: Any, instance: Any) -> list[str]:
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in check.iter_errors(instance)
    ]


def self_played(rules: str, options: dict[str, Any], bots: list[str], seed: int) -> list[GameState]:
    """Every state a self-played game passed through (after each command)."""
    play = SelfPlay(
        rules,
        options,
        [BOTS[b]() for b in bots],
        bytes([seed]) * 16,
        random.Random(seed),
        timeout_rate=0.05,
    )
    states: list[GameState] = []
    apply = play.apply

    def recording(command: Any) -> Any:
        outcome = apply(command)
        states.append(play.state)
        return outcome

    play.apply = recording  # type: ignore[method-assign]
    report = play.play()
    assert report.finished and not report.violations, report.violations
    return states


def keys_seen(value: Any, path: str, into: set[str]) -> None:
    """Every key path (list items as ``[]``, seat keys as ``{}``) in ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            name = "{}" if re.fullmatch(r"\d+", str(key)) else key
            into.add(f"{path}.{name}")
            keys_seen(item, f"{path}.{name}", into)
    elif isinstance(value, list):
        for item in value:
            keys_seen(item, f"{path}[]", into)


def schema_paths(
    schemas: dict[str, Any], schema: dict[str, Any], path: str, into: set[str]
) -> None:
    """Every key path the schema lists (as ``keys_seen`` names them)."""
    if "$ref" in schema:
        schema_paths(schemas, schemas[schema["$ref"].rsplit("/", 1)[-1]], path, into)
    for member in schema.get("anyOf", []):
        schema_paths(schemas, member, path, into)
    for key, item in schema.get("properties", {}).items():
        into.add(f"{path}.{key}")
        schema_paths(schemas, item, f"{path}.{key}", into)
    if isinstance(schema.get("additionalProperties"), dict):
        schema_paths(schemas, schema["additionalProperties"], f"{path}.{{}}", into)
    if isinstance(schema.get("items"), dict):
        schema_paths(schemas, schema["items"], f"{path}[]", into)


def test_every_view_of_self_played_games_fits_the_published_schema() -> None:
    check = validator("View")
    seen: set[str] = set()
    for n, (rules, options, bots) in enumerate(GAMES):
        for state in self_played(rules, options, bots, seed=n + 1):
            for viewer in [None, *range(len(state.names))]:
                view = {**view_json(state, viewer), "head": HEAD}
                problems = errors_of(check, view)
                assert not problems, (rules, state.version, viewer, problems)
                keys_seen(view, "", seen)
    # The games reached every field the schema lists (else a field could be typed wrongly
    # and no view here would show it), but the options no game here changes.
    listed: set[str] = set()
    schemas = openapi_document()["components"]["schemas"]
    schema_paths(schemas, schemas["View"], "", listed)
    unseen = {p for p in listed - seen if not p.startswith(".rules.options.")}
    assert not unseen, sorted(unseen)


def test_the_turn_type_lists_what_the_visibility_rule_declares() -> None:
    assert set(TURN) == TurnView.__required_keys__ | TurnView.__optional_keys__


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (lambda v: v | {"extra": 1}, "Additional properties"),
        (lambda v: v | {"stock": "many"}, "is not of type 'integer'"),
        (lambda v: v | {"status": "new"}, "is not one of"),
        (lambda v: {k: x for k, x in v.items() if k != "discard_count"}, "is a required property"),
        (lambda v: v | {"seats": [{**v["seats"][0], "hand": ["AS"]}]}, "Additional properties"),
    ],
)
def test_a_view_off_the_schema_is_refused(change: Any, complaint: str) -> None:
    """The check above can fail: a view with a key too many, of a wrong type, or missing one."""
    check = validator("View")
    state = self_played("robbers", {"match_rounds": 1}, ["greedy", "greedy"], seed=9)[5]
    view = {**view_json(state, 0), "head": HEAD}
    assert not errors_of(check, view)
    assert any(complaint in e for e in errors_of(check, change(view))), errors_of(
        check, change(view)
    )


class CheckedApi(Api):
    """The API client, every answer checked against the document's schema for its route,
    method and status (an answer whose status the document does not list fails too)."""

    def __init__(self, api: Api) -> None:
        super().__init__(api.http, api.base)
        self.doc = openapi_document()
        self.routes = [
            (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), path)
            for path in self.doc["paths"]
        ]
        self.checked: dict[str, int] = {}

    async def call(self, method: str, path: str, *args: Any, **kwargs: Any) -> Reply:
        reply = await super().call(method, path, *args, **kwargs)
        route = next(p for pattern, p in self.routes if pattern.match(path.split("?")[0]))
        answers = self.doc["paths"][route][method.lower()]["responses"]
        assert str(reply.status) in answers, (method, route, reply)
        content = answers[str(reply.status)].get("content", {}).get("application/json")
        if content and "schema" in content:
            root = {**content["schema"], "components": self.doc["components"]}
            check = jsonschema.Draft202012Validator(root)
            problems = errors_of(check, reply.body)
            assert not problems, (method, route, reply.status, problems)
            key = f"{method} {route} {reply.status}"
            self.checked[key] = self.checked.get(key, 0) + 1
        return reply


@pytest.mark.parametrize(
    ("rules", "bots"),
    [
        ("robbers", ["greedy", "clumsy"]),
        ("robbers-classic", ["greedy", "random"]),
        ("rummikub", ["greedy", "clumsy"]),
    ],
)
async def test_the_answers_of_whole_games_fit_the_published_schemas(
    make_stack: MakeStack, rules: str, bots: list[str]
) -> None:
    stack = await make_stack(limit_address_per_second=0, rate_per_second=0)
    api = CheckedApi(stack.api)
    game_id, _, tokens = await api.new_game(rules, len(bots), {"match_rounds": 1})
    played = await play_to_end(api, game_id, tokens, bots, seed=3)
    assert played.final["status"] == "finished"
    for seat, token in enumerate(tokens):
        assert (await api.view(game_id, token))["you"] == seat
    refused = await api.call("POST", f"/api/games/{game_id}/commands", {"id": "x"}, tokens[0])
    assert refused.status == 422
    for key in (
        "GET /api/games/{game_id} 200",
        "POST /api/games 201",
        "POST /api/games/{game_id}/seats 201",
        "POST /api/games/{game_id}/start 200",
        "POST /api/games/{game_id}/commands 200",
        "POST /api/games/{game_id}/commands 422",
    ):
        assert api.checked.get(key), (key, api.checked)
