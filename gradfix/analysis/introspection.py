"""Calls that read a scope's names by their strings: `locals()`, `vars()`, `dir()`, `eval`, `exec`, `globals()`.

A rewrite that removes a name (a loss definition nothing else reads), binds a
new one (`kl_shared`) or rebuilds one as a detached value is exact only for
the reads that scope analysis sees. `locals()` sees every local name
(`{k: v.item() for k, v in locals().items() if k.endswith("_latent")}`, a
common metrics idiom), and so do `vars()` and `dir()` without arguments,
`eval(...)`, `exec(...)`; `globals()` sees every module-level name. Any of
them in the function a rewrite changes makes the fix unsafe (docs/design.md §1: what
is not proven goes into the reason).
"""

from __future__ import annotations

from typing import Callable, List, Optional

import libcst as cst

from gradfix.reasons import INTROSPECTION, Reason
from gradfix.analysis.vocabulary import GLOBAL_READERS, LOCAL_READERS, NO_ARGUMENT_READERS


def introspection_calls(scope: cst.CSTNode) -> List[cst.Call]:
    """The calls in `scope` (a function, nested functions and comprehensions included; or a module)
    that may read names of `scope` by their strings.

    For a module, `locals()`, `vars()`, `dir()`, `eval` and `exec` count only
    outside functions and classes (inside one they read its own names), and
    `globals()` anywhere. A builtin shadowed by a definition of the module
    (`def eval(...)`) is still counted: gradfix does not prove it is not.
    """
    found: List[cst.Call] = []
    module_level = isinstance(scope, cst.Module)

    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.depth = 0  # functions, lambdas and classes entered (module scope only)

        def on_visit(self, node: cst.CSTNode) -> bool:
            if module_level and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                self.depth += 1
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
                name = node.func.value
                if name in GLOBAL_READERS:
                    found.append(node)
                elif self.depth == 0 and (name in LOCAL_READERS or (name in NO_ARGUMENT_READERS and not node.args)):
                    found.append(node)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if module_level and isinstance(original_node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                self.depth -= 1

    scope.visit(Collect())
    return found


def introspection_reasons(scope: cst.CSTNode, line: Callable[[cst.CSTNode], int]) -> List[Reason]:
    """The unsafe-fix reason for the first such call in `scope` (see `introspection_calls`), or none."""
    calls = introspection_calls(scope)
    if not calls:
        return []
    first = calls[0]
    text = f"`{first.func.value}()` (line {line(first)}) may read the names the rewrite removes or changes"  # type: ignore[attr-defined]
    return [Reason(text, INTROSPECTION)]


# Builtins that bind or read names by their strings (`globals()["w"] = ...`, `exec("w = 2")`,
# `eval("(w := 2)", globals())`), mentioned in any way: a mention may alias them (`g = globals`).
_STRING_BINDERS = frozenset({"globals", "vars", "eval", "exec", "__import__"})
# Ways to a module's namespace through frames and functions (`sys._getframe().f_globals`,
# `inspect.currentframe()`, `step.__globals__`): any mention, as a name or an attribute.
_NAMESPACE_DOORS = frozenset({"_getframe", "currentframe", "f_globals", "f_locals", "__globals__", "__builtins__"})


# Calls that give a module object, this file's included (`importlib.import_module(__name__).W = t`).
_MODULE_LOADERS = frozenset({"import_module", "reload"})


def names_by_string(module: cst.Module) -> bool:
    """Whether the file may bind or read its module-level names without a binding form or a plain
    read: a star import; any mention of `globals`, `eval`, `exec`, `__import__`, of `vars` other
    than a call with an argument (`vars(net)` is that object's namespace); the same builtins as
    attributes of `builtins` (`builtins.globals()`), or `.globals`/`.exec`/`.__import__` of
    anything; frames and function globals (`sys._getframe()`, `inspect.currentframe()`,
    `f_globals`, `__globals__`, also as strings: `getattr(f, "__globals__")`); `sys.modules`,
    through any name `sys` is imported as, or imported from `sys`; `importlib.import_module` or
    `reload` (the file's own module object). Then no module-level name is proven to hold what its one assignment says (module
    constants: coefficients, constant tensors). An attribute `net.eval()` is none of them."""
    found = []
    sys_names = {"sys"}
    builtins_names = {"builtins", "__builtins__"}

    class Imports(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            for alias in node.names:
                target = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else None
                module_name = _dotted(alias.name)
                if module_name == "sys":
                    sys_names.add(target or "sys")
                elif module_name == "builtins":
                    builtins_names.add(target or "builtins")

    class Find(cst.CSTVisitor):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            if isinstance(node.names, cst.ImportStar):
                found.append(node)
            elif node.module is not None and _dotted(node.module) in ("sys", "builtins", "inspect"):
                names = {alias.name.value for alias in node.names if isinstance(alias.name, cst.Name)}
                if names & (_STRING_BINDERS | _NAMESPACE_DOORS | {"modules", "stack", "getouterframes"}):
                    found.append(node)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value in _STRING_BINDERS or node.value in _NAMESPACE_DOORS or node.value in _MODULE_LOADERS:
                found.append(node)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            # `getattr(f, "__globals__")`
            text = _string_value(node)
            if text in _NAMESPACE_DOORS or text in _STRING_BINDERS:
                found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            attr = node.attr.value
            base = node.value.value if isinstance(node.value, cst.Name) else None
            if attr == "modules" and base in sys_names:
                found.append(node)
            elif attr in _NAMESPACE_DOORS or attr in ("globals", "exec", "__import__") or attr in _MODULE_LOADERS:
                found.append(node)
            elif attr in _STRING_BINDERS and base in builtins_names:
                found.append(node)
            node.value.visit(self)
            return False  # `node.attr` names an attribute, not a builtin

        def visit_Call(self, node: cst.Call) -> Optional[bool]:
            func = node.func
            if isinstance(func, cst.Name) and func.value == "vars" and node.args:
                for arg in node.args:
                    arg.visit(self)
                return False
            return True

    module.visit(Imports())
    module.visit(Find())
    return bool(found)


def _string_value(node: cst.SimpleString) -> Optional[str]:
    """The text a string literal stands for (None for a bytes literal or one libcst cannot read)."""
    try:
        text = node.evaluated_value
    except Exception:  # noqa: BLE001 - an unusual literal: not one of the words
        return None
    return text if isinstance(text, str) else None


def _dotted(node: cst.BaseExpression) -> str:
    """`a.b.c` as text (`import a.b.c`), or "" for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    return ""


# Builtins that read the names of the scope they run in (with `_STRING_BINDERS`).
_SCOPE_READERS = frozenset({"locals", "dir"})


def reads_scope_by_string(scope: cst.CSTNode) -> bool:
    """Whether `scope` may reach its names (or a caller's) without naming them, in any spelling:
    `locals`, `vars`, `dir`, `eval`, `exec`, `globals`, `__import__` or a frame or function
    namespace (`sys._getframe().f_locals`, `__globals__`), as a name, an attribute
    (`builtins.locals()`) or a string (`getattr(f, "f_locals")`). Stricter than
    `introspection_calls`: for a proof that rests on every use of a name being seen."""
    words = _STRING_BINDERS | _NAMESPACE_DOORS | _SCOPE_READERS
    found = []

    class Find(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in words:
                found.append(node)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            if _string_value(node) in words:
                found.append(node)

    scope.visit(Find())
    return bool(found)
