"""What an operator expects of the manifests beyond running: pinned images, replicas spread over
nodes, network policies that deny by default and let the service's own flows through, an
Ingress that routes only public paths and keeps WebSockets open, and a Redis with a memory
ceiling it refuses writes at, under a container limit with room for its fork. Each check
returns the problems found (an empty list: none), as ``checks`` does.
"""

from __future__ import annotations

import re
from typing import Any

from tests.deploy.checks import (
    find,
    is_ours,
    k8s_processes,
    name_of,
    quantity,
    selects,
    template_labels,
    workloads,
)
from tests.deploy.kustomize import Resource, split_image

PINNED_TAG = re.compile(r"^v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")
"""A release's own tag (``0.1.0``, ``v1.67.0``, ``7.2.8-alpine``): ``latest``, ``7`` or ``7.2``
move under a running deployment, and a node's cached copy of them is another build."""

TWO_PART_RELEASES = {"postgres": re.compile(r"^\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")}
"""Images whose releases are numbered major.minor (PostgreSQL since 10: ``16.4`` is a release,
``16`` is not)."""

HOSTNAME = "kubernetes.io/hostname"
REDIS_HEADROOM = 1.5
"""The least ratio of Redis's memory limit to its maxmemory: a BGREWRITEAOF forks, and the
child's copy-on-write pages, the rewrite buffer and client buffers all count against the limit."""

REDIS_UNITS = {"": 1, "k": 1000, "kb": 1024, "m": 10**6, "mb": 2**20, "g": 10**9, "gb": 2**30}
PRIVATE_PATHS = ("/metrics", "/healthz", "/readyz")
WEBSOCKET_SECONDS = 3600
NGINX_TIMEOUTS = (
    "nginx.ingress.kubernetes.io/proxy-read-timeout",
    "nginx.ingress.kubernetes.io/proxy-send-timeout",
)


def image_problem(image: str) -> str | None:
    """Why an image reference is not pinned, else None (a digest pins whatever the tag)."""
    name, tag, digest = split_image(image)
    if digest:
        return None
    if tag is None:
        return f"image {image!r} has no tag (that is :latest)"
    two_part = TWO_PART_RELEASES.get(name.rsplit("/", 1)[-1])
    if two_part is not None and two_part.match(tag):
        return None
    if not PINNED_TAG.match(tag):
        return f"image {image!r}: the tag {tag!r} is not a release's own (x.y.z) tag"
    return None


def check_images(resources: list[Resource]) -> list[str]:
    """Every container of every workload runs a pinned image."""
    problems = []
    for workload, spec in workloads(resources):
        for container in [*spec.get("containers", []), *spec.get("initContainers", [])]:
            problem = image_problem(str(container.get("image", "")))
            if problem:
                problems.append(f"{name_of(workload)} container {container['name']}: {problem}")
    return problems


def check_compose_images(compose: dict[str, Any]) -> list[str]:
    problems = []
    for name, service in (compose.get("services") or {}).items():
        if "image" in service:
            problem = image_problem(str(service["image"]))
            if problem:
                problems.append(f"compose service {name}: {problem}")
    return problems


def _selects_own(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if selector.get("matchExpressions"):
        return False  # not read here: keep the selectors to matchLabels
    return selects(selector.get("matchLabels") or {}, labels)


def check_spread(resources: list[Resource]) -> list[str]:
    """Every Deployment spreads its own pods over nodes: a topology spread constraint on the
    hostname, or a pod anti-affinity on it, whose selector matches the Deployment's pods."""
    problems = []
    for workload, spec in workloads(resources):
        if workload["kind"] != "Deployment":
            continue
        labels = template_labels(workload)
        spread = [
            c
            for c in spec.get("topologySpreadConstraints") or []
            if c.get("topologyKey") == HOSTNAME
            and _selects_own(c.get("labelSelector") or {}, labels)
        ]
        anti = (spec.get("affinity") or {}).get("podAntiAffinity") or {}
        terms = [
            *(anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []),
            *(
                t.get("podAffinityTerm") or {}
                for t in anti.get("preferredDuringSchedulingIgnoredDuringExecution") or []
            ),
        ]
        apart = [
            t
            for t in terms
            if t.get("topologyKey") == HOSTNAME
            and _selects_own(t.get("labelSelector") or {}, labels)
        ]
        if not spread and not apart:
            problems.append(
                f"{name_of(workload)}: no topology spread constraint or pod anti-affinity on "
                f"{HOSTNAME} selecting its own pods: its replicas may share one node"
            )
    return problems


# --- network policies -------------------------------------------------------------------------


def _policies(resources: list[Resource], labels: dict[str, str], way: str) -> list[Resource]:
    """The policies that select pods of these labels and govern this direction."""
    out = []
    for policy in resources:
        if policy["kind"] != "NetworkPolicy":
            continue
        spec = policy.get("spec") or {}
        types = spec.get("policyTypes") or ["Ingress"]
        selector = spec.get("podSelector") or {}
        chosen = selector == {} or _selects_own(selector, labels)
        if chosen and way in types:
            out.append(policy)
    return out


def _port_allowed(rule: dict[str, Any], port: int, protocol: str, names: dict[str, int]) -> bool:
    ports = rule.get("ports")
    if not ports:
        return True
    for allowed in ports:
        number = allowed.get("port")
        number = names.get(number, number) if isinstance(number, str) else number
        if allowed.get("protocol", "TCP") != protocol:
            continue
        if number is None or number == port:
            return True
        if isinstance(number, int) and number <= port <= int(allowed.get("endPort", number)):
            return True
    return False


Peer = dict[str, str] | str
"""Who is at the other end of a flow: a pod of these labels in the namespace, ``OUTSIDE`` (an
address outside the cluster's pods), ``ANYWHERE`` (every source or destination at once) or
``SOMEONE`` (any peer at all: the port is not closed to everyone)."""
OUTSIDE, ANYWHERE, SOMEONE = "outside", "anywhere", "someone"


def _peer_allowed(rule: dict[str, Any], key: str, peer: Peer) -> bool:
    """Whether a rule's peers (``from`` or ``to``) include ``peer``."""
    peers = rule.get(key)
    if not peers or peer == SOMEONE:
        return True
    if peer == ANYWHERE:
        return False
    for entry in peers:
        if peer == OUTSIDE and "ipBlock" in entry:
            return True
        if isinstance(peer, dict) and "podSelector" in entry and "namespaceSelector" not in entry:
            selector = entry["podSelector"]
            if selector == {} or _selects_own(selector, peer):
                return True
    return False


def allowed(
    resources: list[Resource],
    labels: dict[str, str],
    way: str,
    port: int,
    peer: Peer,
    *,
    protocol: str = "TCP",
    names: dict[str, int] | None = None,
) -> bool:
    """Whether the policies let this flow through for pods of these labels: ``way`` Ingress
    (from ``peer``) or Egress (to ``peer``), on ``port`` (a container port's name in
    ``names``)."""
    policies = _policies(resources, labels, way)
    if not policies:
        return True  # no policy selects the pod: everything flows
    key = "from" if way == "Ingress" else "to"
    for policy in policies:
        for rule in (policy.get("spec") or {}).get(way.lower()) or []:
            if not _port_allowed(rule, port, protocol, names or {}):
                continue
            if _peer_allowed(rule, key, peer):
                return True
    return False


def default_deny(resources: list[Resource]) -> bool:
    for policy in resources:
        spec = policy.get("spec") or {}
        if (
            policy["kind"] == "NetworkPolicy"
            and spec.get("podSelector") == {}
            and set(spec.get("policyTypes") or []) == {"Ingress", "Egress"}
            and not spec.get("ingress")
            and not spec.get("egress")
        ):
            return True
    return False


def check_network_policies(resources: list[Resource]) -> list[str]:
    """A default deny of both directions, and through it: the gateway's port from anywhere,
    every process's port from Prometheus (some rule), DNS out, Redis out of every process and
    into the in-cluster Redis from them."""
    if not any(True for _ in workloads(resources)):
        return []
    if not default_deny(resources):
        return ["no NetworkPolicy denies all ingress and egress by default"]
    problems = []
    redis_pods = [
        template_labels(w)
        for w, _ in workloads(resources)
        if w["kind"] == "StatefulSet" and w["metadata"]["name"] == "redis"
    ]
    processes = {p.where: p for p in k8s_processes(resources)}
    for workload, spec in workloads(resources):
        labels = template_labels(workload)
        for container in spec.get("containers", []):
            where = f"{name_of(workload)} container {container['name']}"
            names = {
                p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p
            }
            for declared in container.get("ports", []):
                port = int(declared["containerPort"])
                if not allowed(resources, labels, "Ingress", port, SOMEONE, names=names):
                    problems.append(f"{where}: no policy lets anything reach port {port}")
            if not is_ours(container):
                continue
            process = processes[where]
            listens = process.listen_port() or 0
            if process.subcommand == "gateway" and not allowed(
                resources, labels, "Ingress", listens, ANYWHERE, names=names
            ):
                problems.append(f"{where}: port {listens} is not open to the ingress (anywhere)")
            for protocol in ("UDP", "TCP"):
                if not allowed(resources, labels, "Egress", 53, ANYWHERE, protocol=protocol):
                    problems.append(f"{where}: no DNS ({protocol} 53) out")
            if redis_pods:
                if not allowed(resources, labels, "Egress", 6379, redis_pods[0]):
                    problems.append(f"{where}: may not reach the in-cluster Redis on 6379")
                if not allowed(resources, redis_pods[0], "Ingress", 6379, labels):
                    problems.append(f"{where}: the in-cluster Redis does not let it in on 6379")
            elif not allowed(resources, labels, "Egress", 6379, OUTSIDE):
                problems.append(f"{where}: may not reach an external Redis on 6379")
    return problems


# --- the Ingress ------------------------------------------------------------------------------


def _route_matches(path: str, kind: str, route: str) -> bool:
    if kind == "Exact":
        return route == path
    prefix = path.rstrip("/")
    return route == prefix or route.startswith(prefix + "/") or prefix == ""


def check_ingresses(resources: list[Resource], routes: dict[str, set[str]]) -> list[str]:
    """Each Ingress path goes to a port of a Service of this rendering and reaches a route the
    gateway serves; none reaches /metrics or the probes; behind ingress-nginx, the proxy
    timeouts outlast an idle WebSocket's hour."""
    problems = []
    served = routes.get("gateway", set())
    for ingress in resources:
        if ingress["kind"] != "Ingress":
            continue
        where = name_of(ingress)
        spec = ingress.get("spec") or {}
        for rule in spec.get("rules") or []:
            for entry in (rule.get("http") or {}).get("paths") or []:
                path, kind = entry.get("path", "/"), entry.get("pathType", "Prefix")
                backend = (entry.get("backend") or {}).get("service") or {}
                service = find(resources, "Service", backend.get("name", ""))
                port = backend.get("port") or {}
                if service is None:
                    problems.append(f"{where}: {path} goes to no Service {backend.get('name')}")
                    continue
                ports = service["spec"].get("ports", [])
                if not any(
                    port.get("name") == p.get("name") or port.get("number") == p["port"]
                    for p in ports
                ):
                    problems.append(
                        f"{where}: {path} goes to a port {port} {name_of(service)} lacks"
                    )
                reached = {r for r in served if _route_matches(path, kind, r)}
                if not reached:
                    problems.append(f"{where}: {path} ({kind}) reaches no route of the gateway")
                leaked = sorted(reached & set(PRIVATE_PATHS))
                if leaked:
                    problems.append(f"{where}: {path} ({kind}) makes {leaked} public")
        if spec.get("ingressClassName") == "nginx":
            annotations = (ingress.get("metadata") or {}).get("annotations") or {}
            for key in NGINX_TIMEOUTS:
                value = str(annotations.get(key, "60"))
                if not value.isdigit() or int(value) < WEBSOCKET_SECONDS:
                    problems.append(
                        f"{where}: {key} {value} closes a quiet WebSocket before "
                        f"{WEBSOCKET_SECONDS} s"
                    )
    return problems


# --- Redis's memory ---------------------------------------------------------------------------


def redis_bytes(value: str) -> int:
    """A Redis memory figure (``640mb``, ``1gb``, ``100000``) in bytes."""
    match = re.fullmatch(r"(\d+)([a-z]*)", value.strip().lower())
    if match is None or match.group(2) not in REDIS_UNITS:
        raise ValueError(f"not a Redis memory figure: {value!r}")
    return int(match.group(1)) * REDIS_UNITS[match.group(2)]


def expanded(argument: str, env: dict[str, str]) -> str:
    """A command argument with ``$(VAR)`` replaced from the container's env, as the kubelet
    does (an unknown one stays as written)."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m[1], m[0]), argument)


def check_redis_memory(resources: list[Resource]) -> list[str]:
    """Each Redis container: ``--maxmemory`` set, ``--maxmemory-policy noeviction`` (an evicted
    key would be a lost event), and a memory limit at least REDIS_HEADROOM times maxmemory."""
    problems = []
    for workload, spec in workloads(resources):
        for container in spec.get("containers", []):
            if split_image(str(container.get("image", "")))[0].rsplit("/", 1)[-1] != "redis":
                continue
            where = f"{name_of(workload)} container {container['name']}"
            env = {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}
            command = [expanded(str(a), env) for a in container.get("command", [])]
            command += [expanded(str(a), env) for a in container.get("args", [])]
            flags = {
                arg: command[n + 1] for n, arg in enumerate(command[:-1]) if arg.startswith("--")
            }
            if flags.get("--maxmemory-policy") != "noeviction":
                problems.append(f"{where}: --maxmemory-policy is not noeviction")
            if "--maxmemory" not in flags:
                problems.append(f"{where}: no --maxmemory (Redis would grow to its limit)")
                continue
            try:
                ceiling = redis_bytes(flags["--maxmemory"])
            except ValueError as err:
                problems.append(f"{where}: {err}")
                continue
            limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
            if ceiling <= 0:
                problems.append(f"{where}: --maxmemory {flags['--maxmemory']} sets no ceiling")
            elif limit is None or quantity(limit) < REDIS_HEADROOM * ceiling:
                problems.append(
                    f"{where}: memory limit {limit} is not {REDIS_HEADROOM}x --maxmemory "
                    f"{flags['--maxmemory']}: no room for the AOF rewrite's fork"
                )
    return problems


def check_operations(resources: list[Resource], routes: dict[str, set[str]]) -> list[str]:
    """Every check of this module at once."""
    return [
        *check_images(resources),
        *check_spread(resources),
        *check_network_policies(resources),
        *check_ingresses(resources, routes),
        *check_redis_memory(resources),
    ]
