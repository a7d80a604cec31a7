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
        ("class T:\n    def log(self): pass\n    info = print\n    a, b = 1, 2\n", {"T", "log", "info", "a", "b"}),
        # class-scope bindings at any depth of the body; module-level names (the module object's)
        ("class T:\n    if c:\n        log = f\n    for get in ():\n        pass\n", {"T", "log", "get"}),
        ("def log(name, v):\n    local_name = v\n", {"log"}),
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
        ("print(vars(args))\nfor k, v in vars(args).items(): pass\nx = t.__dict__['a']\nn = len(t.__dict__)\n", {"k", "v", "x", "n"}),
        ("import wandb\nwandb.init(config=vars(args))\nf(**vars(args))\nok = 'a' in vars(args)\n", {"wandb", "ok"}),
        ("x = t.log\ny = getattr(t, 'log')\n", {"x", "y"}),
    ],
)
def test_names_bound(src, names):
    assert _names(src) == frozenset(names)


ESCAPES = """\
import types
import torch

net = torch.nn.Linear(2, 2)


def keep_graph(name, value):
    value.sum().backward()


def init(m):
    torch.nn.init.zeros_(m.weight)


{use}
"""


@pytest.mark.parametrize(
    "use,trusted",
    [
        ("tracker = types.SimpleNamespace(log=keep_graph)", False),  # outside code may bind it as `log`
        ("table = {'log': keep_graph}", False),
        ("tracker = types.SimpleNamespace(log=lambda name, v: None)", True),  # pure: harmless under any name
        ("net.apply(init)", True),  # called there, never bound under a name
        ("sched = torch.optim.lr_scheduler.LambdaLR(torch.optim.SGD(net.parameters(), 0.1), lambda e: 0.9 ** e)", True),
        ("best = sorted([1, 2], key=init)", True),
        # a standard decorator that wraps it (`contextlib.contextmanager`): called, never bound by name
        ("import contextlib\n\n\n@contextlib.contextmanager\ndef quiet():\n    init(net)\n    yield", True),
        # a decorator of the file: followed no further, so the function counts as handed on
        ("def deco(fn):\n    return fn\n\n\n@deco\ndef noisy(v):\n    v.sum().backward()", False),
    ],
)
def test_impure_functions_handed_on_void_every_trusted_name(use, trusted):
    """A function of the file handed to code outside it, unless proven pure or handed to code known
    only to call it, may be bound by that code under any name (`SimpleNamespace(log=f)`)."""
    from tests.test_field_cases import _lint

    src = ESCAPES.format(use=use) + (
        "\n\nw = torch.randn(3, requires_grad=True)\n\n\ndef step():\n"
        "    h = w * 2\n    l1 = (h.detach() * h).sum()\n    l1.backward(retain_graph=True)\n    print(l1.item())\n"
        "    l2 = (h * h.detach()).sum()\n    l2.backward()\n"
    )
    (finding,) = _lint(src, ["GF001"]).findings
    assert finding.fixable is trusted, finding.message


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
