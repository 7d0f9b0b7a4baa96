"""The settings docs/services.md documents are the ones the deploy check accepts: a manifest may
set any of them, and a bad value of each is refused by name (``Settings``,
``checks.check_process``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shared.infra.settings import ENV_NAMES, Settings, SettingsError
from tests.deploy.checks import Process, check_process

SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "services.md"
PROCESS_SETTINGS = {
    "RUMMY_EVENT_LOOP": "asyncio",
    "RUMMY_GC": "default",
    "RUMMY_SOLVER": "python",
    "RUMMY_SOLVER_BUILD": "/opt/rummy/solver",
}


def _documented() -> set[str]:
    """The variables of the Settings table (the section up to the next heading, or the end)."""
    text = SETTINGS_PAGE.read_text()
    table = text[text.index("## Settings") :]
    table = table.split("\n## ")[0]
    return set(re.findall(r"^\| `([A-Z_]+)` \|", table, re.MULTILINE))


def test_every_documented_setting_is_one_the_code_reads() -> None:
    documented = _documented()
    assert {"REDIS_URL", *PROCESS_SETTINGS} <= documented
    assert not documented - ENV_NAMES, f"documented, not settings: {documented - ENV_NAMES}"


def test_every_setting_the_code_reads_is_documented() -> None:
    missing = ENV_NAMES - _documented()
    assert not missing, f"settings missing from docs/services.md's Settings table: {missing}"


def test_a_process_may_set_how_it_runs_and_loads_the_solver() -> None:
    env = {"REDIS_URL": "redis://redis:6379/0", **PROCESS_SETTINGS}
    assert check_process(Process("gateway", ["rummy", "gateway"], env)) == []
    settings = Settings.from_env(env)
    assert (settings.event_loop, settings.gc_thresholds()) == ("asyncio", None)
    assert (settings.solver, settings.solver_build) == ("python", "/opt/rummy/solver")
    assert Settings.from_env({"RUMMY_GC": " 9000, 5,5"}).gc_thresholds() == (9000, 5, 5)
    defaults = Settings()
    assert (defaults.event_loop, defaults.gc_thresholds(), defaults.solver) == (
        "uvloop",
        (50_000, 20, 20),
        "auto",
    )


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("RUMMY_EVENT_LOOP", "trio", "allowed: 'uvloop' (uvloop where it is installed) or"),
        ("RUMMY_GC", "lots", "allowed: 'default', or three whole numbers"),
        ("RUMMY_GC", "0,10,10", "allowed: 'default', or three whole numbers"),
        ("RUMMY_SOLVER", "pure", "allowed: 'auto' (the compiled solver when it is built"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(name: str, value: str, words: str) -> None:
    env = {"REDIS_URL": "redis://redis:6379/0", **PROCESS_SETTINGS, name: value}
    problems = check_process(Process("gateway", ["rummy", "gateway"], env))
    assert any(f"{name} is {value!r}; {words}" in p for p in problems), problems
    with pytest.raises(SettingsError, match=f"^{name} is"):
        Settings.from_env(env)


def test_the_solver_modes_of_the_settings_are_the_loaders() -> None:
    """``Settings`` (infrastructure) names the solver's modes without importing the solver."""
    from shared.infra import settings
    from shared.solver import compiled

    assert settings.SOLVERS == compiled.MODES
