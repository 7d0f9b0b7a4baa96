"""The rules core: cards, melds, rule sets, judgement, the engine's pure parts and the solver."""

from shared.core.compiled import enable

enable(__path__)  # the solver's inner modules compiled, when built from these very sources
