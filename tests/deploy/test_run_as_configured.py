"""The processes run exactly as the dev overlay and the compose file configure them (command,
settings, the image's environment), each on its real port, and:

- every probe (liveness, readiness, startup; the compose healthcheck) answers 200 where the
  manifest points it, once Redis is up; a path that is not served answers 404 (a control: the
  probing does see failures);
- the gateway, referee, scoring, bots, archiver and tournaments work together (a game is
  created: the referee answered);
- on SIGTERM each exits 0 within its termination grace;
- nothing writes outside /tmp (the read-only root filesystem): ``readonly_hook.py`` records
  every write attempt Python makes.

To get the real ports whatever else runs on this machine, the processes run in a network
namespace of their own (``unshare -n``, as root). REDIS_URL is pointed at a redis-server in
that namespace: the manifests' in-cluster name (``redis-0.redis``) is checked statically in
``test_manifests.py``. Skipped, saying why, without ``unshare`` rights or ``redis-server``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.deploy import checks
from tests.deploy.conftest import ROOT, compose, dockerfile, rendered

HERE = Path(__file__).resolve().parent
HOOK = HERE / "readonly_hook.py"
LOCAL_REDIS = "redis://127.0.0.1:6379/0"


def can_unshare() -> str | None:
    """Why the processes cannot get a network namespace here, or None if they can."""
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    try:
        done = subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"unshare -n fails: {err}"
    if done.returncode != 0:
        return f"unshare -n is not allowed here: {done.stderr.decode(errors='replace').strip()}"
    return None


@pytest.fixture(scope="module")
def netns() -> None:
    why = can_unshare()
    if why is not None:
        pytest.skip(why)
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not on the PATH (.ci/run installs it)")


def image_env(tmp: Path, name: str) -> dict[str, str]:
    """What the image gives every process: its ENV (PATH aside: this machine's), no more."""
    env = {k: v for k, v in checks.dockerfile_env(dockerfile()).items() if k != "PATH"}
    env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
    env["RO_LOG"] = str(tmp / f"{name}.writes")
    return env


def run(tmp: Path, processes: list[dict[str, Any]], api_port: int, drain: float) -> dict[str, Any]:
    spec = {
        "redis_server": shutil.which("redis-server"),
        "workdir": str(tmp),
        "python": sys.executable,
        "hook": str(HOOK),
        "processes": processes,
        "api_port": api_port,
        "drain_seconds": drain,
    }
    (tmp / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        ["unshare", "-n", sys.executable, str(HERE / "netns_run.py"), str(tmp / "spec.json")],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def assert_ran_as_configured(result: dict[str, Any], names: list[str]) -> None:
    logs = result["logs"]
    for probe, code in result["probes"].items():
        expected = 404 if probe.endswith("control") else 200
        assert code == expected, (probe, code, logs)
    assert result["game"] == 201, logs
    assert result["exit"] == {name: 0 for name in names}, logs
    assert result["writes"] == {name: [] for name in names}


def local_stores(tmp_path: Path) -> dict[str, str]:
    """The run's own Redis, and an archive of its own in place of the deployment's PostgreSQL
    (the namespace has no database server: an SQLite file takes its place)."""
    return {"REDIS_URL": LOCAL_REDIS, "RUMMY_ARCHIVE_URL": f"sqlite://{tmp_path}/archive.db"}


def test_the_dev_overlay_s_containers_run_as_configured(netns: None, tmp_path: Path) -> None:
    resources = rendered("dev")
    processes = []
    drain = 0.0
    api_port: int | None = None
    for workload, spec in checks.workloads(resources):
        for container in spec["containers"]:
            if not checks.is_ours(container):
                continue
            where = f"{checks.name_of(workload)} container {container['name']}"
            (process,) = [p for p in checks.k8s_processes(resources) if p.where == where]
            name = container["name"]
            env = image_env(tmp_path, name) | process.env | local_stores(tmp_path)
            probes = [
                {
                    "kind": kind,
                    "port": checks.container_port(container, container[kind]["httpGet"]["port"]),
                    "path": container[kind]["httpGet"]["path"],
                }
                for kind in ("livenessProbe", "readinessProbe", "startupProbe")
                if kind in container
            ]
            probes.append({**probes[0], "kind": "control", "path": "/no-such-path"})
            processes.append(
                {"name": name, "command": container["command"], "env": env, "probes": probes}
            )
            settings = process.settings()
            assert settings is not None
            drain = max(drain, settings.drain_seconds)
            if name == "gateway":
                api_port = process.listen_port()
    assert {p["name"] for p in processes} == {
        *("gateway", "referee", "scoring", "archiver", "bots", "tournaments"),
    }
    result = run(tmp_path, processes, api_port, drain)
    assert len(result["probes"]) == 6 * 4
    assert_ran_as_configured(
        result, ["gateway", "referee", "scoring", "archiver", "bots", "tournaments"]
    )


def test_the_compose_services_run_as_configured(netns: None, tmp_path: Path) -> None:
    doc = compose()
    processes = []
    drain = 0.0
    api_port: int | None = None
    for name, process in checks.compose_processes(doc).items():
        service = doc["services"][name]
        env = image_env(tmp_path, name) | process.env | local_stores(tmp_path)
        test = " ".join(service["healthcheck"]["test"])
        (url,) = [w for w in test.replace("'", " ").split() if w.startswith("http://")]
        port = int(url.split(":")[2].split("/")[0])
        path = "/" + url.split("/", 3)[3]
        probes = [
            {"kind": "healthcheck", "port": port, "path": path},
            {"kind": "control", "port": port, "path": "/no-such-path"},
        ]
        processes.append({"name": name, "command": process.command, "env": env, "probes": probes})
        settings = process.settings()
        assert settings is not None
        drain = max(drain, settings.drain_seconds)
        if process.subcommand == "gateway":
            api_port = process.listen_port()
    result = run(tmp_path, processes, api_port, drain)
    assert_ran_as_configured(
        result, ["gateway", "referee", "scoring", "archiver", "bots", "tournaments"]
    )


# --- the write watch sees writes --------------------------------------------------------------


def watched(tmp_path: Path, code: str, allowed: str, **env: str) -> list[str]:
    log = tmp_path / "writes.log"
    log.unlink(missing_ok=True)
    base = {"PATH": os.environ.get("PATH", ""), "RO_LOG": str(log), "RO_ALLOWED": allowed}
    script = (
        f"import sys; sys.path.insert(0, {str(HERE)!r})\n"
        f"import readonly_hook; readonly_hook.install()\n{code}"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=base | env, capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_the_write_watch_reports_a_write_outside_the_allowed_directories(tmp_path: Path) -> None:
    target = tmp_path / "state.txt"
    code = f"open({str(target)!r}, 'w').write('x')"
    assert watched(tmp_path, code, allowed="/dev") == [f"open {target} mode='w'"]
    assert watched(tmp_path, code, allowed=str(tmp_path)) == []


def test_without_the_image_s_pythondontwritebytecode_imports_would_write(tmp_path: Path) -> None:
    """Why the Dockerfile sets PYTHONDONTWRITEBYTECODE=1: else Python caches bytecode next
    to a module it imports, which a read-only root filesystem refuses."""
    (tmp_path / "fresh_module.py").write_text("X = 1\n")
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import fresh_module"
    written = watched(tmp_path, code, allowed="/dev")
    assert any("__pycache__" in line for line in written), written
    (tmp_path / "other_module.py").write_text("X = 1\n")
    code = code.replace("fresh_module", "other_module")
    env = checks.dockerfile_env(dockerfile())
    assert (
        watched(
            tmp_path, code, allowed="/dev", PYTHONDONTWRITEBYTECODE=env["PYTHONDONTWRITEBYTECODE"]
        )
        == []
    )
