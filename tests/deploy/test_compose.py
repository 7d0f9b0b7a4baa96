"""deploy/compose.yaml, checked offline: the compose-spec JSON schema (the copy check-jsonschema
ships), then what no schema checks (``checks.check_compose``), each check also run over a broken
copy. And deploy/Dockerfile: what the manifests rely on (``checks.check_dockerfile``), plus a
build of the package from exactly the files the Dockerfile copies."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.deploy import checks, operations
from tests.deploy.conftest import ROOT, compose, dockerfile, rendered


def compose_schema() -> dict[str, Any]:
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    return dict(json.loads(vendor.joinpath("compose-spec.json").read_text()))


def compose_schema_problems(doc: dict[str, Any]) -> list[str]:
    schema = compose_schema()
    validator = jsonschema.validators.validator_for(schema)
    found = validator(schema, format_checker=validator.FORMAT_CHECKER).iter_errors(doc)
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in found]


def test_the_compose_file_matches_the_compose_spec() -> None:
    assert compose_schema_problems(compose()) == []


def test_the_compose_file_passes_what_no_schema_checks(routes: dict[str, set[str]]) -> None:
    assert checks.check_compose(compose(), routes) == []


def test_the_compose_file_pins_its_images() -> None:
    assert operations.check_compose_images(compose()) == []
    broken = compose()
    broken["services"]["redis"]["image"] = "redis:7"
    broken["services"]["gateway"]["image"] = "robbers-rummy"
    problems = operations.check_compose_images(broken)
    assert any("redis: image 'redis:7'" in p for p in problems), problems
    assert any("gateway: image 'robbers-rummy' has no tag" in p for p in problems), problems


def test_the_compose_stack_is_redis_a_gateway_two_referees_scoring_bots_and_tournaments() -> None:
    services = compose()["services"]
    processes = checks.compose_processes(compose())
    assert {n: p.subcommand for n, p in processes.items()} == {
        "gateway": "gateway",
        "referee": "referee",
        "scoring": "scoring",
        "archiver": "archiver",
        "bots": "bots",
        "tournaments": "tournaments",
    }
    assert services["referee"]["deploy"]["replicas"] == 2
    assert set(services) == {
        "redis",
        "gateway",
        "referee",
        "scoring",
        "bots",
        "tournaments",
        "postgres",
        "archiver",
    }
    # The archive's data is on a volume, and the archiver waits for the database.
    assert "archive-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    assert services["archiver"]["depends_on"]["postgres"]["condition"] == "service_healthy"


@pytest.mark.parametrize(
    ("case", "mutate", "expected"),
    [
        (
            "a misspelt key",
            lambda d: d["services"]["gateway"].update(stop_grace_perod="20s"),
            "stop_grace_perod",
        ),
        (
            "a wrong type",
            lambda d: d["services"]["referee"].update(healthcheck="yes"),
            "'yes' is not of type 'object'",
        ),
        ("an unknown top-level key", lambda d: d.update(service={}), "service"),
    ],
)
def test_the_compose_schema_catches_what_it_should(
    case: str, mutate: Callable[[dict[str, Any]], Any], expected: str
) -> None:
    doc = compose()
    mutate(doc)
    assert any(expected in p for p in compose_schema_problems(doc)), case


def env(doc: dict[str, Any], service: str) -> dict[str, Any]:
    # The services share one anchored mapping: give the one service a copy of its own.
    own = dict(doc["services"][service]["environment"])
    doc["services"][service]["environment"] = own
    return own


COMPOSE_BROKEN: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "unknown variable": (
        lambda d: env(d, "referee").update(RUMMY_CLAIM_IDLE=100),
        "RUMMY_CLAIM_IDLE'] are not settings",
    ),
    "no REDIS_URL": (lambda d: env(d, "scoring").pop("REDIS_URL"), "REDIS_URL is not set"),
    "a Redis that is not a service": (
        lambda d: env(d, "gateway").update(REDIS_URL="redis://cache:6379/0"),
        "REDIS_URL host 'cache' is not a service",
    ),
    "a value the code refuses": (
        lambda d: env(d, "referee").update(RUMMY_DRAIN_SECONDS="0"),
        "RUMMY_DRAIN_SECONDS must be positive",
    ),
    "processes that disagree": (
        lambda d: env(d, "scoring").update(RUMMY_PREFIX="other:"),
        "disagree",
    ),
    "a wrong subcommand": (
        lambda d: d["services"]["scoring"].update(command=["rummy", "score"]),
        "is not `rummy` with one of",
    ),
    "a healthcheck on the wrong port": (
        lambda d: d["services"]["referee"]["healthcheck"].update(
            test=["CMD", "curl", "-f", "http://127.0.0.1:9102/readyz"]
        ),
        "asks port 9102, the process listens on 9101",
    ),
    "a healthcheck that follows RUMMY_HTTP_PORT": (
        lambda d: env(d, "scoring").update(RUMMY_HTTP_PORT="9300"),
        "asks port 9102, the process listens on 9300",
    ),
    "a healthcheck on liveness": (
        lambda d: d["services"]["gateway"]["healthcheck"].update(
            test=["CMD", "curl", "-f", "http://127.0.0.1:8080/healthz"]
        ),
        "asks '/healthz', not /readyz",
    ),
    "a stop grace within the drain": (
        lambda d: d["services"]["referee"].update(stop_grace_period="10s"),
        "stop_grace_period 10s is not more than RUMMY_DRAIN_SECONDS 10",
    ),
    "root": (lambda d: d["services"]["gateway"].update(user="0"), "runs as root"),
    "a writable root": (
        lambda d: d["services"]["scoring"].update(read_only=False),
        "not read-only",
    ),
    "no /tmp": (lambda d: d["services"]["referee"].pop("tmpfs"), "no tmpfs at /tmp"),
    "capabilities kept": (
        lambda d: d["services"]["gateway"].pop("cap_drop"),
        "capabilities are not all dropped",
    ),
    "not waiting for Redis": (
        lambda d: d["services"]["referee"].update(depends_on=["redis"]),
        "does not wait for redis to be healthy",
    ),
    "Redis without its append-only file": (
        lambda d: d["services"]["redis"].update(command=["redis-server", "--appendonly", "no"]),
        "without --appendonly yes",
    ),
    "the append-only file off its volume": (
        lambda d: d["services"]["redis"].update(volumes=["redis-data:/var/lib/redis"]),
        "directory /data is not a volume",
    ),
}


@pytest.mark.parametrize("case", sorted(COMPOSE_BROKEN))
def test_each_compose_check_catches_its_fault(case: str, routes: dict[str, set[str]]) -> None:
    mutate, expected = COMPOSE_BROKEN[case]
    doc = compose()
    mutate(doc)
    problems = checks.check_compose(doc, routes)
    assert any(expected in p for p in problems), (expected, problems)


# --- the image ----------------------------------------------------------------------------------


def test_the_dockerfile_gives_what_the_manifests_rely_on() -> None:
    assert checks.check_dockerfile(dockerfile(), ROOT) == []


def test_the_manifests_run_as_the_image_s_user() -> None:
    """runAsNonRoot can only verify a numeric user; the pods and compose name the same one."""
    uid, _, gid = (checks.dockerfile_user(dockerfile()) or "").partition(":")
    for name in ("base", "dev", "prod"):
        for _, spec in checks.workloads(rendered(name)):
            if any(checks.is_ours(c) for c in spec["containers"]):
                context = spec["securityContext"]
                assert (str(context["runAsUser"]), str(context["runAsGroup"])) == (uid, gid)
    for service in checks.compose_processes(compose()):
        assert compose()["services"][service]["user"] == f"{uid}:{gid}"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("FROM python:3.11-slim\n", "FROM python:3.12\n", "not python:3.11-slim"),
        ("USER 10001:10001", "USER rummy", "not a numeric non-root uid"),
        ("USER 10001:10001", "USER 0", "not a numeric non-root uid"),
        ('CMD ["rummy", "gateway"]', 'CMD ["rummy", "serve"]', "is not `rummy` with one of"),
        ("    PYTHONDONTWRITEBYTECODE=1 \\\n", "", "PYTHONDONTWRITEBYTECODE=1 is not set"),
        ("COPY shared ./shared", "COPY shared no-such-dir ./shared", "COPY no-such-dir: not in"),
        ("RUMMY_SOLVER_BUILD=", "RUMMY_SOLVER_DIR=", "['RUMMY_SOLVER_DIR'] are not settings"),
    ],
)
def test_each_dockerfile_check_catches_its_fault(old: str, new: str, expected: str) -> None:
    text = dockerfile()
    if old.startswith("FROM"):  # the final stage's FROM, not the build stage's
        head, _, tail = text.rpartition(old)
        broken = head + new + tail
    else:
        assert old in text
        broken = text.replace(old, new)
    problems = checks.check_dockerfile(broken, ROOT)
    assert any(expected in p for p in problems), (expected, problems)


def copied_files(text: str) -> list[str]:
    """The build-context paths the Dockerfile's COPY instructions take."""
    out = []
    for word, rest in checks.dockerfile_instructions(text):
        if word == "COPY" and "--from=" not in rest:
            out += rest.split()[:-1]
    return out


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_package_builds_from_what_the_dockerfile_copies(tmp_path: Path) -> None:
    """What `pip install .` in the image does, on exactly the COPYed files (tracked ones):
    a wheel with every module, every data file and the `rummy` command."""
    pytest.importorskip("setuptools")
    context = tmp_path / "context"
    listed = subprocess.run(
        ["git", "ls-files", *copied_files(dockerfile())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "pyproject.toml" in listed and any(p.startswith("services/") for p in listed)
    for path in listed:
        (context / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, context / path)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path / "wheels"),
            str(context),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    main_modules = ("services/main.py", "services/gateway/main.py", "services/referee/main.py")
    for module in (*main_modules, "shared/cli/main.py"):
        assert module in names
    # Files the code reads at run time (templates, the web client) must be in the wheel too:
    # setuptools leaves out what is not a Python module unless it is declared package data.
    data = [p for p in listed if p.startswith(("shared/", "services/")) and not p.endswith(".py")]
    missing = sorted(set(data) - set(names))
    assert missing == [], f"not in the image (declare them as package data): {missing}"
    entry_points = [n for n in names if n.endswith("entry_points.txt")]
    assert entry_points
    text = zipfile.ZipFile(wheel).read(entry_points[0]).decode()
    assert "rummy = services.main:main" in text
