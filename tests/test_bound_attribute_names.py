"""`introspection.bound_attribute_names`: the attribute names a file may bind on an object.

Methods trusted by their name (`tracker.log(...)`, `d.get(...)`) are trusted only where the file
binds no attribute of that name; a binding by a computed string makes every name suspect (None).
"""

from __future__ import annotations

import libcst as cst
import pytest

from gradfix.analysis.introspection import bound_attribute_names


def _names(src: str):
    return bound_attribute_names(cst.parse_module(src))


@pytest.mark.parametrize(
    "src,names",
    [
        ("class T:\n    def log(self): pass\n    info = print\n    a, b = 1, 2\n", {"log", "info", "a", "b"}),
        ("t.log = f\n", {"log"}),
        ("for t.log in fs: pass\n", {"log"}),
        ("t.count += 1\n", {"count"}),
        ("(t.a, [t.b, *t.c]) = v\n", {"a", "b", "c"}),
        ("with open(p) as t.handle: pass\n", {"handle"}),
        ('setattr(t, "log", f)\n', {"log"}),
        ('object.__setattr__(t, "log", f)\n', {"log"}),
        ('t.__setattr__("log", f)\n', {"log"}),
        ('t.__dict__["log"] = f\n', {"log"}),
        ('vars(t)["log"] = f\n', {"log"}),
        # reads of a namespace dict bind nothing
        ("print(vars(args))\nfor k, v in vars(args).items(): pass\nx = t.__dict__['a']\nn = len(t.__dict__)\n", set()),
        ("import wandb\nwandb.init(config=vars(args))\nf(**vars(args))\nok = 'a' in vars(args)\n", set()),
        ("x = t.log\ny = getattr(t, 'log')\n", set()),
    ],
)
def test_names_bound(src, names):
    assert _names(src) == frozenset(names)


@pytest.mark.parametrize(
    "src",
    [
        "setattr(t, name, f)\n",
        "object.__setattr__(t, name, f)\n",
        "setattr(*args)\n",
        "s = setattr\n",
        "t.__dict__[key] = f\n",
        "t.__dict__.update(log=f)\n",
        "vars(t).update(kw)\n",
        "d = t.__dict__\n",
        "configure(vars(t))\n",  # a function of the file (or unknown) may store into it
        "self.helper(t.__dict__)\n",
        "x = getattr(t, '__dict__')\n",
        "class T:\n    def __getattr__(self, name): return f\n",
        "class T:\n    def __getattribute__(self, name): return f\n",
        "class T:\n    def __setattr__(self, name, value): super().__setattr__(name, value)\n",
        "T = type('T', (), {'log': f})\n",
    ],
)
def test_any_name(src):
    assert _names(src) is None
