"""The solver's modules as a package of their own: on the rules core only (never the
infrastructure or the services), no import cycles among them, no private name imported from
another module, and the rules core importing none of it when it is imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLVER = ROOT / "shared" / "solver"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, list[str], bool]]:
    """(module, names, at module level) of every import in the file, in functions too."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    found: list[tuple[str, list[str], bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, [a.name for a in node.names], id(node) in top))
        elif isinstance(node, ast.Import):
            found.extend((a.name, [], id(node) in top) for a in node.names)
    return found


MODULES = {_module(path): path for path in sorted(SOLVER.rglob("*.py"))}
PUBLIC = ("shared.solver", "shared.solver.goals", "shared.solver.dp.program")


def test_the_solver_is_a_package_of_its_own() -> None:
    assert all(name in MODULES for name in PUBLIC), sorted(MODULES)
    assert not list((ROOT / "shared" / "core").glob("solver*.py"))


def _graph() -> dict[str, set[str]]:
    """The solver's modules and the solver modules each imports (``from package import module``
    counts as the module), at its import or inside a function alike, but for the public
    package's own calls into its modules (their first use loads the searches: see
    ``shared.solver``)."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        deps = set()
        for module, names, at_top in _imports(path):
            if name == "shared.solver" and not at_top:
                continue
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES]
            deps.update(targets or ([module] if module in MODULES else []))
        graph[name] = deps - {name}
    return graph


def test_the_solver_depends_on_the_rules_core_only() -> None:
    outside = sorted(
        (name, module)
        for name, path in MODULES.items()
        for module, _, _ in _imports(path)
        if module.split(".")[0] in ("shared", "services", "tests")
        and not module.startswith(("shared.core", "shared.solver"))
    )
    assert not outside, f"the solver imports beyond the rules core: {outside}"


def test_no_import_cycles_among_the_solvers_modules() -> None:
    graph = _graph()
    assert len(graph) >= 9 and graph["shared.solver.goals"]  # the package read, not nothing
    cycles = []

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt == start:
                cycles.append([*path, start])
            elif nxt not in path:
                walk(start, nxt, [*path, nxt])

    for name in graph:
        walk(name, name, [name])
    assert not cycles, f"import cycles: {cycles[:3]}"


def test_no_private_name_is_imported_from_another_module() -> None:
    private = sorted(
        (name, module, imported)
        for name, path in MODULES.items()
        for module, names, _ in _imports(path)
        if module.startswith("shared")
        for imported in names
        if imported.startswith("_")
    )
    assert not private, f"private names imported across modules: {private}"


def test_the_rules_core_does_not_import_the_solver_when_it_is_imported() -> None:
    """The core's bots call the solver, importing it inside the call (the solver is built on the
    core, not the other way round)."""
    core = ROOT / "shared" / "core"
    eager = sorted(
        (_module(path), module)
        for path in core.glob("*.py")
        for module, _, at_top in _imports(path)
        if at_top and module.startswith("shared.solver")
    )
    assert not eager, f"the rules core imports the solver at its import: {eager}"
