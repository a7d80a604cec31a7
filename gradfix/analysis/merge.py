"""Merging two evaluations of one callee that differ only by complementary `.detach()`.

Shared by GF001 (two backpropagated losses) and GF002 (two terms of one sum):
matching the pair, judging whether the merge is provably exact, and building
the one call `f(grad_scale(x, b), grad_scale(y, a))`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from gradfix.analysis.exprs import (
    DETACHED_IN_BOTH,
    DETACHED_IN_FIRST,
    DETACHED_IN_SECOND,
    LIVE_IN_BOTH,
    Point,
    align_calls,
    calls_within,
    code_of,
    contains_detach,
    detach_receiver,
    is_literal,
    same_expr,
    strip_parens,
    swap_first_two,
)
from gradfix.analysis.linear import Coef, parse_coef
from gradfix.analysis.purity import MODULE, PURE, PURE_TENSOR_METHODS, RANDOM, Callee, CalleeClassifier


@dataclass
class PairMatch:
    points: List[Point]
    callee: Callee
    swapped: bool  # arguments matched after swapping them (symmetric callee)


def match_pair(c1: cst.Call, c2: cst.Call, classifier: CalleeClassifier) -> Optional[PairMatch]:
    """The two calls are one computation modulo complementary `.detach()` (None otherwise).

    A random callee never matches (DESIGN E1: two draws are two computations).
    """
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
    return PairMatch(points, callee, swapped)


class MergeSafety:
    """What a merge of one module's pairs needs proven (DESIGN §1, E1, E2, E5)."""

    def __init__(self, classifier: CalleeClassifier, module: cst.Module) -> None:
        self.classifier = classifier
        self.constants = module_constants(module)

    def reasons(self, match: PairMatch, c1: cst.Call, a: Coef, b: Coef) -> Optional[List[str]]:
        """Unproven conditions, or None when the arguments draw random numbers (no pattern)."""
        reasons: List[str] = []
        callee = match.callee
        cancel = " = 0" if (a + b).is_zero() else ""
        if callee.kind == MODULE:
            reasons.append(f"{callee.reason}: they receive (a+b)·∂f/∂θ{cancel} in the original but ∂f/∂θ after the rewrite")
        elif callee.kind != PURE:
            reasons.append(f"{callee.reason}; parameters it owns receive (a+b)·∂f/∂θ{cancel} in the original but ∂f/∂θ after the rewrite")
        for inner in calls_in(c1.args):
            if detach_receiver(inner) is not None:
                continue
            func = inner.func
            if isinstance(func, cst.Attribute) and not self.classifier.qualified(func) and func.attr.value in PURE_TENSOR_METHODS:
                continue
            kind = self.classifier.classify(func).kind
            if kind == RANDOM:
                return None
            if kind != PURE:
                reasons.append(
                    f"`{code_of(inner).strip()}` in the arguments runs twice in the original and once after the "
                    f"rewrite; gradfix cannot prove it deterministic"
                )
                break
        for coef in (a, b):
            for factor in coef.symbols():
                if not (factor.isidentifier() and self.constants.get(factor) is not None):
                    reasons.append(f"coefficient `{factor}` is not a number: if it is a tensor that requires grad, its gradient is lost")
                    break
        return list(dict.fromkeys(reasons))


def merged_call(
    first: cst.Call, points: Sequence[Point], a: Coef, b: Coef, grad_scale_name: str
) -> Tuple[cst.Call, bool]:
    """`f(grad_scale(x, b), grad_scale(y, a))` built from the first call; and whether the op is used.

    An operand detached in the first call gets the second's coefficient and
    the other way round; one live in both gets a+b (0 gives zeros, not None);
    a coefficient of 1 needs no op; one detached in both stays detached.
    """
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
    result = first.visit(Replace(replace))
    assert isinstance(result, cst.Call)
    return result, uses_op


def calls_in(args: Sequence[cst.Arg]) -> List[cst.Call]:
    return [call for arg in args for call in calls_within(arg)]


def module_constants(module: cst.Module) -> Dict[str, Optional[Fraction]]:
    """Names bound exactly once in the module, to a numeric literal (coefficients like `BETA = 0.25`)."""
    values: Dict[str, Optional[Fraction]] = {}
    counts: Dict[str, int] = {}

    class Collect(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Name):
                counts[node.target.value] = counts.get(node.target.value, 0) + 1

        def visit_Assign(self, node: cst.Assign) -> None:
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                coef = parse_coef(node.value)
                if coef is not None and not coef.symbolic:
                    values[node.targets[0].target.value] = coef.const

        def visit_Param(self, node: cst.Param) -> None:
            counts[node.name.value] = counts.get(node.name.value, 0) + 2

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name):
                counts[node.target.value] = counts.get(node.target.value, 0) + 2

    module.visit(Collect())
    return {k: (v if counts.get(k) == 1 else None) for k, v in values.items()}


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


def detached(name: str) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=cst.Name(name), attr=cst.Name("detach")))
