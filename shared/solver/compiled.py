"""The solver's inner modules (``shared.solver.dp``) compiled to C with mypyc, where a C compiler
is at hand: how they are built, and whether a process loads them.

The same typed source, run two to three times faster where the search is long (its states are
small ints in dicts and heaps, where the interpreter's dispatch is most of the cost). ``make
install`` runs ``build()``, which compiles ``MODULES`` into ``build/solver/`` and records a
fingerprint of their sources there. The first import of ``shared.solver.dp`` (the solver's first
use, never the import of ``shared.solver`` or of the rules core) puts that directory first on
the package's path only when the fingerprint matches the sources as they are now, so a module
edited since the build runs as Python, never as a stale binary. Without a compiler (or with
``Choice("python")``; ``auto``, the default, uses them when they are fresh) everything runs as
plain Python: slower, the same answers (``tests/solver/test_compiled.py`` compares the two).

What a process loads is its own choice, made before the solver's first use (``configure``; the
``rummy`` command makes it from its settings, ``RUMMY_SOLVER`` and ``RUMMY_SOLVER_BUILD``): this
module reads no environment.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import MutableSequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE = ("shared", "solver", "dp")  # the package of the compiled modules
MODULES = ("program", "lanes", "bounds", "ladder", "search")
ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT.joinpath(*PACKAGE)
# where the compiled modules live: build/solver/ of the checkout, unless a process names another
# folder (an installed package, as in the container image: RUMMY_SOLVER_BUILD)
BUILD = ROOT / "build" / "solver"
FINGERPRINT = "fingerprint"
MODES = {
    "auto": "the compiled solver when it is built from these sources, else plain Python",
    "python": "always plain Python",
}


@dataclass(frozen=True)
class Choice:
    """How a process loads the solver's inner modules: ``mode`` (a key of ``MODES``), and the
    folder ``build()`` compiled them into."""

    mode: str = "auto"
    build: Path = BUILD

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            allowed = " or ".join(f"{name!r} ({meaning})" for name, meaning in MODES.items())
            raise ValueError(f"the solver's mode is {self.mode!r}; allowed: {allowed}")


_chosen = Choice()
_loaded: Choice | None = None  # what the first use loaded by (the choice holds from then on)


def configure(mode: str = "auto", build: str | Path = "") -> Choice:
    """Choose how the solver's inner modules are loaded at its first use (``build``: empty for
    ``BUILD``). After that first use only the same choice is accepted: the modules a process
    loaded are its modules until it ends."""
    global _chosen
    choice = Choice(mode, Path(build) if build else BUILD)
    if _loaded is not None and choice != _loaded:
        raise RuntimeError(
            f"the solver is loaded already ({_loaded}); choose {choice} before its first use"
        )
    _chosen = choice
    return choice


def chosen() -> Choice:
    """The choice the solver's first use loads by (or loaded by)."""
    return _chosen


def load(package_path: MutableSequence[str]) -> bool:
    """The first use of the solver (the import of ``shared.solver.dp``, whose ``__path__`` is
    ``package_path``): the compiled modules first on it when ``chosen()`` allows them and they
    are fresh; whether it put them there."""
    global _loaded
    _loaded = _chosen
    return enable(package_path, _chosen)


def fingerprint(folder: Path = SOURCES) -> str:
    """The sources of ``MODULES`` (in ``folder``) and the interpreter they are built for."""
    digest = hashlib.sha256(sys.implementation.cache_tag.encode())
    for name in MODULES:
        digest.update((folder / f"{name}.py").read_bytes())
    return digest.hexdigest()


def enable(package_path: MutableSequence[str], choice: Choice, sources: Path = SOURCES) -> bool:
    """Put the compiled modules first on the package's ``package_path`` when ``choice`` allows
    them and they were built from the sources as they are now; whether it did."""
    if choice.mode == "python":
        return False
    try:
        recorded = (choice.build / FINGERPRINT).read_text().strip()
    except OSError:
        return False
    if recorded != fingerprint(sources):
        return False
    # mypyc puts the runtime the compiled modules share at the top of the build, by a name of
    # its own (a hash): it is imported from ``sys.path``
    if str(choice.build) not in sys.path:
        sys.path.append(str(choice.build))
    package_path.insert(0, str(choice.build.joinpath(*PACKAGE)))
    return True


def compiler() -> str | None:
    """The C compiler this interpreter builds extensions with, if it is installed."""
    command = (sysconfig.get_config_var("CC") or "cc").split()
    return shutil.which(command[0]) if command else None


def build(target: str | Path = "") -> str:
    """Compile ``MODULES`` into ``target`` (empty: ``BUILD``), replacing what was there; a
    one-line report."""
    into = Path(target) if target else BUILD
    if compiler() is None:
        _clear(into)
        return "solver: no C compiler found, the solver runs as plain Python"
    try:
        from mypyc.build import mypycify
        from setuptools import setup  # type: ignore[import-untyped]
    except ImportError as missing:
        _clear(into)
        return f"solver: {missing.name} is not installed, the solver runs as plain Python"
    made = fingerprint()  # of the sources compiled (an edit during the build shows later)
    fresh = into.with_name(into.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    here = Path.cwd()
    package = "/".join(PACKAGE)
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(ROOT)  # module names are read from the paths (shared/solver/dp/program.py)
        try:
            setup(
                name="rummy-solver",
                ext_modules=mypycify(
                    [f"{package}/{name}.py" for name in MODULES],
                    opt_level="3",
                    target_dir=str(Path(scratch) / "c"),
                ),
                script_args=[
                    "--quiet",
                    "build_ext",
                    "--build-lib",
                    str(fresh),
                    "--build-temp",
                    str(Path(scratch) / "o"),
                ],
            )
        except (SystemExit, Exception) as failed:  # setuptools exits on a compiler error
            shutil.rmtree(fresh, ignore_errors=True)
            _clear(into)
            return f"solver: compiling failed ({failed}), the solver runs as plain Python"
        finally:
            os.chdir(here)
    (fresh / FINGERPRINT).write_text(made + "\n")
    _clear(into)
    fresh.rename(into)
    return f"solver: compiled with mypyc into {into}"


def _clear(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
