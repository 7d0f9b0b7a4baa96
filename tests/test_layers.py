"""The layers (``[tool.importlinter]`` in pyproject.toml) hold: the console script over the
services over the tools, audit, infra, the solver and the rules core, each importing only from
below, and no import cycle between the modules of a package.

``lint-imports`` runs in its own process on this tree's code (``PYTHONPATH`` is the tree), so
the graph it reads is the one under test, not an installed copy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("importlinter", reason="import-linter is in the test extras")


def lint_imports(*config: str) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over this tree, with pyproject.toml's contracts or those in ``config``."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command; "
            "sys.exit(lint_imports_command())",
            "--no-cache",
            "--no-logo",
            *config,
        ],
        cwd=ROOT,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_layer_contract_is_kept() -> None:
    ran = lint_imports()
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert "0 broken" in ran.stdout


def test_a_broken_contract_fails_the_check(tmp_path: Path) -> None:
    """The check reads the real imports: the layers turned upside down are broken."""
    upside_down = tmp_path / "upside_down.toml"
    upside_down.write_text(
        "[tool.importlinter]\n"
        'root_packages = ["shared", "services"]\n'
        "[[tool.importlinter.contracts]]\n"
        'name = "upside down"\n'
        'type = "layers"\n'
        'layers = ["shared.core", "shared.infra"]\n',
        encoding="utf-8",
    )
    ran = lint_imports(str(upside_down))
    assert ran.returncode != 0, ran.stdout[-4000:]
    assert "shared.infra is not allowed to import shared.core" in ran.stdout
