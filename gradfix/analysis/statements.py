"""Walking a file's statements without walking its expressions.

No statement stands inside an expression (a lambda's body is an expression), so every class,
function and block of a file is reached through modules, blocks, compound statements and their
clauses alone. A file-wide question about those (which classes define properties, where each
block sits) is answered with a walk over that much of the tree, a small part of a libcst
visitor's walk, which enters every expression.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Mapping, Optional, Set, Tuple

import libcst as cst

from gradfix.analysis.exprs import last_name
from gradfix.analysis.vocabulary import PASSING_CONTEXTS
from gradfix.analysis.walk import children, node_types, walk_tree

# What may hold a statement: statements themselves (an `if` in an `elif` chain is one) and the
# parts of compound statements that hold blocks.
_HOLDERS = (
    cst.BaseStatement,
    cst.BaseSuite,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)
_HOLDER_TYPES = node_types(*_HOLDERS)


def statement_parts(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The children of a module, block, compound statement or clause that may hold statements, in order."""
    kind = type(node)
    if kind is cst.SimpleStatementLine or kind is cst.SimpleStatementSuite:
        return []  # small statements only: no block below
    return [child for child in children(node) if type(child) in _HOLDER_TYPES]


def walk_statements(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every statement, block and clause under `root` (itself first), depth first in source order."""
    todo = [root]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(reversed(statement_parts(node)))


def is_method(function: cst.FunctionDef, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> bool:
    """`function` stands directly in a class body (`parents`: the file's parent links): its first
    parameter is then the instance or the class."""
    block = parents.get(function)
    return isinstance(block, cst.IndentedBlock) and isinstance(parents.get(block), cst.ClassDef)


def class_defs(root: cst.CSTNode) -> Iterator[cst.ClassDef]:
    """Every class statement under `root`, at any depth (in functions and branches too), in source order."""
    return (node for node in walk_statements(root) if isinstance(node, cst.ClassDef))


def may_catch(statement: cst.CSTNode, module: Optional[cst.Module] = None) -> bool:
    """A `try` with a handler, or a `with` whose context manager may swallow an exception
    (`contextlib.suppress`, any `__exit__` that may return True): code after it may run although
    its body stopped early. A context manager lets every exception through only where its name
    resolves, in `module`, to one of torch's (`PASSING_CONTEXTS`: `torch.no_grad()`, `from torch
    import no_grad`), `contextlib.nullcontext` or the builtin `open`: not a name the file binds
    otherwise (`from contextlib import suppress as no_grad`, `class nullcontext`, `def open`);
    without `module`, none does."""
    if isinstance(statement, (cst.Try, cst.TryStar)):
        return bool(statement.handlers)
    return isinstance(statement, cst.With) and not all(_passing(item, module) for item in statement.items)


def _passing(item: cst.WithItem, module: Optional[cst.Module]) -> bool:
    """A `with` item whose context manager is known to let every exception through."""
    if module is None:
        return False
    entered = item.item.func if isinstance(item.item, cst.Call) else item.item
    if last_name(entered) not in PASSING_CONTEXTS:
        return False
    parts: List[str] = []
    node = entered
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return False
    parts.append(node.value)
    parts.reverse()
    imports, other = _import_facts(module)
    root = parts[0]
    if root in other:
        return False  # bound some other way too (`open = ...`, `def no_grad`, `torch.no_grad = ...`)
    if root in imports:
        qualified = ".".join([imports[root], *parts[1:]])
    elif root == "open" and len(parts) == 1:
        qualified = "builtins.open"
    else:
        return False
    return qualified.startswith("torch.") or qualified in ("contextlib.nullcontext", "builtins.open")


_IMPORT_FACTS: List[Tuple[cst.Module, Tuple[Dict[str, str], Set[str]]]] = []


def _import_facts(module: cst.Module) -> Tuple[Dict[str, str], Set[str]]:
    """(name -> the dotted name it imports, for names bound only by imports; the names the file
    binds otherwise anywhere, or stores an attribute into: `torch.no_grad = f`), for `module`."""
    for known, facts in _IMPORT_FACTS:
        if known is module:
            return facts
    imports: Dict[str, str] = {}
    other: Set[str] = set()

    class Walk(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            for alias in node.names:
                dotted = _dotted(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    _add(imports, other, alias.asname.name.value, dotted)
                else:
                    _add(imports, other, dotted.split(".")[0], dotted.split(".")[0])
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
                if not isinstance(node.names, cst.ImportStar):
                    for alias in node.names:
                        other.add(_local(alias))
                else:
                    other.add("*")
                return False
            base = _dotted(node.module)
            for alias in node.names:
                _add(imports, other, _local(alias), f"{base}.{_dotted(alias.name)}")
            return False

        def visit_Name(self, node: cst.Name) -> None:
            pass

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            _bound(node.target, other)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            _bound(node.target, other)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            _bound(node.target, other)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            _bound(node.target, other)

        def visit_For(self, node: cst.For) -> None:
            _bound(node.target, other)

        def visit_CompFor(self, node: cst.CompFor) -> None:
            _bound(node.target, other)

        def visit_AsName(self, node: cst.AsName) -> None:
            _bound(node.name, other)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            other.add(node.name.value)
            params = node.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                other.add(param.name.value)

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            other.add(node.name.value)

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value in ("setattr", "globals", "vars", "exec", "eval"):
                other.add("*")  # (a name or attribute set by string)

    walk_tree(module, Walk())
    # A module stored into through any name reaches every name bound to it or to a module of its
    # package (`import torch as T; T.enable_grad = f` patches `torch.enable_grad`), and `sys.modules`
    # every module (review, round 6).
    patched = {imports[name].split(".")[0] for name in other & set(imports)}
    if "sys" in patched:
        other.add("*")
    other.update(name for name, dotted in imports.items() if dotted.split(".")[0] in patched)
    if "*" in other:
        imports = {}
    facts = (imports, other)
    _IMPORT_FACTS.append((module, facts))
    del _IMPORT_FACTS[:-8]
    return facts


def _add(imports: Dict[str, str], other: Set[str], name: str, dotted: str) -> None:
    if imports.get(name, dotted) != dotted:
        other.add(name)  # imported twice, from different places
    imports[name] = dotted


def _local(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return _dotted(alias.name).split(".")[0]


def _dotted(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _bound(target: cst.CSTNode, other: Set[str]) -> None:
    """The names a target binds, and the root of an attribute or item it stores into."""
    if isinstance(target, cst.Name):
        other.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _bound(element.value, other)
    elif isinstance(target, cst.StarredElement):
        _bound(target.value, other)
    elif isinstance(target, (cst.Attribute, cst.Subscript)):
        node = target
        while isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        if isinstance(node, cst.Name):
            other.add(node.value)
        else:
            other.add("*")  # `importlib.import_module("torch").no_grad = f`: a store into what a call gives
