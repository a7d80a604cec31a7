"""The visitor of gf001_detached_double_backward (named by that module's VISITOR; the registry imports it on first use)."""

from __future__ import annotations

from gradfix.rules.gf001_detached_double_backward import CODE
from gradfix.reasons import Reasons

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set

import libcst as cst
from libcst.metadata import GlobalScope, ScopeProvider

from gradfix.analysis.backward import (
    BackwardCall,
    accelerate_reasons,
    backward_call,
    definition,
    caught_reasons,
    file_merge_reasons,
    generator_reasons,
    held,
    grad_mode_reasons,
    later_use_reasons,
    outside_backward_reasons,
    old_keyword_note,
    old_keyword_reasons,
    spelling_reasons,
)
from gradfix.analysis.between import names_bound_to_gradients, reads_gradients, HarmlessCalls, scan_between, stores_into, with_aliases
from gradfix.analysis.introspection import introspection_reasons
from gradfix.analysis.loops import loop_reasons
from gradfix.analysis.exprs import (
    code_of,
    contains_detach,
    contains_node,
    read_paths,
    same_expr,
    strip_parens,
)
from gradfix.analysis.linear import Coef, split_linear
from gradfix.analysis.merge import MergeSafety, PairMatch, match_pair
from gradfix.fixes.build import FreshNames, Replace, detached, merged_call, modern_spelling, module_op, name_stem
from gradfix.findings import Finding
from gradfix.fixes.rewrite import Rewrite
from gradfix.rules._blocks import BlockVisitor


@dataclass
class _Site:
    """One `backward` call and the loss it backpropagates."""

    index: int  # position of the backward statement in the block
    statement: cst.SimpleStatementLine
    receiver: cst.BaseExpression  # the loss expression or name the backward is called on
    scaler: Optional[cst.BaseExpression]
    retains_graph: bool
    def_index: Optional[int]  # the `name = ...` statement, or None when inline
    # The name (or attribute, `self.loss_G`, or dict item, `losses["adv"]`) it was bound to.
    target: Optional[cst.BaseExpression]
    expr: cst.BaseExpression  # the loss expression
    coef: Coef
    call: cst.Call
    backward: BackwardCall


class Visitor(BlockVisitor):
    CODE = CODE

    def start(self, module: cst.Module) -> None:
        self._names = FreshNames(module)
        self.safety = MergeSafety(self.classifier, self.facts)

    # -- finding the backward sites ----------------------------------------------------
    def _site(self, block: Sequence[cst.BaseStatement], index: int) -> Optional[_Site]:
        found = backward_call(block, index, self.facts.accelerators)
        if found is None or not found.plain:
            return None  # docs/design.md §1 E7: gradient=, inputs=, create_graph= or opaque arguments
        def_index: Optional[int] = None
        target: Optional[cst.BaseExpression] = None
        expr: cst.BaseExpression = found.receiver
        if held(found.receiver):
            defined = definition(block, index, strip_parens(found.receiver))
            if defined is None:
                return None
            def_index, assign = defined
            target = assign.targets[0].target
            expr = assign.value
        parsed = split_linear(expr)
        if parsed is None or not contains_detach(parsed[1]):
            return None
        coef, loss_call = parsed
        return _Site(
            index, found.statement, found.receiver, found.scaler, found.retains_graph,
            def_index, target, expr, coef, loss_call, found,
        )

    # -- pairing --------------------------------------------------------------------
    def block(self, block: Sequence[cst.BaseStatement]) -> None:
        sites = [s for s in (self._site(block, i) for i in range(len(block))) if s is not None]
        used: Set[int] = set()
        for i, first in enumerate(sites):
            if first.index in used or not first.retains_graph:
                continue
            for second in sites[i + 1 :]:
                if second.index in used:
                    continue
                finding = self._pair(block, first, second)
                if finding is not None:
                    self.findings.append(finding)
                    used.update((first.index, second.index))
                    break

    def _pair(self, block: Sequence[cst.BaseStatement], first: _Site, second: _Site) -> Optional[Finding]:
        c1, c2 = first.call, second.call
        if (first.scaler is None) != (second.scaler is None):
            return None
        if first.scaler is not None and not same_expr(first.scaler, second.scaler):  # type: ignore[arg-type]
            return None
        if first.def_index is not None and first.def_index == second.def_index:
            return None
        match = match_pair(c1, c2, self.classifier)
        if match is None:
            return None

        # What the two passes read: operands, callee, coefficients, scaler.
        watched = read_paths(first.expr) + read_paths(second.expr) + read_paths(c1.func)
        if first.scaler is not None:
            watched += read_paths(first.scaler)
        for site in (first, second):
            if site.def_index is not None and stores_into(block[site.def_index], watched):
                return None
        # The second evaluation runs after the first backward, which writes `.grad`: a read of it
        # there (`w + w.grad`, a look-ahead point) sees another value than the first's, and the
        # one evaluation of the rewrite the old one (review, stop 24).
        # ... or through a name bound to one (`g = y.grad`: the first backward adds into that very tensor).
        second_code = block[second.def_index] if second.def_index is not None else second.expr
        if reads_gradients(second_code) or names_bound_to_gradients(second_code, self.classifier):
            return None
        involved = {first.index, second.index, first.def_index, second.def_index}
        starts = [i for i in (first.def_index, second.def_index, first.index) if i is not None]
        between = [block[k] for k in range(min(starts), second.index) if k not in involved]
        verdict = scan_between(between, with_aliases(watched, self.scopes[-1], self.classifier), HarmlessCalls(self.classifier))
        if verdict.barrier is not None:
            return None

        # Fix safety: everything that is not proven goes into the reason.
        reasons = self.safety.reasons(match, first.coef, second.coef)
        if reasons is None:
            return None  # random calls in the arguments: two different computations
        if verdict.unknown:
            reasons.add(f"{verdict.unknown_text()} between the two passes may step, zero or read gradients or modify an operand")
        if not second.retains_graph:
            # The one backward frees the graph the first call kept alive.
            reasons.extend(later_use_reasons(self.line(second.statement, end=True), self.scopes[-1], self.line, self.facts, self.classifier))
            reasons.extend(outside_backward_reasons(self.scopes[-1], self.facts, self.classifier, [first.backward, second.backward]))
            reasons.extend(loop_reasons(second.statement, self.scopes[-1], self.scopes[0], self.line))
        reasons.extend(caught_reasons(first.statement, self.scopes[-1], self.scopes[0], self.line))
        reasons.extend(grad_mode_reasons(second.statement, self.scopes[-1], self.facts))
        reasons.extend(file_merge_reasons(self.facts, self.classifier))
        reasons.extend(generator_reasons(self.facts, bool(between)))
        reasons.extend(spelling_reasons([first.statement, second.statement], self.facts))
        reasons.extend(accelerate_reasons([first.backward, second.backward]))
        reasons.extend(old_keyword_reasons([first.backward, second.backward]))
        # The rewrite removes or rebuilds the loss names: a read by name string is not seen.
        reasons.extend(introspection_reasons(self.scopes[-1], self.line))

        fix = self._fix(block, first, second, match, reasons)
        callee_text = match.callee_text
        line1 = self.line(c1)
        message = (
            f"`{callee_text}` evaluated twice with complementary `.detach()` (line {line1} and here), "
            f"both backpropagated: one pass with `grad_scale` gives the same gradients"
        )
        if match.swapped:
            message += " (arguments swapped; the callee is symmetric)"
        message += old_keyword_note([first.backward, second.backward])
        return self.report(c2, message, fix, reasons)

    # -- the rewrite ----------------------------------------------------------------
    def _fix(
        self,
        block: Sequence[cst.BaseStatement],
        first: _Site,
        second: _Site,
        match: PairMatch,
        reasons: Reasons,
    ) -> Rewrite:
        merged, ops = merged_call(
            first.call, match, first.coef, second.coef, self.ctx.grad_scale_name, module_op(match, self.ctx.op_names)
        )

        replacements: Dict[cst.CSTNode, List[cst.BaseStatement]] = {}
        named = [s for s in (first, second) if s.def_index is not None]
        if not named:
            # Both inline: the one evaluation happens where the second did.
            replacements[first.statement] = []
            replacements[second.statement] = [_with_receiver(second, merged)]
        else:
            partner_of = {id(first): second, id(second): first}
            reads = {id(s): self._read_elsewhere(s, partner_of[id(s)], block, reasons) for s in named}
            # The merged forward goes where the earlier loss was defined, under
            # that loss's name when nothing else reads it.
            host = min(named, key=lambda s: s.def_index)  # type: ignore[arg-type, return-value]
            # A rebuilt value must never overwrite the merged loss before its
            # backward: a name shared by both losses then needs a fresh name.
            shared = len({_text(s.target) for s in named}) < len(named)
            clash = shared and any(reads.values())
            # (A held loss, `losses["adv"]`, is always read elsewhere: it gets a fresh name.)
            name = host.target.value if not reads[id(host)] and not clash else self._fresh_name(named)  # type: ignore[union-attr]
            for site in named:
                statement = block[site.def_index]  # type: ignore[index]
                new_lines: List[cst.BaseStatement] = []
                if site is host:
                    new_lines.append(_assign_line(statement, name, merged))
                if reads[id(site)]:
                    # The loss value is read later: rebuild it, detached, from the one result.
                    value = site.expr.visit(Replace({site.call: detached(name, copy=site.expr is site.call)}))
                    rebuilt = _assign_line(statement, site.target, value)  # type: ignore[arg-type]
                    if new_lines:
                        rebuilt = rebuilt.with_changes(leading_lines=[])
                    new_lines.append(rebuilt)
                replacements[statement] = new_lines
            replacements[first.statement] = []
            replacements[second.statement] = [_with_receiver(second, cst.Name(name))]

        imports = self.ctx.imports_for(*ops)
        callee = match.callee_text
        return Rewrite(
            safe=not reasons,
            replacements=replacements,
            description=f"Evaluate `{callee}` once with `grad_scale` and backpropagate once",
            unsafe_reason=reasons.text(),
            imports=imports,
        )

    def _read_elsewhere(
        self, site: _Site, partner: _Site, block: Sequence[cst.BaseStatement], reasons: Reasons
    ) -> bool:
        """Is this binding of the loss name read anywhere but by the pair's own `backward` calls?

        A name that is read elsewhere is rebuilt as a detached value of the one
        evaluation: exact for a read that ends in a value (`l2.item()`,
        `float(l2)`, an f-string, `print(l2)`); any other read (`0.1 * l2 ** 2`,
        `torch.autograd.grad(l2, x)`, `return l2`) would see it without its
        gradient, which is added to `reasons`, naming the line.

        Scope analysis is not flow-sensitive: when both losses share one name
        (`loss = ...; loss.backward(...); loss = ...`), an access is attributed
        to the binding that precedes it in the block. A read after the name was
        bound anew, later in the block than the pair, does not see the loss
        (`unshadowed`): it stays a read (the name is still rebuilt) but is no
        reason.
        """
        target = site.target
        if target is None:
            return True
        if not isinstance(target, cst.Name):
            # An attribute or a dict item may be read anywhere: other methods, the caller, a logger.
            holder = "an attribute" if isinstance(target, cst.Attribute) else f"an item of `{_text(target.value)}`"  # type: ignore[attr-defined]
            reasons.add(
                f"`{_text(target)}` is {holder}, which code gradfix does not see may read as a tensor: "
                f"after the rewrite it holds a detached value"
            )
            return True
        scope = self.get_metadata(ScopeProvider, target, None)
        if scope is None:
            reasons.add(f"gradfix cannot resolve the reads of `{target.value}`")
            return True
        same_name = isinstance(partner.target, cst.Name) and partner.target.value == target.value
        own = [site.statement] + ([partner.statement] if same_name else [])
        line = self.line(block[site.def_index])  # type: ignore[index]
        other = self.line(block[partner.def_index]) if same_name else None  # type: ignore[index]
        for assignment in scope.assignments[target.value]:
            if getattr(assignment, "node", None) is not target:
                continue
            elsewhere = []
            for access in assignment.references:
                if any(contains_node(statement, access.node) for statement in own):
                    continue
                if other is not None:
                    at = self.line(access.node)
                    first_binding = line < other
                    belongs_to_other = (line < at < other) if not first_binding else (at > other)
                    if belongs_to_other:
                        continue
                elsewhere.append(access.node)
            last = max(i for i in (site.index, site.def_index, partner.index, partner.def_index) if i is not None)
            seen = self.unshadowed(target.value, block, last, elsewhere)
            read = self.tensor_read(target.value, seen, "after the rewrite it is a detached value without gradient")
            if read is not None:
                reasons.add(read)
            # A module global is visible to importers: keep its value.
            return bool(elsewhere) or isinstance(scope, GlobalScope)
        reasons.add(f"gradfix cannot resolve the reads of `{target.value}`")
        return True

    def _fresh_name(self, named: List[_Site]) -> str:
        parts = list(dict.fromkeys(name_stem(s.target) for s in named if s.target is not None))
        base = "_".join(parts) if len(parts) > 1 else f"{parts[0]}_merged"
        return self._names.fresh(base, self.scopes)


def _text(node: Optional[cst.BaseExpression]) -> str:
    return "" if node is None else code_of(node).strip()


def _assign_line(template: cst.BaseStatement, target, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    """`target = value` (a name, or the held target as written), keeping the template line's comments and layout."""
    assert isinstance(template, cst.SimpleStatementLine)
    target = cst.Name(target) if isinstance(target, str) else target
    assign = cst.Assign(targets=[cst.AssignTarget(target)], value=strip_parens(value) if isinstance(value, cst.Call) else value)
    return template.with_changes(body=[assign])


def _with_receiver(site: _Site, new: cst.BaseExpression) -> cst.SimpleStatementLine:
    """The site's backward statement with the loss replaced by `new` (a call or a name: no parentheses
    needed), its keywords in the spelling torch reads."""
    return modern_spelling(site.statement.visit(Replace({site.receiver: new}, keep_parens=False)))  # type: ignore[arg-type]
