"""Losses of the form `coefficient * call`: parsing and coefficient algebra.

A coefficient is a rational constant times a product of symbolic factors
(names or attributes, as source text) divided by others. Constants are kept as
exact fractions so that `-1`, `0.5` and `/ 2` combine without rounding and
render back as the literal a user would write.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional, Tuple

import libcst as cst

from gradfix.analysis.exprs import access_path, code_of, strip_parens


@dataclass(frozen=True)
class Coef:
    const: Fraction
    num: Tuple[str, ...] = ()  # symbolic factors
    den: Tuple[str, ...] = ()  # symbolic divisors

    @property
    def symbolic(self) -> bool:
        return bool(self.num or self.den)

    def is_one(self) -> bool:
        return self.const == 1 and not self.symbolic

    def is_zero(self) -> bool:
        return self.const == 0

    def __mul__(self, other: "Coef") -> "Coef":
        return Coef(self.const * other.const, tuple(sorted(self.num + other.num)), tuple(sorted(self.den + other.den)))

    def __neg__(self) -> "Coef":
        return Coef(-self.const, self.num, self.den)

    def __add__(self, other: "Coef") -> "Coef":
        if (self.num, self.den) == (other.num, other.den):
            total = self.const + other.const
            return Coef(total) if total == 0 else Coef(total, self.num, self.den)
        if self.is_zero():
            return other
        if other.is_zero():
            return self
        # Different symbolic shapes: keep the sum as one opaque factor.
        left, right = self.render(), other.render()
        text = f"{left} - {right[1:]}" if right.startswith("-") else f"{left} + {right}"
        return Coef(Fraction(1), (f"({text})",))

    def render(self) -> str:
        """Python source for the coefficient, as a float where it is one exactly."""
        const = _render_const(self.const)
        if not self.symbolic:
            return const
        factors = " * ".join(self.num) if self.num else ""
        if self.const == 1:
            text = factors or "1"
        elif self.const == -1:
            text = f"-{factors}" if factors else "-1"
        else:
            text = f"{const} * {factors}" if factors else const
        for d in self.den:
            text = f"{text} / {d}"
        return text


def _render_const(value: Fraction) -> str:
    as_float = float(value)
    if Fraction(as_float) == value:
        return repr(as_float)
    return f"{value.numerator} / {value.denominator}"


ONE = Coef(Fraction(1))


def _literal(node: cst.BaseExpression) -> Optional[Fraction]:
    node = strip_parens(node)
    if isinstance(node, cst.Integer):
        return Fraction(int(node.value.replace("_", ""), 0))
    if isinstance(node, cst.Float):
        try:
            return Fraction(node.value.replace("_", ""))
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        inner = _literal(node.expression)
        if inner is None:
            return None
        return -inner if isinstance(node.operator, cst.Minus) else inner
    return None


def parse_coef(node: cst.BaseExpression) -> Optional[Coef]:
    """A coefficient expression: numeric literals, names, attributes, and products/negations of them."""
    value = _literal(node)
    if value is not None:
        return Coef(value)
    node = strip_parens(node)
    if isinstance(node, (cst.Name, cst.Attribute)) and access_path(node) is not None:
        if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
            return None
        return Coef(Fraction(1), (code_of(node).strip(),))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = parse_coef(node.expression)
        return None if inner is None else -inner
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        left, right = parse_coef(node.left), parse_coef(node.right)
        if left is None or right is None:
            return None
        return left * right
    return None


def _invert(coef: Coef) -> Optional[Coef]:
    if coef.const == 0:
        return None
    return Coef(1 / coef.const, coef.den, coef.num)


def split_linear(node: cst.BaseExpression) -> Optional[Tuple[Coef, cst.Call]]:
    """`-2 * f(...) / c` -> (Coef(-2/c), the call). None when not of that form.

    Parentheses never change a node's type, and the call returned is the very
    node of the tree (identity matters to metadata and to the rewrite).
    """
    if isinstance(node, cst.Call):
        return ONE, node
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        inner = split_linear(node.expression)
        if inner is None:
            return None
        coef, call = inner
        return (-coef if isinstance(node.operator, cst.Minus) else coef), call
    if isinstance(node, cst.BinaryOperation):
        op = node.operator
        if isinstance(op, cst.Multiply):
            for call_side, coef_side in ((node.left, node.right), (node.right, node.left)):
                inner = split_linear(call_side)
                coef = parse_coef(coef_side)
                if inner is not None and coef is not None:
                    return inner[0] * coef, inner[1]
            return None
        if isinstance(op, cst.Divide):
            inner = split_linear(node.left)
            coef = parse_coef(node.right)
            if inner is None or coef is None:
                return None
            inverse = _invert(coef)
            return None if inverse is None else (inner[0] * inverse, inner[1])
    return None
