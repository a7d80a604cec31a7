"""The visitor of gf003_mergeable_backward (named by that module's VISITOR; the registry imports it on first use)."""

from __future__ import annotations

from gradfix.rules.gf003_mergeable_backward import CODE
from gradfix.reasons import Reasons

from typing import List, Sequence

import libcst as cst

from gradfix.analysis.backward import BackwardCall, backward_runs, merge_reasons, old_keyword_note
from gradfix.fixes.build import merged_backward
from gradfix.analysis.between import HarmlessCalls
from gradfix.analysis.exprs import code_of, strip_parens
from gradfix.findings import Finding
from gradfix.fixes.rewrite import Rewrite
from gradfix.rules._blocks import BlockVisitor



class Visitor(BlockVisitor):
    CODE = CODE

    def block(self, block: Sequence[cst.BaseStatement]) -> None:
        for run in backward_runs(block, HarmlessCalls(self.classifier), self.facts.accelerators):
            reasons = Reasons(merge_reasons(run, self.scopes[-1], self.line, self.facts, self.classifier))
            self.findings.append(self._finding(run.calls, reasons))

    def _finding(self, run: List[BackwardCall], reasons: Reasons) -> Finding:
        replacements = merged_backward(run)
        rendered = " + ".join(code_of(strip_parens(c.receiver)).strip() for c in run)
        fix = Rewrite(
            safe=not reasons,
            replacements=replacements,
            description=f"Backpropagate `{rendered}` once",
            unsafe_reason=reasons.text(),
        )
        lines = ", ".join(str(self.line(c.call)) for c in run[1:])
        first = run[0]
        # As written where the loss is an argument (`self.manual_backward(loss, retain_graph=True)`).
        shown = code_of(first.call).strip() if first.loss_is_argument else f"{code_of(first.receiver).strip()}.backward({first.retain_keyword}=True)"
        message = (
            f"`{shown}` keeps the graph for another "
            f"backward (line {lines}): one backward of `{rendered}` gives the same gradients in one traversal"
            + old_keyword_note(run)
        )
        return self.report(run[0].call, message, fix, reasons)
