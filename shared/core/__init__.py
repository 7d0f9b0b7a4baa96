"""The rules core: cards, melds, rule sets, judgement, the engine's pure parts (the exact solver,
built on it, is ``shared.solver``)."""
