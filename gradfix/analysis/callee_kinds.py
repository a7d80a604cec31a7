"""The verdict on a callee: `Callee` and its kinds (docs/design.md §1, E1 and E2).

`CalleeClassifier` (callees.py) gives one for every callee, and the body checks
(bodies.py) for every lambda and function of the file; the rules read it
through `gradfix.analysis.merge`.
"""

from __future__ import annotations

from dataclasses import dataclass

PURE = "pure"
RANDOM = "random"
MODULE = "module"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Callee:
    kind: str  # PURE, RANDOM, MODULE or UNKNOWN
    symmetric: bool = False
    reason: str = ""  # for UNKNOWN / MODULE / RANDOM: what was not proven
    # MODULE only: built in this file from stateless, deterministic layers, so
    # one forward equals two and only its parameters' gradients need care.
    deterministic: bool = False
    # PURE or MODULE: a condition of an exact merge left unproven although the kind is
    # known (a forward hook registered in the file runs once per call of a module: the
    # one evaluation runs it once where the original ran it twice). Empty: none.
    unproven: str = ""
