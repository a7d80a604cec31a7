"""Implementation of gf004_detached_terms_across_losses (imported lazily, see that module)."""

from __future__ import annotations

from gradfix.rules.gf004_detached_terms_across_losses import CODE, NAME, SUMMARY, DEFAULT, FIXABLE, REQUIRED_TOKENS, SUPERSEDED_BY  # noqa: F401

from typing import Dict, List, Optional, Sequence, Set

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, ScopeProvider

from gradfix.analysis.backward import BackwardRun, backward_calls, backward_runs, merge_reasons, merged_backward
from gradfix.analysis.between import HARMLESS_METHODS, scan_between, stores_into
from gradfix.analysis.exprs import (
    calls_within,
    code_of,
    contains_detach,
    contains_node,
    core_call,
    detach_receiver,
    read_paths,
    strip_parens,
)
from gradfix.analysis.linear import ONE, Coef
from gradfix.analysis.merge import (
    MergeSafety,
    PairMatch,
    Replace,
    detached,
    fresh_name,
    match_pair,
    merged_call,
    module_op,
    names_in,
)
from gradfix.analysis.objective import VALUE_FUNCTIONS, VALUE_METHODS, Expansion, Lin, Term, expand, summands
from gradfix.findings import Finding, Fix
from gradfix.rules._blocks import BlockVisitor

# Reductions a term may wrap its computation in; the message and the new
# name use the function inside (`kl`, not `torch.mean`).
_REDUCTIONS = frozenset({"mean", "sum"})


class Visitor(BlockVisitor):
    CODE = CODE

    def start(self, module: cst.Module) -> None:
        self._taken: Set[str] = names_in(module)
        self.safety = MergeSafety(self.classifier, module)

    def block(self, block: Sequence[cst.BaseStatement]) -> None:
        runs = backward_runs(block, self.classifier.harmless)
        in_runs = {call.index for run in runs for call in run.calls}
        # One backward of a sum of losses is a run of its own: `(loss1 + loss2).backward()`
        # (as written, or as GF003 leaves a run).
        for call in backward_calls(block):
            if call.index not in in_runs and call.plain and len(summands(call.receiver)) > 1:
                runs.append(BackwardRun([call], [], []))
        if not runs:
            return
        expansion = expand(block, {call.index for run in runs for call in run.calls})
        for run in runs:
            self._run(block, run, expansion)

    def _line(self, node: cst.CSTNode, end: bool = False) -> int:
        position = self.get_metadata(PositionProvider, node)
        return (position.end if end else position.start).line

    def _position(self, node: cst.CSTNode):
        start = self.get_metadata(PositionProvider, node).start
        return start.line, start.column

    def _run(self, block: Sequence[cst.BaseStatement], run: BackwardRun, expansion: Expansion) -> None:
        # Each summand of each backward call's loss is one loss of the objective.
        losses: List[Lin] = []
        receivers: List[str] = []
        for call in run.calls:
            parts = expansion.losses.get(call.index)
            if parts is None:
                return
            for node, value in parts:
                receivers.append(code_of(strip_parens(node)).strip())
                losses.append(value)
        objective = sum(losses[1:], losses[0])
        coefs = objective.coefs()
        reach: Dict[int, List[int]] = {}
        for j, loss in enumerate(losses):
            for key, _ in loss.terms:
                reach.setdefault(key, []).append(j)
        candidates = sorted(
            (expansion.terms[key] for key in coefs if key not in objective.tainted and key in expansion.terms),
            key=lambda term: self._position(term.call),
        )
        used: Set[int] = set()
        pairs = []
        for i, first in enumerate(candidates):
            if id(first) in used:
                continue
            for second in candidates[i + 1 :]:
                if id(second) in used or first.body is not second.body or first.context != second.context:
                    continue
                r1, r2 = reach[id(first.call)], reach[id(second.call)]
                if r1 == r2 and len(r1) == 1:
                    continue  # one loss: GF002's summed form, not this rule's
                match = match_pair(first.call, second.call, self.classifier)
                if match is None:
                    continue
                pairs.append((first, second, match, (r1, r2)))
                used.update((id(first), id(second)))
                break
        # Findings (and the names their fixes introduce) in the order they are reported and applied.
        for first, second, match, reaches in sorted(pairs, key=lambda pair: self._position(pair[1].call)):
            finding = self._finding(block, run, expansion, first, second, match, coefs, reaches, receivers)
            if finding is not None:
                self.findings.append(finding)

    def _finding(
        self,
        block: Sequence[cst.BaseStatement],
        run: BackwardRun,
        expansion: Expansion,
        first: Term,
        second: Term,
        match: PairMatch,
        coefs: Dict[int, Coef],
        reaches,
        receivers: List[str],
    ) -> Optional[Finding]:
        a, b = coefs[id(first.call)], coefs[id(second.call)]
        inverse = a.inverse()
        if inverse is None:
            return None
        ratio = b * inverse
        if ratio * a != b or any(s.startswith("#") for s in ratio.symbols()):
            return None
        if not all(expansion.symbol_invariant(symbol) for symbol in set(a.symbols() + b.symbols()) if not symbol.startswith("#")):
            return None  # the symbols cancel in the ratio only if they hold one value wherever they were used
        reasons = self.safety.reasons(match, ONE, ratio)
        if reasons is None:
            return None  # random calls in the arguments: two different computations
        watched = read_paths(first.call) + read_paths(second.call)
        for symbol in ratio.symbols():
            watched += read_paths(cst.parse_expression(symbol))
        body = first.body
        verdict = scan_between(body[first.index + 1 : second.index], watched, self.classifier.harmless)
        if verdict.barrier is not None:
            return None
        if verdict.unknown_calls:
            names = ", ".join(f"`{c}()`" for c in dict.fromkeys(verdict.unknown_calls))
            reasons.append(f"{names} between the two evaluations may modify an operand")
        others = self._unproven_calls(first, second)
        if others:
            names = ", ".join(f"`{o}()`" for o in dict.fromkeys(others))
            reasons.append(f"the one evaluation moves before {names}, which gradfix cannot prove unaffected")
        reasons.extend(self._tensor_reads(run, expansion, first, second))
        if len(run.calls) > 1:
            reasons.extend(merge_reasons(run, self.scopes[-1], self._line))

        fix = self._fix(run, first, second, match, ratio, reasons)
        through = [" + ".join(f"`{receivers[j]}`" for j in reach) for reach in reaches]
        line1 = self._position(first.call)[0]
        message = (
            f"`{_inner_callee(first.call)}` evaluated twice with complementary `.detach()` "
            f"(line {line1}, in {through[0]}, and here, in {through[1]}), both backpropagated: "
            f"one evaluation with `grad_scale` gives the same values and gradients"
            + (" with one backward" if len(run.calls) > 1 else "")
        )
        if match.swapped:
            message += " (arguments swapped; the callee is symmetric)"
        return self.report(second.call, message, fix, reasons)

    # -- conditions -------------------------------------------------------------------
    def _unproven_calls(self, first: Term, second: Term) -> List[str]:
        """Calls in the two statements, besides the terms, that the moved evaluation might not commute with."""
        found: List[str] = []
        for statement in dict.fromkeys((first.statement, second.statement)):
            for call in calls_within(statement):
                if contains_node(first.call, call) or contains_node(second.call, call):
                    continue
                if detach_receiver(call) is not None or self._harmless(call):
                    continue
                found.append(code_of(call.func).strip())
        return found

    def _harmless(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and not self.classifier.qualified(func):
            # `lst.append(term)`, `.item()`, `.mean()`: they cannot change an operand.
            if func.attr.value in HARMLESS_METHODS or func.attr.value in VALUE_METHODS:
                return True
        if isinstance(func, cst.Name) and func.value in VALUE_FUNCTIONS:
            return True
        return self.classifier.harmless(func)

    def _tensor_reads(self, run: BackwardRun, expansion: Expansion, first: Term, second: Term) -> List[str]:
        """Reads of a name that carries the terms, other than the ones the expansion followed or value-only ones.

        After the rewrite the first term carries both gradients and the second
        none: only the run's objective sees the same gradients as before. A
        name read as a tensor elsewhere (`self.last = loss1`, `return s_loss`)
        carries a different gradient if something backpropagates it later.
        """
        keys = {id(first.call), id(second.call)}
        carriers = [name for name, terms in expansion.carriers.items() if terms & keys]
        scope = self.get_metadata(ScopeProvider, first.call, None)
        if scope is None:
            return ["gradfix cannot resolve the scope of the losses"]
        receivers = [c.receiver for c in run.calls]
        reasons: List[str] = []
        for name in carriers:
            for assignment in scope.assignments[name]:
                for access in assignment.references:
                    node = access.node
                    if id(node) in expansion.consumed or any(contains_node(r, node) for r in receivers):
                        continue
                    if self._value_only(node):
                        continue
                    line = self._position(node)[0]
                    reasons.append(
                        f"`{name}` is also read as a tensor (line {line}): it carries different gradients after the rewrite"
                    )
                    break
                else:
                    continue
                break
        return reasons

    def _value_only(self, node: cst.CSTNode) -> bool:
        """The read ends in a value without gradient: `x.item()`, `(a - x).item()`, `float(x)`, an f-string."""
        child = node
        parent = self.get_metadata(ParentNodeProvider, child, None)
        while parent is not None and not isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            if isinstance(parent, cst.FormattedStringExpression):
                return True
            if isinstance(parent, cst.Call):
                func = parent.func
                if child is func:
                    pass  # the receiver side of a method call: look further up
                elif isinstance(func, cst.Name) and func.value in VALUE_FUNCTIONS:
                    return True
                else:
                    return False  # an argument of some other call: it may keep the tensor
            if isinstance(parent, cst.Attribute) and parent.attr.value in VALUE_METHODS:
                grand = self.get_metadata(ParentNodeProvider, parent, None)
                if isinstance(grand, cst.Call) and grand.func is parent:
                    return True
            child = parent
            parent = self.get_metadata(ParentNodeProvider, child, None)
        return False

    # -- the rewrite ----------------------------------------------------------------
    def _fix(self, run: BackwardRun, first: Term, second: Term, match: PairMatch, ratio: Coef, reasons: List[str]) -> Fix:
        merged, ops = merged_call(first.call, match, ONE, ratio, self.ctx.grad_scale_name, module_op(match, self.ctx.op_names))
        callee = _inner_callee(first.call)
        last = callee.rsplit(".", 1)[-1]
        name = fresh_name(f"{last}_shared" if last.isidentifier() else "shared_term", self._taken)
        hoisted = first.statement.with_changes(
            body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=merged)],
            trailing_whitespace=cst.TrailingWhitespace(),
        )
        replacements: Dict[cst.CSTNode, List[cst.BaseStatement]] = {}
        if first.statement is second.statement:
            both = first.statement.visit(Replace({first.call: cst.Name(name), second.call: detached(name)}))
            replacements[first.statement] = [hoisted, both.with_changes(leading_lines=[])]  # type: ignore[attr-defined]
        else:
            new_first = first.statement.visit(Replace({first.call: cst.Name(name)}))
            replacements[first.statement] = [hoisted, new_first.with_changes(leading_lines=[])]  # type: ignore[attr-defined]
            replacements[second.statement] = [second.statement.visit(Replace({second.call: detached(name)}))]  # type: ignore[list-item]
        description = f"Evaluate `{callee}` once with `grad_scale`; the other loss takes its value, detached"
        if len(run.calls) > 1:
            # One backward of the sum (GF003's rewrite) is part of the fix: a
            # loss made only of detached values would make its own `backward()` raise.
            replacements.update(merged_backward(run.calls))
            rendered = " + ".join(code_of(strip_parens(c.receiver)).strip() for c in run.calls)
            description += f"; backpropagate `{rendered}` once"
        return Fix(
            safe=not reasons,
            replacements=replacements,
            description=description,
            unsafe_reason="; ".join(reasons),
            imports=self.ctx.imports_for(*ops),
        )


def _inner_callee(call: cst.Call) -> str:
    """The function a term evaluates: `torch.mean(kl(p, q.detach()))` -> `kl`."""
    core, _ = core_call(call)
    while True:
        text = code_of(core.func).strip()
        inner = [a.value for a in core.args if contains_detach(a.value)]
        if text.rsplit(".", 1)[-1] in _REDUCTIONS and len(inner) == 1:
            value = strip_parens(inner[0])
            if isinstance(value, cst.Call) and detach_receiver(value) is None:
                core, _ = core_call(value)
                continue
        return text
