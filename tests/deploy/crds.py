"""The Prometheus Operator's kinds (PodMonitor, PrometheusRule), checked against schemas of our
own in ``tests/deploy/schemas``: kubernetes-validate ships only the built-in kinds, and the
operator's CRDs are not worth vendoring whole for the few fields these manifests use. Each schema
is strict (an unknown field is an error) and requires what the operator needs.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from tests.deploy.kustomize import Resource

SCHEMAS = Path(__file__).resolve().parent / "schemas"


def schema_file(resource: Resource) -> Path:
    group_version = str(resource.get("apiVersion", "")).replace("/", "-")
    return SCHEMAS / f"{group_version}-{resource.get('kind')}.json"


def is_ours(resource: Resource) -> bool:
    """Whether a resource is of a kind this module has a schema for."""
    return schema_file(resource).is_file()


@cache
def _validator(path: Path) -> Any:
    schema = json.loads(path.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def problems(resource: Resource) -> list[str]:
    """What the schema of the resource's kind finds wrong with it."""
    where = f"{resource.get('kind')}/{(resource.get('metadata') or {}).get('name')}"
    found = _validator(schema_file(resource)).iter_errors(resource)
    return [f"{where}: {'/'.join(map(str, e.path))}: {e.message}" for e in found]
