"""The Kubernetes manifests (deploy/k8s), checked offline.

Rendering: ``kubectl kustomize`` when kubectl is on the PATH, else the small renderer in
``tests/deploy/kustomize.py`` (resources, strategic-merge patches, configMapGenerator, images:
all the overlays use); where kubectl exists the two are compared.

Schemas: ``kubernetes-validate`` with the schemas it ships, for Kubernetes ``K8S_VERSION``,
strict (an unknown field is an error); the Prometheus Operator's kinds against our own schemas
(``crds.py``). Then the checks no schema makes (``checks.py``, ``operations.py``), each also run
over a broken copy to show that it catches what it is for.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.deploy import checks, crds, operations
from tests.deploy.conftest import K8S, KUSTOMIZATIONS, RENDERER, SERVICE, rendered, rendered_here
from tests.deploy.kustomize import (
    Resource,
    Unsupported,
    load_kustomization,
    pod_spec,
    render_here,
    render_with_kubectl,
    without_hash_suffixes,
)

K8S_VERSION = "1.32.0"


def schema_problems(resources: list[Resource]) -> list[str]:
    problems = []
    for resource in resources:
        if crds.is_ours(resource):
            problems += crds.problems(resource)
            continue
        try:
            kubernetes_validate.validate(resource, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as err:
            path = "/".join(str(p) for p in err.path)
            problems.append(f"{checks.name_of(resource)}: {path}: {err.message}")
        except kubernetes_validate.SchemaNotFoundError as err:
            problems.append(f"{checks.name_of(resource)}: {err.message}")
    return problems


# --- every rendering passes every check -------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KUSTOMIZATIONS))
def test_every_resource_matches_the_kubernetes_schema(name: str) -> None:
    resources = rendered(name)
    assert resources, f"{name} renders nothing ({RENDERER})"
    assert schema_problems(resources) == []


def every_problem(resources: list[Resource], routes: dict[str, set[str]]) -> list[str]:
    return checks.check_k8s(resources, routes) + operations.check_operations(resources, routes)


@pytest.mark.parametrize("name", sorted(KUSTOMIZATIONS))
def test_what_no_schema_checks(name: str, routes: dict[str, set[str]]) -> None:
    assert every_problem(rendered(name), routes) == []


def test_every_manifest_file_is_rendered_by_a_kustomization() -> None:
    """A YAML file no kustomization names would be neither validated nor applied."""
    named: set[Path] = set()
    for directory in KUSTOMIZATIONS.values():
        kustomization = load_kustomization(directory)
        named.add(directory / "kustomization.yaml")
        for entry in kustomization.get("resources", []):
            named.add((directory / entry).resolve() if (directory / entry).is_file() else directory)
        for patch in kustomization.get("patches", []):
            named.add((directory / patch["path"]).resolve())
    files = {p.resolve() for p in K8S.rglob("*.yaml")}
    assert files - {p.resolve() for p in named} == set()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize("name", sorted(KUSTOMIZATIONS))
def test_the_in_test_renderer_agrees_with_kubectl(name: str) -> None:
    ours = without_hash_suffixes(rendered_here(name))
    theirs = without_hash_suffixes(render_with_kubectl(KUSTOMIZATIONS[name]))
    assert ours == theirs


def test_the_renderer_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("namePrefix: x-\nresources: []\n")
    with pytest.raises(Unsupported, match="namePrefix"):
        render_here(tmp_path)


def config_name(resources: list[Resource]) -> str:
    (config,) = [r for r in resources if r["kind"] == "ConfigMap"]
    return str(config["metadata"]["name"])


@pytest.mark.parametrize("renderer", ["kubectl", "here"])
def test_a_change_of_settings_renames_the_config_map(renderer: str, tmp_path: Path) -> None:
    """Changing a setting changes the ConfigMap's name, and so rolls the pods that use it."""
    if renderer == "kubectl" and shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    render = render_here if renderer == "here" else render_with_kubectl
    base = tmp_path / "base"
    shutil.copytree(KUSTOMIZATIONS["base"], base)
    before = render(base)
    text = (base / "kustomization.yaml").read_text()
    assert "RUMMY_LOG_LEVEL=info" in text
    (base / "kustomization.yaml").write_text(text.replace("LOG_LEVEL=info", "LOG_LEVEL=debug"))
    after = render(base)
    assert config_name(before) != config_name(after)
    for resources in (before, after):
        for process in checks.k8s_processes(resources):
            assert process.env["RUMMY_PREFIX"] == "rr:"  # resolved through the new name
            assert not process.problems


# --- what each overlay is for -------------------------------------------------------------------


def by_name(resources: list[Resource]) -> dict[str, Resource]:
    return {checks.name_of(r): r for r in resources}


def test_base_and_dev_run_redis_with_an_append_only_file_on_a_volume() -> None:
    for name in ("base", "dev"):
        resources = by_name(rendered(name))
        redis = resources["StatefulSet/redis"]
        (container,) = [
            c for c in redis["spec"]["template"]["spec"]["containers"] if c["name"] == "redis"
        ]
        command = container["command"]
        assert command[command.index("--appendonly") + 1] == "yes"
        assert command[command.index("--appendfsync") + 1] in ("everysec", "always")
        data_dir = command[command.index("--dir") + 1]
        (claim,) = redis["spec"]["volumeClaimTemplates"]
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert mounts[claim["metadata"]["name"]] == data_dir
        assert resources["Service/redis"]["spec"]["clusterIP"] == "None"


def test_prod_uses_an_external_redis_cluster_from_a_secret() -> None:
    resources = rendered("prod")
    kinds = {r["kind"] for r in resources}
    assert "StatefulSet" not in kinds and "Service/redis" not in by_name(resources)
    processes = checks.k8s_processes(resources)
    assert len(processes) == 6  # gateway, referee, scoring, bots, archiver, tournaments
    for process in processes:
        assert process.env["REDIS_URL"] == checks.PLACEHOLDER_URL  # from the Secret
        assert process.env["RUMMY_REDIS_CLUSTER"] == "true"
    for workload, spec in checks.workloads(resources):
        for container in spec["containers"]:
            (url,) = [e for e in container["env"] if e["name"] == "REDIS_URL"]
            assert url == {
                "name": "REDIS_URL",
                "valueFrom": {"secretKeyRef": {"name": "rummy-redis", "key": "url"}},
            }, workload


def test_prod_reads_the_archive_s_url_from_a_secret() -> None:
    resources = rendered("prod")
    assert not [r for r in resources if r["metadata"]["name"] == "postgres"]
    readers = 0
    for workload, spec in checks.workloads(resources):
        for container in spec["containers"]:
            urls = [e for e in container["env"] if e["name"] == "RUMMY_ARCHIVE_URL"]
            if urls:
                readers += 1
                assert urls == [
                    {
                        "name": "RUMMY_ARCHIVE_URL",
                        "valueFrom": {"secretKeyRef": {"name": "rummy-archive", "key": "url"}},
                    }
                ], workload
    assert readers == 3  # the gateway, the archiver and the tournaments
    dev = by_name(rendered("dev"))
    assert dev["StatefulSet/postgres"]["spec"]["volumeClaimTemplates"]
    assert "Deployment/archiver" in dev


def test_prod_runs_more_of_everything_than_dev() -> None:
    dev, prod = by_name(rendered("dev")), by_name(rendered("prod"))
    for name in (
        "Deployment/gateway",
        "Deployment/referee",
        "Deployment/scoring",
        "Deployment/bots",
        "Deployment/tournaments",
    ):
        assert checks.min_replicas(list(prod.values()), prod[name]) > checks.min_replicas(
            list(dev.values()), dev[name]
        )
    assert prod["HorizontalPodAutoscaler/gateway"]["apiVersion"] == "autoscaling/v2"
    assert prod["HorizontalPodAutoscaler/gateway"]["spec"]["maxReplicas"] > 10


def test_every_process_of_every_rendering_runs_the_one_image() -> None:
    for name in SERVICE:
        images = {
            c["image"]
            for _, spec in checks.workloads(rendered(name))
            for c in spec["containers"]
            if checks.is_ours(c)
        }
        assert len(images) == 1 and not images.pop().endswith(":latest"), name


# --- each check catches what it is for -----------------------------------------------------------


def container(resources: list[Resource], workload: str, name: str | None = None) -> dict[str, Any]:
    spec = checks.pod_spec(by_name(resources)[workload])
    assert spec is not None
    name = name or workload.split("/")[1]
    (found,) = [c for c in spec["containers"] if c["name"] == name]
    return found  # type: ignore[no-any-return]  # the live dict, to mutate


def config(resources: list[Resource]) -> dict[str, str]:
    (found,) = [r for r in resources if r["kind"] == "ConfigMap"]
    return found["data"]  # type: ignore[no-any-return]


def set_env(c: dict[str, Any], name: str, value: str) -> None:
    c["env"] = [e for e in c.get("env", []) if e["name"] != name] + [{"name": name, "value": value}]


def drop_kind(resources: list[Resource], kind: str) -> None:
    resources[:] = [r for r in resources if r["kind"] != kind]


def pod(resources: list[Resource], workload: str) -> dict[str, Any]:
    spec = pod_spec(by_name(resources)[workload])
    assert spec is not None
    return spec


def ingress_paths(resources: list[Resource]) -> list[dict[str, Any]]:
    (rule,) = by_name(resources)["Ingress/gateway"]["spec"]["rules"]
    return rule["http"]["paths"]  # type: ignore[no-any-return]


Mutation = Callable[[list[Resource]], None]

BROKEN: dict[str, tuple[str, Mutation, str]] = {
    # check name: (rendering, mutation, expected words in a problem)
    "unknown variable": (
        "base",
        lambda r: set_env(container(r, "Deployment/referee"), "RUMMY_DRAIN_SECOND", "5"),
        "RUMMY_DRAIN_SECOND'] are not settings",
    ),
    "unknown config key": (
        "dev",
        lambda r: config(r).update(RUMMY_PARTITONS="4"),
        "RUMMY_PARTITONS'] are not settings",
    ),
    "no REDIS_URL": (
        "base",
        lambda r: container(r, "Deployment/scoring").update(env=[]),
        "REDIS_URL is not set",
    ),
    "a value the code refuses": (
        "base",
        lambda r: config(r).update(RUMMY_PARTITIONS="0"),
        "RUMMY_PARTITIONS must be 1-1024",
    ),
    "a value that does not parse": (
        "prod",
        lambda r: config(r).update(RUMMY_REDIS_CLUSTER="on"),
        "allowed: true or false",
    ),
    "processes that disagree": (
        "base",
        lambda r: set_env(container(r, "Deployment/referee"), "RUMMY_PARTITIONS", "4"),
        "disagree",
    ),
    "a wrong subcommand": (
        "base",
        lambda r: container(r, "Deployment/referee").update(command=["rummy", "referree"]),
        "is not `rummy` with one of",
    ),
    "liveness on a path not served": (
        "base",
        lambda r: container(r, "Deployment/scoring")["livenessProbe"]["httpGet"].update(
            path="/health"
        ),
        "is not served by rummy scoring",
    ),
    "readiness on /healthz": (
        "base",
        lambda r: container(r, "Deployment/gateway")["readinessProbe"]["httpGet"].update(
            path="/healthz"
        ),
        "readinessProbe on '/healthz', not /readyz",
    ),
    "probes where the process does not listen": (
        "base",
        lambda r: set_env(container(r, "Deployment/referee"), "RUMMY_HTTP_PORT", "9200"),
        "on port 9101, but the process listens on 9200",
    ),
    "gateway --port moves it": (
        "dev",
        lambda r: container(r, "Deployment/gateway").update(
            command=["rummy", "gateway", "--port", "9000"]
        ),
        "but the process listens on 9000",
    ),
    "a probe port not declared": (
        "base",
        lambda r: container(r, "Deployment/scoring")["readinessProbe"]["httpGet"].update(
            port="metrics"
        ),
        "port 'metrics' is not declared",
    ),
    "metrics scraped elsewhere": (
        "base",
        lambda r: by_name(r)["Deployment/referee"]["spec"]["template"]["metadata"][
            "annotations"
        ].update({"prometheus.io/port": "9102"}),
        "metrics scraped on 9102, served on 9101",
    ),
    "a Service selecting nothing": (
        "base",
        lambda r: by_name(r)["Service/gateway"]["spec"]["selector"].update(
            {"app.kubernetes.io/component": "gatway"}
        ),
        "matches no pods",
    ),
    "a Service target port the pods lack": (
        "prod",
        lambda r: by_name(r)["Service/gateway"]["spec"]["ports"][0].update(targetPort="web"),
        "target port 'web' is not a port",
    ),
    "a workload selector missing its pods": (
        "dev",
        lambda r: by_name(r)["Deployment/scoring"]["spec"]["template"]["metadata"]["labels"].update(
            {"app.kubernetes.io/component": "score"}
        ),
        "misses its own pods",
    ),
    "a StatefulSet without its headless Service": (
        "base",
        lambda r: by_name(r)["Service/redis"]["spec"].pop("clusterIP"),
        "serviceName is not a headless Service",
    ),
    "an HPA scaling nothing": (
        "base",
        lambda r: by_name(r)["HorizontalPodAutoscaler/gateway"]["spec"]["scaleTargetRef"].update(
            name="gatewy"
        ),
        "target Deployment/gatewy does not exist",
    ),
    "an HPA on CPU without a CPU request": (
        "prod",
        lambda r: container(r, "Deployment/gateway")["resources"]["requests"].pop("cpu"),
        "requests no cpu",
    ),
    "a budget on one replica": (
        "dev",
        lambda r: r.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "scoring"},
                "spec": {
                    "maxUnavailable": 1,
                    "selector": {"matchLabels": {"app.kubernetes.io/component": "scoring"}},
                },
            }
        ),
        "only blocks node drains",
    ),
    "no budget for many replicas": (
        "prod",
        lambda r: r.remove(by_name(r)["PodDisruptionBudget/referee"]),
        "Deployment/referee: more than one replica but no disruption budget",
    ),
    "a budget selecting two workloads": (
        "base",
        lambda r: by_name(r)["PodDisruptionBudget/referee"]["spec"]["selector"]["matchLabels"].pop(
            "app.kubernetes.io/component"
        ),
        "not exactly one workload",
    ),
    "a budget that allows no eviction": (
        "base",
        lambda r: by_name(r)["PodDisruptionBudget/gateway"]["spec"].update(minAvailable=2),
        "minAvailable 2 allows no eviction",
    ),
    "grace shorter than the drain": (
        "base",
        lambda r: config(r).update(RUMMY_DRAIN_SECONDS="45"),
        "is not more than preStop + the drain deadline",
    ),
    "grace shorter than preStop and drain": (
        "prod",
        lambda r: by_name(r)["Deployment/gateway"]["spec"]["template"]["spec"].update(
            terminationGracePeriodSeconds=14
        ),
        "terminationGracePeriodSeconds 14 is not more than preStop + the drain deadline = 15",
    ),
    "a gateway waiting for answers longer than its grace": (
        "base",
        lambda r: set_env(container(r, "Deployment/gateway"), "RUMMY_COMMAND_TIMEOUT", "40"),
        "terminationGracePeriodSeconds 30 is not more than preStop + the drain deadline = 45",
    ),
    "a ConfigMap that does not exist": (
        "base",
        lambda r: container(r, "Deployment/gateway")["envFrom"][0]["configMapRef"].update(
            name="rummy-settings"
        ),
        "no ConfigMap rummy-settings",
    ),
    "a REDIS_URL that is no Redis URL": (
        "dev",
        lambda r: set_env(container(r, "Deployment/gateway"), "REDIS_URL", "http://redis:6379"),
        "is not a Redis URL",
    ),
    "arguments the command refuses": (
        "base",
        lambda r: container(r, "Deployment/gateway").update(
            command=["rummy", "gateway", "--prot", "8080"]
        ),
        "does not parse",
    ),
    "no liveness probe": (
        "prod",
        lambda r: container(r, "Deployment/referee").pop("livenessProbe"),
        "no livenessProbe",
    ),
    "a probe that is not an HTTP GET": (
        "base",
        lambda r: container(r, "Deployment/scoring").update(
            readinessProbe={"tcpSocket": {"port": "http"}}
        ),
        "readinessProbe is not an HTTP GET",
    ),
    "an HPA whose minimum exceeds its maximum": (
        "dev",
        lambda r: by_name(r)["HorizontalPodAutoscaler/gateway"]["spec"].update(minReplicas=3),
        "minReplicas 3 > maxReplicas 2",
    ),
    "a privileged container": (
        "base",
        lambda r: container(r, "StatefulSet/redis")["securityContext"].update(privileged=True),
        "privileged",
    ),
    "a Redis port the Service lacks": (
        "base",
        lambda r: set_env(container(r, "Deployment/gateway"), "REDIS_URL", "redis://redis:6380"),
        "REDIS_URL port 6380 is not a port of redis",
    ),
    "a writable root filesystem": (
        "base",
        lambda r: container(r, "StatefulSet/redis")["securityContext"].update(
            readOnlyRootFilesystem=False
        ),
        "the root filesystem is not read-only",
    ),
    "root allowed": (
        "dev",
        lambda r: by_name(r)["Deployment/referee"]["spec"]["template"]["spec"][
            "securityContext"
        ].pop("runAsNonRoot"),
        "runAsNonRoot is not true",
    ),
    "uid 0": (
        "base",
        lambda r: container(r, "Deployment/gateway")["securityContext"].update(runAsUser=0),
        "runs as uid 0",
    ),
    "privilege escalation": (
        "prod",
        lambda r: container(r, "Deployment/scoring")["securityContext"].pop(
            "allowPrivilegeEscalation"
        ),
        "allowPrivilegeEscalation is not false",
    ),
    "capabilities kept": (
        "base",
        lambda r: container(r, "Deployment/gateway")["securityContext"].pop("capabilities"),
        "capabilities are not all dropped",
    ),
    "no /tmp": (
        "base",
        lambda r: container(r, "Deployment/referee").pop("volumeMounts"),
        "no emptyDir at /tmp",
    ),
    "no limits": (
        "base",
        lambda r: container(r, "Deployment/scoring")["resources"].pop("limits"),
        "no cpu request and limit",
    ),
    "a request above its limit": (
        "dev",
        lambda r: container(r, "Deployment/gateway")["resources"]["requests"].update(memory="1Gi"),
        "memory request 1Gi above limit 256Mi",
    ),
    "a Redis host that is no Service": (
        "base",
        lambda r: set_env(
            container(r, "Deployment/referee"), "REDIS_URL", "redis://redis-master:6379/0"
        ),
        "REDIS_URL host 'redis-master' is no Service here",
    ),
    "a Redis pod that does not exist": (
        "dev",
        lambda r: set_env(
            container(r, "Deployment/scoring"), "REDIS_URL", "redis://redis-1.redis:6379/0"
        ),
        "REDIS_URL pod 'redis-1' is not one of",
    ),
    "an optional secret": (
        "prod",
        lambda r: [
            e["valueFrom"]["secretKeyRef"].update(optional=True)
            for e in container(r, "Deployment/gateway")["env"]
            if e["name"] == "REDIS_URL"
        ],
        "comes from an optional Secret key",
    ),
    # operations.py
    "an image without a tag": (
        "base",
        lambda r: container(r, "StatefulSet/redis", "exporter").update(
            image="oliver006/redis_exporter"
        ),
        "has no tag (that is :latest)",
    ),
    "the project's image on latest": (
        "prod",
        lambda r: container(r, "Deployment/referee").update(
            image="registry.example.com/robbers-rummy:latest"
        ),
        "the tag 'latest' is not a release's own",
    ),
    "a moving minor tag": (
        "dev",
        lambda r: container(r, "StatefulSet/redis").update(image="redis:7.2"),
        "the tag '7.2' is not a release's own",
    ),
    "a Deployment that does not spread": (
        "prod",
        lambda r: pod(r, "Deployment/referee").pop("topologySpreadConstraints"),
        "Deployment/referee: no topology spread constraint or pod anti-affinity",
    ),
    "a spread counting another workload's pods": (
        "base",
        lambda r: pod(r, "Deployment/scoring")["topologySpreadConstraints"][0]["labelSelector"][
            "matchLabels"
        ].update({"app.kubernetes.io/component": "gateway"}),
        "Deployment/scoring: no topology spread constraint or pod anti-affinity",
    ),
    "a spread over zones only": (
        "dev",
        lambda r: pod(r, "Deployment/gateway")["topologySpreadConstraints"].pop(0),
        "Deployment/gateway: no topology spread constraint or pod anti-affinity",
    ),
    "prod without network policies": (
        "prod",
        lambda r: drop_kind(r, "NetworkPolicy"),
        "no NetworkPolicy denies all ingress and egress by default",
    ),
    "no default deny": (
        "base",
        lambda r: r.remove(by_name(r)["NetworkPolicy/default-deny"]),
        "no NetworkPolicy denies all ingress and egress by default",
    ),
    "the gateway closed to the ingress": (
        "prod",
        lambda r: r.remove(by_name(r)["NetworkPolicy/gateway-ingress"]),
        "Deployment/gateway container gateway: port 8080 is not open to the ingress",
    ),
    "a metrics port closed": (
        "base",
        lambda r: by_name(r)["NetworkPolicy/metrics-scrape"]["spec"]["ingress"][0]["ports"].pop(1),
        "Deployment/referee container referee: no policy lets anything reach port 9101",
    ),
    "no DNS": (
        "dev",
        lambda r: r.remove(by_name(r)["NetworkPolicy/dns-egress"]),
        "no DNS (UDP 53) out",
    ),
    "no way out to the managed Redis": (
        "prod",
        lambda r: by_name(r)["NetworkPolicy/redis-egress"]["spec"]["egress"][0].update(
            ports=[{"port": 6380}]
        ),
        "may not reach an external Redis on 6379",
    ),
    "no way out to the in-cluster Redis": (
        "base",
        lambda r: by_name(r)["NetworkPolicy/redis-egress"]["spec"]["egress"][0]["to"][0][
            "podSelector"
        ]["matchLabels"].update({"app.kubernetes.io/component": "cache"}),
        "may not reach the in-cluster Redis on 6379",
    ),
    "the in-cluster Redis closed to the processes": (
        "dev",
        lambda r: by_name(r)["NetworkPolicy/redis"]["spec"]["ingress"][0].update(
            ports=[{"port": 6380}]
        ),
        "the in-cluster Redis does not let it in on 6379",
    ),
    "an Ingress making /metrics public": (
        "prod",
        lambda r: ingress_paths(r)[0].update(pathType="Prefix"),
        "makes ['/healthz', '/metrics', '/readyz'] public",
    ),
    "an Ingress path the gateway does not serve": (
        "prod",
        lambda r: ingress_paths(r)[1].update(path="/apis"),
        "/apis (Prefix) reaches no route of the gateway",
    ),
    "an Ingress to a port the Service lacks": (
        "prod",
        lambda r: ingress_paths(r)[2]["backend"]["service"].update(port={"name": "web"}),
        "goes to a port {'name': 'web'} Service/gateway lacks",
    ),
    "an Ingress closing quiet WebSockets": (
        "prod",
        lambda r: by_name(r)["Ingress/gateway"]["metadata"]["annotations"].update(
            {"nginx.ingress.kubernetes.io/proxy-read-timeout": "60"}
        ),
        "proxy-read-timeout 60 closes a quiet WebSocket",
    ),
    "a Redis without maxmemory": (
        "base",
        lambda r: container(r, "StatefulSet/redis").update(
            command=[
                a
                for a in container(r, "StatefulSet/redis")["command"]
                if a not in ("--maxmemory", "$(REDIS_MAXMEMORY)")
            ]
        ),
        "no --maxmemory",
    ),
    "a Redis that evicts": (
        "dev",
        lambda r: container(r, "StatefulSet/redis").update(
            command=[
                "allkeys-lru" if a == "noeviction" else a
                for a in container(r, "StatefulSet/redis")["command"]
            ]
        ),
        "--maxmemory-policy is not noeviction",
    ),
    "a Redis limit without room for the fork": (
        "dev",
        lambda r: set_env(container(r, "StatefulSet/redis"), "REDIS_MAXMEMORY", "200mb"),
        "memory limit 256Mi is not 1.5x --maxmemory 200mb",
    ),
    "a Redis limit below maxmemory": (
        "base",
        lambda r: container(r, "StatefulSet/redis")["resources"]["limits"].update(memory="512Mi"),
        "memory limit 512Mi is not 1.5x --maxmemory 640mb",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_check_catches_its_fault(case: str, routes: dict[str, set[str]]) -> None:
    name, mutate, expected = BROKEN[case]
    resources = rendered(name)
    assert every_problem(resources, routes) == []
    mutate(resources)
    problems = every_problem(resources, routes)
    assert any(expected in p for p in problems), (expected, problems)


@pytest.mark.parametrize(
    ("case", "mutate", "expected"),
    [
        ("an unknown field", lambda d: d["spec"].update(replica=3), "replica"),
        ("a wrong type", lambda d: d["spec"].update(replicas="two"), "'two' is not of type"),
        (
            "a misspelt probe field",
            lambda d: d["spec"]["template"]["spec"]["containers"][0]["livenessProbe"].update(
                httpget={"path": "/healthz"}
            ),
            "httpget",
        ),
        ("an unknown kind", lambda d: d.update(apiVersion="apps/v1beta1"), "Couldn't find schema"),
    ],
)
def test_the_schema_check_catches_what_it_should(
    case: str, mutate: Callable[[Resource], Any], expected: str
) -> None:
    resources = rendered("base")
    gateway = by_name(resources)["Deployment/gateway"]
    mutate(gateway)
    problems = schema_problems(resources)
    assert any(expected in p for p in problems), (case, problems)


def test_a_pod_anti_affinity_spreads_as_well(routes: dict[str, set[str]]) -> None:
    """The spread check takes either way of keeping replicas apart."""
    resources = rendered("prod")
    spec = pod(resources, "Deployment/referee")
    selector = spec.pop("topologySpreadConstraints")[0]["labelSelector"]
    term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
    spec["affinity"] = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": term}
            ]
        }
    }
    assert operations.check_spread(resources) == []
    assert schema_problems(resources) == []


def test_prod_denies_by_default_and_opens_the_service_s_flows() -> None:
    resources = by_name(rendered("prod"))
    policies = {n for n in resources if n.startswith("NetworkPolicy/")}
    assert policies == {
        "NetworkPolicy/default-deny",
        "NetworkPolicy/gateway-ingress",
        "NetworkPolicy/metrics-scrape",
        "NetworkPolicy/dns-egress",
        "NetworkPolicy/redis-egress",
        "NetworkPolicy/archive-egress",
    }
    (out,) = resources["NetworkPolicy/redis-egress"]["spec"]["egress"]
    assert out["to"] == [{"ipBlock": {"cidr": "0.0.0.0/0"}}]  # the managed Redis, outside
    (archive,) = resources["NetworkPolicy/archive-egress"]["spec"]["egress"]
    assert archive == {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 5432}]}


def test_every_image_of_every_rendering_is_pinned() -> None:
    for name in SERVICE:
        assert operations.check_images(rendered(name)) == [], name
    assert operations.image_problem("redis@sha256:" + "0" * 64) is None
