"""Applying fixes to a libcst module: statement replacement and import insertion."""

from __future__ import annotations

from typing import Dict, Iterable, List, Sequence, Tuple

import libcst as cst

from gradfix.findings import Finding, Fix


def dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def apply_fixes(module, findings: Iterable[Finding]):
    """Apply the fixes whose statements do not overlap an earlier one's; return (module, count)."""
    replacements: Dict[cst.CSTNode, Sequence[cst.BaseStatement]] = {}
    imports: List[Tuple[str, str, str]] = []
    count = 0
    for finding in findings:
        fix: Fix = finding.fix  # type: ignore[assignment]
        if any(node in replacements for node in fix.replacements):
            continue  # overlaps: left for the next pass
        replacements.update(fix.replacements)
        for item in fix.imports:
            if item not in imports:
                imports.append(item)
        count += 1
    if not count:
        return module, 0
    new = module.visit(_StatementReplacer(replacements))
    for source, name, alias in imports:
        new = _ensure_import(new, source, name, alias)
    return new, count


class _StatementReplacer(cst.CSTTransformer):
    """Replace statements by identity inside every block, keeping removed lines' comments."""

    def __init__(self, replacements) -> None:
        super().__init__()
        self.replacements = replacements

    def _rewrite_body(self, original_body, updated_body):
        out = []
        pending_comments: List[cst.EmptyLine] = []
        for original, updated in zip(original_body, updated_body):
            if original in self.replacements:
                new_statements = list(self.replacements[original])
                if not new_statements:
                    pending_comments.extend(_comments_of(original))
                    continue
            else:
                new_statements = [updated]
            if pending_comments:
                head = new_statements[0]
                head = head.with_changes(leading_lines=[*head.leading_lines, *pending_comments])
                new_statements[0] = head
                pending_comments = []
            out.extend(new_statements)
        if pending_comments and out:
            # Comments of statements removed at the end of a block: keep them
            # on the last statement's line set rather than losing them.
            last = out[-1]
            out[-1] = last.with_changes(leading_lines=[*last.leading_lines, *pending_comments]) if hasattr(last, "leading_lines") else last
        if not out:
            out = [cst.SimpleStatementLine(body=[cst.Pass()])]
        return out

    def leave_Module(self, original_node, updated_node):
        return updated_node.with_changes(body=self._rewrite_body(original_node.body, updated_node.body))

    def leave_IndentedBlock(self, original_node, updated_node):
        return updated_node.with_changes(body=self._rewrite_body(original_node.body, updated_node.body))


def _comments_of(statement) -> list:
    kept = [line for line in getattr(statement, "leading_lines", ()) if line.comment is not None]
    trailing = getattr(statement, "trailing_whitespace", None)
    if trailing is not None and trailing.comment is not None:
        kept.append(cst.EmptyLine(indent=True, comment=trailing.comment))
    return kept


def _ensure_import(module, source: str, name: str, alias: str):
    """Add `from source import name [as alias]` after the file's leading imports, once."""
    wanted_alias = None if alias == name else alias
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and small.module is not None and dotted(small.module) == source:
                    if not isinstance(small.names, cst.ImportStar):
                        for item in small.names:
                            bound = item.asname.name.value if item.asname else item.name.value  # type: ignore[union-attr]
                            if item.name.value == name and bound == alias:
                                return module
    line = cst.parse_statement(f"from {source} import {name}" + (f" as {wanted_alias}" if wanted_alias else "") + "\n")
    body = list(module.body)
    position = 0
    for index, statement in enumerate(body):
        if _is_leading(statement, index):
            position = index + 1
        else:
            break
    body.insert(position, line)
    return module.with_changes(body=body)


def _is_leading(statement, index: int) -> bool:
    """Docstring, `from __future__`, and import statements at the top of a file."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            continue
        if index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
            continue
        return False
    return True
