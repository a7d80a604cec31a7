"""`analysis.walk` reads the same children and calls the same visitor methods, in the same order, as libcst."""

from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis import walk

ROOT = Path(__file__).resolve().parent.parent
SOURCES = (
    sorted((ROOT / "fixtures").rglob("*.py"))[::3]
    + sorted((ROOT / "gradfix").rglob("*.py"))
    + sorted((ROOT / "tests" / "review_round6").glob("*.py"))[::4]
)

# Shapes whose children are easy to get wrong: optional and sentinel fields set or not, sequences,
# f-strings with and without format specs (libcst visits `format_spec` only when it is set),
# `import *` against a name list, 3.12 type parameters, `match`, decorators, comments everywhere.
_ODD = '''\
# comment
from . import (a as b,)  # trailing
from .. import *
from x.y import z
import a.b as c, d
@dec(1,)
@other
async def f(a, /, b: int = 1, *args, c, d=2, **kw) -> "r":
    x: int = 1; y = 2;
    global g
    async with a as (b, c), d:
        async for e in f:
            await e
    return [e async for e in f if e], {k: v for k, v in d.items()}, {*a}, (yield)
class C(B, metaclass=M):
    def __init__(self): nonlocal_ = lambda q, *, r=1: q ** -r
print(f"{x!r:>{width}} {y=} {z:.3f} {'a' 'b'} {f'{nested:{spec}}'}", f"plain", rf"\\d{x}")
match point:
    case Point(x=0, y=[1, *rest]) | {"k": _, **more} if rest:
        pass
    case _:
        pass
try:
    pass
except* (A, B) as e:
    raise C from e
else:
    pass
finally:
    del a[1:2:3], b.c
while (n := n - 1) > 0 and not x or y if z else w:
    x @= y; x <<= 1
type Alias[T: int, *Ts, **P] = dict[T, P]
def g[T = int](x: T) -> T: return x
s = a[..., None] @ b; t = ~x; u = (1,); v = ()
'''


CASES = ["odd", *(p for p in SOURCES if p.stat().st_size)]


def _module(case):
    return cst.parse_module(_ODD if case == "odd" else case.read_bytes())


def _id(case):
    return case if case == "odd" else str(case.relative_to(ROOT))


def _every(node):
    yield node
    for child in node.children:
        yield from _every(child)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_children_are_libcsts(case):
    module = _module(case)
    try:
        for node in _every(module):
            expected = tuple(node.children)
            got = walk.children(node)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), type(node).__name__
    finally:
        walk.forget()


def test_the_odd_shapes_cover_the_conditional_and_optional_fields():
    kinds = {type(node).__name__ for node in _every(cst.parse_module(_ODD))}
    assert {"FormattedStringExpression", "ImportStar", "TypeParam", "TypeAlias", "MatchOr", "Lambda", "NamedExpr"} <= kinds


class _Recorder(cst.CSTVisitor):
    """Records every `on_visit`/`on_leave`; does not descend into functions or lambdas."""

    def __init__(self) -> None:
        self.events = []

    def on_visit(self, node):
        self.events.append(("visit", id(node)))
        return not isinstance(node, (cst.FunctionDef, cst.Lambda))

    def on_leave(self, node):
        self.events.append(("leave", id(node)))


class _Typed(cst.CSTVisitor):
    """libcst's own `on_visit`: `visit_<Type>` returning False skips the children."""

    def __init__(self) -> None:
        self.events = []

    def visit_ClassDef(self, node):
        self.events.append(("class", id(node)))
        return False

    def visit_Name(self, node):
        self.events.append(("name", id(node)))

    def leave_Call(self, node):
        self.events.append(("call", id(node)))

    def visit_FormattedStringExpression(self, node):
        self.events.append(("fexpr", id(node)))


@pytest.mark.parametrize("kind", [_Recorder, _Typed])
@pytest.mark.parametrize("case", CASES[::7], ids=_id)
def test_walk_tree_calls_what_visit_calls(kind, case):
    module = _module(case)
    by_libcst, by_walk = kind(), kind()
    module.visit(by_libcst)
    try:
        walk.walk_tree(module, by_walk)
    finally:
        walk.forget()
    assert by_walk.events == by_libcst.events
    assert len(by_walk.events) > 10 or case != "odd"


def _all_node_classes():
    found, todo = set(), [cst.CSTNode]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


@pytest.mark.parametrize(
    "classes",
    [
        (cst.BaseStatement, cst.BaseSuite),
        (cst.BaseExpression,),
        (cst.BaseParenthesizableWhitespace, cst.BaseBinaryOp, cst.Comma),
        (cst.Name, cst.Attribute),
    ],
    ids=lambda classes: "-".join(c.__name__ for c in classes),
)
def test_node_types_is_isinstance(classes):
    """Taken now, after every module gradfix imports has loaded: a node class defined after libcst's
    import (by gradfix or anything it imports) would be missing from sets made at import."""
    import gradfix.cli  # noqa: F401 - everything the command line loads

    types = walk.node_types(*classes)
    assert types == {c for c in _all_node_classes() | set(classes) if issubclass(c, classes)}
    nodes = list(_every(cst.parse_module(_ODD)))
    assert any(type(n) in types for n in nodes) and not all(type(n) in types for n in nodes)
    assert all((type(n) in types) == isinstance(n, classes) for n in nodes)


def _libcst_preorder(node, into_lambdas):
    yield node
    if into_lambdas or not isinstance(node, cst.Lambda):
        for child in node.children:
            yield from _libcst_preorder(child, into_lambdas)


_LAMBDAS = '''\
f = lambda a, b=lambda c: c + 1: (lambda d: d * a)(b(a))
g = [lambda: x for x in range(3)], lambda *, k=(lambda: 0): k()
def h(p=lambda q: lambda r: q + r):
    return sorted(p, key=lambda s: (s, lambda: s))
'''


@pytest.mark.parametrize("case", ["lambdas", *CASES[::5]], ids=lambda c: c if c == "lambdas" else _id(c))
def test_module_nodes_are_both_preorders(case):
    """`walk._module_nodes` lists the module's nodes with and without lambdas' bodies in one walk
    (stop 33): each list is libcst's pre-order, node by node (nested lambdas, lambdas in defaults)."""
    module = cst.parse_module(_LAMBDAS) if case == "lambdas" else _module(case)
    try:
        everything, outside = walk.module_nodes(module), walk.nodes_outside_lambdas(module)
        for got, into in ((everything, True), (outside, False)):
            expected = list(_libcst_preorder(module, into))
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected))
    finally:
        walk.forget()
    if case == "lambdas":
        assert len(outside) < len(everything)


@pytest.mark.parametrize("case", CASES[::5], ids=_id)
def test_binding_counts_are_the_visitors(case):
    """`exprs.binding_counts` calls `_Bindings`' hooks on the listed nodes instead of walking (stop
    33): the same counts as libcst's own visit, for the module and for each function and class."""
    from gradfix.analysis import exprs

    module = _module(case)
    try:
        trees = [module, *(n for n in exprs.all_nodes(module) if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)))]
        for tree in trees:
            expected = exprs._Bindings()
            tree.visit(expected)
            assert dict(exprs.binding_counts(tree)) == expected.counts
    finally:
        walk.forget()


@pytest.mark.parametrize("case", ["lambdas", "odd", *CASES[::7]], ids=lambda c: c if c in ("lambdas", "odd") else _id(c))
def test_nodes_of_type_is_the_isinstance_filter(case):
    """`walk.nodes_of_type` groups a subtree's nodes by type once (stop 35): for the module and for
    every function, class and lambda in it, each kind (a class, an abstract one, a tuple) gives the
    nodes the filter of libcst's pre-order gives, in that order, asked twice (the second from the cache)."""
    module = cst.parse_module(_LAMBDAS if case == "lambdas" else _ODD) if case in ("lambdas", "odd") else _module(case)
    kinds = [cst.Call, cst.SimpleString, cst.Global, cst.BaseExpression, (cst.Lambda, cst.GeneratorExp), (cst.Name, cst.Attribute)]
    try:
        trees = [module, *(n for n in walk.module_nodes(module) if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.IndentedBlock)))]
        for tree in trees:
            expected_nodes = list(_libcst_preorder(tree, True))
            for kind in kinds:
                expected = [n for n in expected_nodes if isinstance(n, kind)]
                for _ in range(2):
                    got = walk.nodes_of_type(tree, kind)
                    assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected))
        assert walk.nodes_of_type(module, cst.Call) or case != "odd"
    finally:
        walk.forget()
    assert not walk._BY_TYPE


# Every concrete node type of libcst, each optional field set somewhere (a test below checks the
# types): the shapes whose children codegen writes in another order than the visit lists them
# (`walk._WRITTEN_OUT_OF_ORDER`), and the ones it writes alike, also inside and around lambdas.
_WRITTEN = '''\
import a as b, c.d as e
from f import (g as h, i,)
from . import (j)
from .. k import *
def f1(a, b=1, /, c=2, *args, d, e=3, **kw): pass
def f2(a, /, *, b): pass
def f3(*, a, **k): pass
def f4(a, /): pass
def f5(a, /, b, *c): pass
lam = lambda a, /, b=1, *c, d, **e: a
class C[T: int, *Ts, **P](B, metaclass=M): pass
class D[T = int, *Ts = *tuple[int], **P = [int]]: pass
def g[T: (int, str) = int](x: T) -> T: return x
type A[T] = list[T]
match p:
    case Point(x=0) as q if q:
        pass
    case {"k": 1, **rest}:
        pass
    case {"k": 1, **rest,}:
        pass
    case [1, *others] | (2 as two):
        pass
    case (1 | 2) as w:
        pass
    case _:
        pass
try:
    raise X from Y
except* (A, B) as err:
    raise
except* C:
    pass
else:
    pass
finally:
    pass
try:
    pass
except (A, B) as err2:
    del err2, (x, [y]), z.q[1]
while x:
    pass
else:
    pass
for i in r:
    pass
else:
    pass
with (open(a) as f, open(b) as g):
    pass
async def h():
    async with a as b, c:
        async for x in y:
            pass
if a:
    pass
elif b:
    pass
else:
    pass
@d1
@d2(x)
class E(F): pass
global gg
x = [y for y in z if y if not y]
print(f"{x!r:>{w}} {y=} {z:.{p}f}")
assert x, "m"
z = 1j
match q:
    case (1, 2):
        pass
    case [1, 2]:
        pass
lazy import a.b as ab
lazy from c import (d as dd, e)
t = t"{x!r:>{w}} {y=} text"
u = {**d for d in ds}
# a comment

def ops():
    nonlocal_ = 1
    a = b + c - d * e / f // g % h ** i @ j << k >> l & m | n ^ o
    a += 1; a -= 1; a *= 1; a /= 1; a //= 1; a %= 1; a **= 1; a @= 1
    a <<= 1; a >>= 1; a &= 1; a |= 1; a ^= 1;
    b: int = -a + +a + ~a
    c = a and b or not c
    d = a < b <= c > d >= e == f != g in h not in i is j is not k
    e = "x" "y" 'z'
    f = {1: 2, **g}, {k: v for k, v in w}, {1, *s}, {x for x in y}, (x for x in y), ...
    g = 1.5 if (h := 2) else 3
    h = a[1:2:3, ::], a[:]
    while True:
        if a: break
        else: continue
    x = (
        1
        + 2
    )
    await z
    yield (yield a)
    def inner():
        nonlocal h
    match a:
        case None | True | False:
            pass
'''


def test_the_written_shapes_hold_every_node_type():
    import inspect

    every_type, todo = set(), [cst.CSTNode]
    while todo:
        for sub in todo.pop().__subclasses__():
            every_type.add(sub)
            todo.append(sub)
    concrete = {k.__name__ for k in every_type if not inspect.isabstract(k)} - {"BaseValueToken"}
    assert concrete - {type(n).__name__ for n in _every(cst.parse_module(_WRITTEN))} == set()


@pytest.mark.parametrize("case", ["written", "lambdas", "odd", *CASES[::3]], ids=lambda c: c if c in ("written", "lambdas", "odd") else _id(c))
def test_module_nodes_read_off_the_codegen_pass(case):
    """After `positions.node_maps` (the engine's one codegen pass), `module_nodes` and
    `nodes_outside_lambdas` are read off the order the nodes were written in (stop 36), not walked:
    each is still libcst's pre-order, node by node."""
    from gradfix.analysis.positions import node_maps

    source = {"written": _WRITTEN, "lambdas": _LAMBDAS, "odd": _ODD}.get(case)
    module = cst.parse_module(source) if source is not None else _module(case)
    try:
        node_maps(module)
        assert id(module) in walk._WRITTEN  # (the walk below would pass too: it must not be the one)
        everything, outside = walk.module_nodes(module), walk.nodes_outside_lambdas(module)
        assert id(module) not in walk._WRITTEN
        for got, into in ((everything, True), (outside, False)):
            expected = list(_libcst_preorder(module, into))
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected))
    finally:
        walk.forget()


@pytest.mark.parametrize("case", ["written", "odd", *CASES[::4]], ids=lambda c: c if c in ("written", "odd") else _id(c))
def test_only_the_listed_types_are_written_out_of_visiting_order(case):
    """The node types whose codegen writes their children in another order than `children` lists
    them are `walk._WRITTEN_OUT_OF_ORDER`, no more (a libcst release that changes one fails here),
    and the shapes above hold each of them."""
    from gradfix.analysis.positions import node_maps

    source = {"written": _WRITTEN, "odd": _ODD}.get(case)
    module = cst.parse_module(source) if source is not None else _module(case)
    try:
        parents = node_maps(module).parents
        written = {}
        for child, parent in parents.items():
            written.setdefault(id(parent), []).append(child)
        differ = set()
        for node in _every(module):
            got = written.get(id(node), [])
            expected = list(node.children)
            assert {id(n) for n in got} == {id(n) for n in expected}
            if any(a is not b for a, b in zip(got, expected)):
                differ.add(type(node))
    finally:
        walk.forget()
    assert differ <= set(walk._WRITTEN_OUT_OF_ORDER)
    if case == "written":
        assert differ == set(walk._WRITTEN_OUT_OF_ORDER)
