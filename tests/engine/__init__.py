"""Engine tests: decide/evolve scenarios, views, self-play invariants and golden games."""
