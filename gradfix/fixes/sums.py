"""Sum surgery for GF002: removing one term from a `+`/`-` chain while keeping the
chain's layout, its comments and its line breaks, and merging what is left."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from gradfix.analysis.exprs import contains_node, strip_parens
from gradfix.fixes.build import Replace
from gradfix.analysis.walk import children, walk_tree

SUM_OPS = (cst.Add, cst.Subtract)
# Removing a term from a sum written over several lines must keep the comments
# in the removed text. libcst keeps them in the whitespace around the tokens:
# the comment ending a line sits in the whitespace *after* that line's last
# token (the next operator's `whitespace_before` in `a  # c\n+ b`, the closing
# parenthesis' `whitespace_before` after the last term). Dropping the removed
# operator with its whitespace therefore lost the comment of the line *before*
# the removed term and moved the removed term's own comment up onto that line.
_REMOVED = object()  # code removed between two pieces of whitespace of a gap


def _parens(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(strip_parens(node), (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or node.lpar:
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def remove_term(
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
    in the comments of the removed text, see `sum_without`).
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

    if isinstance(root, cst.BinaryOperation) and isinstance(root.operator, SUM_OPS):
        if root.right is term:
            return keep(root.left)
        if root.left is term:
            if isinstance(root.operator, cst.Subtract):
                return keep(cst.UnaryOperation(operator=cst.Minus(), expression=_parens(root.right)))
            return keep(root.right)
        if contains_node(root.left, term):
            return root.with_changes(left=remove_term(root.left, term, substitute, holds))
        return root.with_changes(right=remove_term(root.right, term, substitute, holds))
    return root


def sum_without(
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
    new_root = remove_term(root, term, substitute, holds).visit(Replace({old: new, **replace}))
    return statement.visit(Replace({root: new_root, **replace})), orphans


def _removal_site(root: cst.BaseExpression, term: cst.BaseExpression):
    """What removing `term` (as `remove_term` does) takes out of the text, and what stays next to it.

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
    while isinstance(node, cst.BinaryOperation) and isinstance(node.operator, SUM_OPS):
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
        for child in children(current):
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

    walk_tree(item, Collect())
    return found


def _merge_gap(items: List[object]) -> cst.ParenthesizedWhitespace:
    """One whitespace node for a gap (see `sum_without`), keeping every comment in it.

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
