"""Module-level constant tensors: a name a callee may read without owning a trainable tensor.

A callee that reads a module-level name is unknown (`bodies.BodyChecker`): a
trainable tensor there would get gradients from both evaluations, which may
cancel in the original and not after the rewrite. A name bound once, at module
level, to a tensor built by a torch factory without `requires_grad` is no such
tensor, as long as nothing in the file can make it one:

    W1 = torch.randn(784, 32) / 32          # constant: never trainable in the file
    W2 = torch.randn(32, 32, requires_grad=True)   # trainable: not a constant

The proof is an allowlist, on both sides.

* The value (`constant_value`): a number, a call of a torch factory
  (`CONSTANT_FACTORIES`: `torch.randn`, `torch.zeros`, `torch.tensor`, ...;
  not `torch.as_tensor` or `torch.from_numpy`, which may return or share what
  they are given) with no `requires_grad` keyword other than `False`,
  arithmetic of constants, a device move or cast of one, a pure tensor method
  of one with constant arguments, or another constant name.
* Every read of the name anywhere in the file (`_read_only`) leaves the tensor
  untrainable and unchanged: an operand of arithmetic or a comparison, an
  argument of a pure torch function (not `out=`/`inplace=`), the receiver of a
  pure tensor method, `W.shape`/`W.dtype`/`W.device`; where the result may be a
  view of the tensor (`W.t()`, `W[0]`, `torch.reshape(W, ...)`), the view must
  be used so in turn. Anything else (assigned to another name, returned,
  passed to another function, `W.requires_grad_()`, `W.requires_grad = True`,
  `W.add_(v)`, `W[0] = v`, `nn.Parameter(W)`, `W.numpy()`, which shares its
  memory) means it is not proven.
* The name has one binding in the file (no `global W` rebinding elsewhere),
  and the file neither star-imports nor reads names by their strings
  (`globals()`, `vars()`, `eval`, `exec`, `sys.modules`), nor reaches its own
  module object (`import __main__`, `exprs.dynamic_global`).

Another module that imports this one and changes `W` is out of sight, as it is
for a module-level number (docs/design.md §1, E1).
"""

from __future__ import annotations

from typing import AbstractSet, Callable, Dict, Set

import libcst as cst

from gradfix.analysis.introspection import names_by_string
from libcst.metadata import GlobalScope, ParentNodeProvider, ScopeProvider

from gradfix.analysis.bodies import is_number
from gradfix.analysis.exprs import dynamic_global, may_write
from gradfix.analysis.vocabulary import FRESH_METHODS, PURE_FUNCTIONS, VIEW_METHODS, has_inplace_suffix

# torch functions that build a new tensor that requires no grad unless asked (`requires_grad=True`).
# Not `as_tensor` (returns a tensor it is given, trainable or not) nor `from_numpy` (shares an
# array's memory, which other code may change).
CONSTANT_FACTORIES = frozenset(
    f"torch.{n}"
    for n in (
        "randn", "rand", "randint", "randperm", "zeros", "ones", "empty", "full", "tensor", "arange",
        "linspace", "logspace", "eye", "zeros_like", "ones_like", "empty_like", "full_like", "randn_like",
        "rand_like", "randint_like",
    )
)
# Methods that convert a tensor without making it trainable: they may return their receiver itself
# (so a read through one is followed further), and their arguments never add a graph.
_CONVERSIONS = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "contiguous"})
# Attributes that read metadata only; and those that give a view of the tensor (followed further).
_METADATA = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "is_leaf"})
_VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# torch functions (besides FRESH_METHODS' names) whose result is always a new tensor.
_FRESH_FUNCTIONS = frozenset({"cat", "stack", "einsum", "cdist", "linear", "conv1d", "conv2d", "conv3d", "kl_div", "cross_entropy"})
# Results that share the tensor's memory outside autograd: writing into one changes the constant
# (`W.numpy()[0] = 1.0`) where no analysis of the tensor sees it.
_SHARES_MEMORY = frozenset({"numpy", "data_ptr", "untyped_storage", "storage"})

Qualify = Callable[[cst.CSTNode], Set[str]]
GetMeta = Callable[..., object]


class ModuleConstants:
    """Answers `is_constant(name)` for the reads of one file (memoised per binding)."""

    def __init__(self, meta: GetMeta, qualified: Qualify, unscoped: Callable[[], AbstractSet[str]] = frozenset) -> None:
        self.meta = meta
        self.qualified = qualified
        # The names the file binds where libcst's scopes do not record it (`exprs.unscoped_bindings`).
        self.unscoped = unscoped
        self._known: Dict[int, bool] = {}
        self._module_ok: Dict[int, bool] = {}

    def is_constant(self, name: cst.Name) -> bool:
        """Whether `name` (a read, anywhere in the file) refers to a module-level constant tensor or number."""
        scope = self.meta(ScopeProvider, name, None)
        if scope is None or name.value in self.unscoped():
            return False
        assignments = list(scope[name.value])
        if len(assignments) != 1 or not isinstance(assignments[0].scope, GlobalScope):
            return False
        assignment = assignments[0]
        key = id(assignment)
        if key not in self._known:
            self._known[key] = False  # a cycle (`A = B * 2`, `B = A * 2`) proves nothing
            self._known[key] = self._prove(assignment)
        return self._known[key]

    def _prove(self, assignment) -> bool:
        target = assignment.node
        if not isinstance(target, cst.Name):
            return False
        parent = self.meta(ParentNodeProvider, target, None)
        statement = self.meta(ParentNodeProvider, parent, None) if parent is not None else None
        if not (isinstance(parent, cst.AssignTarget) and isinstance(statement, cst.Assign) and len(statement.targets) == 1):
            return False
        line = self.meta(ParentNodeProvider, statement, None)
        module = self.meta(ParentNodeProvider, line, None) if line is not None else None
        if not isinstance(module, cst.Module) or not self._module_allows(module):
            return False
        if not self.constant_value(statement.value):
            return False
        return all(self._read_only(access.node) for access in assignment.references)

    def _module_allows(self, module: cst.Module) -> bool:
        key = id(module)
        if key not in self._module_ok:
            # Nor may the file reach its module object (`import __main__`: `__main__.W.requires_grad_()`).
            self._module_ok[key] = not names_by_string(module) and dynamic_global(module) is None
        return self._module_ok[key]

    def constant_value(self, value: cst.BaseExpression) -> bool:
        """A value that is a number or a tensor no code can have made trainable (see the module doc)."""
        if is_number(value) or isinstance(value, (cst.Integer, cst.Float)):
            return True
        if isinstance(value, cst.Name):
            return self.is_constant(value)
        if isinstance(value, cst.BinaryOperation):
            return self.constant_value(value.left) and self.constant_value(value.right)
        if isinstance(value, cst.UnaryOperation):
            return self.constant_value(value.expression)
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        if self.qualified(func) & CONSTANT_FACTORIES:
            for arg in value.args:
                if arg.keyword is not None and arg.keyword.value == "requires_grad":
                    if not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
                        return False
            return not any(arg.star for arg in value.args)  # `**kwargs` may hold `requires_grad`
        if isinstance(func, cst.Attribute) and not self.qualified(func) and self.constant_value(func.value):
            method = func.attr.value
            if has_inplace_suffix(method):
                return False
            if method in _CONVERSIONS:
                return True
            if method in FRESH_METHODS | VIEW_METHODS:
                return all(
                    not arg.star and (self.constant_value(arg.value) or isinstance(arg.value, cst.SimpleString))
                    for arg in value.args
                )
        return False

    def _read_only(self, node: cst.CSTNode) -> bool:
        """Whether this read of a constant leaves it untrainable and unchanged (see the module doc)."""
        current = node
        while True:
            parent = self.meta(ParentNodeProvider, current, None)
            if isinstance(parent, (cst.BinaryOperation, cst.Comparison, cst.ComparisonTarget, cst.Index)):
                return True  # a new tensor (an index only reads the tensor it indexes with)
            if isinstance(parent, cst.UnaryOperation):
                if isinstance(parent.operator, cst.Plus):
                    current = parent  # `+W` is `W` itself
                    continue
                return True
            if isinstance(parent, cst.Attribute) and parent.value is current:
                call = self.meta(ParentNodeProvider, parent, None)
                if isinstance(call, cst.Call) and call.func is parent:
                    method = parent.attr.value
                    if has_inplace_suffix(method) or method in _SHARES_MEMORY:
                        return False
                    if method in FRESH_METHODS:
                        return True
                    if method in VIEW_METHODS or method in _CONVERSIONS:
                        current = call  # may be the tensor itself, or a view of it
                        continue
                    return False
                if _is_store(parent, self.meta):
                    return False
                if parent.attr.value in _METADATA:
                    return True
                if parent.attr.value in _VIEW_ATTRIBUTES:
                    current = parent
                    continue
                return False
            if isinstance(parent, cst.Subscript) and parent.value is current:
                if _is_store(parent, self.meta):
                    return False
                current = parent  # `W[0]`: a view
                continue
            if isinstance(parent, cst.Arg) and parent.value is current:
                call = self.meta(ParentNodeProvider, parent, None)
                if not isinstance(call, cst.Call) or parent.star or (parent.keyword is not None and parent.keyword.value == "out"):
                    return False
                names = self.qualified(call.func)
                if not names & PURE_FUNCTIONS or may_write(call):
                    return False
                lasts = {n.rsplit(".", 1)[-1] for n in names & PURE_FUNCTIONS}
                if all(last in FRESH_METHODS or last in _FRESH_FUNCTIONS or last.endswith("_loss") for last in lasts):
                    return True
                current = call  # `torch.reshape(W, ...)`: may be a view
                continue
            return False


def _is_store(node: cst.CSTNode, meta: GetMeta) -> bool:
    """`node` (an attribute or subscript) is written to: an assignment, `del` or loop target."""
    parent = meta(ParentNodeProvider, node, None)
    if isinstance(parent, (cst.AssignTarget, cst.Del, cst.For, cst.CompFor, cst.WithItem)):
        return True
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node:
        return True
    if isinstance(parent, (cst.Element, cst.StarredElement)):
        return _is_store(meta(ParentNodeProvider, parent, None), meta)  # `a, W[0] = ...`: the tuple's use
    return False


