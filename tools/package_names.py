"""Regenerate `gradfix/analysis/package_names.py`'s table (review, round 12) from the installed torch and numpy.

    python tools/package_names.py          # the table's entries, to paste into REFUSED_NAMES
    python tools/package_names.py --json   # the same as JSON (what tests/test_package_names.py compares)

Every module under `loops._PROVEN_SUBMODULES`' torch and numpy subtrees is imported (walked with
`pkgutil`; private and test modules left out), and for each the public names a proven path may not
go through are listed: a module-valued attribute that is not the module's own submodule of that
name, or a submodule not walked; a metaclass (a subclass of `type`); a class or value of another
package re-exported, and a class whose metaclass has a `__call__` of its own (review, round 13). Run it in a fresh process:
what else is imported decides nothing, but a module imported as a side effect is listed too.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
import types
import warnings
from pathlib import Path


def _private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split("."))


def _testlike(name: str) -> bool:
    return any(part in ("tests", "testing") for part in name.split("."))


def _foreign(value, module_name: str) -> bool:
    """Review, round 13: a class or value of another package, re-exported (`torch.amp.grad_scaler.Enum`
    is `enum.Enum`, whose call makes a class from a namespace mapping; `collections.abc.Mapping`,
    `typing.Generic`, a `TypeVar`, `functools.partial`): the table's promise is that a name past a
    listed module is that package's own. Functions (and builtins' classes and values) pass."""
    if inspect.isroutine(value):
        return False  # (a function, a builtin or Cython one, numpy's dispatchers, an `lru_cache` wrapper)
    kind = value if isinstance(value, type) else type(value)
    root = (getattr(kind, "__module__", None) or "").split(".")[0]
    return root not in (module_name.split(".")[0], "builtins")


# The metaclasses' calls that make an instance of the class called, nothing else: `type`'s, and
# pybind11's (torch's C++ classes: it checks that `__init__` ran).
_INSTANCE_CALLS = {("builtins", "type"), ("pybind11_builtins", "pybind11_type")}


def _class_making_call(value) -> bool:
    """A class whose metaclass's `__call__` is not on `_INSTANCE_CALLS`' allowlist (an `enum.Enum`:
    `Enum("K", {"__s" + "ub__": f, "a": 1})` is the functional API, which makes a class from a
    namespace mapping; review, round 13)."""
    if not isinstance(value, type):
        return False
    owner = next(meta for meta in type(value).__mro__ if "__call__" in vars(meta))
    return (owner.__module__, owner.__qualname__) not in _INSTANCE_CALLS


def generate() -> dict:
    warnings.filterwarnings("ignore")
    import numpy  # noqa: F401
    import torch  # noqa: F401

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from gradfix.analysis import loops

    roots = {r: [".".join((r,) + p) for p in ps] for r, ps in loops._PROVEN_SUBMODULES.items() if r in ("torch", "numpy")}
    modules = {"torch", "numpy"}
    for bases in roots.values():
        for base in bases:
            module = importlib.import_module(base)
            modules.add(base)
            if hasattr(module, "__path__"):
                for info in pkgutil.walk_packages(module.__path__, base + ".", onerror=lambda name: None):
                    if _private(info.name) or _testlike(info.name):
                        continue
                    try:
                        importlib.import_module(info.name)
                        modules.add(info.name)
                    except Exception:  # noqa: BLE001 - a module that needs what is not installed
                        pass
    for name in list(sys.modules):
        if not (_private(name) or _testlike(name)) and any(name == b or name.startswith(b + ".") for bs in roots.values() for b in bs):
            modules.add(name)
    found = {}
    for name in sorted(modules):
        refused = set()
        for attr, value in list(vars(sys.modules[name]).items()):
            if attr.startswith("_"):
                continue
            if isinstance(value, types.ModuleType):
                if value.__name__ != f"{name}.{attr}" or value.__name__ not in modules:
                    refused.add(attr)  # an alias of a module, or a submodule not walked
            elif isinstance(value, type) and issubclass(value, type):
                refused.add(attr)  # a metaclass: makes a class from a namespace mapping
            elif _foreign(value, name) or _class_making_call(value):
                refused.add(attr)
        found[name] = " ".join(sorted(refused))
    return found


if __name__ == "__main__":
    table = generate()
    if "--json" in sys.argv[1:]:
        print(json.dumps(table, sort_keys=True))
    else:
        print("\n".join(f'    "{name}": "{names}",' for name, names in sorted(table.items())))
