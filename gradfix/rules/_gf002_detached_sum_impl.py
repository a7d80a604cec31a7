"""The visitor of gf002_detached_sum (named by that module's VISITOR; the registry imports it on first use)."""

from __future__ import annotations

from gradfix.rules.gf002_detached_sum import CODE
from gradfix.reasons import Reasons

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import GlobalScope, PositionProvider, ScopeProvider

from gradfix.analysis.exprs import (
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
from gradfix.analysis.merge import FreshNames, MergeSafety, Replace, detached, hoisted_assign, match_pair, merged_call, module_op
from gradfix.findings import Finding, Fix
from gradfix.rules._blocks import BlockVisitor


_SUM_OPS = (cst.Add, cst.Subtract)

@dataclass
class Term:
    """A term of a sum that evaluates a call holding stop-gradients."""

    node: cst.BaseExpression  # the term as written in the sum
    sign: int  # its sign in the sum
    coef: Coef  # its coefficient (through its definition when the term is a name)
    call: cst.Call
    # When the term is a name: its `name = coef * f(...)` statement in the block.
    def_index: Optional[int] = None
    target: Optional[cst.Name] = None


class Visitor(BlockVisitor):
    CODE = CODE

    def start(self, module: cst.Module) -> None:
        self._names = FreshNames(module)
        self.safety = MergeSafety(self.classifier, module)
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
            # `beta * commitment_loss`, the name defined by `commitment_loss = f(...)` above.
            for coef, name in _split_named(node):
                defined = definition(block, index, name.value)
                if defined is None:
                    continue
                def_index, assign = defined
                inner = split_linear(assign.value)
                if inner is not None and contains_detach(inner[1]) and isinstance(assign.targets[0].target, cst.Name):
                    terms.append(Term(node, sign, coef * inner[0], inner[1], def_index, assign.targets[0].target))
                    break
        return terms

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
            new_statement, orphans = _sum_without(statement, root, node2, (node1, merged))
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
            if not _leftmost(_remove_term(root, node2), node1):
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            new_statement, orphans = _sum_without(statement, root, node2, (node1, value))
            hoisted = hoisted_assign(statement, name, merged)
            lines = [hoisted, new_statement.with_changes(leading_lines=orphans)]
        if first.def_index is None:
            lines_by_statement = {statement: lines}
        fix = Fix(
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
        between = [block[k] for k in range(host + 1, index) if k not in defs]
        verdict = scan_between(between, with_aliases(watched, self.scopes[-1], self.scopes[0]), HarmlessCalls(self.classifier))
        if verdict.barrier is not None:
            return None
        if verdict.unknown:
            reasons.add(f"{verdict.unknown_text()} between the definitions and the sum may modify an operand")
        host_term = first if first.def_index == host else second
        reads = {id(t): self._read_elsewhere(t, (first.node, second.node), reasons) for t in (first, second)}
        if reads[id(host_term)]:
            name = self._names.fresh(f"{host_term.target.value}_term", self.scopes)  # type: ignore[union-attr]
        else:
            name = host_term.target.value  # type: ignore[union-attr]
        replacements: Dict[cst.CSTNode, List[cst.BaseStatement]] = {}
        for term in (first, second):
            original = block[term.def_index]  # type: ignore[index]
            lines: List[cst.BaseStatement] = []
            if term is host_term:
                lines.append(original.with_changes(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=merged)]))
            if reads[id(term)]:
                # The loss value is read elsewhere: rebuild it, detached, from the one evaluation.
                assign = original.body[0]
                value = assign.value.visit(Replace({term.call: detached(name)}))
                rebuilt = original.with_changes(body=[assign.with_changes(value=value)])
                lines.append(rebuilt.with_changes(leading_lines=[]) if lines else rebuilt)
            replacements[original] = lines
        value = cst.Name(name) if correction.is_zero() else _value_expression(name, correction)
        if not correction.is_zero() and not _leftmost(_remove_term(root, second.node), first.node):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        new_statement, orphans = _sum_without(statement, root, second.node, (first.node, value))
        replacements[statement] = [new_statement.with_changes(leading_lines=[*new_statement.leading_lines, *orphans])]
        return replacements

    def _read_elsewhere(self, term: Term, in_sum: Sequence[cst.CSTNode], reasons: Reasons) -> bool:
        """Is the term's name read anywhere but as the term of the sum (`in_sum`: the two terms)?

        After the rewrite the name is rebuilt as a detached value of the one
        evaluation: exact for a read that ends in a value (`e.item()`,
        `float(e)`, an f-string, `print(e)`); any other read (`total = loss +
        0.1 * e`, a second sum, `return e`) sees the value without its
        gradient, which is added to `reasons`, naming the line.
        """
        target = term.target
        name = target.value  # type: ignore[union-attr]
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
        elsewhere = [node for node in references if not any(contains_node(t, node) for t in in_sum)]
        read = self.tensor_read(name, elsewhere, "it carries different gradients after the rewrite")
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
_CONDITIONAL = (
    cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp, cst.BooleanOperation,
)


def _split_named(node: cst.BaseExpression) -> List[Tuple[Coef, cst.Name]]:
    """`-beta * commitment_loss` -> [(Coef(-beta), the name), ...]: every reading of
    the term as a coefficient times a name (`BETA * loss` reads both ways; the
    caller keeps the one whose name is a loss defined above)."""
    if isinstance(node, cst.Name):
        return [(Coef.of(Fraction(1)), node)]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        negate = isinstance(node.operator, cst.Minus)
        return [(-c if negate else c, n) for c, n in _split_named(node.expression)]
    readings: List[Tuple[Coef, cst.Name]] = []
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
            is_sum = isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _SUM_OPS)
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
    if isinstance(bare, cst.BinaryOperation) and isinstance(bare.operator, _SUM_OPS):
        right_sign = sign if isinstance(bare.operator, cst.Add) else -sign
        # `bare` may be a copy (parentheses stripped): its children are the tree's own.
        return _flatten(bare.left, sign) + _flatten(bare.right, right_sign)
    return [(node, sign)]


def _remove_term(
    root: cst.BaseExpression,
    term: cst.BaseExpression,
    substitute: Optional[Tuple[cst.BaseExpression, cst.BaseExpression]] = None,
    holds: Optional[cst.CSTNode] = None,
) -> cst.BaseExpression:
    """The sum without `term` (one of its flattened terms).

    A parenthesised sub-sum that shrinks to one operand keeps its parentheses,
    so `rec - (aux + t)` without `t` stays `rec - (aux)`. `substitute` (old,
    new) replaces the operand that takes the sub-sum's place, where identity
    would otherwise be lost in the copy that carries the parentheses. The
    whitespace inside the parentheses goes along with them (by identity), so
    the sub-sum's own parentheses are dropped for an operand that has its own
    only when they hold no comment and not `holds` (the whitespace that takes
    in the comments of the removed text, see `_sum_without`).
    """

    def keep(child: cst.BaseExpression) -> cst.BaseExpression:
        if substitute is not None and child is substitute[0]:
            child = substitute[1]
        if not root.lpar:
            return child
        if child.lpar:
            spaces = [p.whitespace_after for p in root.lpar] + [p.whitespace_before for p in root.rpar]
            if not any(w is holds or _comments_in(w) for w in spaces):
                return child
        return child.with_changes(lpar=[*root.lpar, *child.lpar], rpar=[*child.rpar, *root.rpar])

    if isinstance(root, cst.BinaryOperation) and isinstance(root.operator, _SUM_OPS):
        if root.right is term:
            return keep(root.left)
        if root.left is term:
            if isinstance(root.operator, cst.Subtract):
                return keep(cst.UnaryOperation(operator=cst.Minus(), expression=_parens(root.right)))
            return keep(root.right)
        if contains_node(root.left, term):
            return root.with_changes(left=_remove_term(root.left, term, substitute, holds))
        return root.with_changes(right=_remove_term(root.right, term, substitute, holds))
    return root


# Removing a term from a sum written over several lines must keep the comments
# in the removed text. libcst keeps them in the whitespace around the tokens:
# the comment ending a line sits in the whitespace *after* that line's last
# token (the next operator's `whitespace_before` in `a  # c\n+ b`, the closing
# parenthesis' `whitespace_before` after the last term). Dropping the removed
# operator with its whitespace therefore lost the comment of the line *before*
# the removed term and moved the removed term's own comment up onto that line.
_REMOVED = object()  # code removed between two pieces of whitespace of a gap


def _sum_without(
    statement: cst.BaseStatement,
    root: cst.BinaryOperation,
    term: cst.BaseExpression,
    substitute: Tuple[cst.BaseExpression, cst.BaseExpression],
) -> Tuple[cst.BaseStatement, List[cst.EmptyLine]]:
    """`statement` with `term` removed from its sum `root` and `substitute` (old, new) applied.

    The text removed (the term, its operator and the whitespace around them)
    and the whitespace that stays next to it (`kept`) become one gap; every
    comment of the removed text stays in that gap (`_merge_gap`): the comment
    ending the line before the removed term stays on that line, the removed
    lines' comments become comment lines of their own where the term was.
    Comments that cannot stay in the expression (a sum outside brackets, where
    a line cannot break) are returned as comment lines to put before the
    statement.
    """
    old, new = substitute
    replace: Dict[cst.CSTNode, cst.CSTNode] = {}
    orphans: List[cst.EmptyLine] = []
    kept = None
    site = _removal_site(root, term)
    comments = [c for item in site[0] for c in _comments_in(item)] if site is not None else []
    if site is not None and comments:
        items, kept, kept_first, bracketed, next_operator = site
        if kept is None and not kept_first:
            kept = _next_whitespace(statement, root)
        pieces = [item for item in [*items, kept] if isinstance(item, cst.BaseParenthesizableWhitespace)]
        can_break = bracketed or any(isinstance(w, cst.ParenthesizedWhitespace) for w in pieces)
        if next_operator is not None and _breaks_after(items[0], items[2]):
            # Lines broken after the operators (`a +  # c\n b +  # d\n e`,
            # removing `b`): the next operator moves up to where the removed
            # one was, so the lines still end with an operator and a comment.
            replace[kept] = items[0]
            after = next_operator.whitespace_after
            replace[after] = _merge_gap([*items[2:], kept, _REMOVED, after])
        elif isinstance(kept, cst.BaseParenthesizableWhitespace) and can_break:
            replace[kept] = _merge_gap([kept, *items] if kept_first else [*items, kept])
        else:
            orphans = [cst.EmptyLine(comment=c) for c in comments]
    holds = kept if kept in replace else None
    new_root = _remove_term(root, term, substitute, holds).visit(Replace({old: new, **replace}))
    return statement.visit(Replace({root: new_root, **replace})), orphans


def _removal_site(root: cst.BaseExpression, term: cst.BaseExpression):
    """What removing `term` (as `_remove_term` does) takes out of the text, and what stays next to it.

    Returns (items, kept, kept_first, bracketed, next_operator): the removed
    text in order, as its whitespace nodes, `_REMOVED` for its code and the
    comments inside the term; the whitespace just after it (`kept_first`
    False: the term is a right operand, removed with the operator before it)
    or just before it (True: a left operand, removed with the operator after
    it), None when that lies outside `root`; whether the sum is inside
    parentheses of its own; and the operator just after the removed text
    when `kept` is its `whitespace_before`.
    """
    precede: Optional[cst.CSTNode] = None
    follow: Optional[cst.CSTNode] = None
    follow_operator: Optional[cst.BaseBinaryOp] = None
    bracketed = False
    node = root
    inside: List[object] = [_REMOVED]
    for comment in _comments_in(term):
        inside += [comment, _REMOVED]
    while isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _SUM_OPS):
        if node.lpar:
            precede, follow, bracketed = node.lpar[-1].whitespace_after, node.rpar[0].whitespace_before, True
            follow_operator = None
        operator = [node.operator.whitespace_before, _REMOVED, node.operator.whitespace_after]
        if node.right is term:
            return [*operator, *inside], follow, False, bracketed, follow_operator
        if node.left is term:
            return [*inside, *operator], precede, True, bracketed, None
        if contains_node(node.left, term):
            node, follow, follow_operator = node.left, node.operator.whitespace_before, node.operator
        else:
            node, precede = node.right, node.operator.whitespace_after
    return None



def _breaks_after(before: object, after: object) -> bool:
    """The whitespace around an operator breaks the line after it, not before it."""
    return isinstance(after, cst.ParenthesizedWhitespace) and not isinstance(before, cst.ParenthesizedWhitespace)


def _next_whitespace(statement: cst.CSTNode, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The whitespace node just after `node` in `statement` (libcst lists children in source order)."""
    passed = False

    def walk(current: cst.CSTNode) -> Optional[cst.CSTNode]:
        nonlocal passed
        whitespace = isinstance(current, (cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace))
        if passed and whitespace:
            return current
        if current is node:
            passed = True
            return None
        if whitespace:
            return None
        for child in current.children:
            found = walk(child)
            if found is not None:
                return found
        return None

    return walk(statement)


def _comments_in(item: object) -> List[cst.Comment]:
    if isinstance(item, cst.Comment):
        return [item]
    if not isinstance(item, cst.CSTNode):
        return []  # _REMOVED
    found: List[cst.Comment] = []

    class Collect(cst.CSTVisitor):
        def visit_Comment(self, node: cst.Comment) -> None:
            found.append(node)

    item.visit(Collect())
    return found


def _merge_gap(items: List[object]) -> cst.ParenthesizedWhitespace:
    """One whitespace node for a gap (see `_sum_without`), keeping every comment in it.

    The gap is read as lines: the first goes on after the code before the gap
    and keeps its comment as a trailing one; a later line keeps its comment as
    a comment line of its own, at the indentation that line had (a line inside
    the removed term: that of the line before, else of the last), and is dropped when it has
    none (it held only removed code); blank and comment lines of the
    whitespace stay as they were; the last line's indentation is that of the
    code after the gap. Spaces that end up inside a line (around removed
    code) are dropped.
    """
    first: Optional[cst.TrailingWhitespace] = None
    lines: List[object] = []  # EmptyLine as is, or (indentation or None, comment, newline)
    indent: Optional[Tuple[bool, cst.SimpleWhitespace]] = None  # of the line being read; None: unknown
    for item in items:
        if isinstance(item, cst.Comment):  # inside the removed term: its line goes on after it
            end = cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "), comment=item)
            empty: Sequence[cst.EmptyLine] = ()
            after = None
        elif isinstance(item, cst.ParenthesizedWhitespace):
            end, empty, after = item.first_line, item.empty_lines, (item.indent, item.last_line)
        else:
            continue  # removed code, or spaces within a line
        if first is None:
            first = end if end.comment else end.with_changes(whitespace=cst.SimpleWhitespace(""))
        else:
            lines.append((indent, end.comment, end.newline))
        lines.extend(empty)
        indent = after
    assert first is not None, "a gap with a comment breaks a line"
    known = [entry[0] for entry in lines if isinstance(entry, tuple) and entry[0] is not None]
    default = indent or (known[0] if known else (True, cst.SimpleWhitespace("")))
    empty_lines: List[cst.EmptyLine] = []
    for entry in lines:
        if isinstance(entry, cst.EmptyLine):
            empty_lines.append(entry)
            continue
        line_indent, comment, newline = entry  # type: ignore[misc]
        if line_indent is not None:
            default = line_indent
        if comment is not None:
            flag, spaces = line_indent or default
            empty_lines.append(cst.EmptyLine(indent=flag, whitespace=spaces, comment=comment, newline=newline))
    flag, spaces = indent or default
    return cst.ParenthesizedWhitespace(first_line=first, empty_lines=empty_lines, indent=flag, last_line=spaces)


def _leftmost(root: cst.BaseExpression, node: cst.BaseExpression) -> bool:
    """`node` is the first operand of the chain, reached through left operands only (no parentheses)."""
    current = root
    while current is not node:
        if not (isinstance(current, cst.BinaryOperation) and isinstance(current.operator, _SUM_OPS)) or current.lpar:
            return False
        current = current.left
    return True


def _parens(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(strip_parens(node), (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


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
