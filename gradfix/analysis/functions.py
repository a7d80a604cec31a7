"""Custom `torch.autograd.Function`s of a file: is each `backward` linear in its incoming gradients?

A merge of backward passes (GF001, GF003, GF004) replaces `backward(l1)` and
`backward(l2)` by one `backward(l1 + l2)`. Every node of the graph then sees
the sum of the two passes' gradients once instead of each of them once:
exact only if every node's backward is linear in its incoming gradients and
keeps no state across calls. torch's own operators are; a custom Function
whose `backward` clips, normalises or takes the sign of its gradient is not
(`clip(g1) + clip(g2)` becomes `clip(g1 + g2)`), nor one that counts its
calls.

Linearity is proven from an allowlist (`_Linearity`), never assumed: the
gradient arguments may only be

- multiplied or divided by values that do not depend on any gradient,
  negated, added to or subtracted from each other;
- viewed, reshaped, transposed, expanded, indexed, summed, averaged,
  concatenated or stacked, multiplied by matrices that do not depend on a
  gradient;
- masked: an element of a gradient set to 0 (or to another gradient) where
  a mask computed without gradients says so;
- returned, with None or zeros for inputs that get no gradient.

Anything else that touches a gradient (a call gradfix does not know, `clamp`,
`sign`, `norm`, a comparison or a branch on it, division by it, a store
into `ctx` or any other object, a call of an unknown function in the body,
`global`, a nested function) makes the backward not proven linear. Values that
do not involve a gradient are free (`ctx.saved_tensors`, `x.sign()` of a
saved input, `ctx.needs_input_grad[0]`) as long as computing them calls only
known pure functions.

Every class of the file that defines `backward` (or its alias `vjp`) is
checked, whatever its bases: a Function may derive from another class of
the file. A Function imported from another module is not seen.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Set, Tuple

import libcst as cst

from gradfix.analysis.bindings_index import module_changes
from gradfix.analysis.exprs import binding_counts, code_of, strip_parens
from gradfix.analysis.vocabulary import (
    ADDITIVE_METHODS,
    BACKWARD_BUILTINS,
    BACKWARD_DECORATORS,
    BACKWARD_NAMES,
    CALLED_BACKWARD_DECORATORS,
    CONST_FACTOR_PRODUCTS,
    CONST_METHODS,
    DETERMINISTIC_TENSOR_FUNCTIONS,
    DIVISION_METHODS,
    GRAD_LINEAR_ATTRIBUTES,
    GRAD_SHAPE_METHODS,
    GRAD_VALUE_ATTRIBUTES,
    INPLACE_KEYWORDS,
    LINEAR_METHODS,
    LINEAR_TORCH_PRODUCTS,
    LINEAR_TORCH_SUMS,
    PRODUCT_METHODS,
    PURE_FUNCTIONS,
    RANDOM_FUNCTIONS,
    SHAPE_STAR_METHODS,
    TORCH_ADDITIONS,
    TORCH_DIVISIONS,
    ZERO_FACTORIES,
    ZERO_METHODS,
    ZEROING_METHODS,
)
from gradfix.analysis.walk import walk_tree

# What an expression is with respect to the gradient arguments.
CONST = "const"  # does not depend on any gradient
LINEAR = "linear"  # linear in the gradients (zero included)
ZERO = "zero"  # None, 0 or zeros: the zero gradient, which is linear

class _NotLinear(Exception):
    def __init__(self, node: cst.CSTNode, why: str) -> None:
        super().__init__(why)
        self.node = node
        self.why = why


Qualify = Callable[[cst.CSTNode], Set[str]]


def _is_zero_literal(node: cst.BaseExpression) -> bool:
    node = strip_parens(node)
    if isinstance(node, cst.Name) and node.value == "None":
        return True
    if isinstance(node, cst.Integer) and node.evaluated_value == 0:
        return True
    return isinstance(node, cst.Float) and node.evaluated_value == 0.0


def _join(a: str, b: str) -> Optional[str]:
    """Two values of one place (both branches of `x if c else y`, two bindings of a name)."""
    if a == b:
        return a
    if {a, b} == {ZERO, LINEAR}:
        return LINEAR
    if {a, b} == {ZERO, CONST}:
        return CONST  # `0` where a number is meant: a constant
    return None


def _targets(target: cst.BaseExpression) -> List[cst.BaseExpression]:
    target = strip_parens(target)
    if isinstance(target, (cst.Tuple, cst.List)):
        return [t for e in target.elements for t in _targets(e.value)]
    if isinstance(target, cst.StarredElement):
        return _targets(target.value)
    return [target]


class _Linearity:
    """Proves a `backward(ctx, *grads)` linear in `grads` and stateless, or raises `_NotLinear`."""

    def __init__(self, func: cst.FunctionDef, qualify: Qualify) -> None:
        self.func = func
        self.qualify = qualify
        params = func.params
        positional = [*params.posonly_params, *params.params]
        self.ctx = positional[0].name.value if positional else None
        self.grads: Set[str] = {p.name.value for p in positional[1:]}
        if isinstance(params.star_arg, cst.Param):
            self.grads.add(params.star_arg.name.value)
        if params.kwonly_params or isinstance(params.star_kwarg, cst.Param):
            raise _NotLinear(func, "takes keyword arguments gradfix does not know")
        self.locals: Set[str] = set(self.grads)

    # -- the body --------------------------------------------------------------------------
    def prove(self) -> None:
        body = self.func.body
        # Names that carry a gradient: parameters, and whatever is bound from them (a fixed point,
        # since the body may bind a name before the statement that makes it a gradient in a loop).
        statements = list(self._statements(body))
        changed = True
        while changed:
            changed = False
            for node in statements:
                for target, value in self._bindings(node):
                    for name in _targets(target):
                        if isinstance(name, cst.Name):
                            self.locals.add(name.value)
                            if value is not None and name.value not in self.grads and self._carries(value):
                                self.grads.add(name.value)
                                changed = True
        for node in statements:
            self._statement(node)

    def _statements(self, node: cst.CSTNode):
        """Every small statement and compound-statement header of the body, in order."""
        if isinstance(node, cst.SimpleStatementLine):
            yield from node.body
            return
        if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            for child in node.body:
                yield from self._statements(child)
            return
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            raise _NotLinear(node, "defines a nested function or class")
        if isinstance(node, (cst.If, cst.While)):
            yield node
            yield from self._statements(node.body)
            if node.orelse is not None:
                yield from self._statements(node.orelse)
            return
        if isinstance(node, cst.Else):
            yield from self._statements(node.body)
            return
        if isinstance(node, (cst.For, cst.With)):
            yield node
            yield from self._statements(node.body)
            if isinstance(node, cst.For) and node.orelse is not None:
                yield from self._statements(node.orelse)
            return
        raise _NotLinear(node, f"uses `{type(node).__name__.lower()}`, which gradfix does not follow")

    def _bindings(self, node: cst.CSTNode) -> List[Tuple[cst.BaseExpression, Optional[cst.BaseExpression]]]:
        if isinstance(node, cst.Assign):
            return [(t.target, node.value) for t in node.targets]
        if isinstance(node, cst.AnnAssign):
            return [(node.target, node.value)]
        if isinstance(node, cst.AugAssign):
            return [(node.target, node.value)]
        if isinstance(node, cst.For):
            return [(node.target, node.iter)]
        if isinstance(node, cst.With):
            return [(item.asname.name, item.item) for item in node.items if item.asname is not None]
        return []

    def _carries(self, value: cst.BaseExpression) -> bool:
        """Whether binding `value` makes a name carry a gradient: it is linear in one (`g * 2`, `g`),
        or it is not proven anything and mentions one (the statement check then says why)."""
        try:
            return self.kind(value) == LINEAR
        except _NotLinear:
            return self._mentions_grad(value)

    def _mentions_grad(self, node: cst.CSTNode) -> bool:
        found = []
        grads = self.grads

        class Find(cst.CSTVisitor):
            def visit_Name(self, n: cst.Name) -> None:
                if n.value in grads:
                    found.append(n)

            def visit_Attribute(self, n: cst.Attribute) -> bool:
                walk_tree(n.value, self)
                return False

        walk_tree(node, Find())
        return bool(found)

    def _statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, (cst.If, cst.While)):
            self._const(node.test, "branches on")
        elif isinstance(node, cst.For):
            self._const(node.iter, "loops over")
            self._store(node.target, node.iter, CONST)
        elif isinstance(node, cst.With):
            for item in node.items:
                self._const(item.item, "enters")
        elif isinstance(node, cst.Return):
            if node.value is not None:
                value = strip_parens(node.value)
                elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
                for element in elements:
                    if isinstance(element, cst.StarredElement):
                        element = element.value
                    kind = self.kind(element)
                    if kind == CONST:
                        raise _NotLinear(element, f"returns `{code_of(element).strip()}`, a gradient that does not scale with the incoming one")
        elif isinstance(node, (cst.Assign, cst.AnnAssign)):
            if node.value is None:
                return
            kind = self.kind(node.value)
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                self._store(target, node.value, kind)
        elif isinstance(node, cst.AugAssign):
            target = strip_parens(node.target)
            op = node.operator
            value = self.kind(node.value)
            if not isinstance(target, cst.Name) or target.value not in self.locals:
                raise _NotLinear(node, f"modifies `{code_of(node.target).strip()}` in place")
            if target.value in self.grads:
                if isinstance(op, (cst.AddAssign, cst.SubtractAssign)) and value in (LINEAR, ZERO):
                    return
                if isinstance(op, (cst.MultiplyAssign, cst.DivideAssign, cst.MatrixMultiplyAssign)) and value == CONST:
                    return
                raise _NotLinear(node, f"updates the gradient `{target.value}` with `{code_of(node.operator).strip()}` by a value that is not linear in it")
            if value != CONST:
                raise _NotLinear(node, f"mixes a gradient into `{target.value}`")
        elif isinstance(node, cst.Expr):
            value = strip_parens(node.value)
            if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)):
                return  # a docstring
            self.kind(value)  # a call on a gradient must be a known linear (in-place) op; others raise
        elif isinstance(node, (cst.Pass, cst.Break, cst.Continue)):
            return
        elif isinstance(node, cst.Raise):
            if node.exc is not None:
                self._const(node.exc, "raises with")
        elif isinstance(node, cst.Assert):
            self._const(node.test, "asserts on")
        elif isinstance(node, cst.Del):
            for target in _targets(node.target):
                if not isinstance(target, cst.Name):
                    raise _NotLinear(node, f"deletes `{code_of(target).strip()}`")
        else:
            raise _NotLinear(node, f"uses `{code_of(node).strip()}`, which gradfix does not follow")

    def _const(self, node: cst.BaseExpression, verb: str) -> None:
        if self.kind(node) == LINEAR:  # (zeros do not depend on the gradient's value)
            raise _NotLinear(node, f"{verb} `{code_of(node).strip()}`, which depends on the gradient")

    def _store(self, target: cst.BaseExpression, value: cst.BaseExpression, kind: str) -> None:
        for t in _targets(target):
            if isinstance(t, cst.Name):
                if t.value == self.ctx:
                    raise _NotLinear(t, f"rebinds `{t.value}`")
                if t.value in self.grads and kind == CONST and not _is_zero_literal(value):
                    raise _NotLinear(t, f"binds `{t.value}`, which carries a gradient elsewhere, to a value that does not")
                continue
            if isinstance(t, cst.Subscript) and isinstance(strip_parens(t.value), cst.Name) and strip_parens(t.value).value in self.grads:  # type: ignore[attr-defined]
                # `g[mask] = 0` or `g[mask] = h[mask]`: a masked blend, linear where the mask is not a gradient.
                for element in t.slice:
                    self._const(element.slice.value if isinstance(element.slice, cst.Index) else element.slice, "indexes with")  # type: ignore[arg-type]
                if kind in (LINEAR, ZERO) or _is_zero_literal(value):
                    continue
                raise _NotLinear(t, f"stores `{code_of(value).strip()}` into the gradient `{code_of(t).strip()}`")
            raise _NotLinear(t, f"stores into `{code_of(t).strip()}` (state kept across backward calls)")

    # -- expressions -----------------------------------------------------------------------
    def kind(self, node: cst.BaseExpression) -> str:
        node = strip_parens(node)
        if isinstance(node, cst.Name):
            if node.value == "None":
                return ZERO
            return LINEAR if node.value in self.grads else CONST
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
            return ZERO if _is_zero_literal(node) else CONST
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Ellipsis)):
            if isinstance(node, cst.FormattedString) and self._mentions_grad(node):
                raise _NotLinear(node, "formats a gradient")
            return CONST
        if isinstance(node, cst.Attribute):
            receiver = self.kind(node.value)
            if receiver == CONST:
                return CONST
            if node.attr.value in GRAD_VALUE_ATTRIBUTES:
                return CONST
            if node.attr.value in GRAD_LINEAR_ATTRIBUTES:
                return LINEAR
            raise _NotLinear(node, f"reads `{code_of(node).strip()}`")
        if isinstance(node, cst.UnaryOperation):
            inner = self.kind(node.expression)
            if inner == CONST:
                return CONST
            if isinstance(node.operator, cst.Minus):
                return inner
            raise _NotLinear(node, f"applies `{code_of(node.operator).strip()}` to a gradient")
        if isinstance(node, cst.BinaryOperation):
            return self._binary(node)
        if isinstance(node, (cst.Comparison, cst.BooleanOperation)):
            if self._mentions_grad(node):
                raise _NotLinear(node, f"compares `{code_of(node).strip()}`, which depends on the gradient")
            self._all_const(node)
            return CONST
        if isinstance(node, cst.IfExp):
            self._const(node.test, "branches on")
            joined = _join(self.kind(node.body), self.kind(node.orelse))
            if joined is None:
                raise _NotLinear(node, f"`{code_of(node).strip()}` gives a gradient in one branch and not in the other")
            return joined
        if isinstance(node, (cst.Tuple, cst.List)):
            kinds = [self.kind(e.value.value if isinstance(e, cst.StarredElement) else e.value) for e in node.elements]
            if LINEAR in kinds:
                if CONST in kinds:
                    # `(g, x)` read later as `pair[1]`: which element is a gradient is not followed.
                    raise _NotLinear(node, f"`{code_of(node).strip()}` mixes gradients and other values")
                return LINEAR
            return CONST if CONST in kinds or not kinds else ZERO
        if isinstance(node, cst.Subscript):
            receiver = self.kind(node.value)
            for element in node.slice:
                index = element.slice
                parts = [index.value] if isinstance(index, cst.Index) else [p for p in (index.lower, index.upper, index.step) if p is not None]  # type: ignore[union-attr]
                for part in parts:
                    self._const(part, "indexes with")
            return receiver
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp, cst.Dict, cst.Set)):
            if self._mentions_grad(node):
                raise _NotLinear(node, f"`{code_of(node).strip()}` is not followed")
            return CONST
        if not self._mentions_grad(node):
            self._all_const(node)
            return CONST
        raise _NotLinear(node, f"`{code_of(node).strip()}` is not followed")

    def _all_const(self, node: cst.CSTNode) -> None:
        """Calls inside an expression that mentions no gradient must still be known pure (no state)."""
        checker = self

        class Calls(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> bool:
                checker._call(call)
                return False

        walk_tree(node, Calls())

    def _binary(self, node: cst.BinaryOperation) -> str:
        left, right = self.kind(node.left), self.kind(node.right)
        op = node.operator
        if LINEAR not in (left, right):
            # No gradient in it (`n + 0`, `ctx.scale * 2`); zeros stay zeros only under + and -.
            return ZERO if left == right == ZERO and isinstance(op, (cst.Add, cst.Subtract)) else CONST
        if isinstance(op, (cst.Add, cst.Subtract)):
            if left in (LINEAR, ZERO) and right in (LINEAR, ZERO):
                return LINEAR
            raise _NotLinear(node, f"`{code_of(node).strip()}` adds a value to a gradient")
        if isinstance(op, (cst.Multiply, cst.MatrixMultiply)):
            if CONST in (left, right) or ZERO in (left, right):
                return LINEAR
            raise _NotLinear(node, f"`{code_of(node).strip()}` multiplies a gradient by a gradient")
        if isinstance(op, cst.Divide) and right == CONST:
            return LINEAR
        raise _NotLinear(node, f"`{code_of(node).strip()}` is not linear in the gradient")

    def _call(self, node: cst.Call) -> str:
        func = node.func
        args = [a for a in node.args]
        for arg in args:
            if arg.star:
                if self._mentions_grad(arg.value):
                    if arg.star == "*" and isinstance(func, cst.Attribute) and func.attr.value in SHAPE_STAR_METHODS:
                        self._const(arg.value, "passes")
                    else:
                        raise _NotLinear(node, f"passes a gradient through `{code_of(arg).strip()}`")
        base = func
        while isinstance(base, cst.Attribute):
            base = base.value
        # A name of the body (`sign = ...`) is not the module's import of it.
        names = set() if isinstance(base, cst.Name) and base.value in self.locals else self.qualify(func)
        if isinstance(func, cst.Attribute) and not names:
            receiver = self.kind(func.value)
            method = func.attr.value
            if receiver == CONST:
                kinds = [self.kind(a.value) for a in args]
                if all(k == CONST for k in kinds):
                    # A tensor method that reads its receiver (`x.sign()` of a saved input); anything else
                    # (`seen.append(1)`, `x.mul_(2)` on a saved tensor) may keep state across backward calls.
                    if method in CONST_METHODS and not any(_inplace_keyword(a) for a in args):
                        return CONST
                    raise _NotLinear(node, f"calls `{code_of(func).strip()}()`, which may keep state across backward calls")
                # `W.t().mm(g)`, `mask.mul(g)`: a product with one gradient factor.
                if method in CONST_FACTOR_PRODUCTS and len(args) == 1 and kinds[0] in (LINEAR, ZERO):
                    return LINEAR
                raise _NotLinear(node, f"passes a gradient to `{code_of(func).strip()}()`")
            kinds = [self.kind(a.value) for a in args]
            if method in GRAD_SHAPE_METHODS and all(k == CONST for k in kinds):
                return CONST
            if any(a.keyword is not None and a.keyword.value == "dtype" for a in args):
                raise _NotLinear(node, f"`{code_of(node).strip()}` may cast a gradient to another type")
            if method in ZERO_METHODS:
                return ZERO
            if method in LINEAR_METHODS:
                if method in PRODUCT_METHODS and any(k in (LINEAR, ZERO) for k in kinds):
                    raise _NotLinear(node, f"`{code_of(node).strip()}` multiplies a gradient by a gradient")
                if method in DIVISION_METHODS and any(k != CONST for k in kinds):
                    raise _NotLinear(node, f"`{code_of(node).strip()}` divides by a gradient")
                if any(k != CONST for k in kinds) and method not in PRODUCT_METHODS | DIVISION_METHODS:
                    raise _NotLinear(node, f"`{code_of(node).strip()}` takes a gradient as an argument")
                return receiver
            if method in ADDITIVE_METHODS:
                if len(kinds) >= 1 and kinds[0] in (LINEAR, ZERO) and all(k == CONST for k in kinds[1:]):
                    return LINEAR
                raise _NotLinear(node, f"`{code_of(node).strip()}` adds a value to a gradient")
            if method in ZEROING_METHODS:
                if all(k == CONST for k in kinds) and len(args) >= 2 and _is_zero_literal(args[-1].value):
                    return receiver
                raise _NotLinear(node, f"`{code_of(node).strip()}` fills a gradient with a value other than 0")
            raise _NotLinear(node, f"calls `.{method}()` on a gradient, which is not known to be linear")
        kinds = [self.kind(a.value) for a in args]
        if all(k == CONST for k in kinds):
            if names & ZERO_FACTORIES:
                return ZERO
            if names & RANDOM_FUNCTIONS:
                raise _NotLinear(node, f"calls `{code_of(func).strip()}()`, which draws new random numbers at each backward call")
            if names & (PURE_FUNCTIONS | DETERMINISTIC_TENSOR_FUNCTIONS) or any(n.startswith("math.") for n in names):
                if not any(_inplace_keyword(a) for a in args):
                    return CONST
            if names & {f"builtins.{n}" for n in BACKWARD_BUILTINS}:
                return CONST
            raise _NotLinear(node, f"calls `{code_of(func).strip()}()`, which may keep state across backward calls")
        if names & ZERO_FACTORIES:
            return ZERO
        if any(_inplace_keyword(a) for a in args):
            raise _NotLinear(node, f"`{code_of(node).strip()}` writes into a tensor")
        if any(a.keyword is not None and a.keyword.value == "dtype" for a in args):
            raise _NotLinear(node, f"`{code_of(node).strip()}` may cast a gradient to another type")
        if names & LINEAR_TORCH_SUMS:
            if len(args) >= 1 and kinds[0] == LINEAR and all(k == CONST for k in kinds[1:]) or self._linear_sequence(args):
                return LINEAR
            raise _NotLinear(node, f"`{code_of(node).strip()}` is not linear in the gradient")
        if names & TORCH_ADDITIONS:
            # `torch.add(g, h, alpha=c)`: two gradients; `torch.add(g, 1)` adds a constant.
            if len(args) >= 2 and all(k in (LINEAR, ZERO) for k in kinds[:2]) and all(k == CONST for k in kinds[2:]):
                return LINEAR
            raise _NotLinear(node, f"`{code_of(node).strip()}` is not linear in the gradient")
        if names & LINEAR_TORCH_PRODUCTS:
            factors = [k for k in kinds if k in (LINEAR, ZERO)]
            divides = names & TORCH_DIVISIONS
            if len(factors) == 1 and (not divides or kinds[0] in (LINEAR, ZERO)):
                return LINEAR
            raise _NotLinear(node, f"`{code_of(node).strip()}` is not linear in the gradient")
        if names & {"torch.where"} and len(args) == 3 and kinds[0] == CONST and all(k in (LINEAR, ZERO) for k in kinds[1:]):
            return LINEAR  # `torch.where(mask, g, 0)`: a masked gradient
        raise _NotLinear(node, f"passes a gradient to `{code_of(func).strip()}()`, which is not known to be linear")

    def _linear_sequence(self, args: List[cst.Arg]) -> bool:
        """`torch.cat([g1, g2], dim)`: a list or tuple of gradients, then constants."""
        if not args:
            return False
        first = strip_parens(args[0].value)
        if not isinstance(first, (cst.List, cst.Tuple)):
            return False
        return all(self.kind(e.value) in (LINEAR, ZERO) for e in first.elements) and all(self.kind(a.value) == CONST for a in args[1:])


def _inplace_keyword(arg: cst.Arg) -> bool:
    return arg.keyword is not None and arg.keyword.value in INPLACE_KEYWORDS


def backward_methods(module: cst.Module) -> List[Tuple[str, cst.CSTNode, Optional[cst.FunctionDef]]]:
    """Every binding of a `backward` (or its alias `vjp`) on a class in the file, in source order:
    `(what, node, def)`, with `def` the FunctionDef for a method defined in a class body (nested
    classes too) and None for a binding gradfix does not follow (`backward = staticmethod(f)` in
    a class body, `Clip.backward = f` or `setattr(Clip, "backward", f)` anywhere)."""
    found: List[Tuple[str, cst.CSTNode, Optional[cst.FunctionDef]]] = []

    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.classes: List[cst.ClassDef] = []

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.classes.append(node)
            for statement in node.body.body:  # type: ignore[union-attr]
                if isinstance(statement, cst.FunctionDef) and statement.name.value in BACKWARD_NAMES:
                    found.append((f"{node.name.value}.{statement.name.value}", statement.name, statement))
                elif isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        targets = (
                            [t.target for t in small.targets] if isinstance(small, cst.Assign)
                            else [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else []
                        )
                        for target in targets:
                            for t in _targets(target):
                                if isinstance(t, cst.Name) and t.value in BACKWARD_NAMES:
                                    found.append((f"{node.name.value}.{t.value}", small, None))

        def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
            self.classes.pop()

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value in BACKWARD_NAMES and self._stored(node):
                found.append((code_of(node).strip(), node, None))

        def _stored(self, node: cst.Attribute) -> bool:
            return id(node) in stores

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) >= 2:
                name = node.args[1].value
                if not isinstance(name, cst.SimpleString) or name.evaluated_value in BACKWARD_NAMES:
                    found.append((f"{code_of(node.args[0].value).strip()}.backward", node, None))

    stores: Set[int] = set()

    class Stores(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            stores.update(id(t) for t in _targets(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            stores.add(id(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            stores.add(id(node.target))

    walk_tree(module, Stores())
    walk_tree(module, Collect())
    return found


def nonlinear_backward(func: cst.FunctionDef, qualify: Qualify) -> Optional[Tuple[cst.CSTNode, str]]:
    """Why `func` (a Function's backward) is not proven linear in its gradients and stateless; None if it is."""
    for decorator in func.decorators:
        applied = decorator.decorator
        names = qualify(applied.func if isinstance(applied, cst.Call) else applied)
        if isinstance(applied, cst.Call) and names & CALLED_BACKWARD_DECORATORS:
            continue
        if not names & BACKWARD_DECORATORS:
            return decorator, f"is decorated with `@{code_of(applied).strip()}`"
    try:
        _Linearity(func, qualify).prove()
    except _NotLinear as error:
        return error.node, error.why
    return None




def _changed_global(func: cst.FunctionDef, module: cst.Module, qualify: Qualify) -> Optional[Tuple[cst.CSTNode, str]]:
    """A name from outside that the backward reads and the file may change: bound more than once
    (`global LAMBDA; LAMBDA = 0.5` in a step), or stored into or handed to a call
    (`SCHEDULE["lambda"] = 0.5`, `Reverse.scale = 0.5`). The backward reads it when it runs: a change
    between two passes reaches the second pass only, a merged pass runs before it or after it,
    once (DANN's gradient reversal coefficient; review, round 3). Imports and builtins are not
    state; names the backward binds itself are its own."""
    counts = binding_counts(module)
    own = set(binding_counts(func.body)) | {p.name.value for p in _all_params(func.params)}
    for name in _names_read(func.body):
        value = name.value
        if value in own or value in BACKWARD_BUILTINS or value in ("None", "True", "False") or qualify(name):
            continue
        if counts.get(value, 0) > 1 or module_changes(module, value):
            return name, f"reads `{value}`, which the file changes (a change between two passes reaches the second pass only)"
    return None


def _all_params(params: cst.Parameters) -> List[cst.Param]:
    found = [*params.posonly_params, *params.params, *params.kwonly_params]
    found += [star for star in (params.star_arg, params.star_kwarg) if isinstance(star, cst.Param)]
    return found


def _names_read(node: cst.CSTNode) -> List[cst.Name]:
    """The names `node` reads: not attribute names (`x.name`) or keywords (`f(name=...)`)."""
    found: List[cst.Name] = []

    class Collect(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> bool:
            walk_tree(n.value, self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            walk_tree(n.value, self)
            return False

        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    walk_tree(node, Collect())
    return found


def function_reasons(module: cst.Module, line: Callable[..., int]) -> List[str]:
    """Why merging backward passes is not proven exact in a file that defines a Function whose backward
    is not proven linear in its gradients and stateless (see the module docstring); empty when there is none.

    Names are resolved through the module's top-level imports (`import torch as th`,
    `from torch.autograd.function import once_differentiable`), the same for every rule.
    """
    resolve = _import_resolver(module)
    reasons: List[str] = []
    for what, node, func in backward_methods(module):
        if func is None:
            why = f"is bound by `{code_of(node).strip()}`, which gradfix does not follow"
            at = node
        else:
            found = nonlinear_backward(func, resolve) or _changed_global(func, module, resolve)
            if found is None:
                continue
            at, why = found
        reasons.append(
            f"`{what}` (line {line(node)}), the backward of a custom autograd Function, "
            f"is not proven linear in its gradients and stateless: {why} (line {line(at)}); it runs once per backward "
            f"pass, and one backward instead of two is exact only if it is"
        )
        break
    return reasons


def _import_resolver(module: cst.Module) -> Qualify:
    """Dotted names resolved through the module's top-level `import` / `from ... import` statements.

    `torch.clamp` with `import torch`, `th.clamp` with `import torch as th`, `clamp` with
    `from torch import clamp`; a builtin by its name unless the module binds that name at top level.
    Anything else resolves to nothing (an unknown callee).
    """
    aliases: Dict[str, str] = {}
    bound: Set[str] = set()
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            bound.add(statement.name.value)
            continue
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = code_of(alias.name).strip()
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        aliases[alias.asname.name.value] = full
                    else:
                        top = full.split(".")[0]
                        aliases[top] = top
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                if isinstance(small.names, cst.ImportStar):
                    continue
                base = code_of(small.module).strip()
                for alias in small.names:
                    name = code_of(alias.name).strip()
                    local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                    aliases[local] = f"{base}.{name}"
            elif isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                for target in targets:
                    bound.update(t.value for t in _targets(target) if isinstance(t, cst.Name))

    def resolve(node: cst.CSTNode) -> Set[str]:
        parts: List[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return set()
        head = node.value
        if head in aliases and head not in bound:
            return {".".join([aliases[head], *reversed(parts)])}
        if not parts and head in BACKWARD_BUILTINS | {"staticmethod"} and head not in bound:
            return {f"builtins.{head}"}
        return set()

    return resolve
