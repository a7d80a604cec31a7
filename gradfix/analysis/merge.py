"""Merging two evaluations of one callee that differ only by complementary `.detach()`.

Shared by GF001 (two backpropagated losses) and GF002 (two terms of one sum):
matching the pair, judging whether the merge is provably exact, and building
the one call `f(grad_scale(x, b), grad_scale(y, a))`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import libcst as cst

from gradfix.analysis.exprs import (
    DETACHED_IN_BOTH,
    DETACHED_IN_FIRST,
    DETACHED_IN_SECOND,
    LIVE_IN_BOTH,
    Point,
    align_calls,
    binding_counts,
    calls_within,
    code_of,
    contains_detach,
    core_call,
    detach_receiver,
    is_literal,
    same_chain,
    same_expr,
    strip_parens,
    swap_first_two,
)
from gradfix.analysis.linear import Coef, parse_coef
from gradfix.analysis.callee_kinds import MODULE, PURE, RANDOM, Callee
from gradfix.analysis.callees import CalleeClassifier
from gradfix.analysis.vocabulary import PURE_TENSOR_METHODS
from gradfix.reasons import COEFFICIENT, Reason, Reasons


@dataclass
class PairMatch:
    points: List[Point]
    callee: Callee
    swapped: bool  # arguments matched after swapping them (symmetric callee)
    core: cst.Call  # the call of the first evaluation that holds the stop-gradients
    chain: List[cst.Call]  # method calls chained on it (`.mean()`), outermost first

    @property
    def callee_text(self) -> str:
        return code_of(self.core.func).strip()


def match_pair(c1: cst.Call, c2: cst.Call, classifier: CalleeClassifier) -> Optional[PairMatch]:
    """The two calls are one computation modulo complementary `.detach()` (None otherwise).

    Method chains on the call (`D(x.detach()).mean()`) are part of the
    computation. A random callee never matches (docs/design.md §1 E1: two draws are two
    computations).
    """
    c1, chain1 = core_call(c1)
    c2, chain2 = core_call(c2)
    if not same_chain(chain1, chain2):
        return None
    if not same_expr(c1.func, c2.func) or contains_detach(c1.func):
        return None
    callee = classifier.classify(c1.func)
    if callee.kind == RANDOM:
        return None
    points = align_calls(c1, c2.args)
    swapped = False
    if points is None and callee.kind == PURE and callee.symmetric:
        swapped_args = swap_first_two(c2.args)
        if swapped_args is not None:
            points = align_calls(c1, swapped_args)
            swapped = points is not None
    if points is None:
        return None
    kinds = {p.kind for p in points}
    if DETACHED_IN_FIRST not in kinds or DETACHED_IN_SECOND not in kinds:
        return None
    return PairMatch(points, callee, swapped, c1, chain1)


class MergeSafety:
    """What a merge of one module's pairs needs proven (docs/design.md §1, E1, E2, E5)."""

    def __init__(self, classifier: CalleeClassifier, module: cst.Module) -> None:
        self.classifier = classifier
        self.constants = module_constants(module)

    def reasons(self, match: PairMatch, a: Coef, b: Coef) -> Optional[Reasons]:
        """Unproven conditions, or None when the arguments draw random numbers (no pattern)."""
        c1 = match.core
        reasons = Reasons()
        callee = match.callee
        cancel = " = 0" if (a + b).is_zero() else ""
        if callee.kind == MODULE:
            if not callee.deterministic:
                reasons.add(f"{callee.reason}: they receive (a+b)·∂f/∂θ{cancel} in the original but ∂f/∂θ after the rewrite")
            # else: the module form (scaled_params_call) gives them exactly (a+b)·∂f/∂θ.
        elif callee.kind != PURE:
            reasons.add(f"{callee.reason}; parameters it owns receive (a+b)·∂f/∂θ{cancel} in the original but ∂f/∂θ after the rewrite")
        if callee.unproven:
            reasons.add(callee.unproven)
        for inner in calls_in(c1.args):
            if detach_receiver(inner) is not None:
                continue
            func = inner.func
            if isinstance(func, cst.Attribute) and not self.classifier.qualified(func) and func.attr.value in PURE_TENSOR_METHODS:
                continue
            inner_callee = self.classifier.classify(func)
            kind = inner_callee.kind
            if kind == RANDOM:
                return None
            if kind != PURE or inner_callee.unproven:
                reasons.add(
                    f"`{code_of(inner).strip()}` in the arguments runs twice in the original and once after the "
                    f"rewrite; gradfix cannot prove it deterministic"
                )
                break
        for link in match.chain:
            method = link.func.attr.value  # type: ignore[attr-defined]
            if method not in PURE_TENSOR_METHODS:
                reasons.add(f"`.{method}()` after the call is not a known pure tensor method")
                break
        for coef in (a, b):
            for factor in coef.symbols():
                if not (factor.isidentifier() and self.constants.get(factor) is not None):
                    text = f"coefficient `{factor}` is not a number: if it is a tensor that requires grad, its gradient is lost"
                    reasons.add(Reason(text, COEFFICIENT, factor))
                    break
        return reasons


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
                    cst.Arg(strip_parens(operand), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
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


def calls_in(args: Sequence[cst.Arg]) -> List[cst.Call]:
    return [call for arg in args for call in calls_within(arg)]


def module_constants(module: cst.Module) -> Dict[str, Optional[Fraction]]:
    """Names bound exactly once in the whole file, by `NAME = <number>` (`BETA = 0.25`).

    Every binding form in every scope counts against "once" (`exprs.binding_counts`):
    a function's `w_align, w_adv = log_w.exp()` makes `w_adv` a learned value there,
    whatever the module-level `w_adv = 0.1` says. A file that can bind names without a
    binding form (`globals()`, `vars()`, `exec`, `sys.modules`) has none.
    """
    if _rebinds_dynamically(module):
        return {}
    values: Dict[str, Fraction] = {}

    class Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                coef = parse_coef(node.value)
                if coef is not None and not coef.symbolic:
                    values[node.targets[0].target.value] = coef.const

    module.visit(Collect())
    counts = binding_counts(module)
    return {k: (v if counts.get(k) == 1 else None) for k, v in values.items()}


def _rebinds_dynamically(module: cst.Module) -> bool:
    """Whether the file may bind module names without a binding form: `globals()`, `vars()` (no
    argument: the namespace it runs in), `exec`, `sys.modules` (the module object's `__dict__`)."""
    found = False

    class Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            func = node.func
            if isinstance(func, cst.Name) and (
                func.value in ("globals", "exec") or (func.value == "vars" and not node.args)
            ):
                found = True

        def visit_Attribute(self, node: cst.Attribute) -> None:
            nonlocal found
            if code_of(node).strip() == "sys.modules":
                found = True

    module.visit(Find())
    return found


def names_in(node: cst.CSTNode) -> Set[str]:
    names: Set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            names.add(n.value)

    node.visit(Collect())
    return names


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
                        decorator.visit(self)
                    return False  # its parameters and body are its own scope

            self.module.visit(Collect())
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


def detached(name: str) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=cst.Name(name), attr=cst.Name("detach")))
