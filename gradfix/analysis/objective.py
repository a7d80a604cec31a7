"""The objective of a run of backward calls, as a linear combination of terms.

A run of backward calls with nothing between them that touches gradients
(`backward.backward_runs`) leaves the gradients of one backward of the sum of
its losses. This module expands each loss through the statements of the
block that build it, and returns, for every term that holds a `.detach()`,
its coefficient in that sum:

    rec = criterion(out, inp)
    s_loss, p_loss = 0.0, 0.0
    for i in range(len(series)):
        s_loss += torch.mean(kl(series[i], prior[i].detach()))    # T1, each iteration
        p_loss += torch.mean(kl(series[i].detach(), prior[i]))    # T2
    s_loss = s_loss / len(series)
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss

gives T1 the coefficient `-k / len(series)` and T2 `k / len(series)` (per
iteration of the loop they share).

What the expansion follows, and nothing else:
- `=`, `+=`, `-=`, `*=`/`/=` by a coefficient, tuple assignments of equal length;
- `+`, `-`, unary minus, and `*`/`/` by a coefficient: numbers, names and
  attributes that carry no term, `len(...)`;
- `for` loops whose body is straight-line simple statements: accumulators
  (`acc += e`, `acc = acc + e`, read nowhere else in the body) and lists
  appended to once per iteration (`lst.append(e)`), reduced after the loop by
  `sum(lst)`, `torch.stack(lst).mean()` or `torch.mean(torch.stack(lst))`;
  one level of nested `for` loops of simple statements, followed as part of the
  body (each of their statements once per iteration of both loops; a name
  their body binds is tainted after them; no list appended to inside them);
  one `if C: acc = e ... else: acc += e ...` may reset the sums
  (`loop_shapes.reset_branches`), followed as its accumulating branch when it resets every
  sum of the loop (the resetting branch is each statement's *twin*, which a
  rewrite changes alike);
- reduced comprehensions, `sum([e for u in range(n)])` and the like
  (`comprehension_reduction`), whose element is one term: once per iteration of
  a `Fused` context shared by the block's comprehensions with the same clause;
- `with` bodies (autocast, no_grad...) as part of the block, remembered as the
  term's context, so that only terms evaluated under the same context pair up;
- `.detach()`, `.item()` and the like: values with no gradient (coefficient 0).

Any other use of a value that carries terms makes it *tainted*: its terms
have no known coefficient and are never paired. Every read of a name is
recorded as *consumed* when the expansion followed it; the rule then checks
that every other read of a name that carried a paired term is a value-only
read (`.item()`, `float()`, f-strings...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import AbstractSet, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from gradfix.analysis.backward import backward_call
from gradfix.analysis.between import stores_into, view_sources
from gradfix.analysis.exprs import access_path, bound_names, code_of, contains_detach, is_inplace_call, paths_overlap, read_paths, strip_parens
from gradfix.analysis.loop_shapes import (
    append_target,
    appends_in,
    comprehension_reduction,
    flattened,
    nested_body,
    normalised_clause,
    positions,
    reset_branches,
    self_reads,
    small_is,
    stacked,
    stored_names,
    summands,
    target_name,
    without_self,
)
from gradfix.analysis.linear import ELEMENTS, Coef, LoopCount, ONE, _literal, cancels
from gradfix.analysis.vocabulary import FRESH_FUNCTIONS, FRESH_METHODS, FRESH_TENSOR_FACTORIES, MUTATING_METHODS, PURE_TENSOR_METHODS, VALUE_METHODS, has_inplace_suffix
from gradfix.analysis.walk import walk_tree


@dataclass(eq=False)
class Term:
    """One call holding a `.detach()`, as it stands in the tree."""

    call: cst.Call
    statement: cst.SimpleStatementLine  # the statement that evaluates it
    body: Sequence[cst.BaseStatement]  # the statement list holding `statement`
    index: int  # position of `statement` in `body`
    top: int  # position in the block of the statement that holds it (itself, a loop or a `with`)
    context: Tuple[cst.CSTNode, ...]  # the `for`/`with` statements around it, outermost first
    # When the term comes from inlining a helper (`assoc(series[i], prior[i])`):
    # the helper call in the tree, and the inlined expression `call` is part of.
    site: Optional[cst.Call] = None
    inlined: Optional[cst.BaseExpression] = None
    # When the term is the element of a reduced comprehension (`sum([kl(s[u], p[u].detach()) for u
    # in range(n)])`, `_comprehension_reduction`): that comprehension node.
    comprehension: Optional[cst.CSTNode] = None

    @property
    def anchor(self) -> cst.CSTNode:
        """The node of the tree that stands for the term: the call, or the helper call it was inlined from."""
        return self.site if self.site is not None else self.call


class Fused:
    """The iterations of comprehensions with one `for u in range(...)` clause, written alike, in
    one statement list: where such comprehensions evaluate their elements, as a loop's context
    entry. Terms of two of them pair up like two terms of one loop body: iteration `i` of each sees
    the same `u`, and a fix may evaluate both elements in one comprehension (loop fusion)."""

    __slots__ = ("clause",)

    def __init__(self, clause: str) -> None:
        self.clause = clause


def in_iterations(context: Tuple[object, ...]) -> bool:
    """Whether a term with this context is evaluated once per iteration of a loop or fused comprehensions."""
    return any(isinstance(node, (cst.For, Fused)) for node in context)


@dataclass(frozen=True)
class Lin:
    """A value as `sum(coef * term)` plus parts that hold no term; `tainted` terms entered it non-linearly."""

    terms: Tuple[Tuple[int, Coef], ...] = ()  # (id of the term's call, coefficient), no zeros
    tainted: FrozenSet[int] = frozenset()

    @staticmethod
    def of(coefs: Dict[int, Coef], tainted: FrozenSet[int] = frozenset()) -> "Lin":
        return Lin(tuple(sorted((k, c) for k, c in coefs.items() if not c.is_zero())), frozenset(tainted))

    def coefs(self) -> Dict[int, Coef]:
        return dict(self.terms)

    def all_terms(self) -> FrozenSet[int]:
        return frozenset(k for k, _ in self.terms) | self.tainted

    def __add__(self, other: "Lin") -> "Lin":
        total = self.coefs()
        for k, c in other.terms:
            total[k] = total[k] + c if k in total else c
        return Lin.of(total, self.tainted | other.tainted)

    def scale(self, coef: Coef) -> "Lin":
        return Lin.of({k: c * coef for k, c in self.terms}, self.tainted)

    def cancels(self, coef: Coef) -> bool:
        """Whether scaling by `coef`, a factor written in the same expression, cancels a symbol of
        a term's coefficient (`linear.cancels`)."""
        return any(cancels(c, coef) for _, c in self.terms)

    def __neg__(self) -> "Lin":
        return self.scale(Coef.of(Fraction(-1)))

    def taint(self) -> "Lin":
        return Lin((), self.all_terms())


ZERO = Lin()


@dataclass(frozen=True)
class ListValue:
    """A list appended to once per iteration of `loop`: the element's value, per iteration."""

    loop: Optional[cst.For]  # None while it is still `[]`
    element: Lin = ZERO


Value = Union[Lin, ListValue]


def _all_terms(value: Value) -> FrozenSet[int]:
    return value.element.all_terms() if isinstance(value, ListValue) else value.all_terms()


def loop_count(loop: cst.For) -> LoopCount:
    """The symbol for a loop's number of iterations: not Python, so it is never rendered."""
    return LoopCount(loop)


@dataclass
class Expansion:
    """What walking one block found."""

    terms: Dict[int, Term] = field(default_factory=dict)
    # Each backward call's loss, by the index of its statement in the block: its
    # summands (`(loss1 + loss2).backward()` backpropagates two losses) and their values.
    losses: Dict[int, List[Tuple[cst.BaseExpression, Lin]]] = field(default_factory=dict)
    # Every name that ever carried a term, with those terms.
    carriers: Dict[str, Set[int]] = field(default_factory=dict)
    # Name nodes whose read the expansion followed.
    consumed: Set[int] = field(default_factory=set)
    # What ran, in order: every simple statement, and each loop's header
    # (its target), with the loops around it. A statement runs once per
    # iteration of the loops in its context.
    steps: List[Tuple[cst.CSTNode, Tuple[cst.CSTNode, ...]]] = field(default_factory=list)
    # Coefficient symbols (source text) and the steps that used them.
    symbol_uses: Dict[str, Set[int]] = field(default_factory=dict)
    # Helper calls the expansion inlined (`self.assoc(p, q)`): proven pure, so they change no symbol.
    inlined_sites: Set[int] = field(default_factory=set)
    # A loop's `if u == 0: acc = e ... else: acc += e ...` (`loop_shapes.reset_branches`): each statement of
    # the accumulating branch (by id), which the walk followed, -> its twin in the resetting branch,
    # which a rewrite must change alike.
    twins: Dict[int, cst.SimpleStatementLine] = field(default_factory=dict)
    # Augmented assignments (`acc += e`) the walk read as rebinding `acc`, where another name may
    # hold the object `acc` holds (`_Sharing`), or `acc` was not bound in the block: on a
    # tensor they update that object in place, for the other name too. (name, the statement part)
    shared_updates: List[Tuple[str, cst.CSTNode]] = field(default_factory=list)
    # Lists appended to once per iteration and reduced after the loop (`torch.stack(lst).mean()`):
    # (the name read by the reduction, the loop, the terms of the element). The expansion takes the
    # list's length for the loop's count: the rule checks nothing else reaches the list.
    reduced_lists: List[Tuple[cst.Name, cst.For, FrozenSet[int]]] = field(default_factory=list)

    def symbol_invariant(self, symbol: str) -> bool:
        """Does `symbol` hold one value at all its uses? No store to it, and no call known to
        change it (`hist.append(...)`, `k.mul_(2)`), between the first and the last use, nor
        anywhere in a loop around a use (the next iteration sees it)."""
        return not any(known for known, _, _ in self._symbol_changes(symbol))

    def symbol_maybe_changed(self, symbol: str) -> List[str]:
        """Method calls on the symbol's root where it must hold (`self.log(...)` for `self.k`): they might change it."""
        return [text for known, text, _ in self._symbol_changes(symbol) if not known]

    def symbol_use_steps(self, symbol: str) -> List[cst.CSTNode]:
        """The steps (simple statements, loop headers) that use `symbol` as a coefficient, in order."""
        return [self.steps[step][0] for step in sorted(self.symbol_uses.get(symbol, ()))]

    def step_of(self, node: cst.CSTNode) -> Optional[int]:
        """The index in `steps` of a simple statement (or loop header) the walk went through."""
        for index, (step, _) in enumerate(self.steps):
            if step is node:
                return index
        return None

    def symbol_stores_before_uses(self, symbol: str, since: int) -> List[cst.CSTNode]:
        """Where `symbol` may be stored to (or changed in place) after step `since` and before its
        uses as a coefficient, or anywhere in a loop around `since`: a value read at `since` (the
        one evaluation a rule hoists there) may not be the one its uses read, or may be unbound
        (`lam = 3.0` after the loop that evaluates the terms). Changes between its first and last
        use are `symbol_invariant`'s."""
        uses = sorted(self.symbol_uses.get(symbol, ()))
        if not uses or since >= uses[0]:
            return []
        loops = {id(node) for node in self.steps[since][1] if isinstance(node, cst.For)}
        return [node for known, _, node in self._symbol_changes(symbol, since, uses[0] - 1, loops) if known]

    def _symbol_changes(
        self, symbol: str, start: Optional[int] = None, end: Optional[int] = None, loops: Optional[Set[int]] = None
    ) -> List[Tuple[bool, str, cst.CSTNode]]:
        """(known, text, node) for every step between `start` and `end` (by default the symbol's first
        and last use), or in one of `loops` (by default the loops around its uses), that may change it."""
        uses = sorted(self.symbol_uses.get(symbol, ()))
        if not uses:
            return []
        if start is None or end is None or loops is None:
            start, end = uses[0], uses[-1]
            loops = {id(node) for step in uses for node in self.steps[step][1] if isinstance(node, cst.For)}
        paths = read_paths(cst.parse_expression(symbol))
        roots = {path[0] for path in paths}
        changes: List[Tuple[bool, str, cst.CSTNode]] = []
        for step, (node, context) in enumerate(self.steps):
            if not (start <= step <= end or any(id(c) in loops for c in context)):
                continue
            if not isinstance(node, cst.BaseStatement):  # a loop target or a `with ... as` name
                if any(paths_overlap((name,), path) for name in stored_names(node) for path in paths):
                    changes.append((True, code_of(node).strip(), node))
                continue
            if stores_into(node, paths) is not None:
                changes.append((True, code_of(node).strip(), node))
            for receiver, method in _method_calls(node, skip=self.inlined_sites):
                if receiver in roots:
                    known = method in MUTATING_METHODS or has_inplace_suffix(method)
                    changes.append((known, f"{receiver}.{method}", node))
        return changes




class _Walker:
    def __init__(self, backward_indices: Set[int], inline, accelerators: AbstractSet[str] = frozenset(), sharing: Optional["_Sharing"] = None) -> None:
        self.out = Expansion()
        # Where a name may hold an object another name holds (`_Sharing`): `+=` on it there is in
        # place, not the rebinding the expansion reads it as (`Expansion.shared_updates`).
        self.sharing = sharing
        self.backward_indices = backward_indices
        self.accelerators = accelerators
        # `inline(call)`: the expression a call of a small pure helper of the
        # same module stands for, its parameters replaced by the arguments; or None.
        self.inline = inline
        self.site: Optional[Tuple[cst.Call, cst.BaseExpression]] = None
        self.top = 0  # the top-level statement being walked
        self.context: Tuple[cst.CSTNode, ...] = ()
        self._fused: Dict[tuple, Fused] = {}  # (statement list, clause text) -> its Fused

    # -- values of expressions -----------------------------------------------------
    def value(self, node: cst.BaseExpression, env: Dict[str, Value], where) -> Lin:
        """The expression as a Lin; `where` = (statement, body, index, context) for new terms.

        Parentheses are kept: they belong to the node itself in libcst, and stripping them
        would make a copy that is not in the tree (no position, no metadata, no rewrite).
        """
        if isinstance(node, cst.Name):
            found = env.get(node.value)
            if found is None:
                return ZERO
            self.out.consumed.add(id(node))
            if isinstance(found, ListValue):
                return found.element.taint()
            return found
        if isinstance(node, cst.BinaryOperation):
            op = node.operator
            if isinstance(op, (cst.Add, cst.Subtract)):
                left = self.value(node.left, env, where)
                right = self.value(node.right, env, where)
                return left + (-right if isinstance(op, cst.Subtract) else right)
            if isinstance(op, cst.Multiply):
                for side, other in ((node.left, node.right), (node.right, node.left)):
                    coef = self.coef(other, env)
                    if coef is not None:
                        value = self.value(side, env, where)
                        if not value.cancels(coef):
                            return value.scale(coef)
                return self._opaque(node, env, where)
            if isinstance(op, cst.Divide):
                coef = self.coef(node.right, env)
                inverse = coef.inverse() if coef is not None else None
                if inverse is not None:
                    value = self.value(node.left, env, where)
                    if not value.cancels(inverse):
                        return value.scale(inverse)
            return self._opaque(node, env, where)
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Minus):
                return -self.value(node.expression, env, where)
            if isinstance(node.operator, cst.Plus):
                return self.value(node.expression, env, where)
            return self._opaque(node, env, where)
        if isinstance(node, cst.Call):
            return self._call(node, env, where)
        return self._opaque(node, env, where)

    def _call(self, node: cst.Call, env: Dict[str, Value], where) -> Lin:
        func = node.func
        # Values without gradient: `x.detach()`, `x.item()`, `float(x)`.
        if isinstance(func, cst.Attribute) and func.attr.value in VALUE_METHODS and not node.args:
            self._consume_names(func.value, env)
            return ZERO
        if isinstance(func, cst.Name) and func.value in ("float", "int") and len(node.args) == 1:
            self._consume_names(node.args[0].value, env)
            return ZERO
        # Reductions of a list built in a loop, or of a comprehension.
        listed = self._list_reduction(node, env)
        if listed is not None:
            return listed
        reduced = self._comprehension_reduction(node, env, where)
        if reduced is not None:
            return reduced
        averaged = _mean_of_sum(node) if self.site is not None else None
        if averaged is not None:
            # The mean of a sum in an inlined helper, `(rec - lam * t).mean()`: linear, each term
            # weighed by one over its own number of elements (`linear.ElementCount`). Written in
            # the function itself, a mean of a sum stays one term (the pair may be the whole
            # mean, `torch.mean(kl(p, q.detach()) + kl(q.detach(), p))`), as a mean of one call
            # stays part of that call's term (`f(x.detach()).mean()`: a method chain of the pair).
            inner = self.value(averaged, env, where)
            if any(ELEMENTS in c.symbols() for _, c in inner.terms):
                # A mean of a mean: a tensor coefficient between them (`(b + (w * t).mean()).mean()`)
                # weighs each element of `t` by its own share of `w`, which no symbol says.
                return inner.taint()
            return inner.scale(Coef.of(Fraction(1), (), (ELEMENTS,)))
        if self.inline is not None and self.site is None and not contains_detach(node) and not self._reads_carrier(node, env):
            # A `.detach()` hidden in a helper: expand the helper's expression instead (one level deep).
            inlined = self.inline(node)
            if inlined is not None and contains_detach(inlined):
                self.out.inlined_sites.add(id(node))
                self.site = (node, inlined)
                try:
                    return self.value(inlined, env, where)
                finally:
                    self.site = None
        if contains_detach(node) and not self._reads_carrier(node, env):
            statement, body, index, context = where
            site, inlined = self.site if self.site is not None else (None, None)
            term = Term(node, statement, body, index, self.top, context, site, inlined)
            self.out.terms[id(node)] = term
            return Lin.of({id(node): ONE})
        return self._opaque(node, env, where)

    def _list_reduction(self, node: cst.Call, env: Dict[str, Value]) -> Optional[Lin]:
        """`sum(lst)`, `torch.stack(lst).mean()`, `torch.mean(torch.stack(lst))` for a list built in a loop."""
        func = node.func
        listed: Optional[cst.BaseExpression] = None
        mean = False
        if isinstance(func, cst.Name) and func.value == "sum" and len(node.args) == 1:
            listed = node.args[0].value
        elif isinstance(func, cst.Attribute) and func.attr.value == "mean" and not node.args:
            listed = stacked(func.value)
            mean = True
        elif code_of(func).strip() == "torch.mean" and len(node.args) == 1 and node.args[0].keyword is None:
            listed = stacked(node.args[0].value)
            mean = True
        if listed is None:
            return None
        listed = strip_parens(listed)
        if not isinstance(listed, cst.Name):
            return None
        found = env.get(listed.value)
        if not isinstance(found, ListValue) or found.loop is None:
            return None
        self.out.consumed.add(id(listed))
        self.out.reduced_lists.append((listed, found.loop, found.element.all_terms()))
        if mean:
            return found.element.scale(Coef.of(Fraction(1), (), (loop_count(found.loop),)))
        return found.element

    def _comprehension_reduction(self, node: cst.Call, env: Dict[str, Value], where) -> Optional[Lin]:
        """`sum([e for u in range(n)])`, `sum(e for u in range(n))`, `torch.stack([e for u in
        range(n)]).mean()` (or `.sum()`, `torch.mean(...)`, `torch.sum(...)`): the terms of `e`,
        once per iteration of a `Fused` context.

        The clause must be one `for NAME in range(...)` with no condition, whose bounds call
        nothing but `len` (the same iterations wherever it is written), or one over names
        (`for s, p in zip(series, prior)`: the same items only where they are lists or tuples,
        which the rule proves or names as the fix's reason), and `e` may read no name that
        carries terms. An element that
        is one call holding a `.detach()` is a term as a whole (the fix makes the comprehension a
        list of one evaluation per iteration); an element of several parts is expanded, and its
        terms are indexed by the fix (`kl_shared[u]`), so its clause must be `range(N)`, whose
        items are their positions."""
        found = comprehension_reduction(node)
        if found is None or where is None:
            return None
        comp, mean = found
        element = comp.elt  # type: ignore[attr-defined]  (parentheses kept: the node of the tree)
        clause = comp.for_in  # type: ignore[attr-defined]
        if not contains_detach(element) or self._reads_carrier(element, env):
            return None
        if any(_all_terms(env.get(name, ZERO)) for name in bound_names(clause.target)):
            return None
        statement, body, index, context = where
        key = (id(body), normalised_clause(clause))
        fused = self._fused.setdefault(key, Fused(key[1]))
        if isinstance(element, cst.Call):
            term = Term(element, statement, body, index, self.top, context + (fused,), comprehension=comp)
            self.out.terms[id(element)] = term
            value = Lin.of({id(element): ONE})
        else:
            if not positions(clause.iter):
                return None
            inner = {k: v for k, v in env.items() if k != clause.target.value}  # the comprehension's own name
            before = set(self.out.terms)
            value = self.value(element, inner, (statement, body, index, context + (fused,)))
            for new in set(self.out.terms) - before:
                self.out.terms[new].comprehension = comp
        if mean:
            value = value.scale(Coef.of(Fraction(1), (), (loop_count(fused),)))
        return value

    def coef(self, node: cst.BaseExpression, env: Dict[str, Value]) -> Optional[Coef]:
        """A coefficient that carries no term: numbers, names, attributes, `len(...)`, and products of them."""
        value = _literal(node)
        if value is not None:
            return Coef.of(value)
        node = strip_parens(node)
        if isinstance(node, (cst.Name, cst.Attribute)) and access_path(node) is not None:
            if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
                return None
            root = access_path(node)[0]  # type: ignore[index]
            if root in env and _all_terms(env[root]):
                return None
            return self._symbol(code_of(node).strip())
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and len(node.args) == 1:
            arg = strip_parens(node.args[0].value)
            found = env.get(arg.value) if isinstance(arg, cst.Name) else None
            if isinstance(found, ListValue) and found.loop is not None:
                return Coef.of(Fraction(1), (loop_count(found.loop),))
            path = access_path(arg)
            if path is None or (path[0] in env and _all_terms(env[path[0]])):
                return None
            return self._symbol(code_of(node).strip())
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self.coef(node.expression, env)
            return None if inner is None else -inner
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Multiply, cst.Divide)):
            left, right = self.coef(node.left, env), self.coef(node.right, env)
            if left is None or right is None:
                return None
            if isinstance(node.operator, cst.Multiply):
                return None if cancels(left, right) else left * right
            inverse = right.inverse()
            return None if inverse is None or cancels(left, inverse) else left * inverse
        return None

    def _symbol(self, text: str) -> Coef:
        self.out.symbol_uses.setdefault(text, set()).add(len(self.out.steps) - 1)
        return Coef.of(Fraction(1), (text,))

    def _opaque(self, node: cst.BaseExpression, env: Dict[str, Value], where) -> Lin:
        """A non-linear use: the terms of everything it reads are tainted; reads through pure calls are followed."""
        tainted: Set[int] = set()

        class Collect(cst.CSTVisitor):
            def visit_Name(inner, name: cst.Name) -> None:
                found = env.get(name.value)
                if found is not None:
                    tainted.update(_all_terms(found))

            def visit_Call(inner, call: cst.Call) -> None:
                if contains_detach(call):
                    tainted.add(id(call))

        walk_tree(node, Collect())
        return Lin((), frozenset(tainted))

    def _reads_carrier(self, node: cst.CSTNode, env: Dict[str, Value]) -> bool:
        found = False

        class Collect(cst.CSTVisitor):
            def visit_Name(inner, name: cst.Name) -> None:
                nonlocal found
                value = env.get(name.value)
                if value is not None and _all_terms(value):
                    found = True

        walk_tree(node, Collect())
        return found

    def _consume_names(self, node: cst.CSTNode, env: Dict[str, Value]) -> None:
        consumed = self.out.consumed

        class Collect(cst.CSTVisitor):
            def visit_Name(inner, name: cst.Name) -> None:
                if name.value in env:
                    consumed.add(id(name))

        walk_tree(node, Collect())

    # -- statements -------------------------------------------------------------
    def assign(self, env: Dict[str, Value], name: str, value: Value) -> None:
        env[name] = value
        terms = _all_terms(value)
        if terms:
            self.out.carriers.setdefault(name, set()).update(terms)

    def walk(self, body: Sequence[cst.BaseStatement], env: Dict[str, Value], context: Tuple[cst.CSTNode, ...], top_level: bool) -> None:
        for index, statement in enumerate(body):
            self.context = context
            if top_level:
                self.top = index
            where = (statement, body, index, context)
            if isinstance(statement, cst.SimpleStatementLine):
                self.out.steps.append((statement, context))
                if top_level and index in self.backward_indices:
                    self._backward(statement, env, where)  # backpropagating changes no value
                else:
                    self.simple(statement, env, where)
            elif isinstance(statement, cst.For):
                self.loop(statement, env, context)
            elif isinstance(statement, cst.With) and isinstance(statement.body, cst.IndentedBlock):
                for item in statement.items:
                    if item.asname is not None:
                        self.out.steps.append((item.asname.name, context))
                        self._taint_stores(item.asname, env)
                self.walk(statement.body.body, env, context + (statement,), False)
            else:
                self._unsupported(statement, env)

    def _backward(self, statement: cst.SimpleStatementLine, env: Dict[str, Value], where) -> None:
        found = backward_call([statement], 0, self.accelerators)
        if found is not None:
            self.out.losses[self.top] = [
                (node, self.value(node, env, where) if sign > 0 else -self.value(node, env, where))
                for node, sign in summands(found.receiver)
            ]

    def simple(self, statement: cst.SimpleStatementLine, env: Dict[str, Value], where) -> None:
        if len(statement.body) != 1:
            self._unsupported(statement, env)
            return
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            if isinstance(target, cst.Name):
                value = strip_parens(small.value)
                if isinstance(value, cst.List) and not value.elements:
                    self.assign(env, target.value, ListValue(None))
                else:
                    self.assign(env, target.value, self.value(small.value, env, where))
                return
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(strip_parens(small.value), (cst.Tuple, cst.List)):
                values = strip_parens(small.value).elements  # type: ignore[attr-defined]
                names = target.elements
                if len(values) == len(names) and all(isinstance(n.value, cst.Name) for n in names) and not any(
                    isinstance(v, cst.StarredElement) or isinstance(n, cst.StarredElement) for v, n in zip(values, names)
                ):
                    results = [self.value(v.value, env, where) for v in values]
                    for n, result in zip(names, results):
                        self.assign(env, n.value.value, result)  # type: ignore[attr-defined]
                    return
        elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
            self.assign(env, small.target.value, self.value(small.value, env, where))
            return
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            name = small.target.value
            current = env.get(name, ZERO)
            if name not in env or (self.sharing is not None and self.sharing.shared_at(name, small)):
                # `name += e` on a tensor updates in place an object another name may hold (or the
                # caller's): read as `name = name + e`, the rule must not take that as proven.
                self.out.shared_updates.append((name, small))
            if isinstance(current, Lin):
                op = small.operator
                if isinstance(op, (cst.AddAssign, cst.SubtractAssign)):
                    self.out.consumed.add(id(small.target))
                    delta = self.value(small.value, env, where)
                    self.assign(env, name, current + (-delta if isinstance(op, cst.SubtractAssign) else delta))
                    return
                if isinstance(op, (cst.MultiplyAssign, cst.DivideAssign)):
                    coef = self.coef(small.value, env)
                    if coef is not None and isinstance(op, cst.DivideAssign):
                        coef = coef.inverse()
                    if coef is not None and not current.cancels(coef):
                        self.out.consumed.add(id(small.target))
                        self.assign(env, name, current.scale(coef))
                        return
        elif isinstance(small, cst.Expr):
            # Stores nothing, but a method call may mutate its receiver
            # (`lst.append(...)`, `loss.mul_(2)`). Other reads of carriers are
            # left to the rule, which checks every read.
            self._taint_mutated(small, env)
            return
        self._unsupported(statement, env)

    # -- loops -------------------------------------------------------------------
    def loop(self, node: cst.For, env: Dict[str, Value], context: Tuple[cst.CSTNode, ...]) -> None:
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        plan = _loop_plan(node, env)
        if plan is None:
            self._unsupported(node, env)
            return
        accumulators, lists = plan
        for name in sorted(a for a in accumulators if self.sharing is not None and self.sharing.shared_at(a, node)):
            # An accumulator another name may hold: its `+=` changes that name too (review, stop 24).
            self.out.shared_updates.append((name, node))
        inner: Dict[str, Value] = {k: v for k, v in env.items() if k not in accumulators and k not in lists}
        self._taint_stores(node.target, inner)
        deltas: Dict[str, Lin] = {name: ZERO for name in accumulators}
        elements: Dict[str, Lin] = {}
        inner_context = context + (node,)
        self.out.steps.append((node.target, inner_context))
        # A nested loop (`loop_shapes.nested_body`): its statements run once per iteration of both loops, and its
        # target, like every name its body binds, holds the last iteration's value after it.
        nested = {id(s.body.body): s for s in body if isinstance(s, cst.For)}  # type: ignore[union-attr]
        current: Optional[cst.For] = None  # the nested loop whose body is being walked
        for statement, statements, index, twin in flattened(body):
            loop = nested.get(id(statements))
            if loop is not current:
                if current is not None:
                    self._left_nested(current, inner, accumulators)
                current = loop
                if loop is not None:
                    self.out.steps.append((loop.target, inner_context + (loop,)))
                    self._taint_stores(loop.target, inner)
            statement_context = inner_context + (loop,) if loop is not None else inner_context
            if twin is not None:
                # In `if u == 0: acc = e else: acc += e` (`loop_shapes.reset_branches`), followed as its
                # accumulating branch: each iteration adds `e` to what the last reset kept, for
                # every accumulator of the `if` alike. The resetting branch holds the twin (same
                # values, `=` for `+=`), which a rewrite changes alike.
                self.out.twins[id(statement)] = twin
            where = (statement, statements, index, statement_context)
            self.out.steps.append((statement, statement_context))
            small = statement.body[0]  # type: ignore[attr-defined]  (the plan checked the shape)
            if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and small.target.value in accumulators:
                self.out.consumed.add(id(small.target))
                delta = self.value(small.value, inner, where)
                deltas[small.target.value] += -delta if isinstance(small.operator, cst.SubtractAssign) else delta
            elif isinstance(small, cst.Assign) and target_name(small) in accumulators:
                name = target_name(small)
                self.out.consumed.update(id(n) for n in self_reads(small.value, name))
                for part, sign in without_self(small.value, name) or ():
                    value = self.value(part, inner, where)
                    deltas[name] += value if sign > 0 else -value
            elif isinstance(small, cst.Expr) and append_target(small) in lists:
                call = small.value
                self.out.consumed.add(id(call.func.value))  # type: ignore[attr-defined]
                elements[append_target(small)] = self.value(call.args[0].value, inner, where)  # type: ignore[attr-defined, index]
            else:
                self.simple(statement, inner, where)  # type: ignore[arg-type]
        if current is not None:
            self._left_nested(current, inner, accumulators)
        # A term evaluated before the loop and added in every iteration counts
        # once per iteration: its coefficient is not the per-iteration one.
        for name in list(deltas):
            deltas[name] = self._own_terms(deltas[name], node)
        for name in list(elements):
            elements[name] = self._own_terms(elements[name], node)
        # (Sets of names: sorted, so that the carriers, and the reasons about them, come in an order
        # that does not change with PYTHONHASHSEED.)
        for name in sorted(accumulators):
            # (An accumulator first bound by a reset in the loop starts from nothing.)
            self.assign(env, name, env.get(name, ZERO) + deltas[name])  # type: ignore[operator]  (the plan checked it is a Lin)
        for name in lists:
            self.assign(env, name, ListValue(node, elements[name]))
        # Names bound in the body hold their last iteration's value after the loop.
        for name, value in inner.items():
            if name not in env or env[name] is not value:
                self.assign(env, name, _tainted(value))

    def _left_nested(self, loop: cst.For, env: Dict[str, Value], accumulators: Set[str]) -> None:
        """After a nested loop, a name its body binds (other than the accumulators it adds to) holds
        the last inner iteration's value: its terms lose their coefficients."""
        for name in sorted(stored_names(loop.body) - accumulators):
            if name in env:
                self.assign(env, name, _tainted(env[name]))

    def _own_terms(self, value: Lin, loop: cst.For) -> Lin:
        """`value` with the terms not evaluated inside `loop` tainted."""
        outside = {k for k, _ in value.terms if not any(c is loop for c in self.out.terms[k].context)}
        if not outside:
            return value
        return Lin.of({k: c for k, c in value.terms if k not in outside}, value.tainted | frozenset(outside))

    def _taint_stores(self, target: cst.CSTNode, env: Dict[str, Value]) -> None:
        for name in sorted(stored_names(target)):
            self.assign(env, name, self._opaque(target, env, None).taint())

    def _taint_mutated(self, node: cst.CSTNode, env: Dict[str, Value]) -> None:
        """Carriers that are the receiver of a method call that may mutate them: their terms lose their coefficients."""
        for name in sorted(_mutated_receivers(node) & set(env)):
            self.assign(env, name, _tainted(env[name]))

    def _unsupported(self, statement: cst.CSTNode, env: Dict[str, Value]) -> None:
        """A statement the expansion does not follow: everything it stores is tainted with everything it reads."""
        if isinstance(statement, cst.BaseCompoundStatement):
            self.out.steps.append((statement, self.context))
        read = self._opaque(statement, env, None)  # type: ignore[arg-type]
        for name in sorted(stored_names(statement)):
            self.assign(env, name, read)
        # A carrier changes only where it is stored (above) or is the receiver of a method call
        # that may mutate it, in a branch or a loop as in a simple statement. Its other reads
        # (`if i % 100 == 0: print(loss.item())`) are the rule's to check, as everywhere.
        self._taint_mutated(statement, env)


def _loop_plan(node: cst.For, env: Dict[str, Value]) -> Optional[Tuple[Set[str], Set[str]]]:
    """The accumulators and lists a loop builds, or None when the loop is not one the expansion follows.

    The body must be straight-line simple statements (no `break`/`continue`,
    no nesting); an accumulator is only updated by `acc += e` / `acc = acc + e`
    and read nowhere else in the body; a list is appended to exactly once.
    """
    if node.orelse is not None or node.asynchronous is not None or not isinstance(node.body, cst.IndentedBlock):
        return None
    accumulators: Set[str] = set()
    lists: Dict[str, int] = {}
    reset: Set[str] = set()
    nested = [statement for statement in node.body.body if isinstance(statement, cst.For)]
    if any(nested_body(statement) is None for statement in nested):
        return None
    for statement in node.body.body:
        if isinstance(statement, cst.If):
            branches = reset_branches(statement)
            if branches is None:
                return None
            for name in branches[3]:
                # A reset discards what the accumulator held: only nothing may be discarded (no
                # term of before the loop), and each accumulator is reset by one `if` only.
                before = env.get(name, ZERO)
                if not isinstance(before, Lin) or before.all_terms() or name in reset:
                    return None
                reset.add(name)
    flat = flattened(node.body.body)
    for statement, _, _, twin in flat:
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        if isinstance(small, (cst.Break, cst.Continue, cst.Return, cst.Raise, cst.Global, cst.Nonlocal, cst.Del)):
            return None
        if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            if small.target.value in reset and twin is not None and small_is(twin, cst.Assign):
                continue  # a reset pair's `acc += e`
            if isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign)) and isinstance(env.get(small.target.value), Lin):
                accumulators.add(small.target.value)
            else:
                return None
        elif isinstance(small, cst.Assign):
            name = target_name(small)
            if name is not None and name in env and self_reads(small.value, name):
                if without_self(small.value, name) is None or not isinstance(env.get(name), Lin):
                    return None
                accumulators.add(name)
        elif isinstance(small, cst.Expr):
            target = append_target(small)
            if target is not None and isinstance(env.get(target), ListValue) and env[target].loop is None:  # type: ignore[union-attr]
                lists[target] = lists.get(target, 0) + 1
    if any(count != 1 for count in lists.values()):
        return None
    if nested and (reset or any(appends_in(loop, set(lists)) for loop in nested)):
        # A list appended to in a nested loop would hold one item per inner iteration, not one
        # per iteration of this loop; a reset `if` beside a nested loop is not followed.
        return None
    if any(self_reads(loop.iter, name) or self_reads(loop.target, name) for loop in nested for name in accumulators | set(lists)):
        return None  # a nested loop's header reads or binds what this loop carries
    if reset and (accumulators or lists or sum(isinstance(x, cst.If) for x in node.body.body) != 1):
        # A pair is exact only if its two terms' sums keep the same iterations: with a reset, every
        # sum of the loop must be one reset by the same `if` (`s` reset at `u == 1` drops the first
        # iteration's term, a `p` never reset keeps its twin).
        return None
    accumulators |= reset
    # Accumulators and lists are read nowhere else in the body (nor in an `if`'s test).
    carried = accumulators | set(lists)
    if any(self_reads(s.test, name) for s in node.body.body if isinstance(s, cst.If) for name in carried):
        return None
    smalls = [(statement.body[0], twin) for statement, _, _, twin in flat]  # type: ignore[attr-defined]
    smalls += [(twin.body[0], statement) for statement, _, _, twin in flat if twin is not None]  # the resetting branch too
    for small, other in smalls:
        # `other`: the twin of a statement in a reset-or-accumulate `if` (None elsewhere).
        for name in carried:
            reads = self_reads(small, name)
            allowed = 0
            if isinstance(small, cst.AugAssign) and code_of(small.target).strip() == name:
                allowed = 1
            elif isinstance(small, cst.Assign) and target_name(small) == name:
                if name in reset and other is not None and small_is(other, cst.AugAssign):
                    allowed = 1  # a reset pair's `acc = e`: the target only
                elif without_self(small.value, name) is None:
                    return None  # `acc = 0.0` inside the loop: only the last iteration would count
                else:
                    allowed = 2  # the target and the one read in `acc = acc + e`
            elif name in stored_names(small):
                return None  # any other store into an accumulator or a list
            elif isinstance(small, cst.Expr) and append_target(small) == name:
                allowed = 1
            if len(reads) > allowed:
                return None
    return accumulators, set(lists)


def mean_operand(node: cst.Call) -> Optional[cst.BaseExpression]:
    """`X` for `X.mean()` or `torch.mean(X)` (no other argument: the mean of every element), else None."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "mean" and not node.args:
        return func.value
    if code_of(func).strip() == "torch.mean" and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        return node.args[0].value
    return None


def _mean_of_sum(node: cst.Call) -> Optional[cst.BaseExpression]:
    """`X` for a mean of every element of `X` (`mean_operand`) where `X` is a sum, a difference,
    a negation or a product (parentheses kept: the node of the tree), else None."""
    operand = mean_operand(node)
    if operand is None:
        return None
    bare = strip_parens(operand)
    if isinstance(bare, cst.BinaryOperation) and isinstance(bare.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
        return operand
    if isinstance(bare, cst.UnaryOperation) and isinstance(bare.operator, cst.Minus):
        return operand
    return None


def _tainted(value: Value) -> Value:
    return value.taint() if isinstance(value, Lin) else ListValue(None, value.element.taint())


def _method_calls(node: cst.CSTNode, skip: AbstractSet[int] = frozenset()) -> List[Tuple[str, str]]:
    """(receiver name, method) for every `name.method(...)` call in `node`, other than pure or value-only
    methods and the calls in `skip` (by id)."""
    found: List[Tuple[str, str]] = []

    class Collect(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            if id(call) in skip:
                return
            func = call.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
                method = func.attr.value
                if method not in VALUE_METHODS and method not in PURE_TENSOR_METHODS:
                    found.append((func.value.value, method))

    walk_tree(node, Collect())
    return found


def _mutated_receivers(node: cst.CSTNode) -> Set[str]:
    """`x` in `x.append(...)`, `x.mul_(2)`, `x.foo(...)`: a method call on a name, other than a pure or value one."""
    return {receiver for receiver, _ in _method_calls(node)}


class _Sharing:
    """Where, in `block` (at any depth), a name comes to hold an object another name may hold: each
    target of a binding to a value that may be an existing object (`_new_object`: `p = s`, `s =
    rec`, `s = x.view(1)`, `a, b = t`, a `for` or `with` target), with the names that value may
    share (`s` and `p` in `p = s`); every target of a chained assignment (`s = p =
    torch.zeros(())`) of anything but a number. An in-place `+=` on such a name after that binding,
    or in a loop that also holds it (the next iteration), changes the other name too (review, stop
    24); one before it does not (`loss2 = p_loss` after the loop that adds to `p_loss`)."""

    def __init__(self, block: Sequence[cst.BaseStatement], fresh_call: Callable[[cst.Call], bool] = lambda call: False) -> None:
        # The walk order of the bindings and updates, with the loops around each.
        self.where: Dict[int, Tuple[int, FrozenSet[int]]] = {}
        self.bindings: Dict[str, List[Tuple[int, FrozenSet[int]]]] = {}
        loops: List[int] = []
        outer = self

        def mark(node: cst.CSTNode) -> Tuple[int, FrozenSet[int]]:
            outer.where[id(node)] = (len(outer.where), frozenset(loops))
            return outer.where[id(node)]

        def share(names, at) -> None:
            for name in names:
                outer.bindings.setdefault(name, []).append(at)

        def bind(target: cst.BaseExpression, value: Optional[cst.BaseExpression], at) -> None:
            if value is not None and isinstance(target, (cst.Tuple, cst.List)) and isinstance(strip_parens(value), (cst.Tuple, cst.List)):
                values = strip_parens(value).elements  # type: ignore[attr-defined]
                if len(values) == len(target.elements) and not any(isinstance(e, cst.StarredElement) for e in (*values, *target.elements)):
                    for t, v in zip(target.elements, values):
                        bind(t.value, v.value, at)
                    return
            # Items unpacked from anything but a display (a container, `[z] * 2`) may be one object.
            if value is None or isinstance(target, (cst.Tuple, cst.List)) or not _new_object(value, fresh_call):
                share(stored_names(target), at)
                if value is not None:
                    share([path[0] for path in view_sources(value)], at)

        class Collect(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                at = mark(node)
                if len(node.targets) > 1 and _literal(node.value) is None:
                    share([n for t in node.targets for n in stored_names(t.target)], at)
                for t in node.targets:
                    bind(t.target, node.value, at)

            def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                if node.value is not None:
                    bind(node.target, node.value, mark(node))

            def visit_AugAssign(self, node: cst.AugAssign) -> None:
                mark(node)

            def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
                bind(node.target, node.value, mark(node))

            def visit_For(self, node: cst.For) -> None:
                at = mark(node)
                loops.append(id(node))
                bind(node.target, None, (at[0], frozenset(loops)))

            def leave_For(self, node: cst.For) -> None:
                loops.pop()

            def visit_While(self, node: cst.While) -> None:
                loops.append(id(node))

            def leave_While(self, node: cst.While) -> None:
                loops.pop()

            def visit_WithItem(self, node: cst.WithItem) -> None:
                if node.asname is not None:
                    bind(node.asname.name, None, mark(node))

        for statement in block:
            walk_tree(statement, Collect())

    def shared_at(self, name: str, node: cst.CSTNode) -> bool:
        """Whether `name`, updated in place at `node` (an `AugAssign`, or a loop adding to it), may
        hold an object another name holds there."""
        at = self.where.get(id(node))
        if at is None:
            return True
        index, loops = at
        inside = loops | {id(node)} if isinstance(node, cst.For) else loops
        return any(b_index < index or (b_loops & inside) for b_index, b_loops in self.bindings.get(name, ()))


# Torch's functional namespaces: their functions return a new tensor, but for dropouts (the input
# itself when not training) and in-place variants.
_FUNCTIONAL = frozenset({"F", "torch.nn.functional", "nn.functional", "functional"})


def _new_object(value: cst.BaseExpression, fresh_call: Callable[[cst.Call], bool] = lambda call: False) -> bool:
    """Whether `value` is proven an object no name held before (an allowlist): a literal, an
    arithmetic result (`a + b`, `-a`: a new tensor, number or list), a display or comprehension,
    `x.mean()` and the like (`FRESH_METHODS`, on anything or from `torch`), a torch factory, a
    functional op of `torch.nn.functional` other than a dropout or an in-place one, a builtin
    that builds a new value (`FRESH_FUNCTIONS`), or a call `fresh_call` vouches for (a function
    of the file that returns a new value). Anything else may be an object another name holds:
    a name, an attribute, an item, a view, `.cpu()` on a CPU tensor, `operator.iadd(z, 0)`."""
    value = strip_parens(value)
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript, cst.BooleanOperation, cst.IfExp, cst.NamedExpr, cst.Await, cst.Yield)):
        return False
    if not isinstance(value, cst.Call):
        return True
    if is_inplace_call(value) or any(arg.star for arg in value.args):
        return False
    func = value.func
    if isinstance(func, cst.Attribute):
        name, owner = func.attr.value, code_of(func.value).strip()
        if name in FRESH_METHODS:
            return True
        if owner == "torch" and f"torch.{name}" in FRESH_TENSOR_FACTORIES:
            return True
        return owner in _FUNCTIONAL and "dropout" not in name and not has_inplace_suffix(name)
    if isinstance(func, cst.Name):
        return func.value in FRESH_FUNCTIONS or fresh_call(value)
    return False


def expand(
    block: Sequence[cst.BaseStatement],
    backward_indices: Set[int],
    inline=None,
    accelerators: AbstractSet[str] = frozenset(),
    fresh_call: Callable[[cst.Call], bool] = lambda call: False,
) -> Expansion:
    """Walk the block once; the loss of every backward call at `backward_indices` as a Lin
    (`accelerators`: the names that hold an `accelerate.Accelerator`, `FileFacts.accelerators`;
    `fresh_call`: whether a call of a function of the file returns a new object, `_new_object`)."""
    walker = _Walker(backward_indices, inline, accelerators, _Sharing(block, fresh_call))
    walker.walk(block, {}, (), True)
    return walker.out
