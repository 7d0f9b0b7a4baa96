"""The solver's inner modules: the rank-by-rank dynamic program (``program``), its bounds
(``bounds``, ``lanes``) and the searches under a floor over its states (``search``,
``ladder``). Pure integer code, compiled with mypyc where it was built (``shared.solver.compiled``).

Every import of these modules passes through this package first, so this is where the compiled
ones are put first on the path, when the process's choice allows them and they are fresh: at
the solver's first use, not when ``shared.solver`` (or the rules core) is imported.
"""

from shared.solver.compiled import load

load(__path__)
