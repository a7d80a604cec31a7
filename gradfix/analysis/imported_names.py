"""Names a file binds only once, by a top-level import: their qualified names without libcst's scopes.

libcst's ScopeProvider (and the ExpressionContextProvider it needs) walks the whole file twice:
about half of the analysis of a big file. Many files that reach libcst ask it nothing but the
qualified name of a dotted callee (`torch.mean`, `F.mse_loss`: `CalleeClassifier.qualified`).
Where the callee's first name is bound exactly once in the whole file (`FileFacts.binding_counts`:
every form a name may be bound by, in any scope), by one alias of an import statement of the
module's own body, and the read comes after that statement, every scope resolves the name to that
import alone, and libcst's answer is the import's: `import X as N`, `import N`, `from M import X as
N` and `from M import N` (relative `M` included) give the import's dotted name followed by the rest
of the read. `SoleImports.qualified` gives exactly that answer there and None everywhere else (the
caller then asks the scope; it also keeps the names of import statements, which are no reads, for
the scope); `tests/test_imported_names.py` compares the two on every read of a set of files.
"""

from __future__ import annotations

from typing import Callable, Dict, Mapping, Optional, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node


class SoleImports:
    """For each name bound once in the file, by an import statement of the module's body:
    (the import's dotted name for it, the last line of that statement)."""

    def __init__(self, module: cst.Module, counts: Mapping[str, int], end_line: Callable[[cst.CSTNode], int]) -> None:
        """`counts`: how many times the file binds each name (`exprs.binding_counts`); `end_line`:
        the last line of a statement of `module`."""
        self._imports: Dict[str, Tuple[str, int]] = {}
        for line in module.body:
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for statement in line.body:
                if not isinstance(statement, (cst.Import, cst.ImportFrom)) or isinstance(statement.names, cst.ImportStar):
                    continue
                module_name = ""
                if isinstance(statement, cst.ImportFrom):
                    module_name = "." * len(statement.relative)
                    if statement.module is not None:
                        module_name += get_full_name_for_node(statement.module) or ""
                for alias in statement.names:
                    dotted = get_full_name_for_node(alias.name) or ""
                    if alias.asname is not None:
                        if not isinstance(alias.asname.name, cst.Name):
                            continue
                        name = alias.asname.name.value
                    elif isinstance(statement, cst.Import) and "." in dotted:
                        continue  # `import a.b` binds `a` to the package: libcst names it by the dotted import
                    else:
                        name = dotted
                    if isinstance(statement, cst.Import):
                        real = dotted
                    else:
                        real = f"{module_name}{dotted}" if module_name.endswith(".") else f"{module_name}.{dotted}" if module_name else dotted
                    if counts.get(name) == 1:
                        self._imports[name] = (real, end_line(line))

    def imported_as(self, name: str) -> Optional[str]:
        """The dotted name that one of these imports binds `name` to (`nn`: `torch.nn`), else None."""
        found = self._imports.get(name)
        return None if found is None else found[0]

    def qualified(self, dotted: str, line: int) -> Optional[str]:
        """The qualified name of the read `dotted` (`torch.mean`) on `line`, when its first name is
        one of these imports and the read comes after the import's statement; else None."""
        first, dot, rest = dotted.partition(".")
        found = self._imports.get(first)
        if found is None or line <= found[1]:
            return None
        return f"{found[0]}{dot}{rest}"
