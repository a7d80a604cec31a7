"""What may stand between two statements of one straight-line block.

DESIGN §1 E3: nothing between the two forwards/backwards may step an
optimizer, zero or read `.grad`, mutate an operand or the callee in place, or
rebind their names; control flow must not be able to skip the second loss.

`scan_between` sorts each intervening statement into one of three answers:
a *barrier* (the pattern is not there: report nothing), an *unknown call*
(the pattern is there but a fix cannot be proven: the fix becomes unsafe), or
harmless.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst

from gradfix.analysis.exprs import access_path, code_of, inplace_keyword, is_inplace_call, paths_overlap
from gradfix.analysis.purity import PURE_TENSOR_METHODS

# Methods whose call between the two passes changes what the second pass sees.
_GRADIENT_METHODS = frozenset({"step", "zero_grad", "backward"})

# Calls that only read values or log them: harmless between the two passes.
_HARMLESS_FUNCTIONS = frozenset(
    {
        "print", "len", "float", "int", "str", "bool", "round", "abs", "min", "max", "sum",
        "isinstance", "repr", "format", "list", "tuple", "dict", "range", "enumerate", "zip",
        "sorted", "any", "all",
    }
)
# Methods that change their receiver (a container's contents, a list's length): harmless
# between the passes only where the receiver is not an operand (`history.append(l1.item())`,
# not `xs.append(...)` when an operand reads `xs[-1]`).
MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard", "sort", "reverse"}
)
HARMLESS_METHODS = frozenset(
    {
        "append", "extend", "item", "tolist", "numpy", "cpu", "log", "info", "debug",
        "warning", "add_scalar", "add_scalars", "add_histogram", "set_postfix",
        "set_description", "format", "get", "keys", "values", "items",
    }
) | PURE_TENSOR_METHODS


@dataclass
class Verdict:
    barrier: Optional[str] = None  # why the pattern does not hold
    unknown_calls: List[str] = field(default_factory=list)  # calls we cannot vouch for


class _Scanner(cst.CSTVisitor):
    def __init__(
        self,
        watched: Sequence[Tuple[str, ...]],
        verdict: Verdict,
        stores_only: bool = False,
        harmless: Optional[Callable[[cst.BaseExpression], bool]] = None,
    ) -> None:
        self.watched = watched
        self.verdict = verdict
        self.stores_only = stores_only
        self.harmless = harmless

    # -- helpers --------------------------------------------------------------
    def _barrier(self, reason: str, store: bool = False) -> None:
        if self.stores_only and not store:
            return
        if self.verdict.barrier is None:
            self.verdict.barrier = reason

    def _store(self, target: cst.CSTNode, what: str) -> None:
        for path in _target_paths(target):
            for watched in self.watched:
                if paths_overlap(path, watched):
                    self._barrier(f"`{'.'.join(watched)}` is {what} between the two passes", store=True)
                    return

    # -- definitions bind a name but do not run their body ----------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        self._store(node.name, "redefined")
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> Optional[bool]:
        self._store(node.name, "redefined")
        return False

    def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
        return False

    # -- stores ---------------------------------------------------------------
    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._store(node.target, "rebound")

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target, "rebound")

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target, "modified in place")

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._store(node.target, "rebound")

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target, "rebound")

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._store(node.asname.name, "rebound")

    def visit_Del(self, node: cst.Del) -> None:
        self._store(node.target, "deleted")

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        name = node.asname.name if node.asname else node.name
        if isinstance(name, (cst.Name, cst.Attribute)):
            self._store(cst.Name(code_of(name).split(".")[0]), "rebound by an import")

    def visit_Global(self, node: cst.Global) -> None:
        self._barrier("a `global` statement stands between the two passes")

    # -- control flow that can skip the second loss -------------------------------
    def visit_Return(self, node: cst.Return) -> None:
        self._barrier("a `return` can skip the second loss")

    def visit_Raise(self, node: cst.Raise) -> None:
        self._barrier("a `raise` can skip the second loss")

    def visit_Break(self, node: cst.Break) -> None:
        self._barrier("a `break` can skip the second loss")

    def visit_Continue(self, node: cst.Continue) -> None:
        self._barrier("a `continue` can skip the second loss")

    def visit_Yield(self, node: cst.Yield) -> None:
        self._barrier("a `yield` stands between the two passes")

    # -- gradients --------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "grad":
            self._barrier(f"`{code_of(node)}` reads or writes gradients between the two passes")
        elif node.attr.value == "data":
            path = access_path(node.value)
            if path is not None and any(paths_overlap(path, w) for w in self.watched):
                self._barrier(f"`{code_of(node)}` touches an operand's data between the two passes")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if is_inplace_call(node) and not last.endswith("_"):
            # `F.relu(x, inplace=True)`, `torch.clamp(x, 0, 1, out=x)`: pure functions, but not
            # called this way (the underscore spellings are caught below by name).
            self._barrier(f"`{code_of(func).strip()}(..., {inplace_keyword(node)})` modifies a tensor in place between the two passes")
            return
        if "clip_grad" in last:
            # clip_grad_norm (deprecated, no underscore) clips gradients too.
            self._barrier(f"`{code_of(func)}()` clips gradients between the two passes")
            return
        if last == "grad" and not self.stores_only:
            # `torch.autograd.grad(...)`, `grad(...)` imported from it, `torch.func.grad`.
            self._barrier(f"`{code_of(func)}()` computes gradients between the two passes")
            return
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name in _GRADIENT_METHODS:
                self._barrier(f"`{code_of(func)}()` runs between the two passes")
                return
            if name == "update" and not node.args:
                self._barrier(f"`{code_of(func)}()` (a GradScaler update) runs between the two passes")
                return
            if _is_inplace(name):
                self._barrier(f"`{code_of(func)}()` modifies a tensor in place between the two passes")
                return
            if name in MUTATING_METHODS:
                path = access_path(func.value)
                if path is not None and any(paths_overlap(path, w) for w in self.watched):
                    self._barrier(f"`{code_of(func).strip()}()` modifies an operand between the two passes", store=True)
                    return
            if name in HARMLESS_METHODS:
                return
        elif isinstance(func, cst.Name):
            name = func.value
            if _is_inplace(name):
                self._barrier(f"`{name}()` modifies a tensor in place between the two passes")
                return
            if name in _HARMLESS_FUNCTIONS:
                return
            if name in ("set_grad_enabled",):
                self._barrier("the grad mode changes between the two passes")
                return
        else:
            if not self.stores_only:
                self.verdict.unknown_calls.append(code_of(func).strip())
            return
        if self.stores_only:
            return
        text = code_of(func).strip()
        if text.endswith("set_grad_enabled"):
            self._barrier("the grad mode changes between the two passes")
            return
        if self.harmless is not None and self.harmless(func):
            return
        self.verdict.unknown_calls.append(text)


def _is_inplace(name: str) -> bool:
    # PyTorch's convention: a trailing underscore marks an in-place operation
    # (`add_`, `zero_`, `clip_grad_norm_`, `requires_grad_`, `unscale_`).
    return name.endswith("_") and not name.endswith("__") and len(name) > 1


def _target_paths(target: cst.CSTNode) -> Iterable[Tuple[str, ...]]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_paths(element.value)
        return
    if isinstance(target, cst.StarredElement):
        yield from _target_paths(target.value)
        return
    if isinstance(target, cst.Subscript):
        # A store into `x[...]` mutates `x` itself.
        path = access_path(target)
        if path is not None:
            yield path
        return
    if isinstance(target, cst.BaseExpression):
        path = access_path(target)
        if path is not None:
            yield path


def scan_between(
    statements: Iterable[cst.BaseStatement],
    watched: Sequence[Tuple[str, ...]],
    harmless: Optional[Callable[[cst.BaseExpression], bool]] = None,
) -> Verdict:
    """`harmless(func)` vouches for calls the built-in lists do not know (e.g. proven-pure functions)."""
    verdict = Verdict()
    scanner = _Scanner(watched, verdict, harmless=harmless)
    for statement in statements:
        statement.visit(scanner)
        if verdict.barrier is not None:
            break
    return verdict


# Tensor methods and torch functions whose result may share the storage of their first operand.
_VIEW_METHODS = frozenset(
    {
        "view", "view_as", "reshape", "reshape_as", "t", "transpose", "permute", "expand", "expand_as",
        "narrow", "squeeze", "unsqueeze", "flatten", "unflatten", "select", "split", "chunk", "unbind",
        "detach", "as_strided", "diagonal", "movedim", "moveaxis", "swapaxes", "swapdims", "unfold",
        "tensor_split", "split_with_sizes", "view_as_real", "view_as_complex", "real", "imag", "values",
    }
)


def with_aliases(watched: Sequence[Tuple[str, ...]], scope: cst.CSTNode) -> List[Tuple[str, ...]]:
    """`watched` plus the names in `scope` (a function or module) that may refer to what a watched path
    holds, or share its storage: `cache = feats`, `z = feats["x"]`, `yv = y.view(-1)`, `a, b =
    x.chunk(2)`, `for t in xs:`. A store through one (`yv[:] = 0`) changes the operand as a store into
    it would. Followed to a fixed point (an alias of an alias); nested functions are not looked into."""
    roots = {path[0] for path in watched}
    bindings: List[Tuple[List[str], cst.BaseExpression]] = []

    class Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                bindings.append((_names_of(target.target), node.value))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if node.value is not None:
                bindings.append((_names_of(node.target), node.value))

        def visit_For(self, node: cst.For) -> None:
            bindings.append((_names_of(node.target), node.iter))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            bindings.append((_names_of(node.target), node.value))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is scope

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    scope.visit(Collect())
    aliases: List[str] = []
    changed = True
    while changed:
        changed = False
        for names, value in bindings:
            if any(n not in roots for n in names) and _may_alias(value, roots):
                for name in names:
                    if name not in roots:
                        roots.add(name)
                        aliases.append(name)
                        changed = True
    return [*watched, *((name,) for name in aliases)]


def _names_of(target: cst.CSTNode) -> List[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _names_of(element.value)]
    if isinstance(target, cst.StarredElement):
        return _names_of(target.value)
    return []  # a store into an attribute or subscript binds no new name


def _may_alias(value: cst.BaseExpression, roots: Set[str]) -> bool:
    """Whether `value` may be (a part of, a view of) what a name in `roots` refers to."""
    while isinstance(value, (cst.Tuple, cst.List)) or getattr(value, "lpar", None):
        if isinstance(value, (cst.Tuple, cst.List)):
            return any(_may_alias(e.value, roots) for e in value.elements)
        value = value.with_changes(lpar=[], rpar=[])
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
        path = access_path(value)
        return path is not None and path[0] in roots
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in _VIEW_METHODS:
            # `y.view(-1)`, and `torch.chunk(y, 2)` (the first argument of a torch function)
            if _may_alias(func.value, roots):
                return True
            return bool(value.args) and isinstance(func.value, cst.Name) and func.value.value == "torch" and _may_alias(value.args[0].value, roots)
    return False


def stores_into(statement: cst.BaseStatement, watched: Sequence[Tuple[str, ...]]) -> Optional[str]:
    """Why `statement` (nested statements included) rebinds or mutates a watched path, or None."""
    verdict = Verdict()
    statement.visit(_Scanner(watched, verdict, stores_only=True))
    return verdict.barrier
