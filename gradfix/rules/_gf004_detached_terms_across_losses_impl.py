"""The visitor of gf004_detached_terms_across_losses (named by that module's VISITOR; the registry imports it on first use)."""

from __future__ import annotations

from gradfix.rules.gf004_detached_terms_across_losses import CODE
from gradfix.reasons import COEFFICIENT, Reasons

from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import BuiltinScope, GlobalScope, ParentNodeProvider, PositionProvider, ScopeProvider

from gradfix.analysis.backward import BackwardRun, backward_calls, backward_runs, merge_reasons, old_keyword_note, old_keyword_reasons
from gradfix.analysis.between import _numeric_names, fresh_calls, HarmlessCalls, harmless_call, scan_between, with_aliases
from gradfix.analysis.exprs import (
    access_path,
    all_nodes,
    binding_counts,
    bound_names,
    calls_within,
    code_of,
    contains_detach,
    contains_node,
    core_call,
    dynamic_global,
    detach_receiver,
    is_inplace_call,
    last_name,
    read_paths,
    same_expr,
    let_return,
    strip_parens,
)
from gradfix.analysis.linear import finite, ONE, Coef, LoopCount, has_loop_count
from gradfix.analysis.vocabulary import is_inplace_name
from gradfix.analysis.merge import MergeSafety, PairMatch, match_pair
from gradfix.fixes.build import FreshNames, Replace, detached, hoisted_assign, merged_backward, merged_call, modern_spelling, module_op, names_in
from gradfix.analysis.introspection import introspection_reasons
from gradfix.analysis.loop_shapes import iterated_sequences, local_positions, positions, read_attributes
from gradfix.analysis.objective import Expansion, Lin, Term, expand, in_iterations, mean_operand
from gradfix.analysis.vocabulary import AUTOGRAD_STATE_ATTRIBUTES, BUILTINS_GRAPH_FREE, FRESH_METHODS, REDUCTIONS, REQUIRES_GRAD_SENSITIVE, VALUE_METHODS, VIEW_METHODS
from gradfix.findings import Finding
from gradfix.fixes.rewrite import Rewrite
from gradfix.rules._blocks import BlockVisitor
from gradfix.analysis.walk import walk_tree


# The builtins GF004's expansion reads by their text: iterations (`loop_shapes`: `range(len(xs))`,
# `zip(xs, ys)`, `enumerate`, `sum(...)` of a list), coefficients (`objective`: `len(seen)`,
# `float(k)`, `int(n)`), and the calls `loops` takes to hold no graph (BUILTINS_GRAPH_FREE).
_READ_BUILTINS = tuple(sorted({"range", "len", "zip", "enumerate", "list", "tuple", "sum", "float", "int"} | BUILTINS_GRAPH_FREE))


# Builtins that turn a tensor into text with its autograd state (`grad_fn=<...>`, `requires_grad=True`).
_AS_TEXT = frozenset({"print", "str", "repr", "ascii"})
# A tensor's attributes that are values whatever its autograd state.
_SHAPE_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "layout", "is_cuda"})


class Visitor(BlockVisitor):
    CODE = CODE

    def start(self, module: cst.Module) -> None:
        self._names = FreshNames(module)
        # Inlined helper nodes -> (the node, the helper's node it was built from).
        self._origins: Dict[int, tuple] = {}
        # Helper calls of the tree whose inlining went through a def `self.name` may not be (`_inline`).
        self._rebound_sites: Dict[int, str] = {}
        self.safety = MergeSafety(self.classifier, self.facts)

    # -- helpers with a hidden `.detach()` --------------------------------------------
    def metadata_node(self, node: cst.CSTNode) -> cst.CSTNode:
        # An inlined helper expression is built from the helper's nodes: it
        # answers metadata questions (qualified names, purity) as those nodes.
        pair = self._origins.get(id(node))
        return pair[1] if pair is not None and pair[0] is node else node

    def _inline(self, call: cst.Call, depth: int = 0, site: Optional[cst.Call] = None) -> Optional[cst.BaseExpression]:
        """`helper(a, b)` -> the helper's returned expression with `a`, `b` for its parameters.

        Only a function of this module (or a method of the enclosing class,
        called on `self`) proven pure, undecorated, whose body is one
        `return` (after an optional docstring), with plain positional
        parameters matched one to one by positional arguments, and whose
        other names are not shadowed where it is called. The `return` may come
        after assignments to names of the helper's own, each read once below
        (`S_list = [S.detach() for S in self.S_layers]`): each read becomes
        its value (the helper is deterministic and changes nothing, so the
        order of evaluation does not matter). A call in the result to another
        such helper that a stop-gradient flows into (`self.loss_function(out,
        P, S_list, lam)`) is inlined in turn, two levels below the call in the
        tree (`site`) at most, and only one whose returned sum or product is
        weighed by one of its parameters (`frob - lambda_ * norm(...)`: the two
        calls differ by that argument, so neither is the pair's callee); the
        names the inner helpers read must be the same where that call stands.
        """
        site = call if site is None else site
        if any(arg.keyword is not None or arg.star for arg in call.args):
            return None
        helper = self._helper_def(call.func)
        if helper is None or helper.decorators or helper.asynchronous is not None:
            return None
        params = helper.params
        if not isinstance(params.star_arg, cst.MaybeSentinel) or params.kwonly_params or params.star_kwarg is not None or params.posonly_params:
            return None
        if any(p.default is not None for p in params.params):
            return None
        names = [p.name.value for p in params.params]
        args = [a.value for a in call.args]
        if isinstance(call.func, cst.Attribute):
            if not names or names[0] != "self":
                return None
            names = names[1:]
            bound: Dict[str, cst.BaseExpression] = {"self": call.func.value}
        else:
            bound = {}
        if len(names) != len(args):
            return None
        bound.update(zip(names, args))
        rebound = self.classifier.rebound_inlined(helper)
        if rebound is not None:
            # `self.name` may not be this def (a subclass, `Cls.name = ...`, `setattr`): the terms
            # inlined through the call in the tree carry the reason (`_finding`), since the
            # expression may keep no call of the def's own to carry it (its calls replaced by
            # deeper helpers, or the term its only call).
            self._rebound_sites.setdefault(id(site), rebound)
        found = let_return(helper)
        if found is None or not self.classifier.pure_function(helper):
            return None
        lets, returned = found
        if any(target.value in bound for target, _ in lets):
            return None
        if depth > 0 and not _scales_by_parameter(returned, set(names), {t.value: v for t, v in lets}):
            # Below the call in the tree, a helper whose returned combination does not weigh its
            # terms by an argument (`association_discrepancy(P, S)`) is the pair's callee as it is.
            return None
        scope = self.get_metadata(ScopeProvider, returned, None)
        callers = [self.get_metadata(ScopeProvider, node, None) for node in dict.fromkeys((call, site))]
        if scope is None or any(caller is None for caller in callers):
            return None
        mapping: Dict[cst.CSTNode, cst.BaseExpression] = {}
        for name, value in bound.items():
            accesses = [access.node for assignment in scope.assignments[name] for access in assignment.references]
            if len(accesses) != 1 and _evaluates(value):
                # An argument that calls something is evaluated once in the original: read twice
                # or never in the helper, inlining would run it twice or not at all (a random draw).
                return None
            for node in accesses:
                mapping[node] = _wrapped(value)
        read = names_in(returned)
        for index, (target, value) in enumerate(lets):
            accesses = [access.node for assignment in scope.assignments[target.value] for access in assignment.references]
            below = [v for _, v in lets[index + 1 :]] + [returned]
            if len(accesses) != 1 or not any(contains_node(later, accesses[0]) for later in below):
                return None  # read once, below its assignment, or not inlined
            mapping[accesses[0]] = _wrapped(value.visit(_Recorder(mapping, self._origins)))
            read |= names_in(value)
        for name in read - set(bound) - {target.value for target, _ in lets}:
            # A global the helper reads must be the same global where it is called.
            if any(not isinstance(a.scope, (GlobalScope, BuiltinScope)) for caller in callers for a in caller[name]):  # type: ignore[index]
                return None
        result = returned.visit(_Recorder(mapping, self._origins))
        if depth < 2:
            result = self._inline_nested(result, depth, site)
        return result  # type: ignore[return-value]

    def _inline_nested(self, expression: cst.BaseExpression, depth: int, site: cst.Call) -> cst.BaseExpression:
        """`expression` with each outermost call to a helper that a stop-gradient flows into (`self.loss(out,
        [s.detach() for s in xs])`) replaced by that helper's inlined expression, when it holds the
        stop-gradient still (`_inline`, one level deeper)."""
        nested: Dict[cst.CSTNode, cst.BaseExpression] = {}
        for inner in calls_within(expression):
            if any(contains_node(done, inner) for done in nested) or not contains_detach(inner) or detach_receiver(inner) is not None:
                continue
            expanded = self._inline(inner, depth + 1, site)
            if expanded is not None and contains_detach(expanded):
                nested[inner] = expanded if inner is expression else _wrapped(expanded)
        if not nested:
            return expression
        return expression.visit(_Recorder(nested, self._origins))  # type: ignore[return-value]

    def _helper_def(self, func: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        if isinstance(func, cst.Name):
            values = self.classifier.assigned_values(func)
            if values and len(values) == 1 and isinstance(values[0], cst.FunctionDef):
                if isinstance(self.get_metadata(ParentNodeProvider, values[0], None), cst.Module):
                    return values[0]
            return None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            # Also bound elsewhere (a subclass, a mixin, `Trainer.assoc = ...`): still inlined, its calls unknown.
            return self.classifier.inlined_method(func)
        return None

    def _substitute(self, term: Term, new: cst.BaseExpression):
        """(node of the tree, its replacement) for one term: the call itself, or the inlined helper call."""
        if term.site is None:
            return term.call, new
        inlined = term.inlined.visit(Replace({term.call: new}))  # type: ignore[union-attr]
        parent = self.get_metadata(ParentNodeProvider, term.site, None)
        bare = isinstance(parent, (cst.Assign, cst.AugAssign, cst.Arg)) and not term.site.lpar
        if not _atomic(inlined) and not bare:
            inlined = inlined.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return term.site, inlined

    def block(self, block: Sequence[cst.BaseStatement]) -> None:
        runs = backward_runs(block, HarmlessCalls(self.classifier), self.facts.accelerators)
        in_runs = {call.index for run in runs for call in run.calls}
        # One backward is a run of its own: of a sum of losses (`(loss1 + loss2).backward()`, as
        # written or as GF003 leaves a run), or of one loss that holds a pair through a loop.
        for call in backward_calls(block, self.facts.accelerators):
            if call.index not in in_runs and call.plain:
                runs.append(BackwardRun([call], [], []))
        if not runs:
            return
        expansion = expand(
            block, {call.index for run in runs for call in run.calls}, self._inline, self.facts.accelerators, fresh_calls(self.classifier)
        )
        for run in runs:
            self._run(block, run, expansion)

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
        order = {key: n for n, key in enumerate(expansion.terms)}
        candidates = sorted(
            (expansion.terms[key] for key in coefs if key not in objective.tainted and key in expansion.terms),
            key=lambda term: (self._position(term.anchor), order[id(term.call)]),
        )
        used: Set[int] = set()
        pairs = []
        for i, first in enumerate(candidates):
            if id(first) in used:
                continue
            for second in candidates[i + 1 :]:
                if id(second) in used:
                    continue
                # Terms of one body pair up; of two bodies, only those of two fusable loops.
                loops = None
                if first.body is not second.body or first.context != second.context:
                    loops = _fused_loops(block, first, second, expansion)
                    if loops is None:
                        continue
                if first.site is not None and first.site is second.site:
                    continue  # both from one helper call: one loss
                r1, r2 = reach[id(first.call)], reach[id(second.call)]
                if r1 == r2 and len(r1) == 1 and not _accumulated(first, second):
                    continue  # one loss written out: GF002's summed form (opt-in), not this rule's
                match = match_pair(first.call, second.call, self.classifier)
                if match is None:
                    continue
                pairs.append((first, second, match, (r1, r2), loops))
                used.update((id(first), id(second)))
                break
        # Findings (and the names their fixes introduce) in the order of their first terms, the
        # order their fixes are applied in (`Rewrite.first`).
        for first, second, match, reaches, loops in sorted(pairs, key=lambda pair: (self._position(pair[0].anchor), order[id(pair[0].call)])):
            finding = self._finding(block, run, expansion, first, second, match, coefs, reaches, receivers, loops)
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
        loops: Optional[Tuple[cst.For, cst.For]] = None,
    ) -> Optional[Finding]:
        """`loops`: the two loops the terms stand in, when they are fused (`_fused_loops`)."""
        a, b = coefs[id(first.call)], coefs[id(second.call)]
        inverse = a.inverse()
        if inverse is None:
            return None
        ratio = b * inverse
        if ratio * a != b or has_loop_count(ratio.symbols()) or finite(ratio) is None:
            return None  # (`finite`: a ratio the rewrite cannot write as a float literal)
        symbols = [symbol for symbol in dict.fromkeys(a.symbols() + b.symbols()) if not isinstance(symbol, LoopCount)]
        if not all(expansion.symbol_invariant(symbol) for symbol in symbols):
            return None  # the symbols cancel in the ratio only if they hold one value wherever they were used
        # The one evaluation may be either term's: by default the first's, scaled by b/a; the
        # second's, scaled by a/b, where b/a divides by a symbol (`k = 0.0` switching a term off
        # would raise ZeroDivisionError) and a/b does not. Where both do, the fix is proven only
        # if every divisor is a module constant bound to a non-zero number.
        carried_by_second = False
        divisors: List[str] = []
        if _divides(ratio):
            other = self._other_orientation(first, second, a, b)
            if other is not None:
                carried_by_second = True
                match, ratio = other
                if finite(ratio) is None:
                    return None
            else:
                divisors = self._zero_divisors(ratio)
        clauses = [t.comprehension.for_in.iter for t in (first, second) if t.comprehension is not None]  # type: ignore[attr-defined]
        if any(not positions(c) for c in clauses) and not _whole_elements(first, second):
            return None  # (a term inside a larger element is indexed by its position: `range(N)` only)
        reasons = self.safety.reasons(match, ONE, ratio)
        if reasons is None:
            return None  # random calls in the arguments: two different computations
        shadowed = [name for name in _READ_BUILTINS if name in self.facts.binding_counts]
        if shadowed or self.classifier.rebinds(_READ_BUILTINS):
            # Iterations, sums and coefficients are read by their text (`range(len(prior))`,
            # `sum(terms)`): a function of the file by one of these names may give other items or
            # another value on each call.
            names = " and ".join(f"`{n}`" for n in shadowed[:3])
            reasons.add(
                f"the file binds {names}, which gradfix reads as the builtin{'s' if len(shadowed) > 1 else ''}"
                if shadowed
                else "the file may rebind builtins (a star import, `__builtins__`, a write to the `builtins` module, or a global bound through `globals()`, `exec`, `setattr` or an attribute store on a module the file may itself be), which gradfix reads by their names"
            )
        if len(clauses) == 2 and first.comprehension is not second.comprehension:
            # Two comprehensions, each evaluating its clause: an attribute may be read as two values
            # (a property of the file, a store through `__dict__`), where fused loops require names.
            attributes = " and ".join(dict.fromkeys(f"`{code_of(a).strip()}`" for a in read_attributes(clauses[0])))
            if attributes:
                reasons.add(
                    f"the comprehensions iterate `{code_of(clauses[0]).strip()}` (line {self._position(clauses[0])[0]}), which reads "
                    f"{attributes}: each comprehension reads it anew, and gradfix proves one value at both reads only for names"
                )
        for clause in clauses[:1]:  # (fused: both clauses are written alike)
            unproven = [code_of(n).strip() for n in iterated_sequences(clause) or () if not self.safety.sequence(n)]
            if unproven:
                names = " and ".join(f"`{n}`" for n in unproven)
                reasons.add(
                    f"{names} may be {'an iterator' if len(unproven) == 1 else 'iterators'}, which the original's first "
                    f"comprehension exhausts: gradfix proves a list or tuple only from its bindings in the function"
                )
        self._coefficients_bound(expansion, first, ratio, reasons)
        for term in (first, second):
            if term.site is not None and id(term.site) in self._rebound_sites:
                reasons.add(f"`{code_of(term.site.func).strip()}`: {self._rebound_sites[id(term.site)]}")
        for symbol in symbols:
            if self.facts.computed_path(tuple(symbol.split("."))):
                # Cancelled in the ratio only if every read gives one value: a property may not.
                reasons.add(f"coefficient `{symbol}` may be computed anew on each read (a class of the file defines a property or `__getattr__`)")
        if divisors:
            names = " and ".join(f"`{d}`" for d in divisors)
            reasons.add(f"the ratio `{ratio.render()}` divides by {names}, which may be zero")
        # The carrying term's own coefficient multiplies both operands' gradients: if it divides by
        # a module constant bound to zero (`p_loss / z`, `z = 0.0`), the operand it scales by the
        # ratio gets inf * 0 = NaN where the original gave it a finite gradient. (A divisor that
        # is merely not proven non-zero divides the original's loss too: not flagged.)
        carrier_coef = b if carried_by_second else a
        zeros = [d for d in self._zero_divisors(carrier_coef) if self.safety.constants.get(d) == 0]
        if zeros:
            names = " and ".join(f"`{d}`" for d in zeros)
            reasons.add(
                f"the evaluation's coefficient `{carrier_coef.render()}` divides by {names}, bound to zero: "
                f"the other operand's gradient would be inf * 0"
            )
        for symbol in symbols:
            calls = expansion.symbol_maybe_changed(symbol)
            if calls:
                names = ", ".join(f"`{c}()`" for c in dict.fromkeys(calls))
                reasons.add(f"{names} may change `{symbol}` between its uses as a coefficient")
            else:
                reasons.extend(self._coefficient_changes(block, run, expansion, symbol))
        watched = read_paths(first.call) + read_paths(second.call)
        for term in (first, second):
            if term.comprehension is not None:  # its iterations: `range(len(prior))` reads `prior`
                watched += read_paths(term.comprehension.for_in.iter)  # type: ignore[attr-defined]
        for symbol in ratio.symbols():
            watched += read_paths(cst.parse_expression(symbol))
        if loops is not None:
            # Iteration i of the second loop reads what iteration i of the first read: nothing in
            # either loop (any iteration), nor between them, may change an operand, the range or
            # the loop's name. The terms' own evaluations are left out (the callee is the pair's).
            loop_a, loop_b = loops
            watched += read_paths(loop_a.iter) + read_paths(loop_a.target)
            between = [_masked(st, (first.anchor, second.anchor)) for st in loop_a.body.body]  # type: ignore[attr-defined]
            between += list(block[first.top + 1 : second.top])
            between += [_masked(st, (first.anchor, second.anchor)) for st in loop_b.body.body]  # type: ignore[attr-defined]
        else:
            between = list(first.body[first.index + 1 : second.index])
        watched = with_aliases(watched, self.scopes[-1], self.classifier)
        verdict = scan_between(between, watched, HarmlessCalls(self.classifier))
        if verdict.barrier is not None:
            return None
        if verdict.unknown:
            reasons.add(f"{verdict.unknown_text()} between the two evaluations may modify an operand")
        others = self._unproven_calls(first, second, watched)
        if others:
            names = ", ".join(f"`{o}()`" for o in dict.fromkeys(others))
            reasons.add(f"the one evaluation moves before {names}, which gradfix cannot prove unaffected")
        reasons.extend(self._tensor_reads(block, run, expansion, first, second))
        reasons.extend(self._shared_updates(expansion, first, second))
        reasons.extend(self._list_reads(expansion, first, second))
        reasons.extend(self._backpropagated_elsewhere(block, run, expansion, first, second))
        reasons.extend(introspection_reasons(self.scopes[-1], self.line))
        if len(run.calls) > 1:
            reasons.extend(merge_reasons(run, self.scopes[-1], self.line, self.facts, self.classifier))
        else:
            reasons.extend(old_keyword_reasons(run.calls))  # the one call is rewritten in the modern spelling

        if not carried_by_second and _bare(first):
            # The first term's name becomes the one evaluation itself (`s_loss = kl_shared`), and the
            # second takes its copy later: an in-place update of that name in between changes
            # the copy's source (`s_loss += rec`; review, stop 24).
            bound = _bound_name(first.statement.body[0])
            start, end = self.line(first.statement), self.line(second.statement)
            updates = _updated_in_place(self.scopes[-1], bound) if bound is not None else []
            # After the copy is taken, an update changes only the carrier, as in the original.
            update = next((u for u in updates if start <= self.line(u) <= end), None)
            if update is not None:
                reasons.add(
                    f"`{code_of(update).strip()}` (line {self.line(update)}) updates in place the value the fix gives "
                    f"`{bound}`, which the other loss copies later"
                )
        fix = self._fix(run, first, second, match, ratio, reasons, carried_by_second, expansion.twins, loops)
        through = [" + ".join(f"`{receivers[j]}`" for j in reach) for reach in reaches]
        line1 = self.line(first.anchor)
        where = (
            f"line {line1} and here, both in {through[0]}"
            if reaches[0] == reaches[1]
            else f"line {line1}, in {through[0]}, and here, in {through[1]}"
        )
        message = (
            f"`{_inner_callee(first.call)}` evaluated twice with complementary `.detach()` "
            f"({where}), both backpropagated: "
            f"one evaluation with `grad_scale` gives the same values and gradients"
            + (" with one backward" if len(run.calls) > 1 else "")
        )
        if match.swapped:
            message += " (arguments swapped; the callee is symmetric)"
        if loops is not None:
            message += " (two loops over one range: the second reads the first's evaluations)"
        message += old_keyword_note(run.calls)
        if second.site is not None:
            helper = code_of(second.site.func).strip()
            message += f" (`.detach()` inside `{helper}`: `{code_of(second.call).strip()}` here)"
        elif first.site is not None:
            message += f" (`.detach()` inside `{code_of(first.site.func).strip()}` on line {line1})"
        return self.report(second.anchor, message, fix, reasons)

    def _coefficient_changes(self, block: Sequence[cst.BaseStatement], run: BackwardRun, expansion: Expansion, symbol: str) -> List[str]:
        """`symbol` cancels in the ratio only if its uses read one value. `Expansion.symbol_invariant`
        sees stores naming its root; here the statements of the block from its first use to its
        last are scanned as any span a rule must prove unchanged (`between.scan_between`): the
        symbol's paths and every name that may refer to its object (`sched = cfg`, `log = seen`),
        and calls only where proven harmless (`anneal(cfg)`, a function of the file, is not)."""
        uses = expansion.symbol_use_steps(symbol)
        if not uses:
            return []
        found = self._uses_span(block, uses[0], uses[-1])
        if found is None:
            return [f"gradfix cannot place the uses of coefficient `{symbol}` among the statements"]
        # (Both uses in one statement too: `k * s + anneal(cfg) + k * p` reads `k` twice.) The run's
        # backward calls are scanned as their losses: a loss is computed before its backward runs,
        # and hooks are the merge's to vouch for (`merge_reasons`).
        backward = {id(c.call): c.receiver for c in run.calls}
        # `opt.zero_grad()` on a torch optimizer or module only clears gradients: masked where the
        # coefficient is proven to read none (`_zero_grad_cannot_change`).
        cleared = self._torch_zero_grads(found) if self._zero_grad_cannot_change(symbol) else []
        masked = [c.call for c in run.calls] + cleared
        span = [_masked(st, [n for n in masked if contains_node(st, n)], backward) for st in found]
        paths = read_paths(cst.parse_expression(symbol))
        watched = with_aliases(paths, self.scopes[-1], self.classifier)
        # Rebinding another name of the object leaves it as it was (`_symbol_changes` sees the symbol's own).
        rebindable = {path[0] for path in watched if len(path) == 1} - {path[0] for path in paths}
        verdict = scan_between(span, watched, HarmlessCalls(self.classifier, expansion.inlined_sites), rebindable)
        start, end = self.line(found[0]), self.line(found[-1], end=True)
        lines = f"line {start}" if start == end else f"lines {start} to {end}"
        if verdict.barrier is not None:
            # (The scan's texts speak of passes: here the span is the coefficient's uses.)
            return [f"coefficient `{symbol}` may change between its uses ({lines}): {verdict.barrier.replace(' between the two passes', '')}"]
        if verdict.unknown:
            return [f"{verdict.unknown_text()} between the uses of coefficient `{symbol}` ({lines}) may change it"]
        return []

    def _torch_zero_grads(self, statements: Sequence[cst.BaseStatement]) -> List[cst.Call]:
        """The calls `self.X.zero_grad()` (or with `set_to_none=True`/`False`) in `statements` whose
        receiver is proven a torch optimizer, module or scaler (`Backpropagators._torch_attribute`:
        every store into `X` in the file is a torch constructor's, and nothing of the file can run
        by the method's name): torch's `zero_grad` sets the `.grad` of parameters to None or zeroes
        it in place, and changes nothing else (no hook runs for it)."""
        found: List[cst.Call] = []
        for statement in statements:
            for call in all_nodes(statement):
                if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "zero_grad"):
                    continue
                plain_args = all(
                    a.keyword is not None and a.keyword.value == "set_to_none" and not a.star
                    and isinstance(a.value, cst.Name) and a.value.value in ("True", "False")
                    for a in call.args
                )
                if plain_args and self.facts.backpropagators._torch_attribute(call.func.value, "zero_grad"):
                    found.append(call)
        return found

    def _zero_grad_cannot_change(self, symbol: str) -> bool:
        """Whether torch's `zero_grad` cannot change coefficient `symbol` (allowlist): it reads no
        `.grad`, and is `len(path)` (no class of the file defines `__len__`: zero_grad changes no
        length, not even of a gradient it zeroes; it may make `w.grad` None, excluded above), a module
        constant bound to a number, or a name of the function bound only to numbers (`_numeric_names`
        without factories: arithmetic makes new values, never a gradient's alias). A tensor
        coefficient (`k = w.grad[0]`, `self.scale`) may share storage with a gradient zeroed in place."""
        expression = cst.parse_expression(symbol)
        if any(isinstance(n, cst.Attribute) and n.attr.value in ("grad", "_grad") for n in all_nodes(expression)):
            return False
        expression = strip_parens(expression)
        if isinstance(expression, cst.Call):
            func, args = expression.func, expression.args
            return (
                isinstance(func, cst.Name) and func.value == "len" and len(args) == 1 and args[0].keyword is None and not args[0].star
                and access_path(args[0].value) is not None and not self.classifier.may_bind_attribute("__len__")
            )
        if isinstance(expression, cst.Name):
            name = expression.value
            scope = self.scopes[-1]
            if isinstance(scope, cst.Module) or name in binding_counts(scope):
                return name in _numeric_names(scope, frozenset())
            return self.safety.constants.get(name) is not None  # (not bound in the function: the module's)
        return False

    def _list_reads(self, expansion: Expansion, first: Term, second: Term) -> List[str]:
        """A list a term is appended to, reduced after its loop, counts the loop's iterations only if
        nothing else reaches it: its name may be read only by its one `.append(...)` in the loop and
        by the reduction, or counted (`len(lst)`) (allowlist). Any other read (`pad = s_list`, `keep(s_list)`, `[s_list]`)
        may make another name of the same list, through which it may get other items."""
        found: List[str] = []
        terms = {id(first.call), id(second.call)}
        for listed, loop, listed_terms in expansion.reduced_lists:
            if not terms & listed_terms:
                continue
            name = listed.value
            declared = _declared_elsewhere(self.scopes[-1]).get(name)
            if declared is not None:
                # Other functions reach it by its name (at module level, the scan below reads them all).
                found.append(
                    f"list `{name}` is declared `{declared[0]}` (line {self.line(declared[1])}): other functions may give it "
                    f"other items, where gradfix takes its length for the loop's count"
                )
                continue
            allowed = {id(listed)}
            for call in all_nodes(loop.body):
                if not isinstance(call, cst.Call):
                    continue
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == "append" and isinstance(func.value, cst.Name):
                    allowed.add(id(func.value))
            stray = []
            for node in all_nodes(self.scopes[-1]):
                if not isinstance(node, cst.Name) or node.value != name or id(node) in allowed or self._binds_empty_list(node):
                    continue
                if self._len_argument(node):
                    continue  # `len(s_terms)`: a number, no other name of the list
                stray.append(node)
            if stray:
                try:
                    line = f" (line {self.line(stray[0])})"
                except KeyError:
                    line = ""
                found.append(
                    f"list `{name}` is read{line} other than by its append in the loop and its reduction: another name may "
                    f"give it other items, where gradfix takes its length for the loop's count"
                )
        return found

    def _len_argument(self, name: cst.Name) -> bool:
        """Whether `name` is the one argument of `len(...)` (the builtin: `_READ_BUILTINS`)."""
        arg = self.get_metadata(ParentNodeProvider, name, None)
        call = self.get_metadata(ParentNodeProvider, arg, None) if isinstance(arg, cst.Arg) else None
        return (
            isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "len" and len(call.args) == 1
            and arg.keyword is None and not arg.star  # type: ignore[union-attr]
        )

    def _binds_empty_list(self, name: cst.Name) -> bool:
        """Whether `name` is the target of `name = []`."""
        parent = self.get_metadata(ParentNodeProvider, name, None)
        statement = self.get_metadata(ParentNodeProvider, parent, None) if isinstance(parent, cst.AssignTarget) else None
        return isinstance(statement, cst.Assign) and len(statement.targets) == 1 and isinstance(strip_parens(statement.value), cst.List) and not statement.value.elements  # type: ignore[attr-defined]

    def _uses_span(self, block: Sequence[cst.BaseStatement], first: cst.CSTNode, last: cst.CSTNode) -> Optional[List[cst.BaseStatement]]:
        """The statements that run from `first` to `last` (two steps of `block`'s expansion): those of
        the innermost body holding both, from the one holding `first` to the one holding `last`; the
        outermost loop of `block` around them instead, where they stand in one (the next iteration
        reads again). A loop around `block` itself is not one of them: the expansion walks `block`
        once, top down, so every use and every backward of the run are in one pass through it
        (one iteration of such a loop); the next iteration reads each use anew, before its
        backward. None where they cannot be placed (a use outside `block`)."""
        chains = []
        for node in (first, last):
            chain = [node]
            while chain[-1] is not self.scopes[-1]:
                parent = self.get_metadata(ParentNodeProvider, chain[-1], None)
                if parent is None:
                    return None
                chain.append(parent)
            chains.append(chain[::-1])  # from the scope down
        depth = 0
        while depth < min(map(len, chains)) and chains[0][depth] is chains[1][depth]:
            depth += 1
        common = chains[0][: depth]
        # Where `block` starts in the chains: the statement of `block` that holds both uses (or
        # each its own statement of `block`, then no loop of `block` holds both).
        tops = {id(st) for st in block}
        inside = [k for chain in chains for k, node in enumerate(chain) if id(node) in tops]
        if len(inside) != 2:
            return None
        loops = [n for n in common[min(inside) :] if isinstance(n, (cst.For, cst.While))]
        if loops:
            return [loops[0]]
        holder = common[-1]
        if depth >= min(map(len, chains)):
            # One holds the other (one statement): the innermost statement holding both.
            statement = next((n for n in reversed(common) if isinstance(n, cst.BaseStatement)), None)
            return [statement] if statement is not None else None
        body = getattr(holder, "body", None)
        if not isinstance(body, (list, tuple)):
            return None
        children = [chains[0][depth], chains[1][depth]]
        indices = [next((i for i, st in enumerate(body) if st is child), None) for child in children]
        if None in indices:
            return None
        return list(body[indices[0] : indices[1] + 1])  # type: ignore[index,operator]

    def _coefficients_bound(self, expansion: Expansion, first: Term, ratio: Coef, reasons: Reasons) -> None:
        """The one evaluation reads the ratio's symbols where the first term was evaluated: each must
        be bound there, to the value its uses as a coefficient read (`lam = 3.0` after the loop
        would raise UnboundLocalError in the rewrite, a rebinding would scale by the old value)."""
        since = expansion.step_of(first.statement)
        if since is None:
            reasons.add("gradfix cannot place the one evaluation among the statements")
            return
        hoisted = self.line(first.statement)
        scope = self.get_metadata(ScopeProvider, _outside(first), None)
        for symbol in ratio.symbols():
            stores = expansion.symbol_stores_before_uses(symbol, since)
            if not stores:
                continue
            line = self.line(stores[0])
            roots = {path[0] for path in read_paths(cst.parse_expression(symbol))}
            bound = scope is not None and all(self._bound_before(root, scope, hoisted) for root in roots)
            if bound:
                # Bound more than once, hence not a module constant: the binding read is what matters.
                reasons.discard(COEFFICIENT, symbol)
            if line <= hoisted:
                reasons.add(
                    f"`{symbol}` is assigned in the loop around the terms (line {line}): the one evaluation "
                    f"may read another value than its use as a coefficient"
                )
            elif bound:
                reasons.add(f"`{symbol}` is rebound after the terms (line {line}): the one evaluation would read its earlier value")
            else:
                reasons.add(f"`{symbol}` is assigned after the terms (line {line}): the one evaluation would read it before")

    def _bound_before(self, name: str, scope, line: int) -> bool:
        """`name` has a binding before `line` in the function, or one outside it (a global, a parameter, a builtin)."""
        function = self.get_metadata(PositionProvider, self.scopes[-1])
        for assignment in scope[name]:
            node = getattr(assignment, "node", None)
            if node is None:
                return True  # a builtin
            at = self.line(node)
            if at < line or not function.start.line <= at <= function.end.line:
                return True
        return False

    def _zero_divisors(self, ratio: Coef) -> List[str]:
        """Symbols the ratio divides by that may be zero: all but module constants bound to a non-zero number."""
        found: List[str] = []
        for (_, den), _ in ratio.terms:
            for symbol in den:
                value = self.safety.constants.get(symbol) if symbol.isidentifier() else None
                if (value is None or value == 0) and symbol not in found:
                    found.append(symbol)
        return found

    def _other_orientation(self, first: Term, second: Term, a: Coef, b: Coef) -> Optional[tuple]:
        """(the match aligned on the second term, the ratio a/b) when a/b divides by no symbol; else None."""
        inverse = b.inverse()
        if inverse is None:
            return None
        ratio = a * inverse
        if ratio * b != a or _divides(ratio):
            return None
        match = match_pair(second.call, first.call, self.classifier)
        return None if match is None else (match, ratio)

    # -- conditions -------------------------------------------------------------------
    def _unproven_calls(self, first: Term, second: Term, watched) -> List[str]:
        """Calls in the two statements, besides the terms, that the moved evaluation might not commute with."""
        found: List[str] = []
        for statement in dict.fromkeys((first.statement, second.statement)):
            for call in calls_within(statement):
                if contains_node(first.anchor, call) or contains_node(second.anchor, call):
                    continue
                if detach_receiver(call) is not None or harmless_call(call, self.classifier, watched):
                    continue
                found.append(code_of(call.func).strip())
        return found

    def _backpropagated_elsewhere(self, block, run: BackwardRun, expansion: Expansion, first: Term, second: Term) -> List[str]:
        """A backward call of the block outside the run whose loss holds one of the terms.

        The ratio the one evaluation carries balances the run's objective; a term also
        backpropagated by another call (`loss1.backward(...)`, a gradient read, then `loss2` and
        `loss1 * 0.5` as the run) has a coefficient in the whole step that the run does not see.
        """
        keys = {id(first.call), id(second.call)}
        in_run = {c.index for c in run.calls}
        for index in sorted(expansion.losses):
            if index in in_run:
                continue
            if any(key in keys for _, value in expansion.losses[index] for key, _ in value.terms):
                return [
                    f"the backward call on line {self.line(block[index])} also backpropagates these terms, outside "
                    f"the backward calls the fix merges: their coefficients there are not balanced"
                ]
        return []

    def _tensor_reads(self, block: Sequence[cst.BaseStatement], run: BackwardRun, expansion: Expansion, first: Term, second: Term) -> Reasons:
        """Reads of a name that carries the terms, other than the ones the expansion followed or value-only ones.

        After the rewrite the first term carries both gradients and the second
        none: only the run's objective sees the same gradients as before. A
        name read as a tensor elsewhere (`self.last = loss1`, `return s_loss`)
        carries a different gradient if something backpropagates it later. A read after the name
        was bound anew, later in the run's block, does not see it (`unshadowed`).
        """
        keys = {id(first.call), id(second.call)}
        carriers = [name for name, terms in expansion.carriers.items() if terms & keys]
        scope = self.get_metadata(ScopeProvider, _outside(first), None)
        if scope is None:
            return ["gradfix cannot resolve the scope of the losses"]
        receivers = [c.receiver for c in run.calls]
        reasons = Reasons()
        declared = _declared_elsewhere(self.scopes[-1])
        for name in carriers:
            # A carrier stored in another scope (`global G`, `nonlocal G`) is read where this
            # function's scope does not record it (another function, after the call returns).
            if name in declared:
                keyword, node = declared[name]
                reasons.add(
                    f"`{name}` is declared `{keyword}` (line {self.line(node)}): gradfix cannot resolve its reads "
                    f"in other scopes, and it carries different gradients after the rewrite"
                )
                continue
            if not scope.assignments[name] or any(a.scope is not scope for a in scope[name]):
                reasons.add(f"gradfix cannot resolve the reads of `{name}`: it carries different gradients after the rewrite")
                continue
            others = (
                access.node
                for assignment in scope.assignments[name]
                for access in assignment.references
                if id(access.node) not in expansion.consumed and not any(contains_node(r, access.node) for r in receivers)
            )
            others = self.unshadowed(name, block, run.calls[-1].index, others)
            others = sorted(others, key=self._position_key)
            sensitive = next(((node, text) for node in others for text in [self._grad_sensitive_read(node)] if text), None)
            if sensitive is not None:
                node, text = sensitive
                reasons.add(
                    f"{text[0]} (line {self.line(node)}) {text[1]} `{name}` requires grad: after the rewrite it carries "
                    f"the other term's gradient, and may require grad where it did not"
                )
                continue
            read = self.tensor_read(name, others, "it carries different gradients after the rewrite")
            if read is not None:
                reasons.add(read)
        return reasons

    def _grad_sensitive_read(self, node: cst.CSTNode) -> Optional[Tuple[str, str]]:
        """The text and the verb of a read of `node` whose outcome depends on whether the tensor requires grad, or None:
        its autograd state (`name.requires_grad`, `.grad_fn`, `.is_leaf`, also of an expression derived from it:
        `name.view(1).requires_grad`, `(name * 1).grad_fn is None`), or a `.numpy()` (it raises
        where the tensor requires grad) anywhere in the statement that reads it, since a value derived
        from it requires grad as it does (`name.view(1).numpy()`, `(name + 0).numpy()`). The rewrite makes
        the carrier require grad wherever the other operand does, even where its own live operand did
        not (a frozen source)."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        # The expression that holds the read, up to its statement (a compound statement's header
        # expression, not its body). The autograd state of any expression on the way, whose value is
        # derived from the read (`name.view(1).requires_grad`, `(name * 1).grad_fn`): it requires grad
        # where the name does.
        top: cst.CSTNode = node
        while parent is not None and not isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.Module)):
            if isinstance(parent, cst.Attribute) and parent.value is top and parent.attr.value in AUTOGRAD_STATE_ATTRIBUTES:
                return f"`{code_of(parent).strip()}`", "reads whether"
            top, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        root = parent if isinstance(parent, cst.BaseSmallStatement) else top
        nodes = all_nodes(root)
        # Names the statement binds to what it iterates or computes (`[t.requires_grad for t in
        # (name,)]`, `(t := name)`, `lambda t: ...`): their autograd state may be the read's.
        bound: Set[str] = set()
        for found in nodes:
            if isinstance(found, cst.CompFor):
                bound.update(bound_names(found.target))
            elif isinstance(found, cst.NamedExpr):
                bound.update(bound_names(found.target))
            elif isinstance(found, cst.Lambda):
                bound.update(p.name.value for p in all_nodes(found.params) if isinstance(p, cst.Param))
        for found in nodes:
            if isinstance(found, cst.Attribute) and found.attr.value in REQUIRES_GRAD_SENSITIVE:
                return f"`{code_of(found).strip()}()`", "raises where"
            if (
                isinstance(found, cst.Attribute)
                and found.attr.value in AUTOGRAD_STATE_ATTRIBUTES
                and bound
                and any(isinstance(n, cst.Name) and n.value in bound for n in all_nodes(found.value))
            ):
                return f"`{code_of(found).strip()}`", "may read whether"
        # A tensor's str and repr show its autograd state (`tensor(2.02, grad_fn=<AddBackward0>)`): the
        # read, or a value derived from it (`[name]`, `name * 1`), printed or formatted as text (review,
        # round 6). `.item()`, `.detach()`, `.shape` on the way end it in a value; an f-string's `{name}`
        # formats a number (a 0-dim tensor's `__format__`), but not with `!r` or `!s`, nor a display
        # that holds it (`f"{[name]}"` shows the tensor's repr).
        child, parent = node, self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and not isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.Module)):
            if isinstance(parent, cst.Attribute) and parent.value is child and parent.attr.value in VALUE_METHODS | _SHAPE_ATTRIBUTES:
                break
            if isinstance(parent, cst.Call) and parent.func is not child:
                func = parent.func
                if (isinstance(func, cst.Name) and func.value in _AS_TEXT) or (isinstance(func, cst.Attribute) and func.attr.value == "format"):
                    return f"`{code_of(parent).strip()}`", "shows whether"
                if isinstance(func, cst.Name) and func.value == "format" and parent.args and parent.args[0] is child:
                    # `format(x)`, `format(x, spec)`: as `f"{x:spec}"` (review, round 7).
                    spec = parent.args[1].value if len(parent.args) > 1 else None
                    if any(a.star or a.keyword is not None for a in parent.args) or len(parent.args) > 2 or not (
                        _nonempty_literal_spec(spec) or self._proven_scalar(child.value)
                    ):
                        return f"`{code_of(parent).strip()}`", "shows whether"
                break
            if isinstance(parent, cst.FormattedStringExpression):
                if parent.conversion in ("r", "s", "a") or isinstance(child, (cst.List, cst.Tuple, cst.Set, cst.Dict)):
                    return f"`{code_of(parent).strip()}`", "shows whether"
                # A tensor's `__format__` formats a 0-dim tensor as a number; any other shows its str,
                # autograd state and all (`f"{x.view(1)}"`), and so does `f"{x=}"` (its repr). A spec
                # (`:.3f`) formats a number or raises, either way alike (review, round 7).
                spec = parent.format_spec
                literal = spec is not None and all(isinstance(part, cst.FormattedStringText) for part in spec) and "".join(
                    part.value for part in spec  # type: ignore[union-attr]
                )
                if not literal and (parent.equal is not None or not self._proven_scalar(child)):
                    return f"`{code_of(parent).strip()}`", "shows whether"
                break
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Modulo) and parent.right is child:
                return f"`{code_of(parent).strip()}`", "shows whether"
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        return None

    def _proven_scalar(self, expression: cst.BaseExpression) -> bool:
        """Whether `expression` is proven a 0-dim tensor or a number (`_scalar`), its names resolved in
        the function that holds the losses, else the module (review, round 7)."""
        names = _ScalarNames(self.scopes[-1], self.scopes[0], lambda attr: not self.classifier.may_bind_attribute(attr))
        return _scalar(expression, names, set())

    def _shared_updates(self, expansion: Expansion, first: Term, second: Term) -> List[str]:
        """An in-place `+=` on a name carrying the terms, where another name may hold the same object
        (`s = p = torch.zeros(())`, `p = s`, `s = rec`) or the name was not bound in the block: the
        expansion read it as a rebinding, and so the terms' coefficients in the other name are not
        what it found (review, stop 24)."""
        keys = {id(first.call), id(second.call)}
        for name, node in expansion.shared_updates:
            if expansion.carriers.get(name, set()) & keys:
                what = f"the loop at line {self.line(node)} adds" if isinstance(node, cst.For) else f"`{code_of(node).strip()}` (line {self.line(node)}) adds"
                return [f"{what} in place to `{name}`, whose object another name may hold: the terms' coefficients there are not proven"]
        return []

    # -- the rewrite ----------------------------------------------------------------
    def _fix(
        self,
        run: BackwardRun,
        first: Term,
        second: Term,
        match: PairMatch,
        ratio: Coef,
        reasons: Reasons,
        carried_by_second: bool = False,
        twins: Optional[Dict[int, cst.SimpleStatementLine]] = None,
        loops: Optional[Tuple[cst.For, cst.For]] = None,
    ) -> Rewrite:
        """One evaluation before the first term's statement; the term that carries it takes its
        name, the other its detached value. `match` is aligned on the carrying term and `ratio` is
        the other's coefficient over its own. Terms in the accumulating branch of a loop's
        `if u == 0: acc = e else: acc += e` get the same change in the resetting branch (`twins`)."""
        carrier = second if carried_by_second else first
        merged, ops = merged_call(carrier.call, match, ONE, ratio, self.ctx.grad_scale_name, module_op(match, self.ctx.op_names))
        callee = _inner_callee(first.call)
        last = callee.rsplit(".", 1)[-1]
        name = self._names.fresh(f"{last}_shared" if last.isidentifier() else "shared_term", self.scopes)
        replacements: Dict[cst.CSTNode, List[cst.BaseStatement]] = {}
        if loops is not None:
            # Two loops over one `range(N)`: each iteration of the first evaluates once, and appends
            # to a list made before the loop the value the second loop's term takes at item `u`
            # (iteration `u`'s): detached, or the one carrying both gradients.
            loop_a = loops[0]
            values = self._names.fresh(f"{last}_values" if last.isidentifier() else "shared_values", self.scopes)
            replacements[loop_a] = [_empty_list(values), loop_a]
            hoisted = hoisted_assign(first.statement, name, merged)
            # A copy where a term stands alone: the list item must not share memory with a name the
            # loop body may change in place (`build.detached`).
            kept = cst.Name(name) if carried_by_second else detached(name, copy=_bare(first) or _bare(second))
            appended = _appended(first.statement, values, kept)
        elif carrier.comprehension is not None:
            # Fused comprehensions: the one evaluation is a list, one element per iteration, built
            # where the first was.
            hoisted = hoisted_assign(first.statement, name, _listed(merged, carrier.comprehension))
        else:
            hoisted = hoisted_assign(first.statement, name, merged)
        if loops is not None:
            item = cst.Subscript(value=cst.Name(values), slice=[cst.SubscriptElement(cst.Index(cst.Name(loops[0].target.value)))])  # type: ignore[attr-defined]
            new_first = self._substitute(first, detached(name, _bare(first)) if carried_by_second else cst.Name(name))
            new_second = self._substitute(second, item)
        elif carrier.comprehension is not None and _whole_elements(first, second):
            # The carrying comprehension becomes that list, the other its detached elements
            # (`[v.detach() for v in kl_shared]`).
            new_first = (first.comprehension, _detached_list(name) if carried_by_second else cst.Name(name))
            new_second = (second.comprehension, cst.Name(name) if carried_by_second else _detached_list(name))
        elif carrier.comprehension is not None:
            # Terms inside larger elements: each takes its iteration's item of the list
            # (`kl_shared[u]`; the clause is `range(N)`, so `u` is the position).
            new_first = self._substitute(first, _item(name, first, detach=carried_by_second))
            new_second = self._substitute(second, _item(name, second, detach=not carried_by_second))
        else:
            new_first = self._substitute(first, detached(name, _bare(first)) if carried_by_second else cst.Name(name))
            new_second = self._substitute(second, cst.Name(name) if carried_by_second else detached(name, _bare(second)))
        if loops is not None:
            replaced = first.statement.visit(Replace(dict([new_first])))
            replacements[first.statement] = [hoisted, appended, replaced.with_changes(leading_lines=[])]  # type: ignore[attr-defined]
            replacements[second.statement] = [second.statement.visit(Replace(dict([new_second])))]  # type: ignore[list-item]
        elif first.statement is second.statement:
            both = first.statement.visit(Replace(dict([new_first, new_second])))
            replacements[first.statement] = [hoisted, both.with_changes(leading_lines=[])]  # type: ignore[attr-defined]
        else:
            replaced = first.statement.visit(Replace(dict([new_first])))
            replacements[first.statement] = [hoisted, replaced.with_changes(leading_lines=[])]  # type: ignore[attr-defined]
            replacements[second.statement] = [second.statement.visit(Replace(dict([new_second])))]  # type: ignore[list-item]
        for statement in dict.fromkeys((first.statement, second.statement)):
            twin = (twins or {}).get(id(statement))
            if twin is not None:
                replacements[twin] = _twin_statements(twin, replacements[statement], statement is first.statement, name, merged)
        description = f"Evaluate `{callee}` once with `grad_scale`; the other loss takes its value, detached"
        if len(run.calls) > 1:
            # One backward of the sum (GF003's rewrite) is part of the fix: a
            # loss made only of detached values would make its own `backward()` raise.
            replacements.update(merged_backward(run.calls))
            rendered = " + ".join(code_of(strip_parens(c.receiver)).strip() for c in run.calls)
            description += f"; backpropagate `{rendered}` once"
        elif run.calls[0].old_spelling:
            # The one backward is kept, in the spelling torch reads (its statement may hold a term
            # the fix has changed already: `modern_spelling` finds the call by shape).
            statement = run.calls[0].statement
            kept = replacements.get(statement, [statement])
            replacements[statement] = [modern_spelling(s) if isinstance(s, cst.SimpleStatementLine) else s for s in kept]
        return Rewrite(
            safe=not reasons,
            replacements=replacements,
            description=description,
            unsafe_reason=reasons.text(),
            imports=self.ctx.imports_for(*ops),
            first=self._position(first.anchor),
        )


def _nonempty_literal_spec(spec: Optional[cst.BaseExpression]) -> bool:
    """A format spec given as a non-empty string literal (`format(x, ".3f")`)."""
    if not isinstance(spec, cst.SimpleString):
        return False
    try:
        return bool(spec.evaluated_value)
    except Exception:  # noqa: BLE001 - an odd literal: not proven
        return False


# Reductions to a 0-dim tensor, called with no argument as a method (`x.mean()`) or with one positional
# argument as a function of `torch` (`torch.mean(x)`).
_FULL_REDUCTIONS = frozenset({"mean", "sum", "prod", "norm", "max", "min", "amax", "amin", "std", "var", "item"})


class _ScalarNames:
    """The values bound to a name in `scope` (else in `module`) where each binding is a plain one
    (`x = v`, `x += v`, `x: T = v`) and nothing updates it in place, hands it to a call that may
    (`torch.Tensor.unsqueeze_(x, 0)`, `getattr`) or stores an attribute into it (`x.data = v`); None
    where any binding is of another form (binding_counts: a loop target, an import, a parameter,
    `global`) or the module's names may be bound unseen (`dynamic_global`)."""

    def __init__(self, scope: cst.CSTNode, module: cst.Module, torch_method: Callable[[str], bool] = lambda attr: False) -> None:
        self.scope, self.module = scope, module
        # Whether `x.<attr>()` is torch's (or numpy's) method by its name: the file binds no attribute
        # of that name (a method of its classes, `setattr`, ...: `CalleeClassifier.may_bind_attribute`).
        self.torch_method = torch_method
        self._cache: Dict[int, Tuple[Dict[str, int], Dict[str, List[cst.BaseExpression]], Set[str]]] = {}

    def _facts(self, tree: cst.CSTNode):
        if id(tree) not in self._cache:
            values: Dict[str, List[cst.BaseExpression]] = {}
            touched: Set[str] = set()

            class Walk(cst.CSTVisitor):
                def visit_Assign(self, node: cst.Assign) -> None:
                    for target in node.targets:
                        if isinstance(target.target, cst.Name):
                            values.setdefault(target.target.value, []).append(node.value)
                        elif isinstance(target.target, cst.Attribute):
                            root = target.target.value
                            while isinstance(root, (cst.Attribute, cst.Subscript)):
                                root = root.value
                            if isinstance(root, cst.Name):
                                touched.add(root.value)

                def visit_AugAssign(self, node: cst.AugAssign) -> None:
                    if isinstance(node.target, cst.Name):
                        # (`binding_counts` counts an augmented assignment twice: listed twice.)
                        values.setdefault(node.target.value, []).extend([node.value, node.value])

                def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                    if isinstance(node.target, cst.Name) and node.value is not None:
                        values.setdefault(node.target.value, []).append(node.value)

                def visit_Call(self, node: cst.Call) -> None:
                    name = last_name(node.func)
                    if name is not None and (is_inplace_name(name) or name.startswith("__") or name in ("getattr", "setattr", "vars")):
                        for part in [node.func, *(a.value for a in node.args)]:
                            root = part
                            while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
                                root = root.func if isinstance(root, cst.Call) else root.value
                            if isinstance(root, cst.Name):
                                touched.add(root.value)

            walk_tree(tree, Walk())
            touched |= _handed_names(tree)
            self._cache[id(tree)] = (binding_counts(tree), values, touched)
        return self._cache[id(tree)]

    def values(self, name: str) -> Optional[List[cst.BaseExpression]]:
        counts, values, touched = self._facts(self.scope)
        if counts.get(name, 0) == 0 and self.scope is not self.module:
            if dynamic_global(self.module) is not None:
                return None
            counts, values, touched = self._facts(self.module)
        found = values.get(name, [])
        if name in touched or not found or len(found) != counts.get(name, 0):
            return None
        return found


# Methods whose call reads a tensor and hands on no reference to it (a view has its own shape).
_SHAPE_KEEPING_METHODS = FRESH_METHODS | VIEW_METHODS | {"item", "tolist", "backward", "detach"}
_READING_FUNCTIONS = frozenset({"print", "float", "int", "bool", "str", "repr", "format", "len", "round", "isinstance"})


def _handed_names(tree: cst.CSTNode) -> Set[str]:
    """Names read somewhere in `tree` other than as an operand, in an f-string, as the receiver of a
    method that keeps no reference (`_SHAPE_KEEPING_METHODS`), or given to a reading builtin: bound to
    another name (`z2 = z; z2.unsqueeze_(0)`), handed to a call (`grow(z)`), put in a display,
    returned. Such a name's object may change its shape under another name."""
    handed: Set[str] = set()

    class Walk(cst.CSTVisitor):
        def __init__(self) -> None:
            self.parents: List[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.Name) and self.parents and node.value not in handed and not self._harmless(node):
                handed.add(node.value)
            self.parents.append(node)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.parents.pop()

        def _harmless(self, node: cst.Name) -> bool:
            parent = self.parents[-1]
            grand = self.parents[-2] if len(self.parents) > 1 else None
            if isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)) and getattr(parent, "target", None) is node:
                return True  # a binding (`binding_counts` sees it)
            if isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName, cst.Global, cst.Nonlocal, cst.NameItem)):
                return True
            if isinstance(parent, cst.Attribute):
                if parent.attr is node:
                    return True  # an attribute's name, no read
                return parent.attr.value in _SHAPE_KEEPING_METHODS and isinstance(grand, cst.Call) and grand.func is parent
            if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget, cst.FormattedStringExpression)):
                return True
            if isinstance(parent, cst.Arg) and parent.value is node and isinstance(grand, cst.Call):
                if isinstance(grand.func, cst.Name) and grand.func.value in _READING_FUNCTIONS:
                    return True
                return False
            if isinstance(parent, cst.Call) and parent.func is node:
                return True  # called: a function's name
            return False

    walk_tree(tree, Walk())
    return handed


def _scalar(expression: cst.BaseExpression, names: _ScalarNames, visiting: Set[str]) -> bool:
    """A number or a 0-dim tensor: a number literal; arithmetic on such values (broadcasting keeps
    0 dims); a full reduction (`x.mean()`, `torch.sum(x)`, `x.item()`); a name every binding of which
    is one (`_ScalarNames`). Not a tensor of any other shape (`x.view(1)`), whose `__format__` shows
    its autograd state."""
    if isinstance(expression, (cst.Integer, cst.Float)):
        return True
    if isinstance(expression, cst.UnaryOperation):
        return _scalar(expression.expression, names, visiting)
    if isinstance(expression, cst.BinaryOperation):
        if not isinstance(expression.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)):
            return False
        return _scalar(expression.left, names, visiting) and _scalar(expression.right, names, visiting)
    if isinstance(expression, cst.Name):
        if expression.value in visiting:
            return True  # (`s = s + x`: what enters the cycle is checked where it enters)
        values = names.values(expression.value)
        if values is None:
            return False
        visiting.add(expression.value)
        try:
            return all(_scalar(value, names, visiting) for value in values)
        finally:
            visiting.discard(expression.value)
    if isinstance(expression, cst.Call) and isinstance(expression.func, cst.Attribute):
        func = expression.func
        if func.attr.value not in _FULL_REDUCTIONS:
            return False
        if not expression.args:
            # `x.mean()`, judged by its name: not where a class of the file defines `mean` (or the
            # file may bind it otherwise), whose instance may be `x` (review, round 8).
            return names.torch_method(func.attr.value)
        text = code_of(func).strip()
        return (
            text == f"torch.{func.attr.value}" and len(expression.args) == 1
            and expression.args[0].keyword is None and not expression.args[0].star
        )
    return False


def _outside(term: Term) -> cst.CSTNode:
    """A node of the term's statement in the function's own scope (a comprehension's element is
    in the comprehension's scope; the comprehension itself is not)."""
    return term.comprehension if term.comprehension is not None else term.anchor


def _is_detached_name(node: cst.BaseExpression, name: str) -> bool:
    """`name.detach()`, as written."""
    return (
        isinstance(node, cst.Call)
        and not node.args
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "detach"
        and isinstance(node.func.value, cst.Name)
        and node.func.value.value == name
    )


def _bound_name(small: cst.BaseSmallStatement) -> Optional[str]:
    """`name` in `name = ...` or `name: T = ...`; None for any other target."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
        return small.target.value
    return None


def _updated_in_place(scope: cst.CSTNode, name: str) -> List[cst.CSTNode]:
    """The parts of `scope` that may update what `name` holds in place, in walk order: `name += x`,
    `name[i] = x`, `name[i] += x`, `name.add_(x)` or `name[i].add_(x)` (an in-place method)."""
    found: List[cst.CSTNode] = []

    def rooted(node: cst.BaseExpression) -> bool:
        node = strip_parens(node)
        while isinstance(node, (cst.Subscript, cst.Attribute)):
            node = strip_parens(node.value)
        return isinstance(node, cst.Name) and node.value == name

    class Find(cst.CSTVisitor):
        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if rooted(node.target):
                found.append(node)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, (cst.Subscript, cst.Attribute)) and rooted(node.target):
                found.append(node.target)

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and (is_inplace_call(node) or is_inplace_name(node.func.attr.value)) and rooted(node.func.value):
                found.append(node)

    walk_tree(scope, Find())
    return found


def _bare(term: Term) -> bool:
    """The term is the whole value its statement binds a name to (`p = kl(s, q.detach())`, or a
    helper call standing for the term): replaced by the detached value, the name would share
    the one evaluation's memory (`build.detached`)."""
    small = term.statement.body[0]
    if not isinstance(small, (cst.Assign, cst.AnnAssign)) or small.value is not term.anchor:
        return False
    return term.site is None or term.inlined is term.call


def _fused_loops(block: Sequence[cst.BaseStatement], first: Term, second: Term, expansion: Expansion) -> Optional[Tuple[cst.For, cst.For]]:
    """(first loop, second loop) when the terms stand directly in the bodies of two `for` loops of
    the block, one after the other, written `for u in range(N)` alike, `N` read from names only (`loop_shapes.local_positions`: item
    `u` of a list appended once per iteration is iteration `u`'s), with no `else`, and neither
    term in a reset branch; else None. The rule then checks that nothing in or between the
    loops changes what the terms, the range or `u` read."""
    if len(first.context) != 1 or len(second.context) != 1 or first.comprehension is not None or second.comprehension is not None:
        return None
    loop_a, loop_b = first.context[0], second.context[0]
    if not (isinstance(loop_a, cst.For) and isinstance(loop_b, cst.For)) or loop_a is loop_b:
        return None
    if first.top >= second.top or block[first.top] is not loop_a or block[second.top] is not loop_b:
        return None
    if id(first.statement) in expansion.twins or id(second.statement) in expansion.twins:
        return None
    for loop, term in ((loop_a, first), (loop_b, second)):
        if loop.orelse is not None or loop.asynchronous is not None or not isinstance(loop.body, cst.IndentedBlock):
            return None
        if term.body is not loop.body.body or not isinstance(loop.target, cst.Name) or not local_positions(loop.iter):
            return None
    if loop_a.target.value != loop_b.target.value or not same_expr(loop_a.iter, loop_b.iter):  # type: ignore[attr-defined]
        return None
    return loop_a, loop_b


def _masked(statement: cst.BaseStatement, nodes: Sequence[cst.CSTNode], by: Optional[Dict[int, cst.CSTNode]] = None) -> cst.BaseStatement:
    """`statement` with each of `nodes` in it replaced by the name `_` (or by `by[id(node)]`, a node
    of the tree). Every subtree that holds none of them stays the tree's own object, so the
    classifier's metadata still applies to it."""
    masked = {id(node) for node in nodes}
    by = by or {}

    class Mask(cst.CSTTransformer):
        def __init__(self) -> None:
            super().__init__()
            self.changed = [False]

        def on_visit(self, node: cst.CSTNode) -> bool:
            if id(node) in masked:
                return False
            self.changed.append(False)
            return True

        def on_leave(self, original_node, updated_node):  # type: ignore[override]
            if id(original_node) in masked:
                self.changed[-1] = True
                return by.get(id(original_node), cst.Name("_"))
            if self.changed.pop():
                self.changed[-1] = True
                return updated_node
            return original_node

    return statement.visit(Mask())  # type: ignore[return-value]


def _empty_list(name: str) -> cst.SimpleStatementLine:
    """`name = []`, to go just before a loop (which keeps its own comment lines)."""
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=cst.List([]))])


def _appended(template: cst.SimpleStatementLine, name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    """`name.append(value)`, to go between a hoisted evaluation and `template`."""
    call = cst.Call(func=cst.Attribute(value=cst.Name(name), attr=cst.Name("append")), args=[cst.Arg(value)])
    return template.with_changes(body=[cst.Expr(value=call)], leading_lines=[], trailing_whitespace=cst.TrailingWhitespace())


def _whole_elements(first: Term, second: Term) -> bool:
    """Both terms are their comprehensions' whole elements (no helper inlined)."""
    return all(t.comprehension is not None and t.site is None and t.call is t.comprehension.elt for t in (first, second))  # type: ignore[attr-defined]


def _item(name: str, term: Term, detach: bool) -> cst.BaseExpression:
    """`name[u]` (or `name[u].detach()`) for a term of a comprehension over `u`."""
    target = term.comprehension.for_in.target.value  # type: ignore[union-attr]
    item = cst.Subscript(value=cst.Name(name), slice=[cst.SubscriptElement(cst.Index(cst.Name(target)))])
    return detached(item) if detach else item


def _listed(element: cst.BaseExpression, comprehension: cst.CSTNode) -> cst.ListComp:
    """`[element for u in range(...)]` with the comprehension's own clause."""
    return cst.ListComp(elt=element, for_in=comprehension.for_in.deep_clone())  # type: ignore[attr-defined]


def _detached_list(name: str) -> cst.ListComp:
    """`[v.detach() for v in name]`: the list's values without gradient, in order."""
    return cst.ListComp(
        elt=detached("v"), for_in=cst.CompFor(target=cst.Name("v"), iter=cst.Name(name))
    )


def _twin_statements(
    twin: cst.SimpleStatementLine, new: List[cst.BaseStatement], hoists: bool, name: str, merged: cst.BaseExpression
) -> List[cst.BaseStatement]:
    """The replacement of a statement's twin in the resetting branch of a reset-or-accumulate `if`
    (`loop_shapes.reset_branches`), from the statement's own (`new`, with the one evaluation first
    where `hoists`): the same one evaluation before it, and the same new statement, except that a
    reset pair's twin keeps its `acc = ...` where the statement had `acc += ...`."""
    updated = new[-1]
    small = updated.body[0]  # type: ignore[attr-defined]
    if isinstance(small, cst.AugAssign) and isinstance(twin.body[0], cst.Assign):
        value = small.value.deep_clone()
        if _is_detached_name(value, name):
            value = detached(name, copy=True)  # `acc = kl_shared.detach()` would share its memory (`build.detached`)
        last = twin.with_changes(body=[twin.body[0].with_changes(value=value)])
    else:
        last = twin.with_changes(body=[small.deep_clone()])  # written alike in both branches
    if not hoists:
        return [last]
    return [hoisted_assign(twin, name, merged.deep_clone()), last.with_changes(leading_lines=[])]


def _declared_elsewhere(function: cst.CSTNode) -> Dict[str, tuple]:
    """Names a function declares `global` or `nonlocal` (not those of nested functions): name -> (keyword, statement)."""
    found: Dict[str, tuple] = {}

    class Collect(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Global(self, node: cst.Global) -> None:
            for item in node.names:
                found.setdefault(item.name.value, ("global", node))

        def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
            for item in node.names:
                found.setdefault(item.name.value, ("nonlocal", node))

    if isinstance(function, cst.FunctionDef):
        walk_tree(function, Collect())
    return found


def _divides(ratio: Coef) -> bool:
    """The coefficient divides by a symbol (one of its monomials has a symbolic divisor)."""
    return any(den for (_, den), _ in ratio.terms)


def _accumulated(first: Term, second: Term) -> bool:
    """Two terms of one loss that reach it through a loop, from different statements.

    DCdetector's step: `series_loss += kl(s, p.detach()) ...` and `prior_loss +=
    kl(s.detach(), p) ...` per layer, then `(prior_loss - series_loss).backward()`
    through one name. GF002 takes a pair of one loss written out in one sum (or
    in names defined by one term each), and cannot rewrite a loop.
    """
    return in_iterations(first.context) and first.statement is not second.statement


def _inner_callee(call: cst.Call) -> str:
    """The function a term evaluates: `torch.mean(kl(p, q.detach()))` -> `kl`."""
    core, _ = core_call(call)
    while True:
        text = code_of(core.func).strip()
        inner = [a.value for a in core.args if contains_detach(a.value)]
        if text.rsplit(".", 1)[-1] in REDUCTIONS and len(inner) == 1:
            value = strip_parens(inner[0])
            if isinstance(value, cst.Call) and detach_receiver(value) is None:
                core, _ = core_call(value)
                continue
        return text


def _scales_by_parameter(expression: cst.BaseExpression, params: Set[str], lets: Dict[str, cst.BaseExpression]) -> bool:
    """Some parameter among `params` is read in `expression` only outside every call, through
    sums, products, negations and means (`frob - lambda_ * norm(d(P, S))`, `torch.mean(x - lambda_ *
    d)`), or in the value of a local read there (`lets`): a weight of the returned combination,
    not an operand (`p * log(p)` reads `p` inside a call too)."""
    outside: Set[str] = set()
    inside: Set[str] = set()

    def walk(node: cst.BaseExpression, seen: FrozenSet[str]) -> None:
        bare = strip_parens(node)
        if isinstance(bare, cst.Name):
            if bare.value in params:
                outside.add(bare.value)
            elif bare.value in lets and bare.value not in seen:
                walk(lets[bare.value], seen | {bare.value})
        elif isinstance(bare, cst.BinaryOperation):
            walk(bare.left, seen)
            walk(bare.right, seen)
        elif isinstance(bare, cst.UnaryOperation):
            walk(bare.expression, seen)
        elif isinstance(bare, cst.Call) and mean_operand(bare) is not None:
            walk(mean_operand(bare), seen)  # type: ignore[arg-type]
        else:
            inside.update(names_in(bare) & params)

    walk(expression, frozenset())
    for value in lets.values():
        for call in calls_within(value):
            inside.update(names_in(call) & params)
    return bool(outside - inside)


def _evaluates(value: cst.BaseExpression) -> bool:
    """Whether evaluating `value` calls anything but a stop-gradient (`x + noise()`, `f(x)`)."""
    return any(detach_receiver(call) is None for call in calls_within(value))


def _wrapped(value: cst.BaseExpression) -> cst.BaseExpression:
    """`value` in parentheses unless it is atomic: it replaces a name inside a larger expression."""
    return value if _atomic(value) else value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _atomic(node: cst.BaseExpression) -> bool:
    return isinstance(
        node, (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer, cst.Float, cst.List, cst.ListComp, cst.SimpleString)
    ) or bool(getattr(node, "lpar", None))


class _Recorder(Replace):
    """Replace the parameters; remember which helper node each rebuilt node comes from."""

    def __init__(self, mapping, origins) -> None:
        super().__init__(mapping, keep_parens=False)
        self.origins = origins

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        result = super().on_leave(original_node, updated_node)
        if original_node not in self.mapping and result is not original_node:
            self.origins[id(result)] = (result, original_node)
        return result
