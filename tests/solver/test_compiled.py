"""The solver's inner modules compiled with mypyc (``shared.core.compiled``): in use wherever they
can be built, never stale, and giving the very plays the plain Python modules give."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared.core import compiled
from shared.core.rulesets import rule_set
from shared.core.solver import arrange, solve
from tests.solver.positions import position

ROOT = Path(__file__).resolve().parents[2]


def plays() -> list[list[object]]:
    """Positions of several rule sets and sizes, every goal: what the solver answers (run here
    and in a plain Python process)."""
    out: list[list[object]] = []
    rng = random.Random(31)
    for family, options in (
        ("rummikub", {"jokers": 2}),
        ("rummikub", {"jokers": 4}),
        ("robbers", {"ace": "wrap", "joker_policy": "to_hand"}),
        ("robbers", {"run_max": 5, "set_max": 3}),
    ):
        rules = rule_set(family, options)
        for size in (12, 30, 50):
            table, hand = position(rules, size, rng.randint(10, 20), rng)
            for goal in ("cards", "points", "opening"):
                play = solve(rules, table, hand, goal != "opening", goal, min_disruption=True)
                out.append([goal, sorted(play.played), play.points, play.jokers, play.unchanged])
            done = arrange(rules, [c for meld in table for c in meld] + hand)
            out.append(["arrange", done.arrangeable, done.free_jokers])
    return out


def buildable() -> bool:
    try:
        import mypyc  # noqa: F401
        import setuptools  # noqa: F401
    except ImportError:
        return False
    return compiled.compiler() is not None


def test_the_solver_runs_compiled_where_it_can_be_built() -> None:
    if not buildable():
        pytest.skip("no C compiler or no mypyc here: the solver runs as plain Python")
    if os.environ.get("RUMMY_SOLVER") == "python":
        pytest.skip("RUMMY_SOLVER=python asks for plain Python")
    assert compiled.in_use(), (
        "the solver's compiled modules are missing or older than their sources: "
        "`make install` builds them (see build/solver.log)"
    )


def test_compiled_and_plain_python_give_the_same_plays() -> None:
    here = plays()
    script = "import json; from tests.solver.test_compiled import plays; print(json.dumps(plays()))"
    env = {**os.environ, "RUMMY_SOLVER": "python"}
    ran = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == json.loads(json.dumps(here))
    # not a vacuous sample: plays that place cards, and tables that can be arranged
    assert sum(1 for row in here if row[0] == "cards" and row[1]) >= 6
    assert any(row[0] == "arrange" and row[1] for row in here)


def test_a_source_edited_since_the_build_runs_as_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    sources = tmp_path / "core"
    sources.mkdir()
    for name in compiled.MODULES:
        shutil.copy(compiled.HERE / f"{name}.py", sources / f"{name}.py")
    build = tmp_path / "build"
    build.mkdir()
    (build / compiled.FINGERPRINT).write_text(compiled.fingerprint(sources) + "\n")

    path: list[str] = ["core"]
    assert compiled.enable(path, build, sources)
    assert path == [str(build / "shared" / "core"), "core"]
    assert str(build) in sys.path

    monkeypatch.setenv("RUMMY_SOLVER", "python")  # asked for plain Python
    path = ["core"]
    assert not compiled.enable(path, build, sources) and path == ["core"]
    monkeypatch.delenv("RUMMY_SOLVER")

    edited = sources / f"{compiled.MODULES[0]}.py"
    edited.write_text(edited.read_text() + "\n# edited\n")
    assert not compiled.enable(path, build, sources) and path == ["core"]

    shutil.rmtree(build)  # never built
    assert not compiled.enable(path, build, sources) and path == ["core"]


def test_an_installed_package_finds_its_modules_where_rummy_solver_build_says(
    tmp_path: Path,
) -> None:
    """The container image installs the package and keeps the compiled modules elsewhere
    (``deploy/Dockerfile``: ``RUMMY_SOLVER_BUILD=/opt/rummy/solver``)."""
    if not compiled.in_use():
        pytest.skip("the solver is not compiled here")
    shutil.copytree(compiled.BUILD, tmp_path / "solver")
    (tmp_path / "empty").mkdir()
    probe = "from shared.core import compiled; print(compiled.in_use(), compiled.BUILD)"
    for folder, expected in (("solver", "True"), ("empty", "False")):
        env = {**os.environ, "RUMMY_SOLVER_BUILD": str(tmp_path / folder)}
        env.pop("RUMMY_SOLVER", None)
        ran = subprocess.run(
            [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.split() == [expected, str(tmp_path / folder)]


def test_an_unknown_rummy_solver_setting_is_refused_by_name() -> None:
    env = {**os.environ, "RUMMY_SOLVER": "pure"}
    ran = subprocess.run(
        [sys.executable, "-c", "import shared.core"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert ran.returncode != 0
    assert "RUMMY_SOLVER is 'pure'; allowed: 'auto'" in ran.stderr
    assert "'python'" in ran.stderr
