"""The solver's inner modules compiled with mypyc (``shared.solver.compiled``): in use wherever
they can be built, never stale, loaded on the solver's first use as the process chose, and giving
the very plays the plain Python modules give."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared.core.rulesets import rule_set
from shared.solver import arrange, chosen, compiled, runs_compiled, solve
from shared.solver.compiled import Choice
from tests.solver.positions import position

ROOT = Path(__file__).resolve().parents[2]
# what a fresh interpreter does first, as a `rummy` process does at its start
START = "from shared.infra.runtime import configure_solver; configure_solver(); "


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter of this tree, with ``env`` on top of this environment."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )


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
    if chosen().mode == "python":
        pytest.skip("RUMMY_SOLVER=python asks for plain Python")
    assert runs_compiled(), (
        "the solver's compiled modules are missing or older than their sources: "
        "`make install` builds them (see build/solver.log)"
    )


def test_compiled_and_plain_python_give_the_same_plays() -> None:
    here = plays()
    script = START + (
        "import json; from shared.solver import runs_compiled; "
        "from tests.solver.test_compiled import plays; "
        "print(json.dumps([runs_compiled(), plays()]))"
    )
    ran = _python(script, RUMMY_SOLVER="python")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == [False, json.loads(json.dumps(here))]
    # not a vacuous sample: plays that place cards, and tables that can be arranged
    assert sum(1 for row in here if row[0] == "cards" and row[1]) >= 6
    assert any(row[0] == "arrange" and row[1] for row in here)


def test_a_source_edited_since_the_build_runs_as_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    sources = tmp_path / "dp"
    sources.mkdir()
    for name in compiled.MODULES:
        shutil.copy(compiled.SOURCES / f"{name}.py", sources / f"{name}.py")
    build = tmp_path / "build"
    build.mkdir()
    (build / compiled.FINGERPRINT).write_text(compiled.fingerprint(sources) + "\n")

    path: list[str] = ["dp"]
    assert compiled.enable(path, Choice("auto", build), sources)
    assert path == [str(build / "shared" / "solver" / "dp"), "dp"]
    assert str(build) in sys.path

    path = ["dp"]  # asked for plain Python
    assert not compiled.enable(path, Choice("python", build), sources) and path == ["dp"]

    edited = sources / f"{compiled.MODULES[0]}.py"
    edited.write_text(edited.read_text() + "\n# edited\n")
    assert not compiled.enable(path, Choice("auto", build), sources) and path == ["dp"]

    shutil.rmtree(build)  # never built
    assert not compiled.enable(path, Choice("auto", build), sources) and path == ["dp"]


def test_an_installed_package_finds_its_modules_where_rummy_solver_build_says(
    tmp_path: Path,
) -> None:
    """The container image installs the package and keeps the compiled modules elsewhere
    (``deploy/Dockerfile``: ``RUMMY_SOLVER_BUILD=/opt/rummy/solver``)."""
    if not runs_compiled():
        pytest.skip("the solver is not compiled here")
    shutil.copytree(chosen().build, tmp_path / "solver")
    (tmp_path / "empty").mkdir()
    probe = START + "from shared.solver import chosen, runs_compiled; "
    probe += "print(runs_compiled(), chosen().build)"
    for folder, expected in (("solver", "True"), ("empty", "False")):
        ran = _python(probe, RUMMY_SOLVER="", RUMMY_SOLVER_BUILD=str(tmp_path / folder))
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.split() == [expected, str(tmp_path / folder)]


def test_an_unknown_rummy_solver_setting_is_refused_by_name() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "services.main", "solve"],
        cwd=ROOT,
        env={**os.environ, "RUMMY_SOLVER": "pure"},
        input="{}",
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 2
    assert "rummy solve: RUMMY_SOLVER is 'pure'; allowed: 'auto'" in ran.stderr
    assert "'python'" in ran.stderr


def test_importing_the_solver_loads_nothing_until_its_first_use() -> None:
    """Importing the rules core, the solver and what calls it reads no file of the build: the
    inner modules (and the fingerprint of their sources) wait for the first search, so a
    process can choose how they load after its imports."""
    probe = (
        "import sys; from pathlib import Path; from shared.solver import compiled; "
        "read = []; compiled.fingerprint = lambda folder=None: read.append(1) or ''; "
        "import shared.core, shared.play.bots, services.main, shared.cli.solve, shared.solver; "
        "from shared.solver import GOALS, Play, arrange, solve; "
        "loaded = 'shared.solver.dp' in sys.modules; "
        "from shared.core.rulesets import rule_set; "
        "arrange(rule_set('rummikub'), []); "
        "print(loaded, bool(read), 'shared.solver.dp' in sys.modules)"
    )
    ran = _python(probe, RUMMY_SOLVER="")
    assert ran.returncode == 0, ran.stderr
    built = (compiled.BUILD / compiled.FINGERPRINT).exists()  # read only when there is a build
    assert ran.stdout.split() == ["False", str(built), "True"]


def test_the_choice_is_made_before_the_first_use_and_holds_after_it() -> None:
    """Another choice once the modules are loaded is refused (they are the process's modules
    until it ends); the same choice again is accepted (a command run twice in one process)."""
    probe = (
        START + "from shared.solver import configure, runs_compiled; runs_compiled(); "
        "configure('python' if runs_compiled() else 'auto', '/nowhere')"
    )
    ran = _python(probe, RUMMY_SOLVER="")
    assert ran.returncode != 0
    assert "the solver is loaded already" in ran.stderr
    again = _python(START + "from shared.solver import runs_compiled; runs_compiled(); " + START)
    assert again.returncode == 0, again.stderr
    with pytest.raises(ValueError, match="allowed: 'auto'"):
        Choice("pure")


def _solver_worker_runs_compiled() -> bool:
    return runs_compiled()


def test_a_spawned_worker_process_loads_the_solver_as_its_settings_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker spawned to solve (the gateway's pool) imports the solver afresh: started with
    ``configure_solver`` it reads the settings from the environment it inherits, so
    ``RUMMY_SOLVER=python`` holds there too."""
    if not runs_compiled():
        pytest.skip("the solver is not compiled here: both would run as plain Python")
    import multiprocessing

    from shared.infra.runtime import configure_solver

    monkeypatch.setenv("RUMMY_SOLVER", "python")
    with multiprocessing.get_context("spawn").Pool(1, initializer=configure_solver) as pool:
        assert pool.apply(_solver_worker_runs_compiled) is False
    monkeypatch.setenv("RUMMY_SOLVER", "auto")
    with multiprocessing.get_context("spawn").Pool(1, initializer=configure_solver) as pool:
        assert pool.apply(_solver_worker_runs_compiled) is True
