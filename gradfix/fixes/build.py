"""Building fixes: the replacement code a rule's fix puts where the original was.

The one merged call `f(grad_scale(x, b), grad_scale(y, a))` (or the module form
`scaled_params_call(...)`), the one backward of a sum of losses, the hoisted
assignment of a shared evaluation and the detached rebuilding of a name; fresh
names for what a fix assigns, unique where each is visible; node replacement.
Shared by GF001-GF005. What a fix must prove before it is safe is analysis
(`gradfix.analysis`); how fixes are applied to a file is `gradfix.fixes.apply`.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from gradfix.analysis.backward import OLD_RETAIN, BackwardCall, backward_call
from gradfix.analysis.callee_kinds import MODULE
from gradfix.analysis.exprs import DETACHED_IN_BOTH, DETACHED_IN_FIRST, DETACHED_IN_SECOND, LIVE_IN_BOTH, as_argument, code_of, is_literal, strip_parens
from gradfix.analysis.linear import Coef
from gradfix.analysis.merge import PairMatch
from gradfix.analysis.walk import walk_tree

def merged_call(
    first: cst.Call,
    match: PairMatch,
    a: Coef,
    b: Coef,
    grad_scale_name: str,
    module_op: Optional[str] = None,
) -> Tuple[cst.Call, Tuple[str, ...]]:
    """`f(grad_scale(x, b), grad_scale(y, a))` built from the first call; and the runtime ops it uses.

    An operand detached in the first call gets the second's coefficient and
    the other way round; one live in both gets a+b (0 gives zeros, not None);
    a coefficient of 1 needs no op; one detached in both stays detached.

    With `module_op` (the local name of `scaled_params_call`), the callee is
    a deterministic nn.Module whose parameters took part in both
    evaluations: it is called as `scaled_params_call(f, a + b, ...)` so they
    receive (a+b)·∂f/∂θ, as in the original (docs/design.md §2).
    """
    points = match.points
    uses_op = False
    replace: Dict[cst.CSTNode, cst.BaseExpression] = {}
    for point in points:
        if point.kind == DETACHED_IN_BOTH:
            continue
        if point.kind == LIVE_IN_BOTH and is_literal(point.operand):
            continue
        coef = {DETACHED_IN_FIRST: b, DETACHED_IN_SECOND: a, LIVE_IN_BOTH: a + b}[point.kind]
        operand = point.operand
        if coef.is_one():
            new: cst.BaseExpression = operand
        else:
            uses_op = True
            new = cst.Call(
                func=cst.Name(grad_scale_name),
                args=[
                    cst.Arg(as_argument(operand), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                    cst.Arg(cst.parse_expression(coef.render())),
                ],
            )
        if new is not point.first:
            replace[point.first] = new
    ops: Tuple[str, ...] = ("grad_scale",) if uses_op else ()
    wrap: Optional[Callable[[cst.Call], cst.Call]] = None
    if module_op is not None:
        total = cst.parse_expression((a + b).render())

        def wrap_core(core: cst.Call) -> cst.Call:
            comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            head = [
                cst.Arg(strip_parens(core.func), comma=comma),
                cst.Arg(total, comma=comma if core.args else cst.MaybeSentinel.DEFAULT),
            ]
            return cst.Call(func=cst.Name(module_op), args=[*head, *core.args])

        wrap = wrap_core
        # The inline copy of scaled_params_call calls grad_scale: both come along.
        ops = ("grad_scale", "scaled_params_call")
    result = first.visit(_MergeTransformer(replace, match.core, wrap))
    assert isinstance(result, cst.Call)
    return result, ops


class _MergeTransformer(cst.CSTTransformer):
    """Replace the aligned points; wrap the core call (the module form) once its arguments are done."""

    def __init__(self, mapping, core: cst.Call, wrap) -> None:
        super().__init__()
        self.replace = Replace(mapping)
        self.core, self.wrap = core, wrap

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        updated = self.replace.on_leave(original_node, updated_node)
        if original_node is self.core and self.wrap is not None:
            return self.wrap(updated)
        return updated


def module_op(match: PairMatch, op_names: Mapping[str, str]) -> Optional[str]:
    """`scaled_params_call`'s local name when the callee is a deterministic module (docs/design.md §2), else None."""
    callee = match.callee
    return op_names["scaled_params_call"] if callee.kind == MODULE and callee.deterministic else None


def names_in(node: cst.CSTNode) -> Set[str]:
    names: Set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            names.add(n.value)

    walk_tree(node, Collect())
    return names


def name_stem(target: cst.BaseExpression) -> str:
    """A base for a new name from what holds a value: `loss_G` for `loss_G` and `self.loss_G`, `adv`
    for `losses["adv"]` (a literal key, `backward.held`)."""
    if isinstance(target, cst.Name):
        return target.value
    if isinstance(target, cst.Attribute):
        return target.attr.value
    key = target.slice[0].slice.value  # type: ignore[attr-defined]  (`backward.held`: a literal key)
    text = key.evaluated_value if isinstance(key, cst.SimpleString) else f"{code_of(target.value).strip()}_{key.value}"  # type: ignore[attr-defined]
    return text if isinstance(text, str) and text.isidentifier() else "loss"


def fresh_name(base: str, taken: Set[str]) -> str:
    """`base`, or `base_2`, `base_3`, ...: the first not in `taken` (which it joins)."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


class FreshNames:
    """New names for what fixes assign, unique where each is visible.

    A name assigned inside a function is local to it: it must differ from
    every name that function uses (its nested functions included) and from
    every name used outside functions (module-level names it could read), but
    not from other functions' locals, so two functions of a file each get
    `kl_shared` rather than `kl_shared` and `kl_shared_2`. At module level a
    new name differs from every name of the file.
    """

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._taken: Dict[int, Set[str]] = {}

    def fresh(self, base: str, scopes: Sequence[cst.CSTNode]) -> str:
        """`base` or `base_N`, for a name assigned in the innermost of `scopes` (module first, as `BlockVisitor.scopes`)."""
        # Nested functions share their outermost function's set: they see its locals.
        function = next((s for s in scopes if isinstance(s, cst.FunctionDef)), None)
        key = id(function)
        taken = self._taken.get(key)
        if taken is None:
            taken = names_in(self.module) if function is None else names_in(function) | self._outside_functions()
            self._taken[key] = taken
        return fresh_name(base, taken)

    def _outside_functions(self) -> Set[str]:
        if -1 not in self._taken:
            names: Set[str] = set()

            class Collect(cst.CSTVisitor):
                def visit_Name(self, n: cst.Name) -> None:
                    names.add(n.value)

                def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                    names.add(n.name.value)
                    for decorator in n.decorators:
                        walk_tree(decorator, self)
                    return False  # its parameters and body are its own scope

            walk_tree(self.module, Collect())
            self._taken[-1] = names
        return self._taken[-1]


class Replace(cst.CSTTransformer):
    """Replace nodes by identity, keeping the parentheses the original had (unless told not to)."""

    def __init__(self, mapping: Dict[cst.CSTNode, cst.BaseExpression], keep_parens: bool = True) -> None:
        super().__init__()
        self.mapping = mapping
        self.keep_parens = keep_parens

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        replacement = self.mapping.get(original_node)
        if replacement is None:
            return updated_node
        if self.keep_parens and getattr(original_node, "lpar", None) and hasattr(replacement, "lpar") and not replacement.lpar:
            replacement = replacement.with_changes(lpar=original_node.lpar, rpar=original_node.rpar)
        return replacement


def hoisted_assign(template: cst.SimpleStatementLine, name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    """`name = value` to go just before `template`: it takes the template's leading lines
    (blank lines, comments), not its trailing comment, which stays with the template."""
    return template.with_changes(
        body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)],
        trailing_whitespace=cst.TrailingWhitespace(),
    )


def detached(name: Union[str, cst.BaseExpression], copy: bool = False) -> cst.Call:
    """`name.detach()` (`name` a name, or an expression to detach); with `copy`, `name.detach().clone()`.

    A name bound to the bare detached value shares the one evaluation's memory, and so with the
    name that carries it (`s = kl_shared`, `p = kl_shared.detach()`): an in-place update of either
    later (`s += reg`) would change the other, where the original's two evaluations were two
    tensors. Such a binding takes a copy (a loss is usually a scalar: the copy is free)."""
    value = cst.Name(name) if isinstance(name, str) else name
    call = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("detach")))
    return cst.Call(func=cst.Attribute(value=call, attr=cst.Name("clone"))) if copy else call


def merged_backward(calls: Sequence[BackwardCall]) -> Dict[cst.CSTNode, List[cst.BaseStatement]]:
    """Statement replacements that turn the calls into one backward of the sum of their losses, where the last was."""
    last = calls[-1]
    total = _sum([c.receiver for c in calls])
    replacements: Dict[cst.CSTNode, List[cst.BaseStatement]] = {c.statement: [] for c in calls[:-1]}
    replacements[last.statement] = [modern_spelling(last.statement.visit(_ReplaceNode(last.receiver, total)))]  # type: ignore[list-item, arg-type]
    return replacements


def modern_spelling(statement: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """A backward statement a rewrite keeps (its keywords carried over, docs/design.md §1, E7) with
    the pre-0.4 `retain_variables=True` written `retain_graph=True`, the keyword torch reads;
    unchanged where it has none. Found by the statement's shape (its one call), so it applies to a
    statement another replacement already rebuilt."""
    call = backward_call([statement], 0)
    if call is None or not call.old_spelling:
        return statement
    args = [
        arg.with_changes(keyword=cst.Name("retain_graph")) if arg.keyword is not None and arg.keyword.value == OLD_RETAIN else arg
        for arg in call.call.args
    ]
    return statement.with_changes(body=[statement.body[0].with_changes(value=call.call.with_changes(args=args))])


# Operators that bind tighter than `+`: such summands need no parentheses.
_TIGHTER = (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.MatrixMultiply, cst.Power)


def _operand(node: cst.BaseExpression, first: bool) -> cst.BaseExpression:
    """A summand, parenthesised only where Python's precedence (or the original grouping) needs it."""
    bare = strip_parens(node)
    if isinstance(bare, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.UnaryOperation)):
        return bare
    if isinstance(bare, cst.BinaryOperation):
        if isinstance(bare.operator, _TIGHTER):
            return bare
        if first and isinstance(bare.operator, (cst.Add, cst.Subtract)):
            return bare  # `(a + b) + c` is `a + b + c`
    return bare.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _sum(receivers: List[cst.BaseExpression]) -> cst.BaseExpression:
    total = _operand(receivers[0], first=True)
    for receiver in receivers[1:]:
        total = cst.BinaryOperation(left=total, operator=cst.Add(), right=_operand(receiver, first=False))
    return total


class _ReplaceNode(cst.CSTTransformer):
    def __init__(self, old: cst.CSTNode, new: cst.BaseExpression) -> None:
        super().__init__()
        self.old, self.new = old, new

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        if original_node is self.old:
            return self.new
        if isinstance(original_node, cst.Attribute) and original_node.value is self.old and isinstance(self.new, cst.BinaryOperation):
            # `(a + b).backward()`: a sum needs parentheses as a receiver (not inside `scaler.scale(...)`).
            return updated_node.with_changes(value=self.new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
        return updated_node
