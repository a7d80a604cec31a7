"""A rule's rewrite (statements replaced, by libcst node) turned into the text edits of a `Fix`.

Rules build a `Rewrite` on the file's libcst tree: each original statement maps to the
statements that take its place (an empty list deletes it), plus the runtime ops the new code
needs imported. `to_fix` turns it into whole-line `TextEdit`s of the file's text, so a finding's
fix holds no libcst node: it pickles, caches and serialises as it is, and the engine applies the
fixes of several findings by text (`gradfix.fixes.apply`).

How the edits are found, without diffing texts: a rewrite changes whole statements of blocks
(the module's body, indented blocks) and the module's top-level imports. Each changed block's
new body is built from the old one keeping every untouched statement *as the same object*
(`rewrite_body`); the old and new bodies then line up by identity, and each run of statements
that differ becomes one edit: the old run's lines (libcst's whitespace-inclusive span: a
statement's comment and blank lines above it, through its newline) replaced by the new run's
code, generated at the block's indentation. Lines the two have in common at either end of an
edit are left out of it, so an edit shows what changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import libcst as cst

from gradfix.analysis.statements import statement_parts
from gradfix.findings import Fix, TextEdit
from gradfix.files import lines_with_ends


@dataclass(frozen=True)
class Rewrite:
    """What a rule builds for a finding it can fix; the engine keeps only its `Fix` (`to_fix`).

    `replacements` maps each original statement (by identity, not equality) to the statements
    that take its place (an empty sequence deletes it). `safe` is True only when the rewrite is
    proven exact; otherwise `unsafe_reason` names the unproven condition.
    """

    safe: bool
    replacements: Mapping[cst.CSTNode, Sequence[cst.BaseStatement]]
    description: str
    unsafe_reason: str = ""
    # Names the rewritten code needs imported: (module, name, alias); module "inline" defines them in the file.
    imports: Tuple[Tuple[str, str, str], ...] = ()
    # (line, column) of the code the fix changes first, where that is above the finding
    # (GF004 reports the second evaluation and hoists the first).
    first: Optional[Tuple[int, int]] = None


class Layout:
    """Where each statement of one parsed file sits: its lines, its block and the block's indentation."""

    def __init__(self, module: cst.Module, spans: Mapping[cst.CSTNode, object], code: Optional[str] = None) -> None:
        self.module = module
        self._code = module.code if code is None else code  # the module's text, when the caller has it
        # Each statement's whitespace-inclusive range (`analysis.positions.node_maps`).
        self.spans = spans

    @cached_property
    def blocks(self) -> Dict[int, Tuple[object, Tuple[str, ...]]]:
        """id(statement) -> (its block: the Module or an IndentedBlock, that block's indent tokens)."""
        index: Dict[int, Tuple[object, Tuple[str, ...]]] = {}
        default = self.module.default_indent
        # Statements stand only in statements and blocks: the walk never enters an expression.
        todo: List[Tuple[cst.CSTNode, Tuple[str, ...]]] = [(self.module, ())]
        while todo:
            node, indents = todo.pop()
            # A `match` indents its `case` lines itself: a case body's statements sit one level
            # deeper than the `match` line and one more than the case (its IndentedBlock's own).
            if isinstance(node, (cst.IndentedBlock, cst.Match)):
                indents = (*indents, default if node.indent is None else node.indent)
            if isinstance(node, (cst.Module, cst.IndentedBlock)):
                for statement in node.body:
                    index[id(statement)] = (node, indents)
            todo.extend((part, indents) for part in statement_parts(node))
        return index

    @cached_property
    def lines(self) -> List[str]:
        """The file's lines, the last ending in a newline (as `apply.apply_fixes` makes it before editing)."""
        code = self._code
        if code and not code.endswith(("\n", "\r")):
            code += self.module.default_newline
        return lines_with_ends(code)

    def first_line(self, statement: cst.CSTNode) -> int:
        """The first line of a statement's text, its comment and blank lines above it included."""
        return self.spans[statement].start.line  # type: ignore[attr-defined]

    def end_line(self, statement: cst.CSTNode) -> int:
        """The line after a statement's text (its newline included)."""
        end = self.spans[statement].end  # type: ignore[attr-defined]
        return end.line if end.column == 0 else end.line + 1

    def render(self, statements: Sequence[cst.CSTNode], indents: Tuple[str, ...]) -> str:
        """The statements' code at a block's indentation, as libcst writes them in this module."""
        from libcst._nodes.internal import CodegenState  # what Module.code_for_node uses, with the indentation preset

        state = CodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            indent_tokens=list(indents),
        )
        for statement in statements:
            statement._codegen(state)
        return "".join(state.tokens)


def to_fix(rewrite: Rewrite, layout: Layout, op_names: Mapping[str, str]) -> Fix:
    """The rewrite as text edits of the file `layout` describes (`op_names`: the ops' local names)."""
    from gradfix.fixes.imports import with_imports

    edits: List[TextEdit] = []
    # Each block holding a replaced statement, once (by identity), with its indentation.
    blocks: Dict[int, Tuple[object, Tuple[str, ...]]] = {}
    for statement in rewrite.replacements:
        block, indents = layout.blocks[id(statement)]
        blocks[id(block)] = (block, indents)
    for block, indents in blocks.values():
        old = list(block.body)  # type: ignore[attr-defined]
        new = rewrite_body(old, rewrite.replacements)
        edits.extend(_body_edits(layout, old, new, indents))
    if rewrite.imports:
        old = list(layout.module.body)
        new = list(with_imports(layout.module, rewrite.imports, op_names).body)
        edits.extend(_body_edits(layout, old, new, ()))
    touched = frozenset(
        (layout.spans[s].start.line, layout.spans[s].start.column) for s in rewrite.replacements  # type: ignore[attr-defined]
    )
    return Fix(
        safe=rewrite.safe,
        description=rewrite.description,
        unsafe_reason=rewrite.unsafe_reason,
        edits=tuple(sorted(edits, key=lambda e: (e.start_line, e.end_line))),
        first=rewrite.first,
        statements=touched,
    )


def _body_edits(layout: Layout, old: List[cst.CSTNode], new: List[cst.CSTNode], indents: Tuple[str, ...]) -> Iterator[TextEdit]:
    for i, j, k, m in _runs(old, new):
        if i < j:
            start, end = layout.first_line(old[i]), layout.end_line(old[j - 1])
        else:  # only insertions: before the next old statement, or after the last
            start = end = layout.first_line(old[i]) if i < len(old) else layout.end_line(old[-1])
        content = layout.render(new[k:m], indents)
        edit = _trimmed(layout.lines[start - 1 : end - 1], lines_with_ends(content), start)
        if edit is not None:
            yield edit


def _runs(old: Sequence[object], new: Sequence[object]) -> Iterator[Tuple[int, int, int, int]]:
    """(i, j, k, m): old[i:j] became new[k:m], between statements that are the same objects in both."""
    where = {id(s): n for n, s in enumerate(old)}
    anchors = []
    for n, s in enumerate(new):
        at = where.get(id(s))
        if at is not None and (not anchors or at > anchors[-1][0]):
            anchors.append((at, n))
    i = k = 0
    for at, n in [*anchors, (len(old), len(new))]:
        if at > i or n > k:
            yield i, at, k, n
        i, k = at + 1, n + 1


def _trimmed(old: List[str], new: List[str], start: int) -> Optional[TextEdit]:
    """Lines [start, start + len(old)) become `new`, less the lines both begin or end with; None if equal."""
    head = 0
    while head < len(old) and head < len(new) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < len(old) - head and tail < len(new) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    if head == len(old) == len(new):
        return None
    return TextEdit(start + head, start + len(old) - tail, "".join(new[head : len(new) - tail]))


def rewrite_body(body: Sequence[cst.BaseStatement], replacements: Mapping[cst.CSTNode, Sequence[cst.BaseStatement]]) -> list:
    """A block's new statements: replaced ones swapped, the others the same objects; removed lines' comments kept."""
    out: list = []
    pending_comments: List[cst.EmptyLine] = []
    for original in body:
        if original in replacements:
            new_statements = list(replacements[original])
            if not new_statements:
                pending_comments.extend(_lines_of(original))
                continue
        else:
            new_statements = [original]
        if pending_comments:
            # A removed statement's comments become comment lines before
            # the next statement, in order. Its trailing comment is not
            # moved onto the line of a statement replaced by one (though
            # that has room for it): the replacement is other code, and the
            # removed statements are the `x.backward(retain_graph=True)`
            # and second-loss definitions that GF001/GF003 merge away, so
            # their comments (`# keep graph`, `# second loss`) would then
            # describe the merged line wrongly; on a line of their own
            # they read as what they are, notes on code that is gone.
            # The removed statement stood before this one, so its lines
            # (blank lines included: they separate paragraphs of code)
            # come first.
            head = new_statements[0]
            head = head.with_changes(leading_lines=_collapse_blanks(pending_comments, list(head.leading_lines)))
            new_statements[0] = head
            pending_comments = []
        out.extend(new_statements)
    if pending_comments and out:
        # Comments of statements removed at the end of a block: keep them
        # on the last statement's line set rather than losing them (their
        # blank lines would then separate nothing).
        pending_comments = [line for line in pending_comments if line.comment is not None]
        last = out[-1]
        if pending_comments and hasattr(last, "leading_lines"):
            out[-1] = last.with_changes(leading_lines=[*last.leading_lines, *pending_comments])
    if not out:
        out = [cst.SimpleStatementLine(body=[cst.Pass()])]
    return out


def _lines_of(statement) -> list:
    """A removed statement's leading lines (blank and comment) and its trailing comment."""
    kept = list(getattr(statement, "leading_lines", ()))
    trailing = getattr(statement, "trailing_whitespace", None)
    if trailing is not None and trailing.comment is not None:
        kept.append(cst.EmptyLine(indent=True, comment=trailing.comment))
    return kept


def _collapse_blanks(before: list, after: list) -> list:
    """`before + after`, with a run of blank lines no longer than the longest in either part.

    Removing `b = 2` from `a = 1 / blank / b = 2 / blank / c = 3` must leave
    one blank line between `a` and `c`, not two.
    """

    def longest(lines: list) -> int:
        best = run = 0
        for line in lines:
            run = run + 1 if line.comment is None else 0
            best = max(best, run)
        return best

    limit = max(longest(before), longest(after))
    out: list = []
    run = 0
    for line in [*before, *after]:
        run = run + 1 if line.comment is None else 0
        if run <= limit:
            out.append(line)
    return out
