"""Rendering the kustomizations under deploy/k8s: ``kubectl kustomize`` when kubectl is on the
PATH, else a small renderer of exactly the kustomize features those files use.

The renderer knows ``resources`` (files and directories), ``patches`` given by ``path`` (strategic
merge: maps merge, ``null`` deletes a field, ``$patch: delete`` deletes the resource, the lists
``containers``, ``initContainers``, ``env``, ``volumes``, ``volumeMounts`` merge by their key,
other lists are replaced), ``configMapGenerator`` (``literals``, behaviours ``create`` and
``merge``; the name gets a content-hash suffix and the pod specs' references follow it) and
``images`` (``newName``, ``newTag``, ``digest``). Anything else in a kustomization is refused,
so the overlays cannot silently outgrow it; where kubectl exists, a test checks that both
render the same resources (the hash suffixes aside: kustomize's own is not reproduced).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

Resource = dict[str, Any]

SUPPORTED = {"apiVersion", "kind", "resources", "patches", "configMapGenerator", "images"}
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
}
GENERATED = "__generated__"
HASH_SUFFIX = re.compile(r"-[a-z0-9]{10}$")


class Unsupported(ValueError):
    """A kustomization uses a feature this renderer does not have."""


def render(directory: Path) -> list[Resource]:
    """The resources of a kustomization: with ``kubectl kustomize`` if it exists, else ours."""
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        return render_with_kubectl(directory, kubectl)
    return render_here(directory)


def render_with_kubectl(directory: Path, kubectl: str = "kubectl") -> list[Resource]:
    done = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {directory} failed: {done.stderr}")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def render_here(directory: Path) -> list[Resource]:
    """The renderer of this module (see its docstring)."""
    resources = _build(directory)
    _name_generated(resources)
    return resources


def load_kustomization(directory: Path) -> dict[str, Any]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - SUPPORTED
    if unknown:
        raise Unsupported(f"{directory}: kustomize fields {sorted(unknown)} are not supported")
    return dict(kustomization)


def _build(directory: Path) -> list[Resource]:
    kustomization = load_kustomization(directory)
    resources: list[Resource] = []
    for entry in kustomization.get("resources", []):
        path = directory / entry
        if path.is_dir():
            resources.extend(_build(path))
        else:
            resources.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    for generator in kustomization.get("configMapGenerator", []):
        _generate(resources, generator, directory)
    for patch in kustomization.get("patches", []):
        if set(patch) != {"path"}:
            raise Unsupported(f"{directory}: only patches given by 'path' are supported")
        docs = [d for d in yaml.safe_load_all((directory / patch["path"]).read_text()) if d]
        if len(docs) != 1:
            raise Unsupported(f"{patch['path']}: one patch per file")
        _patch(resources, docs[0], directory / patch["path"])
    for image in kustomization.get("images", []):
        _set_image(resources, image)
    return resources


def _generate(resources: list[Resource], generator: dict[str, Any], directory: Path) -> None:
    unknown = set(generator) - {"name", "literals", "behavior"}
    if unknown:
        raise Unsupported(f"{directory}: configMapGenerator fields {sorted(unknown)}")
    data = {}
    for literal in generator.get("literals", []):
        key, sep, value = str(literal).partition("=")
        if not sep:
            raise ValueError(f"{directory}: literal {literal!r} is not KEY=VALUE")
        data[key] = value
    behavior = generator.get("behavior", "create")
    existing = [
        r
        for r in resources
        if r.get(GENERATED)
        and r["kind"] == "ConfigMap"
        and r["metadata"]["name"] == generator["name"]
    ]
    if behavior == "create":
        if existing:
            raise ValueError(f"{directory}: ConfigMap {generator['name']} is generated twice")
        resources.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": generator["name"]},
                "data": data,
                GENERATED: True,
            }
        )
    elif behavior == "merge":
        if not existing:
            raise ValueError(f"{directory}: no generated ConfigMap {generator['name']} to merge")
        existing[0].setdefault("data", {}).update(data)
    else:
        raise Unsupported(f"{directory}: configMapGenerator behavior {behavior!r}")


def _patch(resources: list[Resource], patch: Resource, where: Path) -> None:
    targets = [
        r
        for r in resources
        if r["kind"] == patch["kind"] and r["metadata"]["name"] == patch["metadata"]["name"]
    ]
    if len(targets) != 1:
        raise ValueError(f"{where}: patch matches {len(targets)} resources, not one")
    (target,) = targets
    if patch.get("$patch") == "delete":
        resources.remove(target)
        return
    if "$patch" in patch:
        raise Unsupported(f"{where}: $patch {patch['$patch']!r}")
    strategic_merge(target, {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")})


def strategic_merge(base: dict[str, Any], patch: dict[str, Any]) -> None:
    """Merge ``patch`` into ``base`` in place (the subset described in the module docstring)."""
    for key, value in patch.items():
        if key.startswith("$"):
            raise Unsupported(f"directive {key!r}")
        if value is None:
            base.pop(key, None)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            strategic_merge(base[key], value)
        elif isinstance(value, list) and key in MERGE_KEYS and isinstance(base.get(key), list):
            merge_key = MERGE_KEYS[key]
            for item in value:
                match = [b for b in base[key] if b.get(merge_key) == item.get(merge_key)]
                if match:
                    strategic_merge(match[0], item)
                else:
                    base[key].append(copy.deepcopy(item))
        else:
            base[key] = copy.deepcopy(value)


def pod_spec(resource: Resource) -> dict[str, Any] | None:
    """The pod spec of a workload (or a Pod), else None."""
    if resource["kind"] == "Pod":
        return dict(resource.get("spec") or {})
    template = (resource.get("spec") or {}).get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        return template["spec"]  # type: ignore[no-any-return]
    return None


def _set_image(resources: list[Resource], image: dict[str, Any]) -> None:
    unknown = set(image) - {"name", "newName", "newTag", "digest"}
    if unknown:
        raise Unsupported(f"images fields {sorted(unknown)}")
    for resource in resources:
        spec = pod_spec(resource)
        if spec is None:
            continue
        for container in [*spec.get("containers", []), *spec.get("initContainers", [])]:
            name, tag, digest = split_image(container["image"])
            if name != image["name"]:
                continue
            name = image.get("newName", name)
            if "newTag" in image:
                tag, digest = str(image["newTag"]), None
            if "digest" in image:
                tag, digest = None, image["digest"]
            container["image"] = (
                name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
            )


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """``registry/name:tag@digest`` as (name, tag, digest)."""
    rest, _, digest = image.partition("@")
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:
        return rest[:colon], rest[colon + 1 :], digest or None
    return rest, None, digest or None


def _name_generated(resources: list[Resource]) -> None:
    """Suffix each generated ConfigMap's name with a hash of its contents (the algorithm of
    ``kubectl create configmap --append-hash``) and point the pod specs at the new names."""
    renamed: dict[str, str] = {}
    for resource in resources:
        if resource.pop(GENERATED, False):
            name = resource["metadata"]["name"]
            encoded = json.dumps(
                {"data": resource.get("data", {}), "kind": "ConfigMap", "name": name},
                sort_keys=True,
                separators=(",", ":"),
            )
            digest = hashlib.sha256(encoded.encode()).hexdigest()[:10]
            suffix = digest.translate(str.maketrans("013ae", "ghkmt"))
            resource["metadata"]["name"] = renamed[name] = f"{name}-{suffix}"
    for resource in resources:
        spec = pod_spec(resource)
        if spec is None:
            continue
        for volume in spec.get("volumes", []):
            if "configMap" in volume and volume["configMap"].get("name") in renamed:
                volume["configMap"]["name"] = renamed[volume["configMap"]["name"]]
        for container in [*spec.get("containers", []), *spec.get("initContainers", [])]:
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef")
                if ref and ref.get("name") in renamed:
                    ref["name"] = renamed[ref["name"]]
            for var in container.get("env", []):
                ref = (var.get("valueFrom") or {}).get("configMapKeyRef")
                if ref and ref.get("name") in renamed:
                    ref["name"] = renamed[ref["name"]]


def without_hash_suffixes(resources: list[Resource]) -> list[Resource]:
    """The resources with every generated ConfigMap's hash suffix (and references to it)
    replaced by ``-HASH``, sorted by kind and name: for comparing two renderers."""
    generated = {
        r["metadata"]["name"]
        for r in resources
        if r["kind"] == "ConfigMap" and HASH_SUFFIX.search(r["metadata"]["name"])
    }
    text = json.dumps(resources, sort_keys=True)
    for name in generated:
        text = text.replace(f'"{name}"', f'"{HASH_SUFFIX.sub("-HASH", name)}"')
    normal = json.loads(text)
    return sorted(normal, key=lambda r: (r["kind"], r["metadata"]["name"]))
