"""The shape every rule visitor shares: walk each straight-line block once.

A rule's libcst visitor subclasses `BlockVisitor`, implements `block()` for a
sequence of sibling statements (a module, function, loop or branch body) and
appends to `findings`. The metadata the shared analyses need is declared
here, once.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, List, Optional, Sequence

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, ScopeProvider

from gradfix.analysis.exprs import bound_names, code_of, contains_node, ends_in_value
from gradfix.analysis.callees import CalleeClassifier
from gradfix.analysis.vocabulary import VALUE_FUNCTIONS, VALUE_METHODS
from gradfix.findings import Finding
from gradfix.fixes.rewrite import Rewrite, to_fix
from gradfix.reasons import BETWEEN, Reason, Reasons
from gradfix.analysis.walk import walk_tree


# What runs its body more than once: a statement there may see values of an earlier run.
_LOOPS = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class BlockVisitor(cst.CSTVisitor):
    CODE = ""  # the rule's code, set by each subclass
    # Whether the rule's rewrites move or merge evaluations (GF001-GF004); GF005 only drops a keyword.
    MOVES_EVALUATIONS = True
    # No QualifiedNameProvider: it walks the whole file to attach a lazy value to every node;
    # `CalleeClassifier.qualified` asks the node's scope for the few names it needs instead.
    # PositionProvider and ParentNodeProvider are answered from the file's facts (`get_metadata`):
    # one codegen pass gives the positions, the parents and the statements' spans a fix needs
    # (`analysis.positions`), where libcst's providers take three passes.
    # ScopeProvider (and the ExpressionContextProvider it needs: two whole-file passes, about
    # half of the analysis of a big file) is resolved only when a rule first asks for a scope
    # (`RuleContext.scopes`): many files that reach libcst never do.
    METADATA_DEPENDENCIES = ()

    def __init__(self, ctx) -> None:  # ctx: gradfix.rules.RuleContext
        super().__init__()
        self.ctx = ctx
        self.findings: List[Finding] = []
        self.facts = ctx.facts  # the file's: gradfix.analysis.facts.FileFacts
        self.classifier = CalleeClassifier(self.get_metadata, self.facts, self.metadata_node)

    def get_metadata(self, key, node, *default):  # type: ignore[override]
        node = self.metadata_node(node)
        if key is PositionProvider or key is ParentNodeProvider:
            found = self.facts.nodes.positions if key is PositionProvider else self.facts.nodes.parents
            return found[node] if not default or node in found else default[0]
        if key is ScopeProvider:
            scopes = self.ctx.scopes()
            return scopes[node] if not default or node in scopes else default[0]
        return super().get_metadata(key, node, *default)

    def metadata_node(self, node: cst.CSTNode) -> cst.CSTNode:
        """The node of the parsed file whose metadata answers for `node` (GF004: an inlined copy's original)."""
        return node

    def start(self, module: cst.Module) -> None:
        """Per-file set-up before the first block (facts about the whole module)."""

    def block(self, statements: Sequence[cst.BaseStatement]) -> None:
        raise NotImplementedError

    def line(self, node: cst.CSTNode, end: bool = False) -> int:
        """The line a node starts (or, with `end`, ends) on."""
        position = self.get_metadata(PositionProvider, node)
        return (position.end if end else position.start).line

    def _position_key(self, node: cst.CSTNode):
        start = self.get_metadata(PositionProvider, node).start
        return (start.line, start.column)

    def read_as_value(self, node: cst.CSTNode) -> bool:
        """Whether a read of a name ends in a value without gradient: `x.item()`, `float(x)`, an f-string.

        A name a fix turns into a detached value (or whose gradient it changes)
        may be read elsewhere only so; any other read keeps the tensor.
        """
        return ends_in_value(
            node, lambda n: self.get_metadata(ParentNodeProvider, n, None), VALUE_FUNCTIONS, VALUE_METHODS, self.classifier.lightning_log
        )

    def tensor_read(self, name: str, reads: Iterable[cst.CSTNode], consequence: str) -> Optional[str]:
        """The unsafe reason for the first of `reads` (of `name`), in source order, that keeps the tensor, or None.

        Source order, not the order given: libcst keeps a name's accesses in sets, so the order
        they arrive in changes with PYTHONHASHSEED, and the message must not.
        """
        for node in sorted(reads, key=self._position_key):
            if not self.read_as_value(node):
                return f"`{name}` is also read as a tensor (line {self.line(node)}): {consequence}"
        return None

    def unshadowed(self, name: str, block: Sequence[cst.BaseStatement], anchor: int, reads: Iterable[cst.CSTNode]) -> List[cst.CSTNode]:
        """The `reads` of `name` that may see the value it holds at statement `anchor` of `block`.

        A read is left out when `block` rebinds `name` unconditionally (`name = ...`,
        `a, name = ...`) in a statement after `anchor`, and the read is in a later statement
        of the same block, executed where it stands: Python runs a block top down and enters
        it only at its top, so every run of that read comes after the rebinding (in a loop,
        too: the next iteration rebinds again before reaching it). A read inside a function,
        lambda, class or generator expression runs when that is called or iterated, maybe
        after the name was bound to the value again: it stays.
        """
        reads = list(reads)
        rebinding = next((k for k in range(anchor + 1, len(block)) if _rebinds(block[k], name)), None)
        if rebinding is None:
            return reads
        later = block[rebinding + 1 :]
        return [node for node in reads if not any(contains_node(s, node) and not self._deferred(node, s) for s in later)]

    def outermost_loop(self, node: cst.CSTNode, scope: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The outermost loop (or comprehension) of `scope` around `node`, or None."""
        found = None
        parent = self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and parent is not scope:
            if isinstance(parent, _LOOPS):
                found = parent
            parent = self.get_metadata(ParentNodeProvider, parent, None)
        return found

    def _deferred(self, node: cst.CSTNode, statement: cst.CSTNode) -> bool:
        """Whether `node`, inside `statement`, runs later than the statement (a body of code called later)."""
        while node is not statement:
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.GeneratorExp)):
                return True
            node = self.get_metadata(ParentNodeProvider, node)
        return False

    def report(self, node: cst.CSTNode, message: str, rewrite: Optional[Rewrite], reasons: Reasons = Reasons()) -> Finding:
        """A finding spanning `node`, with the rewrite as its fix's text edits; an unsafe fix's
        unproven conditions end the message."""
        if rewrite is not None and self.MOVES_EVALUATIONS:
            walrus = _first_walrus(rewrite.replacements)
            if walrus is not None:
                # `:=` binds a name in the middle of an expression: a rewrite that evaluates a term
                # once, earlier or later, may read it before or after that binding where the
                # original read the other value (`series[(j := j + 1) % 3]` in both terms; `0 *
                # len(series := series[::-1]) + ...` before the hoisted term; review, stop 24).
                reasons = Reasons([*reasons, Reason(
                    f"`{code_of(walrus).strip()}` (line {self.line(walrus)}) binds a name inside a statement the fix rewrites: "
                    f"the one evaluation may not read what each of the original's did",
                    BETWEEN,
                )])
                rewrite = dataclasses.replace(rewrite, safe=False, unsafe_reason=reasons.text())
        fix = None if rewrite is None else to_fix(rewrite, self.facts.layout, self.ctx.op_names)
        if reasons:
            message += f" [unsafe fix: {reasons.text()}]"
        position = self.get_metadata(PositionProvider, node)
        return Finding(
            path=self.ctx.path,
            line=position.start.line,
            col=position.start.column + 1,
            end_line=position.end.line,
            end_col=position.end.column + 1,
            code=self.CODE,
            message=message,
            fix=fix,
        )

    def visit_Module(self, node: cst.Module) -> None:
        # The enclosing function of the block being checked (the module at top level).
        self.scopes: List[cst.CSTNode] = [node]
        self.start(node)
        self.block(node.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.block(node.body)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        # No block stands in a line of small statements: the walk for blocks need not enter its
        # expressions (most of a file's nodes). What `block()` checks, it walks itself.
        return False


def _rebinds(statement: cst.CSTNode, name: str) -> bool:
    """Whether the statement always binds `name` when it completes: `name = ...`, `a, name = ...`,
    `name: T = ...` (an attribute, subscript or augmented assignment does not rebind it)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign) and any(name in bound_names(t.target) for t in small.targets):
            return True
        if isinstance(small, cst.AnnAssign) and small.value is not None and name in bound_names(small.target):
            return True
    return False


def _first_walrus(replacements) -> Optional[cst.NamedExpr]:
    """The first `:=` (in source order) in the statements a rewrite replaces, or None."""
    found: List[cst.NamedExpr] = []

    class Find(cst.CSTVisitor):
        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            found.append(node)

    for statement in replacements:
        walk_tree(statement, Find())
        if found:
            return found[0]
    return None
