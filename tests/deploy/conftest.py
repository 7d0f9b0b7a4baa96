"""Fixtures of the deployment tests: the files under deploy/, rendered and loaded once."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.checks import service_routes
from tests.deploy.kustomize import Resource, render, render_here

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
KUSTOMIZATIONS = {
    "base": K8S / "base",
    "dev": K8S / "overlays" / "dev",
    "prod": K8S / "overlays" / "prod",
    "monitoring": K8S / "monitoring",  # the Prometheus Operator's kinds, applied on their own
}
SERVICE = ("base", "dev", "prod")  # the renderings that run the service
RENDERER = "kubectl kustomize" if shutil.which("kubectl") else "the in-test renderer"

_rendered: dict[str, list[Resource]] = {}


def rendered(name: str) -> list[Resource]:
    """A fresh copy of one kustomization's resources (kubectl when installed, else ours)."""
    if name not in _rendered:
        _rendered[name] = render(KUSTOMIZATIONS[name])
    return copy.deepcopy(_rendered[name])


def rendered_here(name: str) -> list[Resource]:
    return render_here(KUSTOMIZATIONS[name])


def compose() -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / "compose.yaml").read_text()))


def dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text()


@pytest.fixture(scope="session")
def routes() -> dict[str, set[str]]:
    return service_routes()
