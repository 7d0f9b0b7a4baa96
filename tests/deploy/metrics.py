"""The metric names the code defines, found by reading its source (a ``Counter("...")``,
``Gauge``, ``Histogram`` or ``Summary`` with a literal name, or an f-string name built on a
``namespace`` given literally elsewhere), as Prometheus will see them on /metrics; and the metric
names a PromQL expression uses, read roughly (enough for the alert rules).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("services", "shared")

DEFINED = re.compile(r"\b(Counter|Gauge|Histogram|Summary)\(\s*(f?)\"([a-zA-Z_:{}][\w:{}]*)\"")
NAMESPACE = re.compile(r"\bnamespace=\"([a-zA-Z_]\w*)\"")

SERIES = {
    "Counter": ("_total", "_created"),
    "Gauge": ("",),
    "Histogram": ("_bucket", "_sum", "_count", "_created"),
    "Summary": ("", "_sum", "_count", "_created"),
}
"""The series each kind exposes, as suffixes of its name (a Counter's without ``_total``)."""

OTHERS = frozenset(
    {
        "up",  # Prometheus's own, per scrape
        "redis_up",  # redis_exporter (deploy/k8s/base/redis.yaml)
        "redis_memory_used_bytes",
        "redis_memory_max_bytes",
        "process_resident_memory_bytes",  # prometheus_client's ProcessCollector
        "process_cpu_seconds_total",
    }
)
"""Names no source here defines that the alerts may still use: exporters' and the client's."""

KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
    | {"and", "or", "unless", "inf", "nan"}
)


def defined_metrics(root: Path = ROOT) -> set[str]:
    """Every series name the sources under ``root`` expose."""
    texts = [p.read_text() for d in SOURCES for p in sorted((root / d).rglob("*.py"))]
    namespaces = {n for text in texts for n in NAMESPACE.findall(text)}
    names: set[str] = set()
    for text in texts:
        for kind, is_f, name in DEFINED.findall(text):
            if is_f:
                bases = {name.replace("{namespace}", n) for n in namespaces}
                if any("{" in b for b in bases):
                    continue  # built on something other than a namespace: not read here
            else:
                bases = {name}
            for base in bases:
                if kind == "Counter":
                    base = base.removesuffix("_total")
                names.update(base + suffix for suffix in SERIES[kind])
    return names


def promql_metrics(expr: str) -> set[str]:
    """The metric names an expression selects: identifiers outside strings, label matchers,
    ranges and grouping clauses, that are neither functions nor keywords."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings first: they may hold braces
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries
    text = re.sub(
        r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text
    )  # grouping labels
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", text):
        word, call = match.group(1), match.group(2)
        if call or word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


def unknown_metrics(expr: str, known: set[str]) -> set[str]:
    return promql_metrics(expr) - known - OTHERS
