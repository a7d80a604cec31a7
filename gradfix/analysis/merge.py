"""Merging two evaluations of one callee that differ only by complementary `.detach()`.

Shared by GF001 (two backpropagated losses) and GF002 (two terms of one sum):
matching the pair and judging whether the merge is provably exact. The one
call `f(grad_scale(x, b), grad_scale(y, a))` is built by `gradfix.fixes.build`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Set

import libcst as cst

from gradfix.analysis.exprs import (
    dynamic_global,
    may_write,
    DETACHED_IN_FIRST,
    DETACHED_IN_SECOND,
    LIVE_IN_BOTH,
    Point,
    align_calls,
    align_receivers,
    binding_counts,
    calls_within,
    code_of,
    contains_detach,
    core_call,
    detach_receiver,
    is_literal,
    read_paths,
    same_chain,
    same_expr,
    strip_parens,
    swap_first_two,
)
from gradfix.analysis.backward import torch_hook_reasons
from gradfix.analysis.linear import Coef, parse_coef
from gradfix.analysis.callee_kinds import MODULE, PURE, RANDOM, Callee
from gradfix.analysis.bindings_index import class_members
from gradfix.analysis.callees import CalleeClassifier
from gradfix.analysis.introspection import names_by_string
from gradfix.analysis.vocabulary import (
    DETERMINISTIC_TENSOR_FUNCTIONS,
    PURE_FUNCTIONS,
    PURE_TENSOR_METHODS,
    RANDOM_FUNCTIONS,
    TENSOR_RESULT_METHODS,
    ZERO_FACTORIES,
    has_inplace_suffix,
)
from gradfix.reasons import COEFFICIENT, Reason, Reasons
from gradfix.analysis.walk import walk_tree

# torch functions that return a tensor (or a number, a tuple of tensors): values `grad_scale` takes.
# torch functions whose result `grad_scale` refuses (a TypeError): `torch.finfo(...)` and
# `torch.iinfo(...)` are objects, neither tensors, numbers nor sequences of them.
_UNSCALABLE_RESULTS = frozenset({"torch.finfo", "torch.iinfo"})
# torch functions whose result `grad_scale` takes (a tensor, a number, a dtype or device, a Size).
TENSOR_FUNCTIONS = (PURE_FUNCTIONS | ZERO_FACTORIES | DETERMINISTIC_TENSOR_FUNCTIONS | RANDOM_FUNCTIONS) - _UNSCALABLE_RESULTS


@dataclass
class PairMatch:
    points: List[Point]
    callee: Callee
    swapped: bool  # arguments matched after swapping them (symmetric callee)
    core: cst.Call  # the call of the first evaluation that holds the stop-gradients
    chain: List[cst.Call]  # method calls chained on it (`.mean()`), outermost first
    # A pure tensor method whose receiver holds the stop-gradients (`(z_q - z.detach()).pow(2)`):
    # the receiver is one of its operands.
    receiver: bool = False

    @property
    def callee_text(self) -> str:
        if self.receiver:
            return f".{self.core.func.attr.value}()"  # type: ignore[attr-defined]
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
    if _receiver_form(c1, c2):
        points = align_receivers(c1, c2)
        if points is None:
            return None
        kinds = {p.kind for p in points}
        if DETACHED_IN_FIRST not in kinds or DETACHED_IN_SECOND not in kinds:
            return None
        return PairMatch(points, Callee(PURE), False, c1, chain1, receiver=True)
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

    def __init__(self, classifier: CalleeClassifier, facts) -> None:
        self.classifier = classifier
        self.facts = facts  # gradfix.analysis.facts.FileFacts

    @property
    def constants(self) -> Dict[str, Optional[Fraction]]:
        """The file's number constants (`FileFacts.constants`): a walk of the whole file, done
        only for a file where some pair needs them."""
        return self.facts.constants

    def constant(self, symbol: str) -> bool:
        """`symbol` (a coefficient's factor as written) is a name the file binds to a number once."""
        return symbol.isidentifier() and self.constants.get(symbol) is not None

    def _tensor_argument(self, point: Point, match: PairMatch) -> bool:
        """The operand of a `.data` stop-gradient is proven a tensor: the other evaluation passes it,
        as it is, as an argument of a torch function (`F.mse_loss(x, y.data)`), which takes tensors
        (and numbers, which have no `.data`) — unless a class of the file overrides
        `__torch_function__` and may pass for one, or may give `.data` another meaning
        (`facts.FileFacts.data_overrides`: a tensor subclass, a class binding `data`). A method's receiver, an argument of a module or
        of a helper of the file, a part of a larger expression (`x.data * 2`): not proven."""
        if match.receiver or self.facts.torch_function_overrides or self.facts.data_overrides:
            return False
        if not any(strip_parens(arg.value) is point.first for arg in match.core.args if not arg.star):
            return False
        return any(_torch_function(name) for name in self.classifier.qualified(match.core.func))

    def scalable(self, point: Point, match: PairMatch) -> bool:
        """The rewrite's `grad_scale(operand, a + b)` of an argument passed to both evaluations is proven
        to take it: `grad_scale` scales a tensor (of any layout) and returns numbers, strings and None
        as they are, and refuses anything else (an nn.Module, a function, a config object: their
        tensors would keep an unscaled gradient) with a TypeError. Proven: a literal; the operand
        passed as it is to a torch function on gradfix's list (`F.mse_loss(x.detach(), y, w)`: it
        takes tensors and numbers), unless a class of the file overrides `__torch_function__`; a
        result of such a function or of a tensor method that gives a tensor (`tensor_value`)."""
        operand = strip_parens(point.operand)
        if is_literal(operand) or self.tensor_value(operand):
            return True
        if match.receiver or self.facts.torch_function_overrides:
            return False
        if not any(strip_parens(arg.value) is point.first for arg in match.core.args if not arg.star):
            return False
        return bool(self.classifier.qualified(match.core.func) & PURE_FUNCTIONS)

    def tensor_value(self, node: cst.BaseExpression, seen: Optional[Set[int]] = None) -> bool:
        """`node` is a tensor, a number or a tuple of tensors: a call of a torch function that returns
        one (`torch.eye(4)`), a tensor method that does on such a value (`.to_sparse()`), a number,
        a list or tuple display of those, a name every binding of which in its scope is one of those,
        or `self.name` assigned once in its class to one of those."""
        seen = set() if seen is None else seen
        if id(node) in seen:
            return False
        seen.add(id(node))
        node = strip_parens(node)
        if is_literal(node):
            return True
        if isinstance(node, cst.Call) and not any(arg.star for arg in node.args):
            if self.classifier.qualified(node.func) & TENSOR_FUNCTIONS:
                return True
            func = node.func
            if isinstance(func, cst.Attribute) and not self.classifier.qualified(func) and func.attr.value in TENSOR_RESULT_METHODS:
                return self.tensor_value(func.value, seen)
            return False
        if isinstance(node, (cst.Tuple, cst.List)):
            # `weights = (W1, W2)`: grad_scale rebuilds a list or tuple with every tensor scaled.
            return all(not isinstance(e, cst.StarredElement) and self.tensor_value(e.value, seen) for e in node.elements)
        if isinstance(node, cst.Name):
            values = self.classifier.assigned_values(node)
            return bool(values) and all(isinstance(v, cst.BaseExpression) and self.tensor_value(v, seen) for v in values)  # type: ignore[union-attr]
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            # `self.eps`, assigned once on `self` in its class and bound nowhere else (as `_self_read`).
            cls = self.classifier.enclosing_class(node)
            values = self.classifier.self_attribute_values(node) if cls is not None else []
            if cls is None or len(values) != 1 or class_members(cls, node.attr.value):
                return False
            if self.classifier.bound_elsewhere(cls, node.attr.value, own_def=False) is not None:
                return False
            return isinstance(values[0], cst.BaseExpression) and self.tensor_value(values[0], seen)
        return False

    def sequence(self, operand: cst.BaseExpression) -> bool:
        """`operand` is a name every binding of which in its scope is a list or tuple (`_is_sequence`)."""
        operand = strip_parens(operand)
        if not isinstance(operand, cst.Name):
            return False
        values = self.classifier.assigned_values(operand)
        if self.classifier.rebinds(("list", "tuple")):
            return False  # `list(...)` may be a function of the file
        return bool(values) and all(_is_sequence(v) for v in values)  # type: ignore[union-attr]

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
        # `__torch_function__` or a tensor subclass of the file (`backward.torch_hook_reasons`).
        reasons.extend(torch_hook_reasons(self.facts))
        operands = list(c1.args) + ([cst.Arg(c1.func.value)] if match.receiver else [])  # type: ignore[attr-defined]
        for inner in calls_in(operands):
            if detach_receiver(inner) is not None:
                continue
            if may_write(inner):
                # `F.leaky_relu(y, 0.5, True)`: the original overwrites `y` twice, the rewrite once
                # (review, stop 24).
                reasons.add(
                    f"`{code_of(inner).strip()}` in the arguments modifies a tensor in place: it runs twice in the "
                    f"original and once after the rewrite"
                )
                break
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
        unproven = [
            f"`.data` of the items of `{code_of(p.operand).strip()}`" if p.iterated else f"`{code_of(p.operand).strip()}.data`"
            for p in match.points
            if p.data and p.kind in (DETACHED_IN_FIRST, DETACHED_IN_SECOND) and not self._tensor_argument(p, match)
        ]
        if unproven:
            shown = " and ".join(unproven)
            reasons.add(
                f"{shown} {'stops' if len(unproven) == 1 else 'stop'} the gradient only on a tensor, which gradfix "
                f"cannot prove here (another object's `data` may be anything: a PackedSequence's is a tensor with "
                f"gradient)"
            )
        for point in match.points:
            if point.kind == LIVE_IN_BOTH and not (a + b).is_one() and not self.scalable(point, match):
                text = code_of(point.operand).strip()
                reasons.add(
                    f"`{text}`, passed to both evaluations, becomes `grad_scale({text}, {(a + b).render()})`: gradfix "
                    f"cannot prove it a tensor or a number (an nn.Module, a function or another object there makes "
                    f"`grad_scale` raise TypeError; left unscaled, tensors it holds would keep the wrong gradient)"
                )
                break
        for point in match.points:
            if point.iterated and not self.sequence(point.operand):
                text = code_of(point.operand).strip()
                reasons.add(
                    f"`{text}` is stop-gradiented item by item: gradfix cannot prove it a list or tuple "
                    f"(an iterator would give the second evaluation other items)"
                )
        if self.facts.computed_attributes != (frozenset(), False):
            for path in dict.fromkeys(p for operand in operands for p in read_paths(operand.value)):
                if self.facts.computed_path(path):
                    reasons.add(
                        f"`{'.'.join(p for p in path if p != '[]')}` may be computed anew on each read (a class of the file "
                        f"defines a property or `__getattr__`): the two evaluations may not see one value"
                    )
                    break
        for link in match.chain:
            method = link.func.attr.value  # type: ignore[attr-defined]
            if method not in PURE_TENSOR_METHODS:
                reasons.add(f"`.{method}()` after the call is not a known pure tensor method")
                break
        for coef in (a, b):
            for factor in coef.symbols():
                if not self.constant(factor):
                    text = f"coefficient `{factor}` is not a number: if it is a tensor that requires grad, its gradient is lost"
                    reasons.add(Reason(text, COEFFICIENT, factor))
                    break
        for coef in (a, b):
            for (_, den), _ in coef.terms:
                zero = next((d for d in den if type(d) is str and d.isidentifier() and self.constants.get(d) == 0), None)
                if zero is not None:
                    # The rewrite computes the scale in Python (`grad_scale(x, 1 / c)`): a division by
                    # zero raises there, where the original's tensor division gave inf (review, stop 24).
                    reasons.add(f"the coefficient divides by `{zero}`, bound to zero: the rewrite's `1 / {zero}` raises where the original gave inf")
                    break
        return reasons


def _torch_function(qualified: str) -> bool:
    """A function of torch by its import-resolved name (`torch.nn.functional.mse_loss`,
    `torch.sum`); not a class (`torch.nn.MSELoss`)."""
    head, _, last = qualified.rpartition(".")
    return (head == "torch" or head.startswith("torch.")) and last[:1].islower()


def _is_sequence(value: cst.CSTNode) -> bool:
    """A list or tuple display, a list comprehension, or `list(...)`/`tuple(...)`."""
    value = strip_parens(value) if isinstance(value, cst.BaseExpression) else value
    if isinstance(value, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Name)
        and value.func.value in ("list", "tuple")
    )


def _receiver_form(c1: cst.Call, c2: cst.Call) -> bool:
    """Both are the same pure tensor method (`.pow`, `.abs`, `.sum`; not in place) called on a
    receiver that is no plain name and holds a stop-gradient, with no stop-gradient in the
    arguments: the method's operands are its receiver and arguments."""
    f1, f2 = c1.func, c2.func
    if not (isinstance(f1, cst.Attribute) and isinstance(f2, cst.Attribute)):
        return False
    method = f1.attr.value
    if method != f2.attr.value or method not in PURE_TENSOR_METHODS or has_inplace_suffix(method):
        return False
    if isinstance(f1.value, (cst.Name, cst.Attribute)) or isinstance(f2.value, (cst.Name, cst.Attribute)):
        return False  # `crit.forward(...)`, `self.D(...)`: a callee, not a tensor
    if not (contains_detach(f1.value) and contains_detach(f2.value)):
        return False
    return not any(contains_detach(a) for a in (*c1.args, *c2.args))


def calls_in(args: Sequence[cst.Arg]) -> List[cst.Call]:
    return [call for arg in args for call in calls_within(arg)]


def module_constants(module: cst.Module, counts: Optional[Dict[str, int]] = None) -> Dict[str, Optional[Fraction]]:
    """Names bound exactly once in the whole file, by `NAME = <number>` (`BETA = 0.25`).

    Every binding form in every scope counts against "once" (`exprs.binding_counts`):
    a function's `w_align, w_adv = log_w.exp()` makes `w_adv` a learned value there,
    whatever the module-level `w_adv = 0.1` says. A file that can bind names without a
    binding form (a star import, `globals()`, `vars()`, `exec`, `eval`, `sys.modules`, any
    mention of them: `introspection.names_by_string`), or that may reach its own module object
    (`import __main__`, `setattr` on an imported module: `exprs.dynamic_global`; there
    `__main__.BETA = torch.tensor(0.5, requires_grad=True)` makes a coefficient trainable; review,
    round 5) has none. `counts`: the file's `binding_counts`, where already computed.
    """
    if names_by_string(module) or dynamic_global(module) is not None:
        return {}
    values: Dict[str, Fraction] = {}

    class Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                coef = parse_coef(node.value)
                if coef is not None and not coef.symbolic:
                    values[node.targets[0].target.value] = coef.const

    walk_tree(module, Collect())
    if counts is None:
        counts = binding_counts(module)
    return {k: (v if counts.get(k) == 1 else None) for k, v in values.items()}


