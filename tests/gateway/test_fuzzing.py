"""Generated requests against a real `rummy serve` (on its embedded store, a spare port): for
every operation /openapi.json lists, requests that fit its schemas and requests that do not,
on unknown games and on a game in play (without a token, with the host's, with a seat's). Every
answer must be no server error, of a status the document lists for it, of the content type and
the body schema it documents (an error: the published error shape); a request that breaks the
schema must be refused.

Deterministic (derandomized, no example database) and bounded (``EXAMPLES`` a mode and an
operation); no deadline: the machine's speed is never under test. The server counts no limit
per address (every request comes from 127.0.0.1), as the fault harness runs it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from services.gateway.openapi import openapi_document
from tests.faults.harness import NO_ADDRESS_LIMITS
from tests.ports import spare_port
from tests.servers import START_TIMEOUT, Process, url_ok, wait_until

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the test extras")
requests = pytest.importorskip("requests", reason="comes with schemathesis")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402

EXAMPLES = 25
OPERATIONS = [
    (path, method)
    for path, operations in openapi_document()["paths"].items()
    for method in operations
]
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
]


@dataclass
class Served:
    """The server under test and a game in play on it."""

    url: str
    game_id: str
    host: str
    seats: list[str]
    process: Process


def _call(url: str, method: str, path: str, body: Any = None, token: str = "") -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    reply = requests.request(method, url + path, json=body, headers=headers, timeout=30)
    assert reply.status_code < 300, (method, path, reply.status_code, reply.text)
    return reply.json()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    port = spare_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("RUMMY_")}
    env |= {"RUMMY_LOG_LEVEL": "warning", "PYTHONUNBUFFERED": "1", **NO_ADDRESS_LIMITS}
    # The host's and the seats' tokens send many of the requests: no limit per token either.
    env |= {"RUMMY_RATE_PER_SECOND": "0", "RUMMY_LIMIT_HINT_PER_MINUTE": "0"}
    args = [sys.executable, "-m", "services.main", "serve", "--port", str(port)]
    process = Process("serve", args, env, tmp_path_factory.mktemp("fuzzing"), port)
    url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            assert process.alive, f"rummy serve exited:\n{process.output()[-3000:]}"
            return url_ok(f"{url}/readyz")

        wait_until(ready, START_TIMEOUT, every=0.1, message=lambda: process.output()[-3000:])
        created = _call(url, "POST", "/api/games", {"rules": "robbers", "seats": 2})
        game_id, host = created["game_id"], created["host_token"]
        seats = [
            _call(url, "POST", f"/api/games/{game_id}/seats", {"name": f"p{n}"})["token"]
            for n in range(2)
        ]
        _call(url, "POST", f"/api/games/{game_id}/start", token=host)
        yield Served(url, game_id, host, seats, process)
        assert "Traceback" not in process.output(), process.output()[-5000:]
    finally:
        process.close()


@pytest.fixture(scope="module")
def schema(served: Served) -> Any:
    """The document as the server serves it."""
    return schemathesis.openapi.from_url(f"{served.url}/openapi.json")


def _strategies(operation: Any, mode: GenerationMode, served: Served, path: str) -> Any:
    """Requests of ``mode`` on unknown games and on the game in play, as each role."""
    made = [operation.as_strategy(generation_mode=mode)]
    if "{game_id}" in path:
        for token in ("", served.host, served.seats[0], served.seats[1]):
            headers = {"Authorization": f"Bearer {token}"} if token else None
            made.append(
                operation.as_strategy(
                    generation_mode=mode,
                    path_parameters={"game_id": served.game_id},
                    headers=headers,
                )
            )
    return st.one_of(made)


def _can_break(operation: dict[str, Any]) -> bool:
    """Whether a request can break the operation's schema: it has a body, or a header or query
    parameter that is more than any text (a path parameter of any text cannot be broken)."""
    return "requestBody" in operation or any(
        p["in"] != "path" and p["schema"] != {"type": "string"}
        for p in operation.get("parameters", [])
    )


@pytest.mark.parametrize(("path", "method"), OPERATIONS, ids=[f"{m} {p}" for p, m in OPERATIONS])
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_generated_requests_get_documented_answers(
    served: Served, schema: Any, path: str, method: str, mode: GenerationMode
) -> None:
    documented = openapi_document()["paths"][path][method]
    if mode is GenerationMode.NEGATIVE and not _can_break(documented):
        pytest.skip("nothing in this request can break its schema")
    operation = schema[path][method.upper()]
    checks = [getattr(schemathesis.checks, name) for name in CHECKS]
    if mode is GenerationMode.NEGATIVE:
        checks.append(schemathesis.checks.negative_data_rejection)
    http = requests.Session()
    statuses: list[int] = []

    @given(case=_strategies(operation, mode, served, path))
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        response = case.call(base_url=served.url, session=http, timeout=60)
        statuses.append(response.status_code)
        case.validate_response(response, checks=checks)

    try:
        run()
    finally:
        http.close()
    assert served.process.alive, served.process.output()[-3000:]
    if "{game_id}" in path:  # the game in play was reached, not only unknown games
        assert set(statuses) - {404}, sorted(statuses)
