"""Bots and self-play: players that choose their moves with the solver, over the rules core."""
