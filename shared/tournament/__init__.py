"""Tournaments: a director's many tables, event-sourced like a game and folded the same way.

Pure, as the rules core is: the same log always folds to the same tournament, pairs the same
next round and computes the same standings (no clock, no randomness, no I/O).
"""
