"""The visitor of gf002_detached_sum (named by that module's VISITOR; the registry imports it on first use)."""

from __future__ import annotations

from gradfix.rules.gf002_detached_sum import CODE
from gradfix.reasons import COEFFICIENT, Reason, Reasons

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.metadata import GlobalScope, ParentNodeProvider, ScopeProvider

from gradfix.analysis.exprs import (
    access_path,
    binding_counts,
    attributes_within,
    calls_within,
    code_of,
    contains_detach,
    contains_node,
    detach_receiver,
    is_literal,
    last_name,
    own_scope_binding_counts,
    read_paths,
    scope_bindings,
    string_value,
    strip_parens,
)
from gradfix.analysis.linear import Coef, cancels, parse_coef, split_linear
from gradfix.analysis.between import HarmlessCalls, harmless_call, scan_between, stores_into, with_aliases
from gradfix.analysis.backward import definition, implicit_dunder_reasons, store_targets
from gradfix.analysis.introspection import introspection_reasons
from gradfix.analysis.callees import tensor_result
from gradfix.analysis.merge import MergeSafety, match_pair
from gradfix.fixes.build import FreshNames, Replace, detached, hoisted_assign, merged_call, module_op, name_stem, names_in
from gradfix.fixes.sums import SUM_OPS, remove_term, sum_without
from gradfix.findings import Finding
from gradfix.fixes.rewrite import Rewrite
from gradfix.rules._blocks import BlockVisitor
from gradfix.analysis.loops import function_parameters
from gradfix.analysis.statements import class_defs, is_method
from gradfix.analysis.vocabulary import BUILTIN_NAMES, is_nn_class
from gradfix.analysis.walk import node_types, nodes_of_type, walk_tree

_STOP_TEXT = re.compile("detach|data")



# What holds a term's value: a name, or an attribute of a name (`self.vq_loss`).
Held = Union[cst.Name, cst.Attribute]


@dataclass
class Branch:
    """One branch's binding of a term's name, for a name bound in both branches of an `if`/`else`
    (`if ema: e = f(...)` / `else: e = f(...) * s`): `body[index]` is `name = c * f(...)`."""

    body: Sequence[cst.BaseStatement]
    index: int
    coef: Coef  # the term's coefficient in the sum through this binding
    call: cst.Call
    target: cst.Name
    tests: Tuple[cst.BaseExpression, ...] = ()  # the tests of the chain evaluated before this branch runs


@dataclass
class Term:
    """A term of a sum that evaluates a call holding stop-gradients."""

    node: cst.BaseExpression  # the term as written in the sum
    sign: int  # its sign in the sum
    coef: Coef  # its coefficient (through its definition when the term is a name)
    call: cst.Call
    # When the term is a name (or an attribute, `self.vq_loss`): its `name = coef * f(...)` statement in the block.
    def_index: Optional[int] = None
    target: Optional[Held] = None
    # Names between the sum and that statement (`commitment = beta * e_latent` above `loss = q + commitment`):
    # each link's (statement index, target, read of the name below it), nearest the sum first.
    links: Tuple[Tuple[int, Held, Held], ...] = ()
    # When the name is bound in both branches of the `if`/`else` at `def_index`: each branch's
    # binding (`call`, `coef` and `target` are then the first branch's).
    branches: Tuple[Branch, ...] = ()


class Visitor(BlockVisitor):
    CODE = CODE

    def start(self, module: cst.Module) -> None:
        self._names = FreshNames(module)
        self.safety = MergeSafety(self.classifier, self.facts)
        # The pairs of calls already reported: a pair of names defined above
        # may be summed in several statements, and is one finding.
        self._reported: Set[FrozenSet[int]] = set()

    def block(self, block: Sequence[cst.BaseStatement]) -> None:
        # Every term's call is in the block (a sum's statement, a definition above it, an `if`
        # of the block): without a stop-gradient's text there is none to follow (`detach` or `data`
        # anywhere in its lines: a superset of `contains_detach`'s spellings, whatever Python allows
        # between `.` and `data`). A big file's sums would otherwise each walk the statements above them.
        if not block or _STOP_TEXT.search(self.facts.text_of(block[0], block[-1])) is None:
            return
        for index, statement in enumerate(block):
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                for root in _sum_roots(statement.body[0]):
                    self._sum(block, index, root)

    def _terms(self, block: Sequence[cst.BaseStatement], index: int, root: cst.BinaryOperation) -> List[Term]:
        terms: List[Term] = []
        for node, sign in _flatten(root, 1):
            parsed = split_linear(node)
            if parsed is not None and contains_detach(parsed[1]):
                terms.append(Term(node, sign, parsed[0], parsed[1]))
                continue
            # `beta * commitment_loss`, the name defined by `commitment_loss = f(...)` above,
            # or through names defined as a coefficient times a name (`commitment = beta * e_latent`).
            for coef, name in _split_named(node):
                followed = self._follow(block, index, coef, name, _LINKS)
                if followed is not None:
                    terms.append(Term(node, sign, *followed))
                    break
        return terms

    def _follow(self, block, index: int, coef: Coef, name: Held, depth: int):
        """The definition above statement `index` that evaluates the call `name` stands for:
        (coefficient, call, its statement's index, its target, links, branches), or None."""
        defined = definition(block, index, name)
        if defined is None:
            return _branched(block, index, coef, name)
        def_index, assign = defined
        target = assign.targets[0].target
        if not isinstance(target, (cst.Name, cst.Attribute)):
            return None
        inner = split_linear(assign.value)
        if inner is not None and contains_detach(inner[1]):
            return coef * inner[0], inner[1], def_index, target, (), ()
        if depth == 0:
            return None
        for link_coef, below in _split_named(assign.value):
            followed = self._follow(block, def_index, coef * link_coef, below, depth - 1)
            if followed is not None:
                found_coef, call, found_index, found_target, links, branches = followed
                return found_coef, call, found_index, found_target, ((def_index, target, below), *links), branches
        return None

    def _sum(self, block: Sequence[cst.BaseStatement], index: int, root: cst.BinaryOperation) -> None:
        terms = self._terms(block, index, root)
        used: Set[int] = set()
        for i, first in enumerate(terms):
            if i in used:
                continue
            for j in range(i + 1, len(terms)):
                if j in used:
                    continue
                second = terms[j]
                if (first.def_index is None) != (second.def_index is None) or (
                    first.def_index is not None and first.def_index == second.def_index
                ):
                    continue  # one term inline and one defined above: not handled
                if _reads_own_names(first, second):
                    continue  # `e * e`, `commitment = e * q`: not linear in the evaluations
                if first.branches or second.branches:
                    # A name bound in both branches of an `if`/`else`: the pair is the other term with
                    # each branch's evaluation, and every branch must match it.
                    plain, branched = (second, first) if first.branches else (first, second)
                    matches = [match_pair(plain.call, branch.call, self.classifier) for branch in branched.branches]
                    if plain.branches or any(m is None for m in matches):
                        continue
                    calls = [plain.call] + [branch.call for branch in branched.branches]
                else:
                    match = match_pair(first.call, second.call, self.classifier)
                    if match is None:
                        continue
                    calls = [first.call, second.call]
                key = frozenset(id(call) for call in calls)
                if key in self._reported:
                    # The same two definitions summed again (`loss1 = rec - s + p`,
                    # `loss2 = s - p + rec`): reported, with its fix, at the first
                    # sum, whose fix sees this sum as a read of the names.
                    used.update((i, j))
                    break
                if first.branches or second.branches:
                    finding = self._branched_finding(block, index, root, plain, branched, matches)
                else:
                    finding = self._finding(block, index, root, first, second, match)
                if finding is not None:
                    self.findings.append(finding)
                    self._reported.add(key)
                    used.update((i, j))
                    break

    def _finding(self, block, index: int, root, first: Term, second: Term, match) -> Optional[Finding]:
        statement = block[index]
        node1, sign1, coef1, call1 = first.node, first.sign, first.coef, first.call
        node2, sign2, coef2, call2 = second.node, second.sign, second.coef, second.call
        # Coefficients relative to the first term's sign in the sum: the merged
        # value replaces the first term in place, under the sign it stands in.
        a = coef1
        b = coef2 * Coef.of(Fraction(sign1 * sign2))
        reasons = self.safety.reasons(match, a, b)
        if reasons is None:
            return None  # random calls in the arguments: two different computations
        coefficients = self._outside_coefficients((*a.symbols(), *b.symbols()))
        # The rewrite removes, adds or rebuilds names: a read by name string is not seen.
        reasons.extend(introspection_reasons(self.scopes[-1], self.line))
        reasons.extend(implicit_dunder_reasons(self.facts))
        gs = self.ctx.grad_scale_name
        merged, ops = merged_call(call1, match, a, b, gs, module_op(match, self.ctx.op_names))
        correction = a + b + Coef.of(Fraction(-1))
        # The value's gradient reaches a coefficient only through the correction (`grad_scale`
        # detaches its scale): one that cancels there (`(1 - self.alpha) * f(x.detach(), y) +
        # self.alpha * f(x, y.detach())`, correction 0) is left out of the graph, with no gradient
        # (None) where the original gave it zero, which an optimizer's weight decay or momentum
        # still steps (review 16, Z_09). A number has no gradient to lose.
        lost = [".".join(path) for path in coefficients if ".".join(path) not in correction.symbols()]
        if lost:
            shown = ", ".join(f"`{symbol}`" for symbol in lost)
            reasons.add(
                f"coefficient {shown} cancels in the correction: if it is a tensor that requires grad, the rewrite gives "
                f"it no gradient (None) where the original gave it zero"
            )
        if first.def_index is not None:
            lines_by_statement = self._defined_fix(block, index, root, first, second, merged, correction, reasons, match, coefficients)
            if lines_by_statement is None:
                return None
        else:
            # Inline terms: the one evaluation takes the first term's place (a zero correction) or
            # is hoisted before the statement; either way the second term is evaluated earlier than
            # before, so every other call in the statement, and every property of the file it
            # reads, must be unaffected by that (review, stop 24: `0.5 * f(z.detach(), w) +
            # self.bump() + 0.5 * f(z, w.detach())`, where `bump` rebinds `self.z`).
            reasons.extend(self._others_in_statement(statement, node1, node2, coefficients))
            if not correction.is_zero():
                self._detach_reason(match, reasons)
            if correction.is_zero():
                # The merged call alone has the value of both terms: no name needed,
                # and it is evaluated where the first term was.
                new_statement, orphans = sum_without(statement, root, node2, (node1, merged))
                lines = [new_statement.with_changes(leading_lines=[*new_statement.leading_lines, *orphans])]
            else:  # hoist the one evaluation before the statement
                name = self._names.fresh(self._term_name(statement, call1), self.scopes)
                value = _value_expression(name, correction, self._numbers(correction))
                if not _leftmost(remove_term(root, node2), node1):
                    value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                new_statement, orphans = sum_without(statement, root, node2, (node1, value))
                hoisted = hoisted_assign(statement, name, merged)
                lines = [hoisted, new_statement.with_changes(leading_lines=orphans)]
            lines_by_statement = {statement: lines}
        line1 = self.line(call1)
        where = "" if line1 == self.line(call2) else f" (line {line1} and here)"
        self._settle_coefficients(coefficients, reasons)
        return self._pair_finding(call2, match, where, lines_by_statement, reasons, ops)

    def _detach_reason(self, match, reasons: Reasons) -> None:
        """The rewrite calls `.detach()` on the one evaluation's value (the correction `m + (c * m).detach()`,
        a name rebuilt as `m.detach()`): that value must be proven a tensor (`callees.tensor_result`). A
        callee that returns a number (`float(...)`, `len(a)`, `t.numel()`) or a tuple sums as well in the
        original, and has no `.detach()` (review, round 5)."""
        if not tensor_result(self.classifier, match.core, match.chain):
            reasons.add(
                f"the rewrite calls `.detach()` on the value of `{match.callee_text}(...)`, which gradfix cannot prove "
                f"a tensor (a number or a tuple there has no `.detach()`: AttributeError where the original ran)"
            )

    def _numbers(self, coef: Coef) -> bool:
        """Every symbol of `coef` is one of the file's number constants (`BETA = 0.25`)."""
        return all(self.safety.constant(s) for s in coef.symbols())

    def _outside_coefficients(self, symbols: Sequence[str]) -> List[Tuple[str, ...]]:
        """Stop 35 (two held-out corpora: 19 of 26 VQ-VAE findings were unsafe for this reason
        alone): a coefficient the file binds only to numbers, or to what callers pass (`self.beta =
        beta` in `__init__`, `args.beta`, a parameter `beta`), is taken to be a number or a
        one-element tensor, as a loss weight is (README, "What a safe fix assumes about other
        files", as a divisor is taken to be non-zero). The one evaluation scales an operand's
        gradient by its value (`grad_scale` reads it when the forward runs: a tensor of several
        elements raises there) and the correction multiplies the detached value by it, so one that
        requires grad keeps its gradient (`_value_expression`).

        The access paths of the coefficients that may be taken so: every symbol not a number
        constant is a dotted name, and a plain name is a caller's value (a parameter the function
        leaves as it is). The caller watches them between the one evaluation and the sum, and
        settles them last (`_settle_coefficients`); [] where the merge's reason stays."""
        unproven = [s for s in dict.fromkeys(symbols) if not self.safety.constant(s)]
        taken: List[Tuple[str, ...]] = []
        function = self.scopes[-1]
        for symbol in unproven:
            parts = tuple(symbol.split("."))
            if not all(part.isidentifier() for part in parts):
                return []  # a subscript or a call (`cfg["beta"]`): the merge's reason stays
            if len(parts) == 1 and not (isinstance(function, cst.FunctionDef) and parts[0] in self._passed_in(function)):
                return []  # a name the function does not take from its caller: the merge's reason stays
            taken.append(parts)
        return taken

    def _settle_coefficients(self, coefficients: Sequence[Tuple[str, ...]], reasons: Reasons) -> None:
        """The merge's reason for each coefficient of `_outside_coefficients`, settled: discharged
        where every binding the file gives it is a number or a caller's value
        (`_coefficient_binding`), else the binding named. Where something else already keeps the
        fix unsafe, the bindings are not read (for an attribute, the file's every way of binding an
        attribute: a walk of the whole file, a tenth of a second on a big one), and the reason says
        the weight is not proven."""
        if not coefficients:
            return
        symbols = [".".join(path) for path in coefficients]
        others = [r for r in reasons if not (r.kind == COEFFICIENT and r.subject in symbols)]
        for symbol in symbols:
            reasons.discard(COEFFICIENT, symbol)
        if others:
            reasons.add(Reason(f"coefficient `{symbols[0]}` is not proven a number or a one-element tensor", COEFFICIENT, symbols[0]))
            return
        for symbol, path in zip(symbols, coefficients):
            why = self._coefficient_binding(path, set())
            if why is not None:
                reasons.add(Reason(f"coefficient `{symbol}` {why}: gradfix cannot prove it a number or a one-element tensor", COEFFICIENT, symbol))
                return

    def _coefficient_binding(self, path: Tuple[str, ...], seen: Set[Tuple[int, str]]) -> Optional[str]:
        """None where every binding the file gives `path` (a name, or the attribute it ends in, on
        any object) is a number, `float(...)`/`int(...)` or a parameter of the function binding it
        (a caller's value) that the file's own calls pass no other value for (`_passed_values`);
        else why not. (A plain name is one of the function's parameters it leaves as it is:
        `_outside_coefficients` takes no other.) `seen`: the parameters already followed."""
        if len(path) == 1:
            function = self.scopes[-1]
            return self._passed_values(function, path[0], seen) if isinstance(function, cst.FunctionDef) else None
        if self.facts.computed_path(path):
            return "may be computed anew on each read (a class of the file defines a property or `__getattr__`)"
        attribute = path[-1]
        if self.facts.attribute_store_names is None:
            return "may be bound by a computed name (`setattr`, `__dict__`)"
        # (`setattr(x, "beta", v)` among them; by a computed name, `attribute_store_names` is None)
        named = self._named_by_string(attribute)
        if named is not None:
            return f"is named as a string at line {self.line(named)} (`{code_of(named)[:60]}`), which may bind it"
        parents = self.facts.nodes.parents
        for node in nodes_of_type(self.facts.module, _STORING):
            for target in store_targets(node):
                if not any(a.attr.value == attribute for a in nodes_of_type(target, cst.Attribute)):
                    continue
                # Only `x.beta = v` (or `x.beta: T = v`) as a whole target gives its value.
                statement = parents.get(node) if isinstance(node, cst.AssignTarget) else node
                whole = getattr(node, "target", None) is target and isinstance(strip_parens(target), cst.Attribute)
                value = statement.value if whole and isinstance(statement, (cst.Assign, cst.AnnAssign)) else None
                if value is None or not self._number_or_argument(value, statement):
                    return f"is bound to `{code_of(statement).strip().splitlines()[0][:60]}` (line {self.line(statement)})"
                why = self._parameter_passed(value, statement, seen)
                if why is not None:
                    return why
        # A class attribute of that name (`beta = torch.ones(3)` in a class body, a method or
        # class named so): what an instance's read finds where no store gave it one.
        for cls in class_defs(self.facts.module):
            if attribute not in scope_bindings(cls.body):
                continue
            for statement in cls.body.body:
                if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                    if statement.name.value != attribute:
                        continue  # (what it binds inside is its own)
                elif attribute not in binding_counts(statement):
                    continue
                small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
                plain = (
                    isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Name) for t in small.targets)
                    or isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name)
                )
                if not plain or not self._number_or_argument(small.value, small):
                    return f"is bound to `{code_of(statement).strip().splitlines()[0][:60]}` in a class body (line {self.line(statement)})"
            if not self._plain_constructor(cls):
                # A field: `@dataclass`, a `NamedTuple`, pydantic's `BaseModel` bind it from what
                # the constructor is passed (`Loss(beta=torch.ones(2))`), by keyword or position.
                key = (id(cls), attribute)
                if key not in seen:
                    seen.add(key)
                    why = self._calls_pass(None, self._class_and_subclass_names(cls), attribute, -1, seen, constructor=True)
                    if why is not None:
                        return why
                    # A copy with a field changed binds it by its keyword too (`dataclasses.replace(loss,
                    # beta=t)`, a NamedTuple's `_replace`, attrs' `evolve`): any call's.
                    for call in nodes_of_type(self.facts.module, cst.Call):
                        for arg in call.args:
                            if arg.keyword is not None and arg.keyword.value == attribute:
                                why = self._weight_value(arg.value, call, seen)
                                if why is not None:
                                    return why or f"is passed `{code_of(arg.value).strip()[:60]}` as `{attribute}` (line {self.line(call)})"
        return None

    def _plain_constructor(self, cls: cst.ClassDef, within: FrozenSet[int] = frozenset()) -> bool:
        """Whether constructing `cls` binds none of its class attributes from its arguments: no
        decorator, no metaclass or other keyword, and every base `object`, a class of the file that
        is plain too, or a class of torch's `nn` (whose `Module.__init__` takes no fields). Not:
        `@dataclass`, attrs, a `NamedTuple` or pydantic base, an imported base."""
        if cls.decorators or cls.keywords:
            return False
        for base in cls.bases:
            value = strip_parens(base.value)
            if isinstance(value, cst.Name) and value.value == "object" and not self.classifier.rebinds(("object",)):
                continue
            own = self.facts.class_names.get(value.value, ()) if isinstance(value, cst.Name) else ()
            if own and id(own[-1]) not in within | {id(cls)}:
                if self.facts.binding_counts.get(value.value) == 1 and self._plain_constructor(own[-1], within | {id(cls)}):
                    continue
                return False
            if not any(is_nn_class(q) for q in self.classifier.qualified(value)):
                return False
        return True

    def _within_store_targets(self, kind: type) -> Set[int]:
        """The ids of the file's nodes of `kind` that stand in a store's target (`x.k = v`, `for
        x[i] in ...`, `del x.k`): stored into, or part of what is."""
        return {
            id(node)
            for store in nodes_of_type(self.facts.module, _STORING)
            for target in store_targets(store)
            for node in nodes_of_type(target, kind)
        }

    def _named_by_string(self, attribute: str) -> Optional[cst.CSTNode]:
        """The first call or store that names `attribute` as a string literal, other than a read
        (review 16, Z_02): an object's attribute is bound by its name as a string in more ways than
        `setattr` (`object.__setattr__(self, "beta", t)`, `super().__setattr__`, nn.Module's
        `register_buffer("beta", t)`/`register_parameter`, `vars(self)["beta"] = t`). Allowed: the
        name of `getattr`/`hasattr` (a read), a key of a dict display, a subscript read."""
        parents = self.facts.nodes.parents
        stored = self._within_store_targets(cst.Subscript)
        for string in nodes_of_type(self.facts.module, cst.SimpleString):
            if string_value(string) != attribute:
                continue
            parent = parents.get(string)
            if isinstance(parent, cst.DictElement) and parent.key is string:
                continue  # `{"beta": 0.25}`: a dict's key (`__dict__.update({...})` is a computed store)
            if isinstance(parent, cst.Index):
                subscript = parents.get(parents.get(parent))
                if isinstance(subscript, cst.Subscript) and id(subscript) not in stored:
                    continue  # `cfg["beta"]` read
                return subscript if subscript is not None else string
            if isinstance(parent, cst.Arg) and parent.keyword is None:
                call = parents.get(parent)
                if (
                    isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in ("getattr", "hasattr")
                    and len(call.args) > 1 and call.args[1] is parent
                    and call.func.value not in self.facts.binding_counts and not self.facts.changes_builtins
                ):
                    continue  # `getattr(config, "beta", 0.25)`: a read
                return call if call is not None else string
            if isinstance(parent, cst.Arg):
                return parents.get(parent) or string
            if isinstance(parent, (cst.Expr, cst.ConcatenatedString, cst.FormattedString)) or parent is None:
                continue  # a docstring, part of a longer text
            return string
        return None

    def _number_or_argument(self, value: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """A number, `float(...)`/`int(...)` of the builtins, or a parameter of the function around
        `at` that it does not rebind (what a caller passes)."""
        value = strip_parens(value)
        if _real_literal(value):
            return not (isinstance(value, cst.Name) and value.value == "None")
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("float", "int"):
            return value.func.value not in self.facts.binding_counts and not self.facts.changes_builtins
        # A parameter, or an attribute of one (`cfg.beta`, `getattr(config, "beta", 0.25)`), the
        # function leaves as it is: what a caller passes. Not a method's first parameter
        # (`self.other`: the file's own object).
        if (
            isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "getattr"
            and "getattr" not in self.facts.binding_counts and not self.facts.changes_builtins
            and len(value.args) in (2, 3) and all(a.keyword is None and not a.star for a in value.args)
            and isinstance(value.args[1].value, cst.SimpleString)
            and (len(value.args) == 2 or self._number_or_argument(value.args[2].value, at))
        ):
            value = value.args[0].value
        path = access_path(value)
        if path is None or "[]" in path:
            return False
        function = self.classifier.enclosing_function(at)
        return function is not None and path[0] in self._passed_in(function)

    def _parameter_passed(self, value: cst.BaseExpression, at: cst.CSTNode, seen: Set[Tuple[int, str]]) -> Optional[str]:
        """Where `value` (bound at `at`) is a parameter of the function around it, why a value the
        file's own calls pass for it is not proven a number or a one-element tensor
        (`_passed_values`); None otherwise."""
        value = strip_parens(value)
        if not isinstance(value, cst.Name):
            return None  # a number, or an attribute of a caller's value (`cfg.beta`: its config)
        function = self.classifier.enclosing_function(at)
        return self._passed_values(function, value.value, seen) if function is not None else None

    def _passed_values(self, function: cst.FunctionDef, param: str, seen: Set[Tuple[int, str]]) -> Optional[str]:
        """Why a value the file's own calls of `function` pass for its parameter `param` is not
        proven a number or a one-element tensor; None where each is (after stop 35: the assumption
        that a caller's weight is one holds for callers gradfix does not see, not for those it does:
        `VQ(32, 8, beta=torch.tensor([0.25, 1.0]))` made the rewrite raise).

        The calls are every call whose callee's name is the function's (for `__init__`, its class's
        or a subclass's of the file, `super().__init__` in one of them, `cls(...)`, `type(x)(...)`,
        `x.__class__(...)`), and `functools.partial` of it: more than call the function, never
        fewer. The value each passes for `param` (by keyword, or at its position; both positions
        where a receiver may or may not take the first, `C.f(obj, x)`) must be a number, a
        one-element tensor it shows (`torch.tensor(0.25)`), or a value of that caller's own caller
        (followed the same way). Not followed, so not proven: a `*args`/`**kwargs` there; a
        function the file names otherwise than as a callee (`loss_fn = vq_loss`, `getattr(self,
        "loss")`: a call under another name), a decorated one (the decorator's wrapper is what is
        called), and a method called without its name (`forward` through the module's instances,
        special methods)."""
        key = (id(function), param)
        if key in seen:
            return None
        seen.add(key)
        name = function.name.value
        method = is_method(function, self.facts.nodes.parents)
        decorators = [last_name(strip_parens(d.decorator)) for d in function.decorators]
        if any(d not in ("staticmethod", "classmethod") for d in decorators) or not method and decorators:
            return f"is a parameter of `{name}`, which is decorated (gradfix does not follow the calls of its wrapper)"
        # torch's `Module.__call__` runs `forward`, and a class's `__call__` runs on `obj(x)`: every
        # call of the file may be one (`_may_call`). Other special methods run on operators.
        implicit = method and name in ("forward", "__call__")
        if method and not implicit and name != "__init__" and name.startswith("__") and name.endswith("__"):
            return f"is a parameter of `{name}`, which is called without its name (gradfix does not follow those calls)"
        positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
        if method and "staticmethod" not in decorators:
            positional = positional[1:]
        index = positional.index(param) if param in positional else None
        constructor = name == "__init__" and method
        names = self._class_and_subclass_names(self.facts.nodes.parents.get(self.facts.nodes.parents.get(function))) if constructor else {name}
        return self._calls_pass(function, names, param, index, seen, constructor=constructor, implicit=implicit)

    def _calls_pass(self, function: Optional[cst.FunctionDef], names: Set[str], param: str, index: Optional[int],
                    seen: Set[Tuple[int, str]], constructor: bool, implicit: bool = False) -> Optional[str]:
        """`_passed_values`' look at the calls: what every call that may reach the function named
        `names` (a constructor: the classes named) passes for `param` (by keyword, or at its
        `index` among the arguments after a receiver; -1: at any position) must be proven by
        `_weight_value`; then no other name may call it (`_named_otherwise`)."""
        callees: Set[int] = set()
        for call in nodes_of_type(self.facts.module, cst.Call):
            func = strip_parens(call.func)
            args = list(call.args)
            if isinstance(func, (cst.Name, cst.Attribute)) and "functools.partial" in self.classifier.qualified(func) and args:
                callees.add(id(func))
                func, args = strip_parens(args[0].value), args[1:]
            if not (self._may_be_instance_call(func) if implicit else self._may_call(func, call, names, constructor)):
                continue
            callees.add(id(func))
            if any(a.star for a in args):
                return f"may be passed through `{code_of(call).strip()[:60]}` (line {self.line(call)})"
            passed = [a.value for a in args if a.keyword is not None and a.keyword.value == param]
            if index == -1:
                passed += [a.value for a in args if a.keyword is None]
            elif not passed and index is not None:
                plain = [a.value for a in args if a.keyword is None]
                # `obj.f(x)`, `C(x)`, `super().__init__(x)`: the receiver is the first parameter;
                # `C.f(obj, x)`, `C.__init__(self, x)`: it is passed.
                shifts = (0, 1) if isinstance(func, cst.Attribute) and isinstance(strip_parens(func.value), cst.Name) else (0,)
                passed = [plain[index + shift] for shift in shifts if index + shift < len(plain)]
            for value in passed:
                why = self._weight_value(value, call, seen)
                if why is not None:
                    return why if why else f"is passed `{code_of(value).strip()[:60]}` as `{param}` (line {self.line(call)})"
        named = self._named_otherwise(function, names, callees, constructor)
        if named is not None:
            what = f"a parameter of `{function.name.value}`" if function is not None else f"a field of `{sorted(names)[0]}`"
            return f"is {what}, named at line {self.line(named)} (`{code_of(named).strip()[:60]}`), where a call gradfix does not follow may pass it"
        return None

    def _may_be_instance_call(self, func: cst.BaseExpression) -> bool:
        """Whether a call of `func` may call an instance of a class of the file (its `forward` or
        `__call__`): any call but of a name the file imports (`torch.randn`, `F.mse_loss`) or of a
        builtin it does not rebind (`print`, `len`)."""
        base = func
        while isinstance(base, cst.Attribute):
            base = base.value
        if not isinstance(base, cst.Name):
            return True  # `model(x).backward()`: a method of what a call returned
        if isinstance(func, cst.Name) and func.value in BUILTIN_NAMES and not self.classifier.rebinds((func.value,)):
            return False
        return self.facts.sole_imports.qualified(base.value, self.line(base)) is None

    def _may_call(self, func: cst.BaseExpression, call: cst.Call, names: Set[str], constructor: bool) -> bool:
        """Whether a call of `func` may call the function `_passed_values` follows (named `names`;
        `constructor`: the `__init__` of the classes `names`)."""
        if isinstance(func, cst.Name):
            return func.value in names or constructor and func.value == "cls"
        if isinstance(func, cst.Call):  # `type(x)(...)`
            return constructor and isinstance(strip_parens(func.func), cst.Name) and strip_parens(func.func).value == "type"
        if not isinstance(func, cst.Attribute):
            return False
        if not constructor:
            return func.attr.value in names
        if func.attr.value in names or func.attr.value == "__class__":
            return True  # `models.VQ(...)`, `self.__class__(...)`
        if func.attr.value != "__init__":
            return False
        receiver = strip_parens(func.value)
        if isinstance(receiver, cst.Name):
            return receiver.value in names  # `VQ.__init__(self, ...)`
        # `super().__init__(...)` in one of the classes (or with them named: `super(VQ, self)`).
        cls = self.classifier.enclosing_class(call)
        return isinstance(receiver, cst.Call) and (cls is None or cls.name.value in names or any(
            isinstance(strip_parens(a.value), cst.Name) and strip_parens(a.value).value in names for a in receiver.args
        ))

    def _named_otherwise(self, function: cst.FunctionDef, names: Set[str], callees: Set[int], constructor: bool) -> Optional[cst.CSTNode]:
        """The first place the file names the function (or, for `__init__`, one of its classes)
        other than as the callee of a call `_passed_values` followed, its own definition, a base of
        a class, an annotation, `isinstance`/`issubclass`, `super(C, self)`: a name another call
        may call it by; or a string of its name (`getattr(self, "loss")`)."""
        parents = self.facts.nodes.parents
        for node in nodes_of_type(self.facts.module, (cst.Name, cst.Attribute, cst.SimpleString)):
            if isinstance(node, cst.SimpleString):
                if string_value(node) in names and not self._exported(node):
                    return node
                continue
            named = node.value if isinstance(node, cst.Name) else node.attr.value
            if named not in names or id(node) in callees:
                continue
            parent = parents.get(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue  # (the attribute itself is looked at)
            if isinstance(parent, cst.Attribute) and parent.value is node and constructor:
                continue  # `Big.build()`: an attribute of the class (its methods' `cls(...)` are calls above)
            if isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is node:
                continue
            if isinstance(parent, cst.Arg) and isinstance(parents.get(parent), cst.ClassDef):
                continue  # a base: its subclasses are among `names`
            if isinstance(parent, cst.Arg) and isinstance(parents.get(parent), cst.Call):
                outer = strip_parens(parents.get(parent).func)
                if isinstance(outer, cst.Name) and outer.value in ("isinstance", "issubclass", "super") and not self.classifier.rebinds((outer.value,)):
                    continue
            if any(isinstance(a, cst.Annotation) for a in self._ancestors(node)):
                continue
            if isinstance(node, cst.Name) and not constructor and function is not None and is_method(function, parents):
                continue  # a method's name alone is not it (`forward = 1` elsewhere): its reads are `x.name`
            return node
        return None

    def _exported(self, string: cst.SimpleString) -> bool:
        """`string` is an element of a top-level `__all__ = [...]` (what `import *` exports)."""
        parents = self.facts.nodes.parents
        element = parents.get(string)
        display = parents.get(element)
        statement = parents.get(display)
        return (
            isinstance(element, cst.Element) and isinstance(display, (cst.List, cst.Tuple)) and isinstance(statement, cst.Assign)
            and len(statement.targets) == 1 and isinstance(statement.targets[0].target, cst.Name)
            and statement.targets[0].target.value == "__all__" and parents.get(parents.get(statement)) is self.facts.module
        )

    def _ancestors(self, node: cst.CSTNode):
        parents = self.facts.nodes.parents
        node = parents.get(node)
        while node is not None:
            yield node
            node = parents.get(node)

    def _weight_value(self, value: cst.BaseExpression, at: cst.CSTNode, seen: Set[Tuple[int, str]]) -> Optional[str]:
        """None where `value`, passed for a weight by a call at `at`, is proven a number or a
        one-element tensor, or is a value from outside the file (the assumption's); "" where it is
        not (the caller names the call), or why not. Proven: a real number, a number constant of
        the file, `float(...)`/`int(...)`, a one-element tensor the call builds
        (`_one_element_tensor`), a name the module binds once, to one of those, and reads only
        whole; a parameter of the caller, followed to its own callers (`_passed_values`); an
        attribute of one (`cfg.beta`: a config from outside), or an attribute the file binds
        only as a weight may be (`_coefficient_binding`: `self.beta`)."""
        value = strip_parens(value)
        if _one_element_tensor(value, self.classifier):
            return None
        if isinstance(value, cst.Name):
            name = value.value
            if name in ("True", "False") or self.safety.constant(name):
                return None
            function = self.classifier.enclosing_function(at)
            if function is not None and name in self._passed_in(function):
                return self._passed_values(function, name, seen)
            if any(isinstance(scope, _SCOPES) and name in binding_counts(scope) for scope in self._ancestors(at)):
                return ""  # a name of an enclosing function's own (`b = torch.ones(3)`, `lambda b: ...`)
            bound = self._module_value(name)
            if bound is not None and (self._number_or_argument(bound, bound) or _one_element_tensor(bound, self.classifier)):
                return None
            return ""
        if self._number_or_argument(value, at):
            return None  # a number, `float(...)`, an attribute of a caller's value
        path = access_path(value)
        if path is not None and len(path) > 1 and all(part.isidentifier() for part in path):
            return self._coefficient_binding(path, seen)
        return ""

    def _module_value(self, name: str) -> Optional[cst.BaseExpression]:
        """The value of the one binding the file gives `name`, a top-level `name = value`, where
        the file changes no attribute of it and calls none of its in-place methods (torch's end in
        `_`: `BETA.resize_(3)`, `BETA.set_(t)` change its size; `BETA.data = t` too); else None."""
        if own_scope_binding_counts(self.facts.module).get(name) != 1:
            return None
        if any(n.name.value == name for node in nodes_of_type(self.facts.module, cst.Global) for n in node.names):
            return None  # (`global BETA` in a function: bound there too)
        stored = self._within_store_targets(cst.Attribute)
        for node in nodes_of_type(self.facts.module, cst.Attribute):
            base = strip_parens(node.value)
            if isinstance(base, cst.Name) and base.value == name and (node.attr.value.endswith("_") or id(node) in stored):
                return None
        for statement in self.facts.module.body:
            if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
                continue
            small = statement.body[0]
            if (
                isinstance(small, cst.Assign) and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name
            ):
                return small.value
        return None

    def _class_and_subclass_names(self, cls: Optional[cst.CSTNode]) -> Set[str]:
        """The name of `cls` and of every class of the file whose bases name it, at any depth."""
        if not isinstance(cls, cst.ClassDef):
            return set()
        names = {cls.name.value}
        grown = True
        while grown:
            grown = False
            for other in class_defs(self.facts.module):
                if other.name.value in names:
                    continue
                if any(last_name(strip_parens(b.value)) in names for b in other.bases):
                    names.add(other.name.value)
                    grown = True
        return names

    def _passed_in(self, function: cst.FunctionDef) -> Set[str]:
        """The parameters of `function` that hold what its caller passes, unrebound: all but a
        method's first (its instance or class)."""
        params = function_parameters(function) - set(binding_counts(function.body))
        # A default the file gives is what a call without it passes: only a real number, None or
        # one of the file's number constants (`beta=torch.tensor([0.25, 1.0])` shows a tensor of
        # two elements, `beta=0.5j` a complex number: review 16, Z_06).
        for param in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params):
            default = strip_parens(param.default) if param.default is not None else None
            if default is not None and not _real_literal(default) and not (
                isinstance(default, cst.Name) and self.safety.constant(default.value)
            ):
                params.discard(param.name.value)
        if is_method(function, self.facts.nodes.parents):
            first = [*function.params.posonly_params, *function.params.params][:1]
            params -= {p.name.value for p in first}
        return params

    def _others_in_statement(self, statement: cst.SimpleStatementLine, node1: cst.CSTNode, node2: cst.CSTNode,
                             coefficients: Sequence[Tuple[str, ...]] = ()) -> List[str]:
        """Why evaluating the second term earlier in its own statement is not proven unaffected: the
        statement's other calls not proven harmless (to the operands, and to the coefficients the
        one evaluation now reads before them: `_outside_coefficients`), and its reads of
        properties of the file."""
        policy = HarmlessCalls(self.classifier)
        watched: List[tuple] = []  # computed once, for the first call that needs it (a walk of the function)

        def outside(node: cst.CSTNode) -> bool:
            return not contains_node(node1, node) and not contains_node(node2, node)

        def harmless(call: cst.Call) -> bool:
            if not watched:
                watched.extend(with_aliases(read_paths(node1) + read_paths(node2) + list(coefficients), self.scopes[-1], self.classifier))
            return harmless_call(call, self.classifier, watched)

        calls = calls_within(statement.body[0])
        others = [f"`{code_of(c.func).strip()}()`" for c in calls if outside(c) and detach_receiver(c) is None and not harmless(c)]
        callees = {id(c.func) for c in calls}  # judged as calls above
        others += [
            f"`{code_of(a).strip()}` (a property of the file)"
            for a in attributes_within(statement.body[0])
            if outside(a) and id(a) not in callees and policy.computed(a)
        ]
        if not others:
            return []
        return [f"the evaluation moves before {', '.join(dict.fromkeys(others))} in the same statement, which gradfix cannot prove unaffected"]

    def _pair_finding(self, at: cst.Call, match, where: str, replacements, reasons: Reasons, ops: Sequence[str]) -> Finding:
        """The finding at the second evaluation `at`, with its rewrite."""
        fix = Rewrite(
            safe=not reasons,
            replacements=replacements,
            description=f"Evaluate `{match.callee_text}` once with `grad_scale` and a detached value correction",
            unsafe_reason=reasons.text(),
            imports=self.ctx.imports_for(*ops),
        )
        message = (
            f"`{match.callee_text}` evaluated twice in one sum with complementary `.detach()`{where}: "
            f"one evaluation with `grad_scale` gives the same value and gradients"
        )
        if match.swapped:
            message += " (arguments swapped; the callee is symmetric)"
        return self.report(at, message, fix, reasons)

    def _branched_finding(self, block, index: int, root, plain: Term, branched: Term, matches) -> Optional[Finding]:
        """One term a name bound in both branches of an `if`/`else` (issue 12), the other defined above the `if`:

            q = f(x, y.detach())                 if ema:
            if ema:                                  q = f(grad_scale(x, BETA), y)
                e = f(x.detach(), y)         ->      e = q.detach().clone()
            else:                                else:
                e = f(x.detach(), y) * s             q = f(grad_scale(x, BETA * s), y)
            loss = q + BETA * e                      e = q.detach() * s
                                                 loss = q + BETA * e

        The branch's coefficient is known only in the branch: each branch gets its own one
        evaluation where it evaluated `f`, carrying both terms' gradients (the operand live in the
        branch's term scaled by that branch's coefficient), and its name is rebuilt from it,
        detached: it keeps the branch's value, so the sum keeps it and needs no correction per
        branch. The other term's definition moves into both branches as that evaluation (its
        name, or a new one and its name rebuilt detached where it is read elsewhere); in the sum
        the other term becomes the one evaluation with the detached correction `(a - 1) * m` for
        its own coefficient `a`, the same in both branches.

        The other definition may also stand below the `if` (`if ema: e = ...` first, `q = f(x,
        y.detach())` after it): its evaluation then moves up into each branch, so nothing from the
        branch's evaluation down to it may change an operand, rebind one's name or read or bind the
        other term's name (which the branch now binds).

        Refused (None): a term held in an attribute, the other term's name read between its
        definition and a branch's evaluation (it moves past those reads), and a barrier between:
        the other definition, the `if`'s test and the branch's statements before its evaluation
        must not change the operands (the one evaluation runs where the branch's did); after it,
        as for names defined above."""
        statement = block[index]
        if_index = branched.def_index
        below = plain.def_index > if_index  # type: ignore[operator]  (the other definition after the `if`)
        targets = [plain.target, *(link[1] for term in (plain, branched) for link in term.links)]
        if not all(isinstance(t, cst.Name) for t in targets):
            return None
        branches = branched.branches
        if_statement = block[if_index]  # type: ignore[index]
        plain_def = block[plain.def_index]  # type: ignore[index]
        # Coefficients relative to the other term's sign: its term becomes the one evaluation.
        a = plain.coef
        sign = Coef.of(Fraction(plain.sign * branched.sign))
        reasons = Reasons()
        merged_calls = []
        ops: List[str] = []
        for branch, match in zip(branches, matches):
            found = self.safety.reasons(match, a, branch.coef * sign)
            if found is None:
                return None  # random calls in the arguments: two different computations
            reasons.extend(found)
            merged, branch_ops = merged_call(plain.call, match, a, branch.coef * sign, self.ctx.grad_scale_name, module_op(match, self.ctx.op_names))
            merged_calls.append(merged)
            ops += [op for op in branch_ops if op not in ops]
            self._detach_reason(match, reasons)  # each branch's name is rebuilt detached
        reasons.extend(introspection_reasons(self.scopes[-1], self.line))

        watched = read_paths(plain.call) + [path for branch in branches for path in read_paths(branch.call)]
        if stores_into(plain_def, watched) or any(stores_into(branch.body[branch.index], watched) for branch in branches):
            return None
        name = plain.target.value  # type: ignore[union-attr]
        roots = {path[0] for path in watched}
        if below:
            # Before the branch's evaluation both evaluations are still to come, as in the
            # original; from it down to the other definition (which moves up to it) nothing may
            # change an operand, not even by rebinding its name; after that, as for names above.
            before: List[cst.BaseStatement] = []
            moved_past = list(block[if_index + 1 : plain.def_index])  # type: ignore[operator]
            after = [_without_rebinding(s, roots) for s in block[plain.def_index + 1 : index]]  # type: ignore[operator]
        else:
            before = list(block[plain.def_index + 1 : if_index])  # type: ignore[operator]
            moved_past = []
            after = [_without_rebinding(s, roots) for s in block[if_index + 1 : index]]  # type: ignore[operator]
        if not self._may_move(if_statement, plain.target):  # type: ignore[arg-type]
            return None
        aliased = with_aliases(watched, self.scopes[-1], self.classifier)
        for branch in branches:
            # (The tests of the chain that run before the branch: an `elif`'s after the `if`'s.)
            tests = [cst.SimpleStatementLine(body=[cst.Expr(value=test)]) for test in branch.tests]
            ahead = [*before, *tests, *branch.body[: branch.index]]
            if any(name in names_in(s) for s in ahead):
                return None  # read before the one evaluation that now binds it
            # Between the other definition and the branch's evaluation the operands must stay as
            # they were (the one evaluation runs at the branch's); after it, as for names above.
            later = branch.body[branch.index + 1 :]
            if below and any(name in names_in(s) for s in [branch.body[branch.index], *later, *moved_past]):
                return None  # the other term's name, read or bound where the branch now binds it first
            rest = [*later, *block[if_index + 1 : index]]  # type: ignore[operator]
            passed = [*later, *moved_past] if below else [_without_rebinding(s, roots) for s in later]
            crossed = [*later, *moved_past] if below else ahead
            if isinstance(self.get_metadata(ScopeProvider, plain.target, None), GlobalScope) and any(calls_within(s) or _reads_attribute(s) for s in crossed):
                # A function of the file may read the global, by a call or a property: its binding moves past them.
                reasons.add(f"`{name}` is a module global, bound at another point after the rewrite: code run in between may read it")
            verdict = scan_between([*ahead, *passed, *after], aliased, HarmlessCalls(self.classifier))
            if verdict.barrier is not None:
                return None
            if verdict.unknown:
                reasons.add(f"{verdict.unknown_text()} between the definitions and the sum may modify an operand")
            # The one evaluation reads every coefficient where the branch evaluated `f`: one the
            # original reads later (in the sum, a link) must not be bound only after that point
            # (`beta = 0.25` below the `if`: the rewrite would read it unbound).
            _bound_late((*a.symbols(), *branch.coef.symbols()), rest, reasons)

        replacements: Dict[cst.CSTNode, List[cst.BaseStatement]] = {plain_def: []}
        # The other term, from the sum down its links: as for names defined above.
        plain_read = self._links_read(plain, (plain.node, branched.node), reasons, block, index, replacements)
        # The branch term's names are all kept (the sum reads its value), detached: reads of them
        # elsewhere as tensors lose their gradient.
        excluded = (branched.node,)
        for _, link_target, below in branched.links:
            self._read_elsewhere(link_target, excluded, reasons, block, index)
            excluded = (below,)
        for branch in branches:
            self._read_elsewhere(branch.target, excluded, reasons, block, index)

        carrier = self._names.fresh(f"{name}_term", self.scopes) if plain_read else name
        bodies = []
        for branch, merged in zip(branches, merged_calls):
            original = branch.body[branch.index]
            lines = [original.with_changes(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(carrier))], value=merged)])]
            rebuilt = [(plain_def, plain.call)] if plain_read else []
            for definition_line, call in [*rebuilt, (original, branch.call)]:
                assign = definition_line.body[0]
                value = assign.value.visit(Replace({call: detached(carrier, copy=assign.value is call)}))
                lines.append(definition_line.with_changes(body=[assign.with_changes(value=value)], leading_lines=[]))
            bodies.append([*branch.body[: branch.index], *lines, *branch.body[branch.index + 1 :]])
        # The `if` is replaced whole, not its branches' statements: removing the other definition
        # just above it moves that line's blank lines and comments onto the `if` (a new node), and
        # the block's edit would then rewrite the `if` as it was, over the branches' edits.
        replacements[if_statement] = [_with_bodies(if_statement, bodies)]
        correction = a + Coef.of(Fraction(-1))
        value = _value_expression(carrier, correction, self._numbers(correction))
        if not correction.is_zero() and not _leftmost(root, plain.node):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        if code_of(value) != code_of(plain.node):
            replacements[statement] = [statement.visit(Replace({plain.node: value}))]
        others = ", ".join(str(self.line(branch.call)) for branch in branches[1:])
        if len(branches) == 2:
            where = f" (line {self.line(plain.call)} and here; the `else` branch's at line {others})"
        else:
            where = f" (line {self.line(plain.call)} and here; the other branches' at lines {others})"
        return self._pair_finding(branches[0].call, matches[0], where, replacements, reasons, ops)

    def _defined_fix(self, block, index, root, first: Term, second: Term, merged, correction: Coef, reasons: Reasons, match,
                     coefficients: Sequence[Tuple[str, ...]] = ()):
        """Both terms are names defined above: the one evaluation replaces the earlier definition.

        Returns the statement replacements, or None when something between the
        definitions and the sum changes the operands (no pattern then).
        """
        statement = block[index]
        defs = (first.def_index, second.def_index)
        watched = read_paths(first.call) + read_paths(second.call)
        if any(stores_into(block[d], watched) for d in defs):  # type: ignore[index]
            return None
        host = min(defs)  # type: ignore[type-var]
        later = max(defs)  # type: ignore[type-var]
        # The one evaluation reads every coefficient at the earlier definition: one the original
        # reads later (the other definition, a link, the sum) must not be bound only after that
        # point (`beta = 0.25` just before the sum: the rewrite would read it unbound, or stale).
        _bound_late((*first.coef.symbols(), *second.coef.symbols()), block[host + 1 : index + 1], reasons)
        # Between the definitions, the second evaluation must see the operands the first saw.
        # After both, the values are computed: rebinding an operand's name (the straight-through
        # estimator's `z_q = z + (z_q - z).detach()` before the sum) changes neither; only what the
        # new value's expression does is scanned. A store into an operand still counts.
        roots = {path[0] for path in watched}
        between = [block[k] for k in range(host + 1, later)]
        between += [_without_rebinding(block[k], roots) for k in range(later + 1, index)]
        # An attribute holding a term must keep its value until the sum reads it: a call that may
        # change it (`self.reset()`) is as unproven as one that may change an operand.
        held = [
            access_path(target)
            for term in (first, second)
            for target in [term.target] + [link[1] for link in term.links]
            if isinstance(target, cst.Attribute)
        ]
        watched_between = watched + [path for path in held if path is not None]
        verdict = scan_between(between, with_aliases(watched_between, self.scopes[-1], self.classifier), HarmlessCalls(self.classifier))
        if verdict.barrier is not None:
            return None
        if verdict.unknown:
            reasons.add(f"{verdict.unknown_text()} between the definitions and the sum may modify an operand")
        if coefficients:
            # The one evaluation reads an outside coefficient at the earlier definition, the original
            # in the sum: nothing in between (the statements the rewrite keeps there, and the sum's
            # other calls) may store into it (`self.beta = ...`, or a call that may: an annealing
            # step between the lines).
            seen = scan_between(between, with_aliases(list(coefficients), self.scopes[-1], self.classifier), HarmlessCalls(self.classifier))
            # `with_aliases` follows the names this function binds; two parameters (`model`,
            # `owner`) may hold one object, so a store into an attribute of the coefficient's
            # name on any object (`owner.beta = 0.5`, `other.cfg = c`) may rebind it (review 16, Z_01).
            stored = _stores_attribute_named(block[host + 1 : index], {part for path in coefficients for part in path[1:]})
            if stored or seen.barrier is not None or seen.unknown or self._others_in_statement(statement, first.node, second.node, coefficients):
                shown = ", ".join(f"`{'.'.join(path)}`" for path in coefficients)
                reasons.add(f"coefficient {shown} may be rebound between the one evaluation and the sum, which read it at two points")
        host_term = first if first.def_index == host else second
        replacements: Dict[cst.CSTNode, List[cst.BaseStatement]] = {}
        reads: Dict[int, bool] = {}
        for term in (first, second):
            reads[id(term)] = self._links_read(term, (first.node, second.node), reasons, block, index, replacements)
        if not correction.is_zero() or any(reads.values()):
            self._detach_reason(match, reasons)  # the correction, or a name rebuilt detached
        if reads[id(host_term)]:
            name = self._names.fresh(f"{name_stem(host_term.target)}_term", self.scopes)  # type: ignore[arg-type]
        else:
            name = host_term.target.value  # type: ignore[union-attr]  (an attribute is always read elsewhere)
        for term in (first, second):
            original = block[term.def_index]  # type: ignore[index]
            lines: List[cst.BaseStatement] = []
            if term is host_term:
                lines.append(original.with_changes(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=merged)]))
            if reads[id(term)]:
                # The loss value is read elsewhere: rebuild it, detached, from the one evaluation.
                assign = original.body[0]
                value = assign.value.visit(Replace({term.call: detached(name, copy=assign.value is term.call)}))
                rebuilt = original.with_changes(body=[assign.with_changes(value=value)])
                lines.append(rebuilt.with_changes(leading_lines=[]) if lines else rebuilt)
            replacements[original] = lines
        value = cst.Name(name) if correction.is_zero() else _value_expression(name, correction, self._numbers(correction))
        if not correction.is_zero() and not _leftmost(remove_term(root, second.node), first.node):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        new_statement, orphans = sum_without(statement, root, second.node, (first.node, value))
        replacements[statement] = [new_statement.with_changes(leading_lines=[*new_statement.leading_lines, *orphans])]
        return replacements

    def _links_read(self, term: Term, excluded: Sequence[cst.CSTNode], reasons: Reasons, block, index: int, replacements) -> bool:
        """Whether the term's name is read elsewhere, following it from the sum down its links: a
        name read elsewhere keeps its statement, and with it every name below it, down to the
        call's own, rebuilt detached; a link nothing reads is removed (`replacements`)."""
        needed = False
        for link_index, link_target, below in term.links:
            needed = self._read_elsewhere(link_target, excluded, reasons, block, index) or needed
            if not needed:
                replacements[block[link_index]] = []  # nothing reads it any more
            excluded = (below,)
        return self._read_elsewhere(term.target, excluded, reasons, block, index) or needed  # type: ignore[arg-type]

    def _read_elsewhere(self, target: Held, excluded: Sequence[cst.CSTNode], reasons: Reasons, block, index: int) -> bool:
        """Is the name `target` binds read anywhere but in `excluded` (the two terms of the sum, or the
        next link's read of it)?

        After the rewrite the name is rebuilt as a detached value of the one
        evaluation: exact for a read that ends in a value (`e.item()`,
        `float(e)`, an f-string, `print(e)`); any other read (`total = loss +
        0.1 * e`, a second sum, `return e`) sees the value without its
        gradient, which is added to `reasons`, naming the line. A read after the block binds
        the name anew, later than the sum (statement `index` of `block`), sees the new value:
        no reason (`BlockVisitor.unshadowed`), though the name is still rebuilt.

        An attribute (`self.vq_loss`) may be read anywhere, in other methods and other modules:
        it is always rebuilt, and the fix is unsafe.
        """
        if isinstance(target, cst.Attribute):
            text = code_of(target).strip()
            reasons.add(
                f"`{text}` is an attribute, which code outside the function may read as a tensor: "
                f"after the rewrite it holds the value without its gradient"
            )
            return True
        name = target.value
        scope = self.get_metadata(ScopeProvider, target, None)
        references = None
        if scope is not None:
            for assignment in scope.assignments[name]:
                if getattr(assignment, "node", None) is target:
                    references = [access.node for access in assignment.references]
                    break
        if references is None:
            reasons.add(f"gradfix cannot resolve the reads of `{name}`")
            return True
        if self.outermost_loop(target, self.scopes[-1]) is not None:
            # In a loop, a read above the definition sees the previous iteration's value, which
            # the rewrite changes too: every read of the name in the scope counts.
            references = list(dict.fromkeys([*references, *(a.node for b in scope.assignments[name] for a in b.references)]))
        elsewhere = [node for node in references if not any(contains_node(t, node) for t in excluded)]
        seen = self.unshadowed(name, block, index, elsewhere)
        read = self.tensor_read(name, seen, "it carries different gradients after the rewrite")
        if read is not None:
            reasons.add(read)
        # A module global is visible to importers: keep its value.
        return bool(elsewhere) or isinstance(scope, GlobalScope)

    def _may_move(self, if_statement: cst.If, name: cst.Name) -> bool:
        """Whether the other term's binding may move between its definition and the branches: not
        where code reads the name later than where it stands (a generator, a lambda, a def), which
        may run in between, nor under a `try` around the `if` (a caught exception between would
        skip the original binding, not the moved one)."""
        current: Optional[cst.CSTNode] = if_statement
        while current is not None and not isinstance(current, (cst.FunctionDef, cst.Module)):
            if isinstance(current, (cst.Try, cst.TryStar)):
                return False
            current = self.get_metadata(ParentNodeProvider, current, None)
        scope = self.get_metadata(ScopeProvider, name, None)
        if scope is None:
            return False
        return not any(
            self._deferred(access.node, self.scopes[-1]) for assignment in scope.assignments[name.value] for access in assignment.references
        )

    @staticmethod
    def _term_name(statement: cst.SimpleStatementLine, call: cst.Call) -> str:
        small = statement.body[0]
        if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
            if isinstance(target, cst.Name):
                return f"{target.value}_term"
            if isinstance(target, cst.Attribute):
                return f"{target.attr.value}_term"
        func = call.func
        last = func.attr.value if isinstance(func, cst.Attribute) else code_of(func).strip()
        return f"{last}_term" if last.isidentifier() else "merged_term"


# Where an expression is evaluated only sometimes, or in another scope: a sum
# there cannot be hoisted before the statement.
# How many names may stand between a sum and a term's call (`loss = q + c`, `c = beta * e`, `e = f(...)`: one).
_LINKS = 3

# (compared by exact type, once per node of a statement: `walk.node_types`)
_CONDITIONAL = node_types(
    cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp, cst.BooleanOperation,
)


# The statements and clauses that store into a target (`backward.store_targets` reads theirs).
_STORING = (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.WithItem, cst.Del)


def _real_literal(value: cst.BaseExpression) -> bool:
    """A literal that is a real number, True/False or None (not a string, not `2j`: a complex
    weight makes the original's loss complex, and `grad_scale` refuses it; review 16, Z_07)."""
    value = strip_parens(value)
    if isinstance(value, cst.UnaryOperation):
        return _real_literal(value.expression)
    return is_literal(value) and not isinstance(value, (cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


# The nodes whose names are their own scope's (a comprehension's targets too; a class body's, which its
# methods do not see, taken as theirs too: an overestimate).
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.ClassDef)

# torch's constructors of a tensor from data, and numpy's scalar types: given one real number (or a
# list of one), a one-element tensor or a number (`_one_element_tensor`).
_ONE_ELEMENT_FROM = frozenset(
    {"torch.tensor", "torch.as_tensor", "torch.scalar_tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"}
    | {f"numpy.{kind}" for kind in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "double", "single")}
)


def _one_element_tensor(value: cst.BaseExpression, classifier) -> bool:
    """`torch.tensor(0.25)`, `torch.tensor([0.25], requires_grad=True)`, `np.float32(0.25)`,
    `nn.Parameter(torch.tensor(0.25))`: a constructor of `_ONE_ELEMENT_FROM` given one real number,
    a list or tuple of exactly one, or (for `Parameter`) such a tensor."""
    value = strip_parens(value)
    if not isinstance(value, cst.Call) or not classifier.qualified(value.func) & _ONE_ELEMENT_FROM:
        return False
    plain = [a for a in value.args if a.keyword is None]
    if len(plain) != 1 or plain[0].star:
        return False
    data = strip_parens(plain[0].value)
    if isinstance(data, (cst.List, cst.Tuple)) and len(data.elements) == 1 and not isinstance(data.elements[0], cst.StarredElement):
        data = data.elements[0].value
    if _real_literal(data):
        return not (isinstance(data, cst.Name) and data.value == "None")
    return _one_element_tensor(data, classifier)


def _stores_attribute_named(statements: Sequence[cst.CSTNode], names: Set[str]) -> bool:
    """Whether `statements` store into an attribute named one of `names` on any object (`x.k = v`,
    `x.k += v`, `for x.k in ...`, `with c as x.k`, `del x.k`, `x.k[i] = v`): the object may be one
    another name also holds, which no alias walk of names sees."""
    return any(
        attribute.attr.value in names
        for statement in statements
        for node in nodes_of_type(statement, _STORING)
        for target in store_targets(node)
        for attribute in nodes_of_type(target, cst.Attribute)
    )


def _bound_late(symbols: Sequence[str], statements: Sequence[cst.CSTNode], reasons: Reasons) -> None:
    """A reason for each coefficient bound in `statements`, which run after the one evaluation that
    reads it (the rewrite would read it unbound, or its earlier value)."""
    bound = {name for statement in statements for name in binding_counts(statement)}
    for symbol in dict.fromkeys(symbols):
        if symbol.split(".")[0] in bound:
            reasons.add(f"coefficient `{symbol}` is bound after the one evaluation that reads it")


def _split_named(node: cst.BaseExpression) -> List[Tuple[Coef, Held]]:
    """`-beta * commitment_loss` -> [(Coef(-beta), the name), ...]: every reading of
    the term as a coefficient times a name or an attribute of a name (`BETA * loss`
    reads both ways; the caller keeps the one whose name is a loss defined above)."""
    if isinstance(node, cst.Name) or (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)):
        return [(Coef.of(Fraction(1)), node)]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        negate = isinstance(node.operator, cst.Minus)
        return [(-c if negate else c, n) for c, n in _split_named(node.expression)]
    readings: List[Tuple[Coef, Held]] = []
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        for named_side, coef_side in ((node.left, node.right), (node.right, node.left)):
            coef = parse_coef(coef_side)
            if coef is not None:
                readings += [(c * coef, n) for c, n in _split_named(named_side) if not cancels(c, coef)]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        coef = parse_coef(node.right)
        inverse = coef.inverse() if coef is not None else None
        if inverse is not None:
            readings += [(c * inverse, n) for c, n in _split_named(node.left) if not cancels(c, inverse)]
    return readings


def _sum_roots(small: cst.BaseSmallStatement) -> List[cst.BinaryOperation]:
    """Every `+`/`-` chain of a statement that is evaluated unconditionally.

    A chain's parenthesised sub-sums belong to it (`_flatten` walks them); a
    sum nested in another operation (`w * (a + b)`) is a chain of its own.
    """
    roots: List[cst.BinaryOperation] = []

    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.in_sum = [False]

        def on_visit(self, node: cst.CSTNode) -> bool:
            if type(node) in _CONDITIONAL:
                return False
            is_sum = type(node) is cst.BinaryOperation and isinstance(node.operator, SUM_OPS)
            if is_sum and not self.in_sum[-1]:
                roots.append(node)  # type: ignore[arg-type]
            self.in_sum.append(is_sum)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if type(original_node) not in _CONDITIONAL:
                self.in_sum.pop()

    walk_tree(small, Collect())
    return roots


def _flatten(node: cst.BaseExpression, sign: int) -> List[Tuple[cst.BaseExpression, int]]:
    bare = strip_parens(node)
    if isinstance(bare, cst.BinaryOperation) and isinstance(bare.operator, SUM_OPS):
        right_sign = sign if isinstance(bare.operator, cst.Add) else -sign
        # `bare` may be a copy (parentheses stripped): its children are the tree's own.
        return _flatten(bare.left, sign) + _flatten(bare.right, right_sign)
    return [(node, sign)]


def _reads_own_names(first: Term, second: Term) -> bool:
    """Whether a coefficient reads a name that holds one of the terms (a term's own name or a link)."""
    names = {
        target.value
        for term in (first, second)
        for target in [term.target] + [link[1] for link in term.links]
        if isinstance(target, cst.Name)
    }
    coefs = [term.coef for term in (first, second)] + [branch.coef for term in (first, second) for branch in term.branches]
    return any(symbol.split(".")[0] in names for coef in coefs for symbol in coef.symbols())


def _branched(block: Sequence[cst.BaseStatement], index: int, coef: Coef, name: Held):
    """`name` bound in every branch of the `if`/`elif`/`else` chain nearest above statement `index`
    that binds it, each time by `name = c * f(...)` (a call holding a stop-gradient), the last
    binding of its branch: `_follow`'s tuple with each branch's binding, or None.

    The chain must end with an `else` (every run binds the name); each branch records the tests
    evaluated before it runs (an `elif`'s after the `if`'s: more statements between the passes).
    A branch on the `if`'s line (`if c: e = ...`) is refused."""
    if not isinstance(name, cst.Name):
        return None  # an attribute may be read anywhere: always rebuilt, and not followed here
    found = next((j for j in range(index - 1, -1, -1) if stores_into(block[j], [(name.value,)]) is not None), None)
    if found is None:
        return None
    statement = block[found]
    if not isinstance(statement, cst.If):
        return None
    # The chain's suites, `if`, each `elif`, and the `else` it must end with (every run binds the
    # name), each with the tests evaluated before it runs.
    suites: List[Tuple[cst.BaseSuite, Tuple[cst.BaseExpression, ...]]] = []
    tests: Tuple[cst.BaseExpression, ...] = ()
    node: Union[cst.If, cst.Else, None] = statement
    while isinstance(node, cst.If):
        tests += (node.test,)
        suites.append((node.body, tests))
        node = node.orelse
    if not isinstance(node, cst.Else):
        return None
    suites.append((node.body, tests))
    branches = []
    for suite, tests_before in suites:
        if not isinstance(suite, cst.IndentedBlock):
            return None
        defined = definition(suite.body, len(suite.body), name)
        if defined is None:
            return None  # the branch does not bind it last by a plain assignment
        k, assign = defined
        inner = split_linear(assign.value)
        if inner is None or not contains_detach(inner[1]):
            return None
        branches.append(Branch(suite.body, k, coef * inner[0], inner[1], assign.targets[0].target, tests_before))  # type: ignore[arg-type]
    first = branches[0]
    return first.coef, first.call, found, first.target, (), tuple(branches)


def _with_bodies(statement: cst.If, bodies: List[List[cst.BaseStatement]]) -> cst.If:
    """The `if`/`elif`/`else` chain with each suite's statements replaced, in order."""
    orelse = statement.orelse
    if isinstance(orelse, cst.If):
        orelse = _with_bodies(orelse, bodies[1:])
    elif isinstance(orelse, cst.Else):
        orelse = orelse.with_changes(body=orelse.body.with_changes(body=bodies[1]))
    return statement.with_changes(body=statement.body.with_changes(body=bodies[0]), orelse=orelse)


def _reads_attribute(node: cst.CSTNode) -> bool:
    """Whether `node` reads an attribute (a property of a class of the file may run code)."""
    found = [False]

    class Find(cst.CSTVisitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            found[0] = True

    walk_tree(node, Find())
    return found[0]


def _leftmost(root: cst.BaseExpression, node: cst.BaseExpression) -> bool:
    """`node` is the first operand of the chain, reached through left operands only (no parentheses)."""
    current = root
    while current is not node:
        if not (isinstance(current, cst.BinaryOperation) and isinstance(current.operator, SUM_OPS)) or current.lpar:
            return False
        current = current.left
    return True


def _value_expression(name: str, correction: Coef, numbers: bool = True) -> cst.BaseExpression:
    """`m + ((a+b-1) * m).detach()`: the value of both terms, the gradients of the one evaluation.

    Where the correction is not all numbers (`numbers`: its symbols are the file's number
    constants): `m + (a+b-1) * m.detach()`, the same value, and a coefficient keeps its own
    gradient, `m`'s value, as its term gave it in the original (`beta * f(x.detach(), y)`: d/d beta
    = f; stop 35). A number has none to keep: the first form, which reads as a detached correction."""
    if correction.is_zero():
        return cst.Name(name)
    if correction.is_one():
        text = f"{name} + {name}.detach()"
    else:
        factor = correction.render()
        if len(correction.terms) > 1:
            factor = f"({factor})"
        if not numbers:
            text = f"{name} + {factor} * {name}.detach()"
        else:
            text = f"{name} + ({factor} * {name}).detach()"
    return cst.parse_expression(text)


def _without_rebinding(statement: cst.BaseStatement, names: Set[str]) -> cst.BaseStatement:
    """`name = value` with `name` one of `names` (plain names only, one target) as the expression
    statement `value`: what it computes, without the rebinding; any other statement as it is."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and small.targets[0].target.value in names
        ):
            return statement.with_changes(body=[cst.Expr(value=small.value)])
    return statement
