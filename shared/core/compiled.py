"""The solver's inner modules compiled to C with mypyc, where a C compiler is at hand.

The same typed source, run two to three times faster where the search is long (its states are
small ints in dicts and heaps, where the interpreter's dispatch is most of the cost). ``make
install`` runs ``compiled.build()``, which compiles ``MODULES`` into ``build/solver/`` and
records a fingerprint of their sources there. Importing ``shared.core`` puts that directory
first on the package's path only when the fingerprint matches the sources as they are now, so a
module edited since the build runs as Python, never as a stale binary. Without a compiler (or
with ``RUMMY_SOLVER=python``; ``auto``, the default, uses them when they are fresh) everything
runs as plain Python: slower, the same answers (``tests/solver/test_compiled.py`` compares the
two).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import MutableSequence
from pathlib import Path

MODULES = ("solver_dp", "solver_lanes", "solver_ladder", "solver_search")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# where the compiled modules live: build/solver/ of the checkout, or (an installed package, as
# in the container image) the directory RUMMY_SOLVER_BUILD names
BUILD = Path(os.environ.get("RUMMY_SOLVER_BUILD") or ROOT / "build" / "solver")
FINGERPRINT = "fingerprint"


def fingerprint(folder: Path = HERE) -> str:
    """The sources of ``MODULES`` (in ``folder``) and the interpreter they are built for."""
    digest = hashlib.sha256(sys.implementation.cache_tag.encode())
    for name in MODULES:
        digest.update((folder / f"{name}.py").read_bytes())
    return digest.hexdigest()


def enable(package_path: MutableSequence[str], build: Path = BUILD, sources: Path = HERE) -> bool:
    """Put the compiled modules first on ``shared.core``'s ``package_path`` when they were built
    from the sources as they are now; whether it did."""
    wanted = os.environ.get("RUMMY_SOLVER", "") or "auto"
    if wanted not in ("auto", "python"):
        raise RuntimeError(
            f"RUMMY_SOLVER is {wanted!r}; allowed: 'auto' (the compiled solver when it is built "
            "from these sources, else plain Python) or 'python' (always plain Python)"
        )
    if wanted == "python":
        return False
    try:
        recorded = (build / FINGERPRINT).read_text().strip()
    except OSError:
        return False
    if recorded != fingerprint(sources):
        return False
    # mypyc puts the runtime the compiled modules share at the top of the build, by a name of
    # its own (a hash): it is imported from ``sys.path``
    if str(build) not in sys.path:
        sys.path.append(str(build))
    package_path.insert(0, str(build / "shared" / "core"))
    return True


def in_use() -> bool:
    """Whether the solver's inner modules were loaded compiled."""
    from shared.core import solver_dp

    return not (solver_dp.__file__ or "").endswith(".py")


def compiler() -> str | None:
    """The C compiler this interpreter builds extensions with, if it is installed."""
    command = (sysconfig.get_config_var("CC") or "cc").split()
    return shutil.which(command[0]) if command else None


def build() -> str:
    """Compile ``MODULES`` into ``BUILD`` (replacing what was there); a one-line report."""
    if compiler() is None:
        _clear()
        return "solver: no C compiler found, the solver runs as plain Python"
    try:
        from mypyc.build import mypycify
        from setuptools import setup  # type: ignore[import-untyped]
    except ImportError as missing:
        _clear()
        return f"solver: {missing.name} is not installed, the solver runs as plain Python"
    made = fingerprint()  # of the sources compiled (an edit during the build shows later)
    fresh = BUILD.with_name("solver.new")
    shutil.rmtree(fresh, ignore_errors=True)
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(ROOT)  # module names are read from the paths (shared/core/solver_dp.py)
        try:
            setup(
                name="rummy-solver",
                ext_modules=mypycify(
                    [f"shared/core/{name}.py" for name in MODULES],
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
            _clear()
            return f"solver: compiling failed ({failed}), the solver runs as plain Python"
        finally:
            os.chdir(here)
    (fresh / FINGERPRINT).write_text(made + "\n")
    _clear()
    fresh.rename(BUILD)
    return f"solver: compiled with mypyc into {BUILD}"


def _clear() -> None:
    shutil.rmtree(BUILD, ignore_errors=True)
