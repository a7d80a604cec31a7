"""Implementation of gf003_mergeable_backward (imported lazily, see that module)."""

from __future__ import annotations

from gradfix.rules.gf003_mergeable_backward import CODE, NAME, SUMMARY, DEFAULT, FIXABLE, REQUIRED_TOKENS, SUPERSEDED_BY  # noqa: F401

from typing import Dict, List, Sequence, Tuple

import libcst as cst
from libcst.metadata import (
    PositionProvider,
)

from gradfix.analysis.backward import BackwardCall, backward_calls
from gradfix.analysis.between import scan_between
from gradfix.analysis.exprs import calls_within, code_of, read_paths, same_expr, strip_parens
from gradfix.findings import Finding, Fix
from gradfix.rules._blocks import BlockVisitor



class Visitor(BlockVisitor):
    CODE = CODE

    def start(self, module: cst.Module) -> None:
        # The enclosing function of the block being checked (the module at top level).
        self._scopes: List[cst.CSTNode] = [module]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._scopes.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._scopes.pop()

    def block(self, block: Sequence[cst.BaseStatement]) -> None:
        calls = backward_calls(block)
        i = 0
        while i < len(calls):
            run, unknown_calls, updates = self._run_from(block, calls, i)
            if len(run) >= 2:
                self.findings.append(self._finding(run, self._reasons(run, unknown_calls, updates)))
                i += len(run)
            else:
                i += 1

    def _run_from(
        self, block: Sequence[cst.BaseStatement], calls: List[BackwardCall], start: int
    ) -> Tuple[List[BackwardCall], List[str], List[str]]:
        """The longest run of mergeable calls from `start`; the unknown calls and in-place updates between them."""
        first = calls[start]
        if not first.plain or not first.retains_graph:
            return [first], [], []
        run = [first]
        unknown_calls: List[str] = []
        updates: List[str] = []
        for candidate in calls[start + 1 :]:
            previous = run[-1]
            if not previous.retains_graph or not candidate.plain:
                break
            if (previous.scaler is None) != (candidate.scaler is None):
                break
            if previous.scaler is not None and not same_expr(previous.scaler, candidate.scaler):  # type: ignore[arg-type]
                break
            # The losses already in the run are backpropagated later than
            # before: nothing between may change them or the gradients.
            watched = [p for call in run for p in read_paths(call.receiver)]
            if previous.scaler is not None:
                watched += read_paths(previous.scaler)
            between = block[previous.index + 1 : candidate.index]
            verdict = scan_between(between, watched, self.classifier.harmless)
            if verdict.barrier is not None:
                break
            unknown_calls.extend(verdict.unknown_calls)
            updates.extend(_inplace_updates(between))
            run.append(candidate)
        return run, unknown_calls, updates

    def _reasons(self, run: List[BackwardCall], unknown_calls: List[str], updates: List[str]) -> List[str]:
        """What keeps the merge from being proven exact (empty: a safe fix)."""
        reasons = []
        inline = [code_of(c.receiver).strip() for c in run[:-1] if c.loss_name is None]
        if inline:
            reasons.append(f"the loss `{inline[0]}` is written inline and would be evaluated later than before")
        if unknown_calls:
            names = ", ".join(f"`{c}()`" for c in dict.fromkeys(unknown_calls))
            reasons.append(f"{names} between the backward calls may step, zero or read gradients")
        if updates:
            names = ", ".join(f"`{u}`" for u in dict.fromkeys(updates))
            reasons.append(f"{names} between the backward calls may modify in place a tensor the retained graph saved")
        if not run[-1].retains_graph:
            later = self._later_gradient_use(run[-1])
            if later:
                reasons.append(later)
        return reasons

    def _later_gradient_use(self, last: BackwardCall) -> str:
        """A backward or `grad` call after the run may need a graph the run retained.

        The merged call frees the earlier losses' graphs (only the last call's
        `retain_graph` is kept), where the original kept them alive.
        """
        line = self.get_metadata(PositionProvider, last.call).end.line
        for call in calls_within(self._scopes[-1]):
            func = call.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            at = self.get_metadata(PositionProvider, call).start.line
            if name in ("backward", "grad") and at > line:
                return f"a later `{code_of(func).strip()}()` (line {at}) may use a graph that `retain_graph=True` kept alive"
        return ""

    def _finding(self, run: List[BackwardCall], reasons: List[str]) -> Finding:
        last = run[-1]
        total = _sum([c.receiver for c in run])
        replacements: Dict[cst.CSTNode, List[cst.BaseStatement]] = {c.statement: [] for c in run[:-1]}
        replacements[last.statement] = [last.statement.visit(_ReplaceNode(last.receiver, total))]  # type: ignore[list-item]
        rendered = " + ".join(code_of(strip_parens(c.receiver)).strip() for c in run)
        fix = Fix(
            safe=not reasons,
            replacements=replacements,
            description=f"Backpropagate `{rendered}` once",
            unsafe_reason="; ".join(reasons),
        )
        lines = ", ".join(str(self.get_metadata(PositionProvider, c.call).start.line) for c in run[1:])
        message = (
            f"`{code_of(run[0].receiver).strip()}.backward(retain_graph=True)` keeps the graph for another "
            f"backward (line {lines}): one backward of `{rendered}` gives the same gradients in one traversal"
        )
        return self.report(run[0].call, message, fix, reasons)


def _inplace_updates(statements: Sequence[cst.BaseStatement]) -> List[str]:
    """Statements that may update in place a tensor the retained graph saved.

    `x += 1` or `x[:, 0] = 0` on a tensor the first graph saved makes the
    merged backward fail where the original's separate backward ran before
    the update. `total += loss.item()` only adds Python numbers.
    """
    found: List[str] = []

    class Collect(cst.CSTVisitor):
        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            value = strip_parens(node.value)
            if isinstance(value, cst.Call) and (
                (isinstance(value.func, cst.Attribute) and value.func.attr.value == "item")
                or (isinstance(value.func, cst.Name) and value.func.value in ("float", "int", "len"))
            ):
                return
            found.append(f"{code_of(node.target).strip()} {code_of(node.operator).strip()}")

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Subscript) or (
                isinstance(node.target, cst.Attribute) and node.target.attr.value == "data"
            ):
                found.append(f"{code_of(node.target).strip()} =")

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    for statement in statements:
        statement.visit(Collect())
    return found


# Operators that bind tighter than `+`: such summands need no parentheses.
_TIGHTER = (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.MatrixMultiply, cst.Power)


def _operand(node: cst.BaseExpression, first: bool) -> cst.BaseExpression:
    """A summand, parenthesised only where Python's precedence (or the original grouping) needs it."""
    bare = strip_parens(node)
    if isinstance(bare, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.UnaryOperation)):
        return bare
    if isinstance(bare, cst.BinaryOperation):
        if isinstance(bare.operator, _TIGHTER):
            return bare
        if first and isinstance(bare.operator, (cst.Add, cst.Subtract)):
            return bare  # `(a + b) + c` is `a + b + c`
    return bare.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _sum(receivers: List[cst.BaseExpression]) -> cst.BaseExpression:
    total = _operand(receivers[0], first=True)
    for receiver in receivers[1:]:
        total = cst.BinaryOperation(left=total, operator=cst.Add(), right=_operand(receiver, first=False))
    return total


class _ReplaceNode(cst.CSTTransformer):
    def __init__(self, old: cst.CSTNode, new: cst.BaseExpression) -> None:
        super().__init__()
        self.old, self.new = old, new

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        if original_node is self.old:
            return self.new
        if isinstance(original_node, cst.Attribute) and original_node.value is self.old and isinstance(self.new, cst.BinaryOperation):
            # `(a + b).backward()`: a sum needs parentheses as a receiver (not inside `scaler.scale(...)`).
            return updated_node.with_changes(value=self.new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
        return updated_node
