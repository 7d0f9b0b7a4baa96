"""Replay, audit and disputes: the portable game record, the checks that prove a log untampered,
and the replay of any turn exactly as it was."""
