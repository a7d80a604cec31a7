"""The runtime ops' imports or inline definitions, and the names rewritten code calls them by.

`with_imports` returns the module with the imports a fix needs added to its top-level body: every
statement it does not change stays the same object, so `gradfix.fixes.rewrite` finds the edits
by identity. `op_names` picks the names per file.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

import libcst as cst

from gradfix.options import DEFAULT_GRAD_SCALE_IMPORT
from gradfix.analysis.walk import walk_tree


# The runtime ops rewritten code may call, by their names in gradfix/autograd.py.
OPS = ("grad_scale", "scaled_params_call")
# The comment that marks an inline definition of an op, so later runs reuse it:
# `# gradfix: inline grad_scale (...)`.
INLINE_MARKER = "gradfix: inline"
_INLINE_CLASS = "_GradfixGradScale"
# What each op needs copied along when it is defined inline.
_INLINE_PARTS = {"grad_scale": ("_GradScale", "grad_scale"), "scaled_params_call": ("scaled_params_call",)}


def dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def with_imports(module: cst.Module, imports: Sequence[Tuple[str, str, str]], op_names: Mapping[str, str]) -> cst.Module:
    """`module` with each (source, name, alias) of `imports` bound: imported, or defined inline."""
    aliases = {**op_names, **{name: alias for _, name, alias in imports}}
    for source, name, alias in imports:
        module = _ensure_import(module, source, name, alias, aliases)
    return module


def _ensure_import(module, source: str, name: str, alias: str, aliases: Dict[str, str]):
    """Make `alias` name the op: `from source import name [as alias]`, or the inline definition.

    `aliases` maps every op the fixes use to its local name (inline copies
    refer to each other by those names).
    """
    if source == "inline":
        return _ensure_inline(module, name, aliases)
    wanted_alias = None if alias == name else alias
    existing = None  # an import from the same module to extend
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            small = statement.body[0]
            if isinstance(small, cst.ImportFrom) and small.module is not None and dotted(small.module) == source:
                if not isinstance(small.names, cst.ImportStar):
                    for item in small.names:
                        bound = item.asname.name.value if item.asname else item.name.value  # type: ignore[union-attr]
                        if item.name.value == name and bound == alias:
                            return module
                    if existing is None and not small.lpar:
                        existing = statement
    item = cst.ImportAlias(name=cst.Name(name), asname=cst.AsName(name=cst.Name(wanted_alias)) if wanted_alias else None)
    if existing is not None:
        small = existing.body[0]
        names = [n.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for n in small.names]  # type: ignore[union-attr]
        extended = existing.with_changes(body=[small.with_changes(names=[*names, item])])
        return module.with_changes(body=[extended if s is existing else s for s in module.body])
    line = cst.SimpleStatementLine(body=[cst.ImportFrom(module=cst.parse_expression(source), names=[item])])  # type: ignore[arg-type]
    return _insert_after_imports(module, [line])


def _insert_after_imports(module, statements: List[cst.BaseStatement]):
    body = list(module.body)
    position = 0
    for index, statement in enumerate(body):
        if _is_leading(statement, index):
            position = index + 1
        else:
            break
    body[position:position] = statements
    return module.with_changes(body=body)


def _ensure_inline(module, op: str, aliases: Dict[str, str]):
    """Define the op once in the file, copied from gradfix/autograd.py (the one source of truth)."""
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == aliases[op]:
            return module
    statements = list(_inline_definition(op, aliases))
    if not _imports_torch(module):
        statements.insert(0, cst.parse_statement("import torch\n"))
    new = _insert_after_imports(module, statements)
    # PEP 8: two blank lines after a top-level definition.
    body = list(new.body)
    after = body.index(statements[-1]) + 1
    if after < len(body):
        following = body[after]
        lines = list(following.leading_lines)
        blanks = 0
        while blanks < len(lines) and lines[blanks].comment is None:
            blanks += 1
        if blanks < 2:
            body[after] = following.with_changes(leading_lines=[cst.EmptyLine()] * (2 - blanks) + lines)
    return new.with_changes(body=body)


def _imports_torch(module) -> bool:
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import) and not isinstance(small.names, cst.ImportStar):
                    if any(dotted(a.name) == "torch" and a.asname is None for a in small.names):
                        return True
    return False


@lru_cache(maxsize=1)
def _autograd_module() -> cst.Module:
    from pathlib import Path

    return cst.parse_module((Path(__file__).parent.parent / "autograd.py").read_text(encoding="utf-8"))  # gradfix/autograd.py


def _inline_definition(op: str, aliases: Dict[str, str]) -> Sequence[cst.BaseStatement]:
    tree = _autograd_module()
    renames = {"_GradScale": _INLINE_CLASS, **{name: aliases.get(name, name) for name in OPS}}
    parts = _INLINE_PARTS[op]
    picked = [s for s in tree.body if isinstance(s, (cst.ClassDef, cst.FunctionDef)) and s.name.value in parts]
    out = []
    for node in picked:
        original = node.name.value
        node = node.visit(_InlineCleaner(renames))
        blank = [cst.EmptyLine(), cst.EmptyLine()]
        if original in OPS:
            blank.append(cst.EmptyLine(comment=cst.Comment(f"# {INLINE_MARKER} {original} (from gradfix.autograd, so this file needs no gradfix install)")))
        out.append(node.with_changes(leading_lines=blank))
    return out


class _InlineCleaner(cst.CSTTransformer):
    """Rename to the file's names and drop annotations (their types are not imported there)."""

    def __init__(self, names) -> None:
        super().__init__()
        self.names = names

    def leave_Name(self, original_node, updated_node):
        new = self.names.get(updated_node.value)
        return updated_node.with_changes(value=new) if new else updated_node

    def leave_Param(self, original_node, updated_node):
        return updated_node.with_changes(annotation=None)

    def leave_FunctionDef(self, original_node, updated_node):
        return updated_node.with_changes(returns=None)


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


def op_names(module, source: str = DEFAULT_GRAD_SCALE_IMPORT, code: Optional[str] = None) -> Dict[str, str]:
    """The names rewritten code calls gradfix's runtime ops by in this file.

    For each op (`grad_scale`, `scaled_params_call`): the name it is already
    bound to (imported from `source`, or defined inline by an earlier fix),
    else its own name unless the file uses that for something else, else a
    fresh `gradfix_<op>[_N]`. (`code`: the module's text, when the caller has it.)
    """
    # A file whose text never spells an op's name neither binds nor uses it (an import of it
    # and the inline marker spell it too): each op keeps its own name, with no walk of the file.
    if not any(op in (module.code if code is None else code) for op in OPS):
        return {op: op for op in OPS}

    names: Set[str] = set()
    bound: Dict[str, str] = {}

    class Collect(cst.CSTVisitor):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> Optional[bool]:
            if node.module is not None and dotted(node.module) == source and not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    if alias.name.value in OPS:
                        bound.setdefault(alias.name.value, alias.asname.name.value if alias.asname else alias.name.value)  # type: ignore[union-attr]
            return True

        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if source != "inline":
                return
            for op in OPS:
                if f"{INLINE_MARKER} {op} " in _leading_comments(node) + " ":
                    bound.setdefault(op, node.name.value)

    walk_tree(module, Collect())
    result: Dict[str, str] = {}
    for op in OPS:
        if op in bound:
            result[op] = bound[op]
        elif op not in names:
            result[op] = op
        else:
            candidate, n = f"gradfix_{op}", 1
            while candidate in names:
                n += 1
                candidate = f"gradfix_{op}_{n}"
            result[op] = candidate
    return result


def _leading_comments(node) -> str:
    return "".join(line.comment.value for line in node.leading_lines if line.comment is not None)
