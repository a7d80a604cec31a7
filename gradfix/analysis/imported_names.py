"""Names a file binds only once, by a top-level import: their qualified names without libcst's scopes.

libcst's ScopeProvider (and the ExpressionContextProvider it needs) walks the whole file twice:
about half of the analysis of a big file. Many files that reach libcst ask it nothing but the
qualified name of a dotted callee (`torch.mean`, `F.mse_loss`: `CalleeClassifier.qualified`).
Where the callee's first name is bound exactly once in the whole file, by one alias of an import
statement of the module's own body, and the read comes after that statement, every scope
resolves the name to that import alone, and libcst's answer is the import's: `import X as N`,
`import N`, `from M import X as N` and `from M import N` (relative `M` included) give the
import's dotted name followed by the rest of the read. `SoleImports.qualified` gives exactly that
answer there and None everywhere else (the caller then asks the scope); `tests/test_imported_names.py`
compares the two on every dotted read of the project's and some real files.

Bindings are counted from CPython's tree of the file's text, every form a name may be bound by:
assignment and deletion targets of every kind (`for`, `with`, comprehensions, `:=`), parameters,
defs and classes, imports, `global`/`nonlocal` declarations, `except ... as`, `match` captures,
type parameters.
A text CPython does not parse (newer syntax that libcst reads) proves nothing.
"""

from __future__ import annotations

import ast
import warnings
from typing import Dict, Optional, Set, Tuple


class SoleImports:
    """For each name bound once in the file, by an import statement of the module's body:
    (the import's dotted name for it, the last line of that statement)."""

    def __init__(self, code: str) -> None:
        self._imports: Dict[str, Tuple[str, int]] = {}
        self._import_lines: Set[int] = set()  # the lines of every import statement: their names are no reads
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        counts: Dict[str, int] = {}
        for node in ast.walk(tree):
            for name in _bound(node):
                counts[name] = counts.get(name, 0) + 1
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._import_lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        for statement in tree.body:
            if not isinstance(statement, (ast.Import, ast.ImportFrom)):
                continue
            end = statement.end_lineno or statement.lineno
            for alias in statement.names:
                if alias.name == "*":
                    continue
                if isinstance(statement, ast.Import):
                    if alias.asname is None and "." in alias.name:
                        continue  # `import a.b` binds `a` to the package: libcst names it by the dotted import
                    name, real = alias.asname or alias.name, alias.name
                else:
                    module = "." * statement.level + (statement.module or "")
                    name = alias.asname or alias.name
                    real = f"{module}{alias.name}" if module.endswith(".") else f"{module}.{alias.name}" if module else alias.name
                if counts.get(name) == 1:
                    self._imports[name] = (real, end)

    def qualified(self, dotted: str, line: int) -> Optional[str]:
        """The qualified name of the read `dotted` (`torch.mean`) on `line`, when its first name is
        one of these imports and the read comes after the import's statement; else None."""
        first, dot, rest = dotted.partition(".")
        found = self._imports.get(first)
        if found is None or line <= found[1] or line in self._import_lines:
            return None
        return f"{found[0]}{dot}{rest}"


def _bound(node: ast.AST):
    """The names `node` itself binds (not those of its children)."""
    if isinstance(node, ast.Name):
        if not isinstance(node.ctx, ast.Load):
            yield node.id
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.arg):
        yield node.arg
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.name != "*":
                yield alias.asname or alias.name.partition(".")[0]
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        yield from node.names
    elif isinstance(node, ast.ExceptHandler):
        if node.name:
            yield node.name
    elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
        if node.name:
            yield node.name
    elif isinstance(node, ast.MatchMapping):
        if node.rest:
            yield node.rest
    elif type(node).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple", "TypeAlias"):
        # Python 3.12's type parameters and `type X = ...` (3.11 parses none of them).
        name = getattr(node, "name", None)
        yield name if isinstance(name, str) else getattr(name, "id", "")
