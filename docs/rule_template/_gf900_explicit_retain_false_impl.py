"""The visitor of gf900_explicit_retain_false (named by that module's VISITOR; the registry imports it on first use)."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from gradfix.analysis.backward import backward_call
from gradfix.fixes.build import Replace
from gradfix.fixes.rewrite import Rewrite
from gradfix.rules._blocks import BlockVisitor
from gradfix.rules.gf900_explicit_retain_false import CODE


class Visitor(BlockVisitor):
    """`block()` is called once for every statement list (module, function, loop or branch
    body); report with `self.report(node, message, fix, reasons)` into `self.findings`."""

    CODE = CODE

    def block(self, statements: Sequence[cst.BaseStatement]) -> None:
        for index in range(len(statements)):
            call = backward_call(statements, index)  # a `X.backward(...)` statement, parsed
            if call is None or call.opaque_args or "create_graph" in call.keywords:
                continue  # `**kwargs` may hold create_graph; with create_graph the argument matters
            value = call.keywords.get("retain_graph")
            if not (isinstance(value, cst.Name) and value.value == "False"):
                continue
            arg = next(a for a in call.call.args if a.value is value)
            kept = [a for a in call.call.args if a is not arg]
            if kept:  # the new last argument must not keep a trailing comma from the middle
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            new_call = call.call.with_changes(args=kept)
            fix = Rewrite(
                safe=True,  # proven above: no create_graph, no **kwargs; the default is False
                replacements={call.statement: [call.statement.visit(Replace({call.call: new_call}))]},
                description="Remove `retain_graph=False`",
            )
            self.findings.append(self.report(arg, "`retain_graph=False` is the default", fix))
