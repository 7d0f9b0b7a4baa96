"""deploy/k8s/monitoring: the PodMonitors scrape every process where it serves /metrics, and the
alert rules name only metrics the code defines (or redis_exporter's, Prometheus's own). The
schemas of the Prometheus Operator's kinds (``crds.py``) run with the others in
test_manifests; here, that they catch what they are for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.deploy import checks, crds, metrics
from tests.deploy.conftest import rendered
from tests.deploy.kustomize import Resource


def of_kind(resources: list[Resource], kind: str) -> list[Resource]:
    return [r for r in resources if r["kind"] == kind]


def alerts() -> list[dict[str, Any]]:
    (rules,) = of_kind(rendered("monitoring"), "PrometheusRule")
    return [rule for group in rules["spec"]["groups"] for rule in group["rules"]]


def test_every_alert_names_only_metrics_that_exist() -> None:
    known = metrics.defined_metrics()
    for rule in alerts():
        assert metrics.promql_metrics(rule["expr"]), rule["alert"]
        assert metrics.unknown_metrics(rule["expr"], known) == set(), rule["alert"]


def test_the_alerts_cover_what_an_operator_is_woken_for() -> None:
    used = {name for rule in alerts() for name in metrics.promql_metrics(rule["expr"])}
    assert {
        "referee_stream_lag",
        "referee_dead_letters_total",
        "referee_version_conflicts_total",
        "gateway_requests_total",
        "redis_memory_used_bytes",
        "redis_memory_max_bytes",
    } <= used
    names = [rule["alert"] for rule in alerts()]
    assert len(names) == len(set(names))


def test_a_metric_the_code_does_not_define_is_caught() -> None:
    known = metrics.defined_metrics()
    expr = "max by (partition) (referee_stream_lags) > 1000"
    assert metrics.unknown_metrics(expr, known) == {"referee_stream_lags"}
    expr = 'sum(rate(gateway_request_total{status=~"5.."}[5m])) / sum(rate(up[1m]))'
    assert metrics.unknown_metrics(expr, known) == {"gateway_request_total"}


def test_the_source_scan_names_series_as_prometheus_exposes_them(tmp_path: Path) -> None:
    (tmp_path / "services").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "services" / "a.py").write_text(
        'x = Counter("games_total", "h")\n'
        'y = Histogram(\n    "turn_seconds", "h")\n'
        'z = Gauge(f"{namespace}_busy", "h")\n'
        'pool = Pool(namespace="hint_pool")\n'
    )
    (tmp_path / "shared" / "b.py").write_text('w = Counter("moves", "h")\n')
    assert metrics.defined_metrics(tmp_path) == {
        "games_total",
        "games_created",
        "turn_seconds_bucket",
        "turn_seconds_sum",
        "turn_seconds_count",
        "turn_seconds_created",
        "hint_pool_busy",
        "moves_total",
        "moves_created",
    }


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("up == 0", {"up"}),
        ('rate(a_total{status=~"5..", route!="x"}[5m]) / b', {"a_total", "b"}),
        ("sum by (namespace, reason) (increase(c_total[15m])) > 0", {"c_total"}),
        ("d / (e > 0) > 0.8", {"d", "e"}),
        ("f and on (pod) g unless h offset 5m", {"f", "g", "h"}),
        ('histogram_quantile(0.99, sum by (le) (rate(i_bucket{a="{b}"}[5m])))', {"i_bucket"}),
    ],
)
def test_the_promql_reading(expr: str, names: set[str]) -> None:
    assert metrics.promql_metrics(expr) == names


def monitors() -> list[Resource]:
    return of_kind(rendered("monitoring"), "PodMonitor")


def selected_by(monitor: Resource, labels: dict[str, str]) -> bool:
    selector = monitor["spec"]["selector"]
    if not all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        value = labels.get(expression["key"])
        if expression["operator"] == "In" and value not in expression["values"]:
            return False
        if expression["operator"] == "NotIn" and value in expression["values"]:
            return False
    return True


@pytest.mark.parametrize("name", ["base", "prod"])
def test_the_pod_monitors_scrape_every_metrics_port(name: str, routes: dict[str, set[str]]) -> None:
    """Each process (and redis_exporter) is scraped by one PodMonitor, on a port its container
    declares by name, at a path it serves."""
    resources = rendered(name)
    processes = {p.where: p for p in checks.k8s_processes(resources)}
    scraped = 0
    for workload, spec in checks.workloads(resources):
        labels = checks.template_labels(workload)
        (monitor,) = [m for m in monitors() if selected_by(m, labels)]
        for endpoint in monitor["spec"]["podMetricsEndpoints"]:
            owners = [
                c
                for c in spec["containers"]
                if endpoint["port"] in [p.get("name") for p in c["ports"]]
            ]
            assert len(owners) == 1, (checks.name_of(workload), endpoint)
            (owner,) = owners
            where = f"{checks.name_of(workload)} container {owner['name']}"
            if where in processes:
                assert endpoint["path"] in routes[processes[where].subcommand]
            scraped += 1
    assert scraped == len(list(checks.workloads(resources)))


Mutation = Callable[[Resource], Any]


@pytest.mark.parametrize(
    ("kind", "mutate", "expected"),
    [
        (
            "PodMonitor",
            lambda d: d["spec"].update(podMetricEndpoints=d["spec"].pop("podMetricsEndpoints")),
            "'podMetricsEndpoints' is a required property",
        ),
        (
            "PodMonitor",
            lambda d: d["spec"]["podMetricsEndpoints"][0].update(interval="30 seconds"),
            "'30 seconds' does not match",
        ),
        ("PodMonitor", lambda d: d["spec"].pop("selector"), "'selector' is a required property"),
        (
            "PrometheusRule",
            lambda d: d["spec"]["groups"][0]["rules"][0]["labels"].pop("severity"),
            "is not valid under any of the given schemas",
        ),
        (
            "PrometheusRule",
            lambda d: d["spec"]["groups"][0]["rules"][0].update(fro="5m"),
            "is not valid under any of the given schemas",
        ),
        ("PrometheusRule", lambda d: d["spec"].update(groups=[]), "should be non-empty"),
    ],
)
def test_the_operator_s_kinds_are_checked_against_their_schemas(
    kind: str, mutate: Mutation, expected: str
) -> None:
    resource = of_kind(rendered("monitoring"), kind)[0]
    assert crds.is_ours(resource) and crds.problems(resource) == []
    mutate(resource)
    problems = crds.problems(resource)
    assert any(expected in p for p in problems), problems
