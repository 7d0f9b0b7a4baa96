"""What no schema checks in the deployment files, as functions that return the problems found
(an empty list: none). The tests run each over the real files, and over broken copies to show
that it catches what it is for.

The facts come from the code, not from a copy of it: the settings a process reads
(``shared.infra.settings``), its subcommands (``services.main``), its default ports (each
service's ``DEFAULT_PORT``) and the routes its app serves (``service_routes``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from services.archiver.main import DEFAULT_PORT as ARCHIVER_PORT
from services.bots.main import DEFAULT_PORT as BOTS_PORT
from services.gateway.main import DEFAULT_PORT as GATEWAY_PORT
from services.main import build_parser
from services.referee.main import DEFAULT_PORT as REFEREE_PORT
from services.scoring.main import DEFAULT_PORT as SCORING_PORT
from services.tournament.main import DEFAULT_PORT as TOURNAMENTS_PORT
from shared.infra.settings import ENV_NAMES, Settings, SettingsError
from tests.deploy.kustomize import Resource, pod_spec, split_image

IMAGE = "robbers-rummy"  # the project's image (any registry, any tag)
PROCESSES = {
    "gateway": GATEWAY_PORT,
    "referee": REFEREE_PORT,
    "scoring": SCORING_PORT,
    "archiver": ARCHIVER_PORT,
    "bots": BOTS_PORT,
    "tournaments": TOURNAMENTS_PORT,
}
LIVENESS, READINESS = "/healthz", "/readyz"
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")
PLACEHOLDER_URL = "redis://from-a-secret:6379/0"


def service_routes() -> dict[str, set[str]]:
    """The GET paths each process serves, read from the real app factories: the gateway's
    ``make_app`` and the health app every other process runs (``start_health_server``)."""
    import fakeredis
    from aiohttp import web
    from prometheus_client import CollectorRegistry

    from services.gateway.app import make_app
    from shared.infra.observability import health_routes

    async def ready() -> tuple[bool, str]:
        return True, "ok"

    def paths(app: web.Application) -> set[str]:
        return {
            route.resource.canonical
            for route in app.router.routes()
            if route.method in ("GET", "*") and route.resource is not None
        }

    health = web.Application()
    health_routes(health, CollectorRegistry(), ready)
    gateway = make_app(fakeredis.aioredis.FakeRedis(), Settings())
    return {
        "gateway": paths(gateway),
        "referee": paths(health),
        "scoring": paths(health),
        "archiver": paths(health),
        "bots": paths(health),
        "tournaments": paths(health),
    }


# --- one rummy process as a manifest or the compose file describes it -------------------------


def parse(command: list[str]) -> argparse.Namespace | None:
    """``rummy``'s own reading of a command line (None: it would refuse it)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return build_parser().parse_args(command[1:])
    except SystemExit:
        return None


@dataclass
class Process:
    """A container of the project's image: where it is, its command, its environment."""

    where: str
    command: list[str]
    env: dict[str, str] = field(default_factory=dict)  # resolved values (secrets: placeholders)
    problems: list[str] = field(default_factory=list)  # found while resolving

    @property
    def subcommand(self) -> str:
        return self.command[1] if len(self.command) > 1 and self.command[0] == "rummy" else ""

    def settings(self) -> Settings | None:
        try:
            return Settings.from_env(self.env)
        except SettingsError:
            return None

    def listen_port(self) -> int | None:
        """The port the process listens on, as its ``main`` decides: ``--port`` (gateway),
        else ``RUMMY_HTTP_PORT``, else the service's default."""
        settings = self.settings()
        if settings is None or self.subcommand not in PROCESSES:
            return None
        if self.subcommand == "gateway":
            args = parse(self.command)
            if args is None:
                return None
            if args.port:
                return int(args.port)
        return settings.http_port or PROCESSES[self.subcommand]


def check_process(process: Process) -> list[str]:
    """Command, settings: every variable set is a setting the code reads, REDIS_URL is set (the
    separate processes refuse to start without it) and every value parses."""
    where = process.where
    problems = list(process.problems)
    if process.subcommand not in PROCESSES:
        problems.append(
            f"{where}: command {process.command} is not `rummy` with one of {sorted(PROCESSES)}"
        )
    else:
        if parse(process.command) is None:
            problems.append(f"{where}: `{shlex.join(process.command)}` does not parse")
    unknown = sorted(set(process.env) - ENV_NAMES)
    if unknown:
        problems.append(f"{where}: {unknown} are not settings the code reads")
    if not process.env.get("REDIS_URL"):
        problems.append(f"{where}: REDIS_URL is not set (rummy {process.subcommand} needs it)")
    else:
        scheme = urlsplit(process.env["REDIS_URL"]).scheme
        if scheme not in ("redis", "rediss", "unix"):
            problems.append(f"{where}: REDIS_URL {process.env['REDIS_URL']!r} is not a Redis URL")
    try:
        Settings.from_env(process.env)
    except SettingsError as err:
        problems.append(f"{where}: {err}")
    return problems


def check_agreement(processes: list[Process]) -> list[str]:
    """Every process of a deployment must use the same Redis, prefix and partitions."""
    seen: dict[tuple[Any, ...], list[str]] = {}
    for process in processes:
        settings = process.settings()
        if settings is None:
            continue
        key = (settings.redis_url, settings.redis_cluster, settings.prefix, settings.partitions)
        seen.setdefault(key, []).append(process.where)
    if len(seen) > 1:
        return [f"processes disagree on Redis, prefix or partitions: {seen}"]
    return []


# --- Kubernetes ---------------------------------------------------------------------------------


def workloads(resources: list[Resource]) -> Iterator[tuple[Resource, dict[str, Any]]]:
    for resource in resources:
        if resource["kind"] in WORKLOADS:
            spec = pod_spec(resource)
            if spec is not None:
                yield resource, spec


def name_of(resource: Resource) -> str:
    return f"{resource['kind']}/{resource['metadata']['name']}"


def find(resources: list[Resource], kind: str, name: str) -> Resource | None:
    for resource in resources:
        if resource["kind"] == kind and resource["metadata"]["name"] == name:
            return resource
    return None


def is_ours(container: dict[str, Any]) -> bool:
    return split_image(str(container.get("image", "")))[0].rsplit("/", 1)[-1] == IMAGE


def k8s_processes(resources: list[Resource]) -> list[Process]:
    """Every container of the project's image, with its environment resolved the way the
    kubelet does (``envFrom`` first, ``env`` overrides)."""
    out = []
    for workload, spec in workloads(resources):
        for container in spec.get("containers", []):
            if not is_ours(container):
                continue
            where = f"{name_of(workload)} container {container['name']}"
            process = Process(where, [str(c) for c in container.get("command", [])])
            for source in container.get("envFrom", []):
                if "prefix" in source:
                    process.problems.append(f"{where}: envFrom with a prefix")
                ref = source.get("configMapRef")
                if ref is None:
                    process.problems.append(f"{where}: envFrom {source} hides the names it sets")
                    continue
                config = find(resources, "ConfigMap", ref["name"])
                if config is None:
                    process.problems.append(f"{where}: no ConfigMap {ref['name']}")
                    continue
                process.env.update({k: str(v) for k, v in (config.get("data") or {}).items()})
            for var in container.get("env", []):
                process.env[var["name"]] = _env_value(resources, where, var, process.problems)
            out.append(process)
    return out


def _env_value(
    resources: list[Resource], where: str, var: dict[str, Any], problems: list[str]
) -> str:
    if "value" in var:
        return str(var["value"])
    source = var.get("valueFrom") or {}
    if "configMapKeyRef" in source:
        ref = source["configMapKeyRef"]
        config = find(resources, "ConfigMap", ref["name"])
        if config is None or ref["key"] not in (config.get("data") or {}):
            problems.append(f"{where}: {var['name']} refers to a missing ConfigMap key {ref}")
            return ""
        return str(config["data"][ref["key"]])
    if "secretKeyRef" in source:
        ref = source["secretKeyRef"]
        if ref.get("optional"):
            problems.append(f"{where}: {var['name']} comes from an optional Secret key")
        return PLACEHOLDER_URL if var["name"] == "REDIS_URL" else "from-a-secret"
    if "fieldRef" in source:
        return "pod-name-0"
    problems.append(f"{where}: {var['name']} has no value")
    return ""


def container_port(container: dict[str, Any], port: Any) -> int | None:
    """A probe's or Service's port (a number or a port name) as the container's port number."""
    for declared in container.get("ports", []):
        if port in (declared.get("name"), declared.get("containerPort")):
            return int(declared["containerPort"])
    return None


def check_probes(resources: list[Resource], routes: dict[str, set[str]]) -> list[str]:
    """Liveness on /healthz, readiness on /readyz (and a startup probe, if any, on a served
    path), each on the port the process really listens on, which the container declares."""
    problems = []
    processes = {p.where: p for p in k8s_processes(resources)}
    for workload, spec in workloads(resources):
        for container in spec.get("containers", []):
            where = f"{name_of(workload)} container {container['name']}"
            if not is_ours(container):
                for kind in ("livenessProbe", "readinessProbe"):
                    if kind not in container:
                        problems.append(f"{where}: no {kind}")
                continue
            process = processes[where]
            listens = process.listen_port()
            served = routes.get(process.subcommand, set())
            wanted = {"livenessProbe": LIVENESS, "readinessProbe": READINESS, "startupProbe": None}
            for kind, path in wanted.items():
                probe = container.get(kind)
                if probe is None:
                    if path is not None:
                        problems.append(f"{where}: no {kind}")
                    continue
                get = probe.get("httpGet")
                if get is None:
                    problems.append(f"{where}: {kind} is not an HTTP GET")
                    continue
                if path is not None and get.get("path") != path:
                    problems.append(f"{where}: {kind} on {get.get('path')!r}, not {path}")
                if get.get("path") not in served:
                    problems.append(
                        f"{where}: {kind} path {get.get('path')!r} is not served by "
                        f"rummy {process.subcommand} ({sorted(served)})"
                    )
                port = container_port(container, get.get("port"))
                if port is None:
                    problems.append(f"{where}: {kind} port {get.get('port')!r} is not declared")
                elif port != listens:
                    problems.append(
                        f"{where}: {kind} on port {port}, but the process listens on {listens}"
                    )
            annotations = (workload["spec"]["template"].get("metadata") or {}).get(
                "annotations"
            ) or {}
            scraped = annotations.get("prometheus.io/port")
            if scraped is not None and int(scraped) != listens:
                problems.append(f"{where}: metrics scraped on {scraped}, served on {listens}")
    return problems


def template_labels(workload: Resource) -> dict[str, str]:
    return dict(
        ((workload["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
    )


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_selectors(resources: list[Resource]) -> list[str]:
    """Each workload's selector matches its own pods; each Service selects pods that declare
    its target ports; a StatefulSet's service is a headless Service of this rendering."""
    problems = []
    for workload, _ in workloads(resources):
        selector = (workload["spec"].get("selector") or {}).get("matchLabels") or {}
        if not selects(selector, template_labels(workload)):
            problems.append(f"{name_of(workload)}: selector {selector} misses its own pods")
        if workload["kind"] == "StatefulSet":
            service = find(resources, "Service", workload["spec"].get("serviceName", ""))
            if service is None or service["spec"].get("clusterIP") != "None":
                problems.append(f"{name_of(workload)}: serviceName is not a headless Service")
    for service in resources:
        if service["kind"] != "Service":
            continue
        selector = service["spec"].get("selector") or {}
        pods = [(w, s) for w, s in workloads(resources) if selects(selector, template_labels(w))]
        if not pods:
            problems.append(f"{name_of(service)}: selector {selector} matches no pods")
            continue
        for port in service["spec"].get("ports", []):
            target = port.get("targetPort", port["port"])
            for workload, spec in pods:
                if not any(container_port(c, target) for c in spec.get("containers", [])):
                    problems.append(
                        f"{name_of(service)}: target port {target!r} is not a port of "
                        f"{name_of(workload)}"
                    )
    return problems


def min_replicas(resources: list[Resource], workload: Resource) -> int:
    """The fewest pods a workload runs: its HPA's minReplicas, else its replicas."""
    for hpa in resources:
        if hpa["kind"] == "HorizontalPodAutoscaler":
            ref = hpa["spec"]["scaleTargetRef"]
            if ref["kind"] == workload["kind"] and ref["name"] == workload["metadata"]["name"]:
                return int(hpa["spec"].get("minReplicas", 1))
    return int(workload["spec"].get("replicas", 1))


def check_autoscalers(resources: list[Resource]) -> list[str]:
    """An HPA scales a workload of this rendering, whose containers request what it measures."""
    problems = []
    for hpa in resources:
        if hpa["kind"] != "HorizontalPodAutoscaler":
            continue
        ref = hpa["spec"]["scaleTargetRef"]
        target = find(resources, ref["kind"], ref["name"])
        if target is None or target["kind"] not in WORKLOADS:
            problems.append(f"{name_of(hpa)}: target {ref['kind']}/{ref['name']} does not exist")
            continue
        low, high = int(hpa["spec"].get("minReplicas", 1)), int(hpa["spec"]["maxReplicas"])
        if low > high:
            problems.append(f"{name_of(hpa)}: minReplicas {low} > maxReplicas {high}")
        for metric in hpa["spec"].get("metrics", []):
            if metric.get("type") != "Resource":
                continue
            measured = metric["resource"]["name"]
            spec = pod_spec(target) or {}
            for container in spec.get("containers", []):
                requests = (container.get("resources") or {}).get("requests") or {}
                if measured not in requests:
                    problems.append(
                        f"{name_of(hpa)}: container {container['name']} of {name_of(target)} "
                        f"requests no {measured}, so its utilisation is undefined"
                    )
    return problems


def check_disruption_budgets(resources: list[Resource]) -> list[str]:
    """A PodDisruptionBudget exactly for each workload of more than one replica, selecting its
    pods and no other's, and leaving room for an eviction."""
    problems = []
    budgets = [r for r in resources if r["kind"] == "PodDisruptionBudget"]
    covered: set[str] = set()
    for budget in budgets:
        selector = (budget["spec"].get("selector") or {}).get("matchLabels") or {}
        matched = [w for w, _ in workloads(resources) if selects(selector, template_labels(w))]
        if len(matched) != 1:
            names = [name_of(w) for w in matched]
            problems.append(f"{name_of(budget)}: selects {names}, not exactly one workload")
            continue
        (workload,) = matched
        covered.add(name_of(workload))
        replicas = min_replicas(resources, workload)
        if replicas <= 1:
            problems.append(
                f"{name_of(budget)}: {name_of(workload)} runs {replicas} replica; a budget "
                "there only blocks node drains"
            )
        available = budget["spec"].get("minAvailable")
        if isinstance(available, int) and available >= replicas:
            problems.append(f"{name_of(budget)}: minAvailable {available} allows no eviction")
    for workload, _ in workloads(resources):
        if min_replicas(resources, workload) > 1 and name_of(workload) not in covered:
            problems.append(f"{name_of(workload)}: more than one replica but no disruption budget")
    return problems


def prestop_seconds(container: dict[str, Any]) -> float:
    """How long a preStop hook sleeps (``sleep N`` or the sleep action), else 0."""
    hook = (container.get("lifecycle") or {}).get("preStop") or {}
    if "sleep" in hook:
        return float(hook["sleep"]["seconds"])
    command = (hook.get("exec") or {}).get("command") or []
    if len(command) == 2 and command[0] in ("sleep", "/bin/sleep"):
        return float(command[1])
    return 0.0


def check_grace(resources: list[Resource]) -> list[str]:
    """The termination grace outlasts the preStop pause plus the drain deadline (for the
    gateway: RUMMY_COMMAND_TIMEOUT, if longer)."""
    problems = []
    processes = {p.where: p for p in k8s_processes(resources)}
    for workload, spec in workloads(resources):
        grace = float(spec.get("terminationGracePeriodSeconds", 30))
        for container in spec.get("containers", []):
            process = processes.get(f"{name_of(workload)} container {container['name']}")
            settings = process.settings() if process else None
            if settings is None:
                continue
            # A referee or scoring finishes its work within RUMMY_DRAIN_SECONDS; the gateway's
            # in-flight requests wait at most RUMMY_COMMAND_TIMEOUT for their answer.
            drain = settings.drain_seconds
            if process is not None and process.subcommand == "gateway":
                drain = max(drain, settings.command_timeout)
            needed = prestop_seconds(container) + drain
            if grace <= needed:
                problems.append(
                    f"{name_of(workload)}: terminationGracePeriodSeconds {grace:g} is not more "
                    f"than preStop + the drain deadline = {needed:g}"
                )
    return problems


def check_security(resources: list[Resource]) -> list[str]:
    """Every container: non-root, read-only root filesystem, no privilege escalation, every
    capability dropped; the project's containers get a writable /tmp."""
    problems = []
    for workload, spec in workloads(resources):
        pod = spec.get("securityContext") or {}
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for container in spec.get("containers", []):
            where = f"{name_of(workload)} container {container['name']}"
            own = container.get("securityContext") or {}
            if not own.get("runAsNonRoot", pod.get("runAsNonRoot")):
                problems.append(f"{where}: runAsNonRoot is not true")
            if own.get("runAsUser", pod.get("runAsUser")) == 0:
                problems.append(f"{where}: runs as uid 0")
            if own.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where}: the root filesystem is not read-only")
            if own.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: allowPrivilegeEscalation is not false")
            if own.get("privileged"):
                problems.append(f"{where}: privileged")
            if "ALL" not in ((own.get("capabilities") or {}).get("drop") or []):
                problems.append(f"{where}: capabilities are not all dropped")
            if is_ours(container):
                mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
                volume = volumes.get(mounts.get("/tmp", ""))
                if volume is None or "emptyDir" not in volume:
                    problems.append(f"{where}: no emptyDir at /tmp")
    return problems


QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
UNITS = {
    None: 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}


def quantity(value: Any) -> float:
    match = QUANTITY.match(str(value))
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    return float(match.group(1)) * UNITS[match.group(2)]


def check_resources(resources: list[Resource]) -> list[str]:
    """Every container requests and limits CPU and memory, requests within limits."""
    problems = []
    for workload, spec in workloads(resources):
        for container in spec.get("containers", []):
            where = f"{name_of(workload)} container {container['name']}"
            declared = container.get("resources") or {}
            for what in ("cpu", "memory"):
                request = (declared.get("requests") or {}).get(what)
                limit = (declared.get("limits") or {}).get(what)
                if request is None or limit is None:
                    problems.append(f"{where}: no {what} request and limit")
                elif quantity(request) > quantity(limit):
                    problems.append(f"{where}: {what} request {request} above limit {limit}")
    return problems


def check_redis_address(resources: list[Resource]) -> list[str]:
    """A REDIS_URL given as a value names a Service of this rendering (``svc`` or, for a
    StatefulSet's pod, ``<set>-<n>.<svc>``) and one of its ports."""
    problems = []
    for process in k8s_processes(resources):
        url = process.env.get("REDIS_URL", "")
        if not url or url == PLACEHOLDER_URL:
            continue
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or 6379
        pod, _, service_name = host.rpartition(".") if "." in host else ("", "", host)
        service = find(resources, "Service", service_name)
        if service is None:
            problems.append(f"{process.where}: REDIS_URL host {host!r} is no Service here")
            continue
        if port not in [p["port"] for p in service["spec"].get("ports", [])]:
            problems.append(f"{process.where}: REDIS_URL port {port} is not a port of {host}")
        if pod:
            sets = [
                w
                for w, _ in workloads(resources)
                if w["kind"] == "StatefulSet" and w["spec"].get("serviceName") == service_name
            ]
            names = {
                f"{s['metadata']['name']}-{n}"
                for s in sets
                for n in range(int(s["spec"].get("replicas", 1)))
            }
            if pod not in names:
                problems.append(f"{process.where}: REDIS_URL pod {pod!r} is not one of {names}")
    return problems


def check_k8s(resources: list[Resource], routes: dict[str, set[str]]) -> list[str]:
    """Every Kubernetes check at once."""
    processes = k8s_processes(resources)
    problems = [p for process in processes for p in check_process(process)]
    problems += check_agreement(processes)
    problems += check_probes(resources, routes)
    problems += check_selectors(resources)
    problems += check_autoscalers(resources)
    problems += check_disruption_budgets(resources)
    problems += check_grace(resources)
    problems += check_security(resources)
    problems += check_resources(resources)
    problems += check_redis_address(resources)
    return problems


# --- the compose file ---------------------------------------------------------------------------


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


def compose_command(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or []
    return shlex.split(command) if isinstance(command, str) else [str(c) for c in command]


def duration_seconds(text: str) -> float:
    """A compose duration (``1m30s``, ``20s``, ``500ms``) in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|us|h|m|s)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * units[u] for n, u in parts)


def compose_processes(compose: dict[str, Any]) -> dict[str, Process]:
    out = {}
    for name, service in (compose.get("services") or {}).items():
        ours = is_ours({"image": service.get("image", "")}) or "build" in service
        if ours:
            out[name] = Process(
                f"compose service {name}", compose_command(service), compose_env(service)
            )
    return out


def _depends_condition(service: dict[str, Any], other: str) -> str | None:
    """The condition a compose service waits for ``other`` with (the list form: none)."""
    depends = service.get("depends_on") or {}
    if isinstance(depends, list):
        return None
    return (depends.get(other) or {}).get("condition")


def check_compose(compose: dict[str, Any], routes: dict[str, set[str]]) -> list[str]:
    """The compose file: settings as for Kubernetes, REDIS_URL naming a service of the file,
    a healthcheck on /readyz at the listening port, a stop grace over the drain deadline,
    no root, read-only with a /tmp, no capabilities; Redis with its append-only file on a
    volume."""
    services = compose.get("services") or {}
    processes = compose_processes(compose)
    problems = [p for process in processes.values() for p in check_process(process)]
    problems += check_agreement(list(processes.values()))
    for name, process in processes.items():
        service, where = services[name], process.where
        host = urlsplit(process.env.get("REDIS_URL", "")).hostname
        if host not in services:
            problems.append(f"{where}: REDIS_URL host {host!r} is not a service of the file")
        elif _depends_condition(service, host) != "service_healthy":
            problems.append(f"{where}: does not wait for {host} to be healthy")
        test = " ".join(str(t) for t in (service.get("healthcheck") or {}).get("test") or [])
        urls = re.findall(r"https?://[^\s'\"]+", test)
        if len(urls) != 1:
            problems.append(f"{where}: the healthcheck calls no single URL: {test!r}")
        else:
            parts = urlsplit(urls[0])
            if parts.path != READINESS or parts.path not in routes.get(process.subcommand, ()):
                problems.append(f"{where}: the healthcheck asks {parts.path!r}, not {READINESS}")
            if parts.port != process.listen_port():
                problems.append(
                    f"{where}: the healthcheck asks port {parts.port}, the process listens on "
                    f"{process.listen_port()}"
                )
        settings = process.settings()
        grace = duration_seconds(service.get("stop_grace_period", "10s"))
        if settings is not None and grace <= settings.drain_seconds:
            problems.append(
                f"{where}: stop_grace_period {grace:g}s is not more than RUMMY_DRAIN_SECONDS "
                f"{settings.drain_seconds:g}"
            )
        user = str(service.get("user", "root")).split(":")[0]
        if user in ("", "0", "root"):
            problems.append(f"{where}: runs as root")
        if service.get("read_only") is not True:
            problems.append(f"{where}: the root filesystem is not read-only")
        if "/tmp" not in [str(t).split(":")[0] for t in service.get("tmpfs") or []]:
            problems.append(f"{where}: no tmpfs at /tmp")
        if "ALL" not in (service.get("cap_drop") or []):
            problems.append(f"{where}: capabilities are not all dropped")
    redis_hosts = {urlsplit(p.env.get("REDIS_URL", "")).hostname for p in processes.values()}
    for host in sorted(h for h in redis_hosts if h in services):
        redis = services[host]
        command = compose_command(redis)
        where = f"compose service {host}"
        if "--appendonly" not in command or command[command.index("--appendonly") + 1] != "yes":
            problems.append(f"{where}: Redis runs without --appendonly yes")
        data = command[command.index("--dir") + 1] if "--dir" in command else "/data"
        mounts = [str(v).split(":")[1] for v in redis.get("volumes") or [] if ":" in str(v)]
        if data not in mounts:
            problems.append(f"{where}: the append-only file's directory {data} is not a volume")
        if "healthcheck" not in redis:
            problems.append(f"{where}: no healthcheck (the others wait for it)")
    return problems


# --- the Dockerfile -------------------------------------------------------------------------


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = pending + stripped
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def final_stage(text: str) -> list[tuple[str, str]]:
    instructions = dockerfile_instructions(text)
    starts = [n for n, (word, _) in enumerate(instructions) if word == "FROM"]
    return instructions[starts[-1] :] if starts else []


def dockerfile_env(text: str) -> dict[str, str]:
    """The ENV of the final stage (``KEY=value`` pairs; ``$PATH``-style values kept as text)."""
    env: dict[str, str] = {}
    for word, rest in final_stage(text):
        if word == "ENV":
            for pair in shlex.split(rest):
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def dockerfile_user(text: str) -> str | None:
    users = [rest for word, rest in final_stage(text) if word == "USER"]
    return users[-1] if users else None


def check_dockerfile(text: str, context: Path) -> list[str]:
    """python:3.11-slim; a numeric non-root USER (so runAsNonRoot can verify it); no .pyc
    written at run time; the default command a real `rummy` process, with the settings the
    image's ENV gives it (each one the code reads, each value valid); every COPY source in the
    build context."""
    import json

    problems = []
    stage = final_stage(text)
    base = stage[0][1].split()[0] if stage else ""
    if not base.startswith("python:3.11-slim"):
        problems.append(f"the image is based on {base!r}, not python:3.11-slim")
    user = dockerfile_user(text)
    uid = (user or "").split(":")[0]
    if not uid.isdigit() or int(uid) == 0:
        problems.append(f"USER {user!r} is not a numeric non-root uid")
    if dockerfile_env(text).get("PYTHONDONTWRITEBYTECODE") != "1":
        problems.append("PYTHONDONTWRITEBYTECODE=1 is not set: Python would try to write .pyc")
    commands = [rest for word, rest in stage if word == "CMD"]
    try:
        command = json.loads(commands[-1]) if commands else []
    except ValueError:
        command = []
    settings = {
        key: value
        for key, value in dockerfile_env(text).items()
        if key.startswith("RUMMY_") or key == "REDIS_URL"
    }
    cmd = Process("Dockerfile CMD", command, {"REDIS_URL": "redis://r", **settings})
    problems += [p.replace("Dockerfile CMD: ", "") for p in check_process(cmd)]
    for word, rest in dockerfile_instructions(text):
        if word == "COPY" and "--from=" not in rest:
            sources = shlex.split(rest)[:-1]
            for source in sources:
                if not (context / source).exists():
                    problems.append(f"COPY {source}: not in the build context {context}")
    return problems
