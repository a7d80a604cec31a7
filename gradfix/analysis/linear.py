"""Losses of the form `coefficient * call`: parsing and coefficient algebra.

A coefficient is a rational constant times a product of symbolic factors
(names or attributes, as source text) divided by others. Constants are kept as
exact fractions so that `-1`, `0.5` and `/ 2` combine without rounding and
render back as the literal a user would write.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, Optional, Tuple

import libcst as cst

from gradfix.analysis.exprs import access_path, code_of, strip_parens


Monomial = Tuple[Tuple[str, ...], Tuple[str, ...]]  # (symbolic factors, symbolic divisors), sorted


class LoopCount(str):
    """The coefficient symbol for a loop's number of iterations (a loss accumulated over a loop
    holds each term that many times). Not Python source, so never rendered: rules tell it from a
    name by its type. A `str` so that it sorts and cancels with the other symbols."""

    def __new__(cls, loop: object) -> "LoopCount":
        return super().__new__(cls, f"<iterations of the loop {id(loop)}>")


class ElementCount(LoopCount):
    """The coefficient symbol for the number of elements of the term it scales: the mean of a sum of
    terms (`(rec - lam * t).mean()`) weighs each element of `t` by `lam / numel(t)`, whatever the
    other summands' shapes (broadcasting repeats each of its elements equally often). The two
    terms of a pair have one shape (one callee, the same operands), so it cancels in their ratio;
    anywhere else it is a loop count: never rendered."""

    def __new__(cls) -> "ElementCount":
        return str.__new__(cls, "<elements of the term>")


ELEMENTS = ElementCount()


def has_loop_count(symbols: Tuple[str, ...]) -> bool:
    return any(isinstance(s, LoopCount) for s in symbols)


@dataclass(frozen=True)
class Coef:
    """A sum of monomials `c * s1 * s2 / d1`, with exact rational constants `c`.

    Symbols are the source text of names or attributes (`BETA`, `self.k`).
    Enough algebra for coefficients: sums and products, division by a
    monomial, and rendering back to readable Python.
    """

    terms: Tuple[Tuple[Monomial, Fraction], ...]  # sorted, no zero constants

    @staticmethod
    def of(value: Fraction, num: Tuple[str, ...] = (), den: Tuple[str, ...] = ()) -> "Coef":
        return Coef._make({(tuple(sorted(num)), tuple(sorted(den))): Fraction(value)})

    @staticmethod
    def _make(terms: Dict[Monomial, Fraction]) -> "Coef":
        merged: Dict[Monomial, Fraction] = {}
        for m, c in terms.items():
            m = _cancel(m)
            merged[m] = merged.get(m, Fraction(0)) + c
        return Coef(tuple(sorted((m, c) for m, c in merged.items() if c != 0)))

    @property
    def symbolic(self) -> bool:
        return any(m != ((), ()) for m, _ in self.terms)

    @property
    def const(self) -> Fraction:
        """The constant of a purely numeric coefficient."""
        return dict(self.terms).get(((), ()), Fraction(0))

    def symbols(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(s for (num, den), _ in self.terms for s in num + den))

    def is_one(self) -> bool:
        return self.terms == ((((), ()), Fraction(1)),)

    def is_zero(self) -> bool:
        return not self.terms

    def __add__(self, other: "Coef") -> "Coef":
        total: Dict[Monomial, Fraction] = dict(self.terms)
        for m, c in other.terms:
            total[m] = total.get(m, Fraction(0)) + c
        return Coef._make(total)

    def __neg__(self) -> "Coef":
        return Coef(tuple((m, -c) for m, c in self.terms))

    def __mul__(self, other: "Coef") -> "Coef":
        total: Dict[Monomial, Fraction] = {}
        for (n1, d1), c1 in self.terms:
            for (n2, d2), c2 in other.terms:
                m = (tuple(sorted(n1 + n2)), tuple(sorted(d1 + d2)))
                total[m] = total.get(m, Fraction(0)) + c1 * c2
        return Coef._make(total)

    def inverse(self) -> Optional["Coef"]:
        """1 / self for a single monomial; None otherwise (or for zero)."""
        if len(self.terms) != 1:
            return None
        (num, den), c = self.terms[0]
        return Coef._make({(den, num): 1 / c})

    def render(self) -> str:
        """Python source for the coefficient, constants as floats where exact."""
        if not self.terms:
            return "0.0"
        parts = [_render_monomial(num, den, c) for (num, den), c in sorted(self.terms, key=lambda t: (t[0] != ((), ()), t[0]))]
        text = parts[0]
        for part in parts[1:]:
            text += f" - {part[1:]}" if part.startswith("-") else f" + {part}"
        return text


def cancels(a: Coef, b: Coef) -> bool:
    """Whether the product `a * b` of two factors written in one expression cancels a symbol of the
    source (`W * f(x) / W`): Python computes `W * y / W` as written, nan where `W` is zero or
    infinite, where the cancelled coefficient says one (review, stop 24). Loop and element counts
    are the analysis's own symbols, not the source's."""
    for (n1, d1), _ in a.terms:
        for (n2, d2), _ in b.terms:
            if any(type(s) is str and s in d2 for s in n1) or any(type(s) is str and s in n2 for s in d1):
                return True
    return False


def _cancel(monomial: Monomial) -> Monomial:
    """`k * n / n` -> `k`: a symbol over itself is one (symbols stand for the same value in one coefficient)."""
    num, den = list(monomial[0]), list(monomial[1])
    for s in list(num):
        if s in den:
            num.remove(s)
            den.remove(s)
    return tuple(sorted(num)), tuple(sorted(den))


def _render_monomial(num: Tuple[str, ...], den: Tuple[str, ...], c: Fraction) -> str:
    const = _render_const(c)
    if not num and not den:
        return const
    factors = " * ".join(num) if num else "1"
    if c == 1:
        text = factors
    elif c == -1:
        text = f"-{factors}"
    else:
        text = f"{const} * {factors}" if num else const
    for d in den:
        text = f"{text} / {d}"
    return text


def _render_const(value: Fraction) -> str:
    as_float = float(value)
    # `0.1` stays `0.1` (the literal the user wrote means this very fraction
    # when Python reads it back), `1/3` becomes `1 / 3`.
    if Fraction(as_float) == value or Fraction(repr(as_float)) == value:
        return repr(as_float)
    return f"{value.numerator} / {value.denominator}"


ONE = Coef.of(Fraction(1))


def _literal(node: cst.BaseExpression) -> Optional[Fraction]:
    node = strip_parens(node)
    if isinstance(node, cst.Integer):
        value = Fraction(int(node.value.replace("_", ""), 0))
        return value if abs(value) <= _FLOAT_MAX else None
    if isinstance(node, cst.Float):
        try:
            value = Fraction(node.value.replace("_", ""))
        except ValueError:
            return None
        # `1e400` is inf to Python, `1e-400` is 0.0: no finite constant (`finite`).
        return value if value == 0 or _FLOAT_MIN <= abs(value) <= _FLOAT_MAX else None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        inner = _literal(node.expression)
        if inner is None:
            return None
        return -inner if isinstance(node.operator, cst.Minus) else inner
    return None


_FLOAT_MAX = Fraction(1.7976931348623157e308)
_FLOAT_MIN = Fraction(5e-324)  # the least positive float: a constant below it is 0.0 to Python


def finite(coef: Optional[Coef]) -> Optional[Coef]:
    """`coef`, or None when one of its constants is no finite Python float (`1e400`, which Python reads
    as inf; `1e300 * 1e300`), or one Python reads as 0.0 (`1e-400`, whose inverse overflows): the rewrite
    writes the constant as a literal (`grad_scale(x, ...)`), and float() of it overflows where Python's
    own arithmetic gave inf or 0.0 (review, round 5: gradfix raised)."""
    if coef is None or all(_FLOAT_MIN <= abs(c) <= _FLOAT_MAX for _, c in coef.terms):
        return coef
    return None


def parse_coef(node: cst.BaseExpression) -> Optional[Coef]:
    """A coefficient expression: numeric literals, names, attributes, and products/negations of them
    (each part's constants finite floats: `finite`)."""
    return finite(_parse_coef(node))


def _parse_coef(node: cst.BaseExpression) -> Optional[Coef]:
    value = _literal(node)
    if value is not None:
        return Coef.of(value)
    node = strip_parens(node)
    if isinstance(node, (cst.Name, cst.Attribute)) and access_path(node) is not None:
        if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
            return None
        return Coef.of(Fraction(1), (code_of(node).strip(),))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = parse_coef(node.expression)
        return None if inner is None else -inner
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        left, right = parse_coef(node.left), parse_coef(node.right)
        if left is None or right is None or cancels(left, right):
            return None
        return left * right
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        # `(1 - beta)`: a sum of coefficients is one.
        left, right = parse_coef(node.left), parse_coef(node.right)
        if left is None or right is None:
            return None
        return left + (-right if isinstance(node.operator, cst.Subtract) else right)
    return None


def split_linear(node: cst.BaseExpression) -> Optional[Tuple[Coef, cst.Call]]:
    """`-2 * f(...) / c` -> (Coef(-2/c), the call). None when not of that form, or when a coefficient
    of a part is no finite float (`finite`).

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
                    product = finite(inner[0] * coef)
                    return None if cancels(inner[0], coef) or product is None else (product, inner[1])
            return None
        if isinstance(op, cst.Divide):
            inner = split_linear(node.left)
            coef = parse_coef(node.right)
            if inner is None or coef is None:
                return None
            inverse = finite(coef.inverse())
            if inverse is None or cancels(inner[0], inverse):
                return None
            quotient = finite(inner[0] * inverse)
            return None if quotient is None else (quotient, inner[1])
    return None
