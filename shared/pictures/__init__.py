"""Pictures drawn from what the service measured or recorded: a turn of a game as a viewer may
see it (``turn``), and a chart of a run's figures (``chart``), both as SVG text built by the
small document builder of ``svg`` (no drawing library, nothing beyond the standard library)."""
