"""The visitor of gf002_detached_sum (named by that module's VISITOR; the registry imports it on first use)."""

from __future__ import annotations

from gradfix.rules.gf002_detached_sum import CODE
from gradfix.reasons import Reasons

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.metadata import GlobalScope, PositionProvider, ScopeProvider

from gradfix.analysis.exprs import (
    access_path,
    calls_within,
    code_of,
    contains_detach,
    contains_node,
    detach_receiver,
    read_paths,
    strip_parens,
)
from gradfix.analysis.linear import Coef, parse_coef, split_linear
from gradfix.analysis.backward import definition
from gradfix.analysis.between import HarmlessCalls, harmless_call, scan_between, stores_into, with_aliases
from gradfix.analysis.introspection import introspection_reasons
from gradfix.analysis.merge import MergeSafety, match_pair
from gradfix.fixes.build import FreshNames, Replace, detached, hoisted_assign, merged_call, module_op, name_stem
from gradfix.fixes.sums import SUM_OPS, remove_term, sum_without
from gradfix.findings import Finding
from gradfix.fixes.rewrite import Rewrite
from gradfix.rules._blocks import BlockVisitor



# What holds a term's value: a name, or an attribute of a name (`self.vq_loss`).
Held = Union[cst.Name, cst.Attribute]


@dataclass
class Term:
    """A term of a sum that evaluates a call holding stop-gradients."""

    node: cst.BaseExpression  # the term as written in the sum
    sign: int  # its sign in the sum
    coef: Coef  # its coefficient (through its definition when the term is a name)
    call: cst.Call
    # When the term is a name (or an attribute, `self.vq_loss`): its `name = coef * f(...)` statement in the block.
    def_index: Optional[int] = None
    target: Optional[Held] = None
    # Names between the sum and that statement (`commitment = beta * e_latent` above `loss = q + commitment`):
    # each link's (statement index, target, read of the name below it), nearest the sum first.
    links: Tuple[Tuple[int, Held, Held], ...] = ()


class Visitor(BlockVisitor):
    CODE = CODE

    def start(self, module: cst.Module) -> None:
        self._names = FreshNames(module)
        self.safety = MergeSafety(self.classifier, self.facts)
        # The pairs of calls already reported: a pair of names defined above
        # may be summed in several statements, and is one finding.
        self._reported: Set[FrozenSet[int]] = set()

    def block(self, block: Sequence[cst.BaseStatement]) -> None:
        for index, statement in enumerate(block):
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                for root in _sum_roots(statement.body[0]):
                    self._sum(block, index, root)

    def _terms(self, block: Sequence[cst.BaseStatement], index: int, root: cst.BinaryOperation) -> List[Term]:
        terms: List[Term] = []
        for node, sign in _flatten(root, 1):
            parsed = split_linear(node)
            if parsed is not None and contains_detach(parsed[1]):
                terms.append(Term(node, sign, parsed[0], parsed[1]))
                continue
            # `beta * commitment_loss`, the name defined by `commitment_loss = f(...)` above,
            # or through names defined as a coefficient times a name (`commitment = beta * e_latent`).
            for coef, name in _split_named(node):
                followed = self._follow(block, index, coef, name, _LINKS)
                if followed is not None:
                    terms.append(Term(node, sign, *followed))
                    break
        return terms

    def _follow(self, block, index: int, coef: Coef, name: Held, depth: int):
        """The definition above statement `index` that evaluates the call `name` stands for:
        (coefficient, call, its statement's index, its target, links), or None."""
        defined = definition(block, index, name)
        if defined is None:
            return None
        def_index, assign = defined
        target = assign.targets[0].target
        if not isinstance(target, (cst.Name, cst.Attribute)):
            return None
        inner = split_linear(assign.value)
        if inner is not None and contains_detach(inner[1]):
            return coef * inner[0], inner[1], def_index, target, ()
        if depth == 0:
            return None
        for link_coef, below in _split_named(assign.value):
            followed = self._follow(block, def_index, coef * link_coef, below, depth - 1)
            if followed is not None:
                *found, links = followed
                return (*found, ((def_index, target, below), *links))
        return None

    def _sum(self, block: Sequence[cst.BaseStatement], index: int, root: cst.BinaryOperation) -> None:
        terms = self._terms(block, index, root)
        used: Set[int] = set()
        for i, first in enumerate(terms):
            if i in used:
                continue
            for j in range(i + 1, len(terms)):
                if j in used:
                    continue
                second = terms[j]
                if (first.def_index is None) != (second.def_index is None) or (
                    first.def_index is not None and first.def_index == second.def_index
                ):
                    continue  # one term inline and one defined above: not handled
                if _reads_own_names(first, second):
                    continue  # `e * e`, `commitment = e * q`: not linear in the evaluations
                match = match_pair(first.call, second.call, self.classifier)
                if match is None:
                    continue
                key = frozenset((id(first.call), id(second.call)))
                if key in self._reported:
                    # The same two definitions summed again (`loss1 = rec - s + p`,
                    # `loss2 = s - p + rec`): reported, with its fix, at the first
                    # sum, whose fix sees this sum as a read of the names.
                    used.update((i, j))
                    break
                finding = self._finding(block, index, root, first, second, match)
                if finding is not None:
                    self.findings.append(finding)
                    self._reported.add(key)
                    used.update((i, j))
                    break

    def _finding(self, block, index: int, root, first: Term, second: Term, match) -> Optional[Finding]:
        statement = block[index]
        node1, sign1, coef1, call1 = first.node, first.sign, first.coef, first.call
        node2, sign2, coef2, call2 = second.node, second.sign, second.coef, second.call
        # Coefficients relative to the first term's sign in the sum: the merged
        # value replaces the first term in place, under the sign it stands in.
        a = coef1
        b = coef2 * Coef.of(Fraction(sign1 * sign2))
        reasons = self.safety.reasons(match, a, b)
        if reasons is None:
            return None  # random calls in the arguments: two different computations
        # The rewrite removes, adds or rebuilds names: a read by name string is not seen.
        reasons.extend(introspection_reasons(self.scopes[-1], self.line))
        gs = self.ctx.grad_scale_name
        merged, ops = merged_call(call1, match, a, b, gs, module_op(match, self.ctx.op_names))
        correction = a + b + Coef.of(Fraction(-1))
        if first.def_index is not None:
            lines_by_statement = self._defined_fix(block, index, root, first, second, merged, correction, reasons)
            if lines_by_statement is None:
                return None
        elif correction.is_zero():
            # The merged call alone has the value of both terms: no name needed,
            # and it is evaluated where the first term was.
            new_statement, orphans = sum_without(statement, root, node2, (node1, merged))
            lines = [new_statement.with_changes(leading_lines=[*new_statement.leading_lines, *orphans])]
        else:  # inline terms: hoist the one evaluation before the statement
            # The one evaluation is hoisted before the statement: every other
            # call in it must be unaffected by running f earlier.
            others = [
                code_of(c.func).strip()
                for c in calls_within(statement.body[0])
                if not contains_node(node1, c) and not contains_node(node2, c)
                and detach_receiver(c) is None
                and not harmless_call(c, self.classifier, with_aliases(read_paths(node1) + read_paths(node2), self.scopes[-1], self.scopes[0]))
            ]
            if others:
                names = ", ".join(f"`{o}()`" for o in dict.fromkeys(others))
                reasons.add(f"the evaluation moves before {names} in the same statement, which gradfix cannot prove unaffected")
            name = self._names.fresh(self._term_name(statement, call1), self.scopes)
            value = _value_expression(name, correction)
            if not _leftmost(remove_term(root, node2), node1):
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            new_statement, orphans = sum_without(statement, root, node2, (node1, value))
            hoisted = hoisted_assign(statement, name, merged)
            lines = [hoisted, new_statement.with_changes(leading_lines=orphans)]
        if first.def_index is None:
            lines_by_statement = {statement: lines}
        fix = Rewrite(
            safe=not reasons,
            replacements=lines_by_statement,
            description=f"Evaluate `{match.callee_text}` once with `grad_scale` and a detached value correction",
            unsafe_reason=reasons.text(),
            imports=self.ctx.imports_for(*ops),
        )
        line2 = self.get_metadata(PositionProvider, call2).start.line
        line1 = self.get_metadata(PositionProvider, call1).start.line
        where = "" if line1 == line2 else f" (line {line1} and here)"
        message = (
            f"`{match.callee_text}` evaluated twice in one sum with complementary `.detach()`{where}: "
            f"one evaluation with `grad_scale` gives the same value and gradients"
        )
        if match.swapped:
            message += " (arguments swapped; the callee is symmetric)"
        return self.report(call2, message, fix, reasons)

    def _defined_fix(self, block, index, root, first: Term, second: Term, merged, correction: Coef, reasons: Reasons):
        """Both terms are names defined above: the one evaluation replaces the earlier definition.

        Returns the statement replacements, or None when something between the
        definitions and the sum changes the operands (no pattern then).
        """
        statement = block[index]
        defs = (first.def_index, second.def_index)
        watched = read_paths(first.call) + read_paths(second.call)
        if any(stores_into(block[d], watched) for d in defs):  # type: ignore[index]
            return None
        host = min(defs)  # type: ignore[type-var]
        later = max(defs)  # type: ignore[type-var]
        # Between the definitions, the second evaluation must see the operands the first saw.
        # After both, the values are computed: rebinding an operand's name (the straight-through
        # estimator's `z_q = z + (z_q - z).detach()` before the sum) changes neither; only what the
        # new value's expression does is scanned. A store into an operand still counts.
        roots = {path[0] for path in watched}
        between = [block[k] for k in range(host + 1, later)]
        between += [_without_rebinding(block[k], roots) for k in range(later + 1, index)]
        # An attribute holding a term must keep its value until the sum reads it: a call that may
        # change it (`self.reset()`) is as unproven as one that may change an operand.
        held = [
            access_path(target)
            for term in (first, second)
            for target in [term.target] + [link[1] for link in term.links]
            if isinstance(target, cst.Attribute)
        ]
        watched_between = watched + [path for path in held if path is not None]
        verdict = scan_between(between, with_aliases(watched_between, self.scopes[-1], self.scopes[0]), HarmlessCalls(self.classifier))
        if verdict.barrier is not None:
            return None
        if verdict.unknown:
            reasons.add(f"{verdict.unknown_text()} between the definitions and the sum may modify an operand")
        host_term = first if first.def_index == host else second
        replacements: Dict[cst.CSTNode, List[cst.BaseStatement]] = {}
        reads: Dict[int, bool] = {}
        for term in (first, second):
            # From the sum down the links: a name read elsewhere keeps its statement, and
            # with it every name below it, down to the call's own, rebuilt detached.
            needed = False
            excluded: Sequence[cst.CSTNode] = (first.node, second.node)
            for link_index, link_target, below in term.links:
                needed = self._read_elsewhere(link_target, excluded, reasons, block, index) or needed
                if not needed:
                    replacements[block[link_index]] = []  # nothing reads it any more
                excluded = (below,)
            reads[id(term)] = self._read_elsewhere(term.target, excluded, reasons, block, index) or needed  # type: ignore[arg-type]
        if reads[id(host_term)]:
            name = self._names.fresh(f"{name_stem(host_term.target)}_term", self.scopes)  # type: ignore[arg-type]
        else:
            name = host_term.target.value  # type: ignore[union-attr]  (an attribute is always read elsewhere)
        for term in (first, second):
            original = block[term.def_index]  # type: ignore[index]
            lines: List[cst.BaseStatement] = []
            if term is host_term:
                lines.append(original.with_changes(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=merged)]))
            if reads[id(term)]:
                # The loss value is read elsewhere: rebuild it, detached, from the one evaluation.
                assign = original.body[0]
                value = assign.value.visit(Replace({term.call: detached(name, copy=assign.value is term.call)}))
                rebuilt = original.with_changes(body=[assign.with_changes(value=value)])
                lines.append(rebuilt.with_changes(leading_lines=[]) if lines else rebuilt)
            replacements[original] = lines
        value = cst.Name(name) if correction.is_zero() else _value_expression(name, correction)
        if not correction.is_zero() and not _leftmost(remove_term(root, second.node), first.node):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        new_statement, orphans = sum_without(statement, root, second.node, (first.node, value))
        replacements[statement] = [new_statement.with_changes(leading_lines=[*new_statement.leading_lines, *orphans])]
        return replacements

    def _read_elsewhere(self, target: Held, excluded: Sequence[cst.CSTNode], reasons: Reasons, block, index: int) -> bool:
        """Is the name `target` binds read anywhere but in `excluded` (the two terms of the sum, or the
        next link's read of it)?

        After the rewrite the name is rebuilt as a detached value of the one
        evaluation: exact for a read that ends in a value (`e.item()`,
        `float(e)`, an f-string, `print(e)`); any other read (`total = loss +
        0.1 * e`, a second sum, `return e`) sees the value without its
        gradient, which is added to `reasons`, naming the line. A read after the block binds
        the name anew, later than the sum (statement `index` of `block`), sees the new value:
        no reason (`BlockVisitor.unshadowed`), though the name is still rebuilt.

        An attribute (`self.vq_loss`) may be read anywhere, in other methods and other modules:
        it is always rebuilt, and the fix is unsafe.
        """
        if isinstance(target, cst.Attribute):
            text = code_of(target).strip()
            reasons.add(
                f"`{text}` is an attribute, which code outside the function may read as a tensor: "
                f"after the rewrite it holds the value without its gradient"
            )
            return True
        name = target.value
        scope = self.get_metadata(ScopeProvider, target, None)
        references = None
        if scope is not None:
            for assignment in scope.assignments[name]:
                if getattr(assignment, "node", None) is target:
                    references = [access.node for access in assignment.references]
                    break
        if references is None:
            reasons.add(f"gradfix cannot resolve the reads of `{name}`")
            return True
        elsewhere = [node for node in references if not any(contains_node(t, node) for t in excluded)]
        seen = self.unshadowed(name, block, index, elsewhere)
        read = self.tensor_read(name, seen, "it carries different gradients after the rewrite")
        if read is not None:
            reasons.add(read)
        # A module global is visible to importers: keep its value.
        return bool(elsewhere) or isinstance(scope, GlobalScope)

    @staticmethod
    def _term_name(statement: cst.SimpleStatementLine, call: cst.Call) -> str:
        small = statement.body[0]
        if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
            if isinstance(target, cst.Name):
                return f"{target.value}_term"
            if isinstance(target, cst.Attribute):
                return f"{target.attr.value}_term"
        func = call.func
        last = func.attr.value if isinstance(func, cst.Attribute) else code_of(func).strip()
        return f"{last}_term" if last.isidentifier() else "merged_term"


# Where an expression is evaluated only sometimes, or in another scope: a sum
# there cannot be hoisted before the statement.
# How many names may stand between a sum and a term's call (`loss = q + c`, `c = beta * e`, `e = f(...)`: one).
_LINKS = 3

_CONDITIONAL = (
    cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp, cst.BooleanOperation,
)


def _split_named(node: cst.BaseExpression) -> List[Tuple[Coef, Held]]:
    """`-beta * commitment_loss` -> [(Coef(-beta), the name), ...]: every reading of
    the term as a coefficient times a name or an attribute of a name (`BETA * loss`
    reads both ways; the caller keeps the one whose name is a loss defined above)."""
    if isinstance(node, cst.Name) or (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
        return [(Coef.of(Fraction(1)), node)]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        negate = isinstance(node.operator, cst.Minus)
        return [(-c if negate else c, n) for c, n in _split_named(node.expression)]
    readings: List[Tuple[Coef, Held]] = []
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        for named_side, coef_side in ((node.left, node.right), (node.right, node.left)):
            coef = parse_coef(coef_side)
            if coef is not None:
                readings += [(c * coef, n) for c, n in _split_named(named_side)]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        coef = parse_coef(node.right)
        inverse = coef.inverse() if coef is not None else None
        if inverse is not None:
            readings += [(c * inverse, n) for c, n in _split_named(node.left)]
    return readings


def _sum_roots(small: cst.BaseSmallStatement) -> List[cst.BinaryOperation]:
    """Every `+`/`-` chain of a statement that is evaluated unconditionally.

    A chain's parenthesised sub-sums belong to it (`_flatten` walks them); a
    sum nested in another operation (`w * (a + b)`) is a chain of its own.
    """
    roots: List[cst.BinaryOperation] = []

    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.in_sum = [False]

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, _CONDITIONAL):
                return False
            is_sum = isinstance(node, cst.BinaryOperation) and isinstance(node.operator, SUM_OPS)
            if is_sum and not self.in_sum[-1]:
                roots.append(node)  # type: ignore[arg-type]
            self.in_sum.append(is_sum)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if not isinstance(original_node, _CONDITIONAL):
                self.in_sum.pop()

    small.visit(Collect())
    return roots


def _flatten(node: cst.BaseExpression, sign: int) -> List[Tuple[cst.BaseExpression, int]]:
    bare = strip_parens(node)
    if isinstance(bare, cst.BinaryOperation) and isinstance(bare.operator, SUM_OPS):
        right_sign = sign if isinstance(bare.operator, cst.Add) else -sign
        # `bare` may be a copy (parentheses stripped): its children are the tree's own.
        return _flatten(bare.left, sign) + _flatten(bare.right, right_sign)
    return [(node, sign)]


def _reads_own_names(first: Term, second: Term) -> bool:
    """Whether a coefficient reads a name that holds one of the terms (a term's own name or a link)."""
    names = {
        target.value
        for term in (first, second)
        for target in [term.target] + [link[1] for link in term.links]
        if isinstance(target, cst.Name)
    }
    return any(symbol.split(".")[0] in names for term in (first, second) for symbol in term.coef.symbols())


def _leftmost(root: cst.BaseExpression, node: cst.BaseExpression) -> bool:
    """`node` is the first operand of the chain, reached through left operands only (no parentheses)."""
    current = root
    while current is not node:
        if not (isinstance(current, cst.BinaryOperation) and isinstance(current.operator, SUM_OPS)) or current.lpar:
            return False
        current = current.left
    return True


def _value_expression(name: str, correction: Coef) -> cst.BaseExpression:
    """`m + ((a+b-1) * m).detach()`: the value of both terms, the gradients of the one evaluation."""
    if correction.is_zero():
        return cst.Name(name)
    if correction.is_one():
        text = f"{name} + {name}.detach()"
    else:
        factor = correction.render()
        if len(correction.terms) > 1:
            factor = f"({factor})"
        text = f"{name} + ({factor} * {name}).detach()"
    return cst.parse_expression(text)


def _without_rebinding(statement: cst.BaseStatement, names: Set[str]) -> cst.BaseStatement:
    """`name = value` with `name` one of `names` (plain names only, one target) as the expression
    statement `value`: what it computes, without the rebinding; any other statement as it is."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value in names
        ):
            return statement.with_changes(body=[cst.Expr(value=small.value)])
    return statement
