"""CPython's parse of a file, shared by the prefilter's prechecks (engine and rule modules).

Parsed at most once per prefilter call: every precheck that wants the tree reads it from the
same `state` dict. None when the file does not parse (the prechecks then let the file through,
and the parser reports the error).
"""

from __future__ import annotations

from typing import Dict


def tree(data: bytes, state: Dict[str, object]):
    if "tree" not in state:
        import ast
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                state["tree"] = ast.parse(data)
        except BaseException as exc:  # noqa: BLE001 - SyntaxError, ValueError, RecursionError, MemoryError...
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            state["tree"] = None
    return state["tree"]
