"""The visitor of gf005_needless_retain_graph (named by that module's VISITOR; the registry imports it on first use)."""

from __future__ import annotations

import builtins

from gradfix.rules.gf005_needless_retain_graph import CODE
from gradfix.reasons import LOOP, Reason, Reasons

from typing import AbstractSet, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import Assignment, ParentNodeProvider, ScopeProvider

from gradfix.analysis.backward import ACCELERATOR_CLASSES, BackwardCall, accelerate_reasons, backward_call, fresh_binding, hands_on_arguments, later_use_reasons, optimizer_built, optimizer_keeps_nothing, old_keyword_reasons, spelling_reasons, value_like
from gradfix.analysis.between import harmless_call
from gradfix.analysis.exprs import access_path, binding_counts, calls_within, code_of, imported_names, is_literal, last_name, nodes_within, same_expr, strip_parens
from gradfix.analysis.introspection import introspection_reasons, names_reached_by_string
from gradfix.analysis.loops import (
    assignments,
    attribute_graph_reads,
    function_parameters,
    graph_free,
    loop_inputs,
    loop_reasons,
    module_graph_reads,
    names_read,
    stores_into_objects,
    writes_into_parameters,
)
from gradfix.fixes.build import Replace
from gradfix.analysis.vocabulary import ITEM_GETTERS, MODULE_LEAF_METHODS, MUTATING_METHODS, STEP_METHODS
from gradfix.findings import Finding
from gradfix.fixes.rewrite import Rewrite
from gradfix.rules._blocks import BlockVisitor
from gradfix.analysis.walk import children, walk_tree

_NEXT_CALL = "the next call may backpropagate through that graph again, which the fix frees"


class Visitor(BlockVisitor):
    CODE = CODE
    MOVES_EVALUATIONS = False  # the fix drops `retain_graph=True`, nothing moves

    def block(self, block: Sequence[cst.BaseStatement]) -> None:
        function = self.scopes[-1]
        for index in range(len(block)):
            call = backward_call(block, index, self.facts.accelerators)
            if call is None:
                continue
            arg = _retain_arg(call)
            if arg is None or "create_graph" in call.keywords or call.opaque_args:
                continue
            if isinstance(function, cst.Module) and self.classifier.enclosing_class(call.statement) is not None:
                continue  # a class body's own statements: not followed
            end = self.line(call.statement, end=True)
            if later_use_reasons(end, function, self.line, self.facts, self.classifier):
                continue  # a later backward may need the graph: retaining it is the point
            # In a loop the next iteration runs this backward (and the loop's others) again: on a
            # fresh graph, unless the loop reads a value built before it in the file or carried from
            # an earlier iteration that `loop_reasons` does not prove graph-free (`h = net(x)` above
            # the loop, `h = cell(x, h)`): then retaining may be the point, not reported. What only
            # comes in from the caller (`def train(model, loader)`: `model(x)`, `for x in loader`)
            # is unknown, not a sign: reported, the fix unsafe, naming it.
            in_loop = self._in_loop(call.statement, function)
            inputs: List[str] = []
            # The receiver of an Accelerate call is read as an `Accelerator` (which holds no graph)
            # for the call's own finding only: its fix is unsafe anyway (`accelerate_reasons`).
            accelerators = self.facts.accelerators if call.accelerator else frozenset()
            if in_loop:
                module = self.scopes[0]
                if loop_reasons(call.statement, function, module, self.line, parameters=False, graph_free_names=accelerators):
                    continue
                if loop_reasons(call.statement, function, module, self.line, graph_free_names=accelerators):
                    inputs = loop_inputs(call.statement, function)
            self.findings.append(self._finding(call, arg, function, in_loop, inputs))

    def _in_loop(self, node: cst.CSTNode, function: cst.CSTNode) -> bool:
        return self.outermost_loop(node, function) is not None

    def _under_main_guard(self, node: cst.CSTNode, module: cst.Module) -> bool:
        """Whether `node` runs only when the file is run as a script: inside the body of a
        top-level `if __name__ == "__main__":`."""
        child, parent = node, self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and parent is not module:
            if isinstance(parent, cst.If) and child is parent.body and _is_main_test(parent.test):
                return self.get_metadata(ParentNodeProvider, parent, None) is module
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        return False

    def _finding(self, call: BackwardCall, arg: cst.Arg, function: cst.CSTNode, in_loop: bool, inputs: List[str]) -> Finding:
        if isinstance(function, cst.Module):
            reasons = self._unproven_at_module_level(call, function)
        else:
            reasons = self._unproven(call, function)
        reasons.extend(old_keyword_reasons([call]))
        reasons.extend(accelerate_reasons([call]))
        if inputs:
            shown = ", ".join(f"`{name}`" for name in inputs)
            source = "from before it" if isinstance(function, cst.Module) else "from the caller"
            reasons.add(
                Reason(
                    f"{shown} {'comes' if len(inputs) == 1 else 'come'} into the loop {source}: if "
                    f"{'it carries' if len(inputs) == 1 else 'one carries'} a tensor from one iteration to the next "
                    f"(a module keeping its hidden state, a loader yielding tensors of one graph), the next "
                    f"iteration backpropagates through this graph",
                    LOOP,
                )
            )
        loss = code_of(call.receiver).strip()
        written = f"`{call.retain_keyword}=True`"
        fix = Rewrite(
            safe=not reasons,
            replacements={call.statement: [call.statement.visit(Replace({call.call: _without(call.call, arg)}))]},
            description=f"Remove {written}",
            unsafe_reason=reasons.text(),
        )
        later = "later in this iteration or the next of" if in_loop else "later in"
        where = "the module" if isinstance(function, cst.Module) else f"`{function.name.value}`"
        # The old keyword raises on every supported torch: what it would keep alive is what it meant.
        old = call.old_spelling
        keeps = (
            f"{written}, the pre-0.4 spelling of `retain_graph=True` (torch >= 2.1 raises TypeError on it), would keep"
            if old
            else f"{written} keeps"
        )
        message = (
            f"{keeps} the graph of `{loss}` alive, but nothing {later} "
            f"{where} backpropagates through it: its saved activations {'would stay' if old else 'stay'} in memory until "
            f"the graph is freed"
        )
        return self.report(arg, message, fix, reasons)

    # -- fix safety -------------------------------------------------------------------
    def _unproven(self, backward: BackwardCall, function: cst.FunctionDef) -> Reasons:
        """What could keep a tensor of the graph for a later backward (empty: a safe fix)."""
        reasons = Reasons()
        keeps = self._first_keeping(function, backward)
        if keeps is not None:
            reasons.add(keeps)
        escape = self._escape(function)
        if escape is not None:
            reasons.add(escape)
        reasons.extend(introspection_reasons(function, self.line))
        reasons.extend(spelling_reasons([backward.statement], self.facts))
        enclosing = self._enclosing_reads(function)
        if enclosing:
            reasons.add(
                Reason(
                    f"`{function.name.value}` reads `{enclosing}` from the function around it: called again (an "
                    f"`LBFGS` closure), it may backpropagate through that value's graph again, which the fix frees",
                    LOOP,
                )
            )
        # Values that outlive one call and may hold a graph: the next call backpropagates through
        # it again, which only the kept graph allows (review, stop 21).
        module = self.scopes[0]
        for name, value in module_graph_reads(function, module)[:1]:
            where = f"built at module level (line {self.line(value)})" if value is not None else "from outside the function"
            reasons.add(Reason(f"`{function.name.value}` reads `{name}`, {where} and not proven free of a graph: {_NEXT_CALL}", LOOP))
        for name in attribute_graph_reads(function, module, self.facts.bound_attribute_names)[:1]:
            reasons.add(
                Reason(
                    f"`{function.name.value}` reads the attribute `{name}`, which the file does not prove holds no graph "
                    f"wherever it is set: {_NEXT_CALL}",
                    LOOP,
                )
            )
        unseen = self._unseen_callers(function)
        caller = None if unseen is not None else self._caller_passing_graph(function)
        if unseen is not None:
            reasons.add(Reason(f"{unseen}: {_NEXT_CALL}", LOOP))
        elif caller is not None:
            node, value = caller
            if node is value:
                text = (
                    f"`{function.name.value}` is handed on as a value at line {self.line(node)}: gradfix does not follow "
                    f"its callers there, which may pass it one graph twice"
                )
            else:
                text = (
                    f"`{function.name.value}` is called at line {self.line(node)} with `{code_of(value).strip()}`, not proven "
                    f"free of a graph (two calls given one graph backpropagate through it twice)"
                )
            reasons.add(Reason(f"{text}: {_NEXT_CALL}", LOOP))
        handed = self._loss_from_caller(backward, function)
        if handed is not None:
            # The caller built this graph and still holds the loss: it may backpropagate through
            # it again (`update(loss)` then `loss.backward()`), which only the kept graph allows. The
            # assumption that a caller in another file passes values free of a graph cannot hold
            # for the loss itself (stop 33, a held-out training file: `sampler.update(domain_loss)`).
            reasons.add(
                Reason(
                    f"the loss `{code_of(backward.receiver).strip()}` is the caller's (the parameter `{handed}`): the caller "
                    f"built its graph and may backpropagate through it again, which the fix frees",
                    LOOP,
                )
            )
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None and not graph_free(param.default):
                reasons.add(
                    Reason(
                        f"the default of `{param.name.value}` is built once, when `{function.name.value}` is defined, and is "
                        f"not proven free of a graph: {_NEXT_CALL}",
                        LOOP,
                    )
                )
                break
        return reasons

    def _loss_from_caller(self, backward: BackwardCall, function: cst.FunctionDef) -> Optional[str]:
        """The parameter the loss is read from, or None: the loss is an access path (`loss`,
        `losses["g"]`, `out.loss`) rooted at a parameter (a method's `self` or `cls` aside: what is
        stored on them is checked as an attribute read), or at a name the body binds to such a path,
        followed three links deep. Review, round 14: by any binding the body makes of the name, not
        only `name = <path>` (round 13 missed `d_loss, _ = losses`, `loss: Tensor = losses[0]`,
        `(loss := losses[0])`, `for loss in losses`), and through the item getters that give the
        same tensor (`losses.get("d")`, `getattr(out, "loss")`; round 15: `_held_in`)."""
        params = function_parameters(function)
        if self.classifier.enclosing_class(function) is not None and not any(
            code_of(d.decorator).strip() == "staticmethod" for d in function.decorators
        ):
            first = [*function.params.posonly_params, *function.params.params][:1]
            params = params - {p.name.value for p in first}
        counts = binding_counts(function.body)
        # Review, round 16: a loss made of the caller's losses only (`sum(losses)`, `a + b`) holds
        # the caller's graph as much as a loss handed in itself (`_combined_from_caller`).
        combined = _combined_from_caller(backward.receiver, params, counts, function.body, 4)
        if combined is not None:
            return combined
        selected = self._selected_from_caller(backward, params, counts, function)
        if selected is not None:
            return selected
        # Review, round 17: a loss that gathers the caller's tensors into one (`torch.stack(losses)
        # .sum()`, `reduce(operator.add, losses)`) backpropagates into each of them, whatever else
        # it is made of, but what a module is called on (`_gathered_from_caller`).
        first = {p.name.value for p in [*function.params.posonly_params, *function.params.params][:1]} - params
        own = first | _module_values(self.scopes[0])
        return _gathered_from_caller(backward.receiver, params, own, counts, function.body, lambda func: self._helper(func, first))

    def _helper(self, func: cst.BaseExpression, first: AbstractSet[str]) -> Optional[Tuple[cst.FunctionDef, bool]]:
        """The def of the file a call of `func` runs, with whether the call's receiver takes its first
        parameter: a module-level function the file binds once by its name, or `self.m` of a method
        of the class around (one `m` defined there); else None."""
        module = self.scopes[0]
        if isinstance(func, cst.Name):
            if self.facts.binding_counts.get(func.value) != 1:
                return None
            found = [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == func.value]
            return (found[0], False) if found else None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in first:
            cls = self.classifier.enclosing_class(func)
            if cls is None:
                return None
            found = [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value]
            return (found[0], True) if len(found) == 1 and not found[0].decorators else None
        return None

    def _selected_from_caller(self, backward: BackwardCall, params, counts, function: cst.FunctionDef) -> Optional[str]:
        """The parameter the loss is selected from as it is (an access path, `_held_in`), or None."""
        nodes: List[cst.BaseExpression] = [backward.receiver]
        seen: set = set()
        for _ in range(4):
            following: List[cst.BaseExpression] = []
            # Review, round 15: and through what gives an item of a holder as it is, where the
            # value is no path itself (`_held_in`: `for _, loss in enumerate(losses)`,
            # `losses.values()`, `a if c else losses[0]`, `list(losses)[0]`, a `match` capture).
            for node in [held for n in nodes for held in _held_in(n)]:
                path = access_path(node)
                if path is None or path[0] in seen:
                    continue
                root = path[0]
                seen.add(root)
                if root in params:
                    if counts.get(root, 0) == 0:
                        return root
                    continue  # (rebound in the body: not the argument; its bindings are followed below)
                following.extend(_values_bound(function.body, root))
            # `a, b = x, losses`: each element of a display may be what the name gets.
            nodes = [e.value for v in following for e in _elements(v)]
            if not nodes:
                return None
        return None

    def _unseen_callers(self, function: cst.FunctionDef) -> Optional[str]:
        """Why the file's calls of `function` are not all in sight, or None. `_caller_passing_graph`
        reads the calls that name it (`inner(h)`, `x.step(h)`); Python also calls a method without
        naming it (review, stop 24): a dunder (`t(h)` runs `__call__`, `Step(h)` `__init__`, `p[h]`
        `__getitem__`, operators, `with`, `for`), `forward` (`nn.Module.__call__` runs it); and code
        may reach either by its name as a string (`getattr(t, "step")`, `globals()["inner"]`, a
        computed `getattr(t, name)`, `methodcaller`, a class's `__dict__`)."""
        name = function.name.value
        method = self.classifier.enclosing_class(function) is not None
        decorators = [code_of(d.decorator).strip() for d in function.decorators]
        wrapping = [d for d in decorators if d not in ("staticmethod", "classmethod")]
        if wrapping:
            # The decorator's wrapper is what the calls reach: it may call the function with any
            # argument, twice with one graph (review, stop 24).
            return f"`{name}` is decorated (`@{wrapping[0]}`): the decorator may call it, with arguments gradfix does not see"
        hooks = self.facts.forward_hooks or self.facts.parametrizations
        if hooks:
            # A module's forward hook or parametrization may keep an output between calls (a cache
            # returned on the next call, `parametrize.cached()`): a module read by the function
            # then carries a graph from one call to the next (review, stop 24).
            hook = hooks[0]
            return (
                f"`{code_of(hook).strip()}` (line {self.line(hook)}) may make a module keep an output between calls, "
                f"with its graph"
            )
        if method and (name == "forward" or (len(name) > 4 and name.startswith("__") and name.endswith("__"))):
            return (
                f"`{name}` is called without being named (`obj(...)` runs `__call__` and an `nn.Module`'s `forward`, "
                f"`Cls(...)` `__init__`, `obj[...]` `__getitem__`, operators their dunders): gradfix does not follow "
                f"those callers, which may pass it one graph twice"
            )
        # Review, round 17: a library base may call the method by its name with what the file hands
        # it elsewhere (`UserDict.__init__(initial)` calls `self.update(initial)`: `Bank({"h": h})`
        # twice gives `update` one graph twice); proven only for the bases `facts._base_self_calls`
        # lists (`object`, the file's classes, torch's: an `nn.Module` calls `train`, `apply`, ...).
        owner = self.classifier.enclosing_class(function) if method else None
        if owner is not None and self.facts.base_may_call(owner, name):
            return (
                f"a base of `{owner.name.value}` may call `{name}` by its name, with values the file hands it elsewhere "
                f"(`UserDict.__init__` calls `update`): gradfix does not follow those callers, which may pass it one graph twice"
            )
        reached = names_reached_by_string(self.scopes[0], name, method)
        if reached is not None:
            where = (
                "`globals()`, `vars()`, `eval`, `exec` or `sys.modules` in the file"
                if isinstance(reached, cst.Module)
                else f"`{_short(code_of(reached))}` at line {self.line(reached)}"
            )
            return (
                f"`{name}` may be reached by its name as a string ({where}): gradfix does not follow those callers, "
                f"which may pass it one graph twice"
            )
        return None

    def _caller_passing_graph(self, function: cst.FunctionDef):
        """(node, what) for the first place in the file that may hand `function` a graph built
        outside it, or None: a call by its name (`inner(h)`, or `x.inner(h)` for a method) with an
        argument not proven graph-free (`_argument_graph_free`), or a reference to it that is no
        such call (`map(inner, hs)`, `f = inner`, `partial(inner, h)`: callers gradfix does not
        follow). Such a value may carry a graph the next call backpropagates through again (`h =
        net(x); inner(h); inner(h)`). Callers in other files are not seen (the README's assumptions)."""
        name = function.name.value
        method = self.classifier.enclosing_class(function) is not None
        # A name is proven only where the function writes into none of its parameters.
        names_proven = not writes_into_parameters(function)
        found: list = []
        visitor = self

        class Find(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                if visitor._names_function(call.func, name, method):
                    for arg in call.args:
                        if arg.star or not visitor._argument_graph_free(arg.value, function, method, names_proven):
                            found.append((call, arg.value))

            def visit_Attribute(self, node: cst.Attribute) -> None:
                if method and node.attr.value == name and not visitor._called(node):
                    found.append((node, node))

        walk_tree(self.scopes[0], Find())
        # Every read of the function's name, as its scope resolves it, must call it. A method's
        # name read in its class body (`run = step`, `partialmethod(step, h)`) hands it on, called
        # or not: its calls are then `t.run(h)`, which the search above does not match (review, stop 24).
        scope = self.get_metadata(ScopeProvider, function, None)
        if scope is None:
            found.append((function, function.name))
        else:
            for assignment in scope.assignments[name]:
                for access in assignment.references:
                    if method or not self._called(access.node):
                        found.append((access.node, access.node))
        if not found:
            return None
        return min(found, key=lambda item: self._position_key(item[0]))

    @staticmethod
    def _names_function(func: cst.BaseExpression, name: str, method: bool) -> bool:
        return isinstance(func, cst.Attribute) and func.attr.value == name if method else isinstance(func, cst.Name) and func.value == name

    def _called(self, node: cst.CSTNode) -> bool:
        """`node` is the callee of a call (`inner(...)`, `x.inner(...)`)."""
        parent = self.get_metadata(ParentNodeProvider, node, None)
        return isinstance(parent, cst.Call) and parent.func is node

    def _argument_graph_free(self, value: cst.BaseExpression, function: cst.FunctionDef, method: bool, names_proven: bool) -> bool:
        """`value`, an argument of a call of `function`, is proven to hold no graph: a graph-free
        expression (`loops.graph_free`), or, where `names_proven` (`function` writes into none of
        its parameters), a name every binding of which (as the call site's scope resolves it) is a
        plain `name = <graph-free value>`, and every read of which is an argument of a call of
        `function` (an allowlist: the value can go nowhere else, so nothing can write a graph into it)."""
        if graph_free(value):
            return True
        if not names_proven or not isinstance(value, cst.Name):
            return False
        scope = self.get_metadata(ScopeProvider, value, None)
        if scope is None:
            return False
        assignments = list(scope[value.value])
        if not assignments:
            return False
        for assignment in assignments:
            node = getattr(assignment, "node", None)
            if type(assignment) is not Assignment or not isinstance(node, cst.Name):
                return False  # a builtin, an import, a parameter, `global`...
            target = self.get_metadata(ParentNodeProvider, node, None)
            assign = self.get_metadata(ParentNodeProvider, target, None) if isinstance(target, cst.AssignTarget) else None
            if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.targets[0].target is node):
                return False  # a tuple target, a `for` target, a `with ... as`, a match capture, `:=`...
            if not graph_free(assign.value):
                return False
            for access in assignment.references:
                arg = self.get_metadata(ParentNodeProvider, access.node, None)
                call = self.get_metadata(ParentNodeProvider, arg, None) if isinstance(arg, cst.Arg) else None
                if not (isinstance(call, cst.Call) and not arg.star and self._names_function(call.func, function.name.value, method)):  # type: ignore[union-attr]
                    return False
        return True

    def _enclosing_reads(self, function: cst.FunctionDef) -> Optional[str]:
        """The first name (in source order) that a nested function reads from a function around it, or
        None. Such a value outlives one call: a closure called twice (`opt.step(closure)` under LBFGS)
        backpropagates through its graph each time, as a loop's next iteration would."""
        outer = [s for s in self.scopes[1:-1] if isinstance(s, (cst.FunctionDef, cst.Lambda))]
        if not outer:
            return None
        bound = set(binding_counts(function.body)) | function_parameters(function)
        around = set()
        for scope in outer:
            around |= set(binding_counts(scope.body)) | function_parameters(scope)  # (an overestimate: nested code too)
        return next((name for name in names_read(function.body) if name not in bound and name in around), None)

    def _unproven_at_module_level(self, backward: BackwardCall, module: cst.Module) -> Reasons:
        """What could backpropagate through the graph again, for a call in module-level code.

        Script code runs once: what it keeps matters only to code that runs after it. The
        module's own later code is `later_use_reasons`' (checked before); in a loop, the loop's
        calls are checked as a function's are (the next iteration runs them again); and code
        that imports the module, or a notebook's later cell, is out of sight: only a call under
        `if __name__ == "__main__":` is proven to run where nothing comes after it."""
        reasons = Reasons()
        if not self._under_main_guard(backward.statement, module):
            reasons.add(
                f"module-level code outside `if __name__ == \"__main__\":` (line {self.line(backward.statement)}) also "
                f"runs for code that imports the module (or in a notebook, before later cells): that code may "
                f"backpropagate through `{code_of(backward.receiver).strip()}` again"
            )
        loop = self.outermost_loop(backward.statement, module)
        keeps = self._first_keeping(loop, backward) if loop is not None else None
        if keeps is not None:
            reasons.add(keeps)
        reasons.extend(introspection_reasons(module, self.line))
        reasons.extend(spelling_reasons([backward.statement], self.facts))
        return reasons

    def _first_keeping(self, scope: cst.CSTNode, backward: BackwardCall) -> Optional[str]:
        """Why the first call in `scope` (but the backward itself) may keep a tensor of the graph, or None."""
        for call in calls_within(scope):
            if call is not backward.call:
                why = self._call_keeps(call, backward, scope)
                if why is not None:
                    return why
        return None

    def _call_keeps(self, call: cst.Call, backward: BackwardCall, scope: cst.CSTNode) -> Optional[str]:
        func = call.func
        at = self.line(call)
        handed = hands_on_arguments(call, self.classifier, self.facts)
        if handed is not None:
            return f"`{code_of(func).strip()}()` (line {at}) {handed}, beyond the call"
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in STEP_METHODS and not call.args:
                return None
            if method in MODULE_LEAF_METHODS and all(self._value(a.value) or graph_free(a.value) for a in call.args):
                return None  # `model.train()`, `model.train(False)`; not `self.train(loss)`, a method of any name
            if method == "backward" and all(a.keyword is not None and a.keyword.value != "create_graph" for a in call.args):
                # Another `loss.backward(...)`: it leaves gradients in `.grad`, which hold no graph
                # without `create_graph`; whether it goes through this graph is `later_use_reasons`'.
                return None
            if method == "step" and backward.scaler is not None and same_expr(func.value, backward.scaler) and len(call.args) == 1:
                return None  # `scaler.step(opt)`
            if method == "scale" and backward.scaler is not None and same_expr(func.value, backward.scaler):
                return None  # `scaler.scale(loss)` of the backward itself
            if method in MUTATING_METHODS and not all(self._value(a.value) for a in call.args):
                return f"`{code_of(func).strip()}()` (line {at}) stores a tensor in a container that may outlive the call"
        qualified = self.classifier.qualified(func)
        if optimizer_built(call, self.classifier) and optimizer_keeps_nothing(call, scope, self.facts):
            return None  # an optimizer or scheduler built from outside values: it holds parameters, never a graph's tensors
        if qualified & ACCELERATOR_CLASSES and all(graph_free(a.value) for a in call.args):
            return None  # `Accelerator(...)` built from settings: it holds no tensor
        if harmless_call(call, self.classifier):
            return None
        return (
            f"`{code_of(func).strip()}()` (line {at}) is not proven to keep no tensor of this graph for a later "
            f"backward (a hidden state carried to the next call needs the graph)"
        )

    def _escape(self, function: cst.FunctionDef) -> Optional[str]:
        """The first statement through which a tensor may leave the function, or None."""
        found: List[str] = []
        visitor = self

        class Find(cst.CSTVisitor):
            def visit_Return(self, node: cst.Return) -> None:
                if node.value is not None and not visitor._value(node.value) and not visitor._holds_values(node.value, function):
                    found.append(f"`return {code_of(node.value).strip()}` (line {visitor.line(node)}) may hand a tensor of the graph to the caller")

            def visit_Yield(self, node: cst.Yield) -> None:
                found.append(f"the function is a generator (line {visitor.line(node)}): what it yields may carry the graph")

            def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
                self._store(node.target, visitor.get_metadata(ParentNodeProvider, node))

            def visit_AugAssign(self, node: cst.AugAssign) -> None:
                target = node.target
                if isinstance(target, cst.Name) and not visitor._value(node.value) and not fresh_binding(target.value, function, visitor.facts):
                    # `total += h` on a tensor from outside (a parameter, or a name bound to one or to a
                    # view of one) is in place: that tensor then holds this graph beyond the call.
                    found.append(
                        f"`{target.value} {code_of(node.operator).strip()}` "
                        f"(line {visitor.line(node)}) may change a tensor from outside the call in place, which then "
                        f"holds the graph beyond it"
                    )
                self._store(target, node)

            def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                if node.value is not None:
                    self._store(node.target, node)

            def _store(self, target: cst.BaseExpression, statement) -> None:
                if isinstance(target, (cst.Attribute, cst.Subscript)) and not visitor._value(statement.value):
                    found.append(f"`{code_of(target).strip()}` (line {visitor.line(target)}) keeps a value that may carry the graph beyond the call")
                elif isinstance(target, (cst.Tuple, cst.List)):
                    for element in target.elements:
                        if isinstance(element.value, (cst.Attribute, cst.Subscript)):
                            found.append(f"`{code_of(element.value).strip()}` (line {visitor.line(target)}) keeps a value that may carry the graph beyond the call")

            def visit_Assert(self, node: cst.Assert) -> None:
                # The AssertionError carries its message out of the call (`assert ok, loss`).
                if node.msg is not None and not visitor._value(node.msg) and not graph_free(node.msg):
                    found.append(f"the message of `assert` (line {visitor.line(node)}) may carry a tensor of the graph out of the call in the AssertionError")

            def visit_Raise(self, node: cst.Raise) -> None:
                # The exception carries its arguments out of the call (`raise ValueError(loss)`).
                if node.exc is not None and not visitor._carries_values(node.exc):
                    found.append(f"`raise {code_of(node.exc).strip()}` (line {visitor.line(node)}) may carry a tensor of the graph out of the call in the exception")

            def visit_Global(self, node: cst.Global) -> None:
                found.append(f"a `global` statement (line {visitor.line(node)}) lets a tensor outlive the call")

            def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
                found.append(f"a `nonlocal` statement (line {visitor.line(node)}) lets a tensor outlive the call")

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                if node is not function:
                    found.append(f"the nested function `{node.name.value}` (line {visitor.line(node)}) may backpropagate later")
                    return False
                return True

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                found.append(f"a lambda (line {visitor.line(node)}) may backpropagate later")
                return False

        walk_tree(function, Find())
        return found[0] if found else None

    def _holds_values(self, node: cst.BaseExpression, function: cst.FunctionDef) -> bool:
        """A name of the function bound only to values and filled only with values (`history = []`,
        `history.append(loss.item())`): returning it hands no tensor to the caller."""
        if not isinstance(node, cst.Name):
            return False
        bindings = [v for name, v in assignments(function) if name == node.value]
        stores = [v for name, v in stores_into_objects(function) if name == node.value]
        return bool(bindings) and all(v is not None and (graph_free(v) or self._value(v)) for v in bindings + stores)

    def _carries_values(self, exc: cst.BaseExpression) -> bool:
        """An exception raised that holds no tensor: a class or a builtin exception built from
        values (`raise ValueError(f"nan at {step}")`); not one bound earlier (`raise err`)."""
        if isinstance(exc, cst.Name):
            return exc.value in _BUILTIN_EXCEPTIONS
        return (
            isinstance(exc, cst.Call)
            and isinstance(exc.func, cst.Name)
            and exc.func.value in _BUILTIN_EXCEPTIONS
            and all(self._value(a.value) or graph_free(a.value) for a in exc.args)
        )

    def _value(self, node: cst.BaseExpression) -> bool:
        """An expression whose result carries no graph: a literal, `.item()`, `float(...)`, an f-string
        (`backward.value_like`, which the merges' escape check shares)."""
        return value_like(node, self.facts)


def _is_main_test(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"` (either way round, either quote)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__"]
    return len(names) == 1 and len(strings) == 1


def _retain_arg(call: BackwardCall) -> Optional[cst.Arg]:
    """The `retain_graph=True` argument (or the pre-0.4 `retain_variables=True` alone:
    `BackwardCall.retain_keyword`), written as the literal."""
    keyword = call.retain_keyword
    for arg in call.call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            value = arg.value
            if isinstance(value, cst.Name) and value.value == "True" and not value.lpar:
                return arg
    return None


def _without(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """The call without `arg`; the new last argument loses a trailing comma it only had as a separator."""
    args = [a for a in call.args if a is not arg]
    if args and call.args[-1] is arg:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# The builtin exception classes: built from values, they hold no tensor.
_BUILTIN_EXCEPTIONS = frozenset(
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
)


def _values_bound(body: cst.CSTNode, name: str) -> List[cst.BaseExpression]:
    """What the body binds `name` from, by any assignment form that may bind it: the value of an
    assignment whose targets hold the name (`a, b = losses`: `losses`), an annotated assignment, a
    `:=`, the iterable of a `for` or comprehension whose target holds it, a `with ... as`'s context."""
    def holds(target: cst.CSTNode) -> bool:
        return any(n.value == name for n in nodes_within(target, cst.Name)) or (isinstance(target, cst.Name) and target.value == name)

    found: List[cst.BaseExpression] = []
    for node in nodes_within(body, (cst.Assign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.WithItem)):
        if isinstance(node, cst.Assign) and any(holds(t.target) for t in node.targets):
            found.append(_matching_element(node, name) or node.value)
        elif isinstance(node, cst.AnnAssign) and node.value is not None and holds(node.target):
            found.append(node.value)
        elif isinstance(node, cst.NamedExpr) and holds(node.target):
            found.append(node.value)
        elif isinstance(node, (cst.For, cst.CompFor)) and holds(node.target):
            found.append(node.iter)
        elif isinstance(node, cst.WithItem) and node.asname is not None and holds(node.asname.name):
            found.append(node.item)
    # Review, round 15: a `match` capture (`case [loss, _]:`, `case {"d": loss}:`) binds a part of
    # the subject.
    for match in nodes_within(body, cst.Match):
        if any(holds(case.pattern) for case in match.cases):
            found.append(match.subject)
    return found


def _module_values(module: cst.Module) -> AbstractSet[str]:
    """The module-level names every binding of which is a plain value, not an import, a def, a class
    or a lambda (`net = Net()`, `w = torch.randn(3, requires_grad=True)`): the file's own modules
    and tensors, which a function builds its own graph from (`_made_of_callers_alone`)."""
    def plain(value: Optional[cst.BaseExpression]) -> bool:
        return isinstance(value, cst.BaseExpression) and not isinstance(value, cst.Lambda) and not is_literal(value)

    imported = {name for line in nodes_within(module, cst.SimpleStatementLine) for name in imported_names(line)}
    values: dict = {}
    for name, value in assignments(module):
        values[name] = values.get(name, True) and plain(value) and name not in imported
    return frozenset(name for name, ok in values.items() if ok)


# Review, round 17: the forms that gather several tensors into one (`torch.stack(losses)`,
# `torch.cat(parts)`, `functools.reduce(operator.add, losses)`, the builtin `sum` of a generator):
# torch's joining functions by their last name (whatever the module is bound to), the builtin `sum`
# by its bare name, `functools.reduce`, `itertools.accumulate`, `math.fsum`. Not torch's reductions of
# one tensor (`torch.sum(x * 2)`, `x.sum()`): a handed-in tensor reduced is data (the README).
_GATHERING = frozenset({
    "stack", "cat", "concat", "concatenate", "hstack", "vstack", "dstack", "row_stack", "column_stack",
    "block_diag", "cartesian_prod", "broadcast_tensors", "reduce", "accumulate", "fsum",
})


def _gathered_from_caller(
    loss: cst.BaseExpression, params: AbstractSet[str], own: AbstractSet[str], counts: dict, body: cst.CSTNode,
    helper=lambda func: None, depth: int = 3,
) -> Optional[str]:
    """A parameter whose tensors the loss gathers into one (review, round 17), or None: a call of a
    gathering form (`_GATHERING`, the builtin `sum`) with an argument that reads a parameter (`losses`,
    `[a * 2 for a in losses]`, a name the body binds of one), anywhere in the loss or in what the body
    binds the names it reads to (three links deep), or two items of parameters added
    (`(losses[0] + losses[1]).mean()`). Round 16's `_combined_from_caller` follows only
    elementwise forms; a loss that gathers the caller's losses and reduces them
    (`torch.stack(losses).sum()`, `torch.cat(parts).mean()`, `reduce(operator.add, losses) * self.scale`)
    backpropagates into each of them as well, freeing the graph the caller may backpropagate through
    again. Allowlisted as the function's own: what a module is called on (`self.model(torch.cat(xs))`,
    `net(...)` of a module-level value, `model(...)` of a parameter), the module's input, which the
    README takes as data (`own`: the method's `self`, `_module_values`). Stop 36 (round 17's
    suspicion, reproduced): a helper of the file that gathers or combines its own parameters
    (`def total(ls): return torch.stack(ls).sum()`, found by `helper`: its returns read as
    here) gathers what the call passes it (`total(losses)`)."""

    def reads_param(node: cst.CSTNode, depth: int, local: Optional[dict] = None) -> Optional[str]:
        # A parameter read in `node` (through the names the body binds), but in what a module is
        # called on or returns: `[model(x) for x in xs]` gathers the module's outputs, its own (a
        # comprehension's element is read, its names standing for their iterables; `local`).
        local = local or {}
        if isinstance(node, cst.Call) and module_call(node):
            return None
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            inner = dict(local)
            for comp in nodes_within(node.for_in, cst.CompFor):
                inner.update((name.value, comp.iter) for name in nodes_within(comp.target, cst.Name))
            parts = [node.key, node.value] if isinstance(node, cst.DictComp) else [node.elt]
            return next((found for part in parts for found in [reads_param(part, depth, inner)] if found is not None), None)
        if isinstance(node, cst.Attribute):
            return reads_param(node.value, depth, local)  # (`.attr` is no name read)
        if isinstance(node, cst.Arg):
            return reads_param(node.value, depth, local)  # (a keyword is no name read)
        if isinstance(node, cst.Param):
            return None  # (a lambda's parameter)
        if isinstance(node, cst.Name):
            if node.value in local:
                return reads_param(local[node.value], depth, {k: v for k, v in local.items() if k != node.value})
            if node.value in params and counts.get(node.value, 0) == 0:
                return node.value
            if counts.get(node.value, 0) > 0 and depth > 0:
                for value in _values_bound(body, node.value):
                    found = reads_param(value, depth - 1)
                    if found is not None:
                        return found
            return None
        for child in children(node):
            found = reads_param(child, depth, local)
            if found is not None:
                return found
        return None

    def module_call(call: cst.Call) -> bool:
        path = access_path(call.func)
        if path is None:
            return False
        if len(path) == 1:
            return (path[0] in params or path[0] in own) and counts.get(path[0], 0) == 0
        return len(path) == 2 and path[0] in own and counts.get(path[0], 0) == 0

    def item_of_param(node: cst.BaseExpression) -> Optional[str]:
        path = access_path(node)
        if path is None or len(path) < 2 or path[-1] != "[]":
            return None
        return path[0] if path[0] in params and counts.get(path[0], 0) == 0 else None

    def gathered(node: cst.CSTNode, depth: int) -> Optional[str]:
        if isinstance(node, cst.Call):
            if module_call(node) and helper(node.func) is None:
                return None  # what a module is called on is its input: data (`self.m()` of a method of the class is no module)
            func = node.func
            gathering = (isinstance(func, cst.Name) and func.value == "sum") or (
                isinstance(func, (cst.Name, cst.Attribute)) and last_name(func) in _GATHERING
            )
            if gathering:
                for arg in node.args:
                    found = reads_param(arg.value, depth)
                    if found is not None:
                        return found
            called = helper(func)
            if called is not None and depth > 0:
                for arg in _gathered_arguments(called[0], called[1], node, depth - 1):
                    found = reads_param(arg.value, depth)
                    if found is not None:
                        return found
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            # Two items of handed-in holders added (`(losses[0] + losses[1]).mean()`): a sum of
            # the caller's losses, as `sum(losses)` is, whatever reduces it after.
            roots = [item_of_param(part) for part in (node.left, node.right)]
            if all(roots):
                return roots[0]
        if isinstance(node, cst.Attribute):
            return gathered(node.value, depth)  # (`.attr` is no name read)
        if isinstance(node, cst.Name) and counts.get(node.value, 0) > 0 and depth > 0:
            for value in _values_bound(body, node.value):
                found = gathered(value, depth - 1)
                if found is not None:
                    return found
            return None
        for child in children(node):
            found = gathered(child, depth)
            if found is not None:
                return found
        return None

    return gathered(loss, depth)


def _gathered_arguments(function: cst.FunctionDef, bound: bool, call: cst.Call, depth: int) -> List[cst.Arg]:
    """The arguments of `call` (of `function`; `bound`: its receiver takes the first parameter) for
    the parameters that a return of `function` gathers or combines (`_gathered_from_caller`,
    `_combined_from_caller` of each return, with the function's parameters); all of them where a
    `*`/`**` argument may fill any parameter."""
    params = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    positional = params[1:] if bound else params
    names = set(params) | {p.name.value for p in function.params.kwonly_params}
    counts = binding_counts(function.body)
    found = set()
    for ret in nodes_within(function.body, cst.Return):
        if ret.value is None:
            continue
        for which in (
            _combined_from_caller(ret.value, names, counts, function.body, 4),
            _gathered_from_caller(ret.value, names, set(params[:1]) if bound else set(), counts, function.body, depth=depth),
        ):
            if which is not None:
                found.add(which)
    if not found:
        return []
    if any(a.star for a in call.args):
        return list(call.args)
    plain = [a for a in call.args if a.keyword is None]
    return [
        a for i, a in enumerate(plain) if i < len(positional) and positional[i] in found
    ] + [a for a in call.args if a.keyword is not None and a.keyword.value in found]


def _combined_from_caller(
    node: cst.BaseExpression, params: AbstractSet[str], counts: dict, body: cst.CSTNode, depth: int,
) -> Optional[str]:
    """A parameter of which the loss `node` is made, where it is made only of the caller's values
    (review, round 16), or None: an access path rooted at a parameter the body never rebinds; a
    name the body binds only to such values (`depth` links deep); a form that selects (`_held_in`)
    or combines elementwise (`_operands`: `+`, the builtin `sum`, `0.5 * loss`, `.squeeze()`) such
    values and ones proven graph-free (`loops.graph_free`: a literal, `torch.zeros(3)`). Its graph
    then comes from the caller's values alone; or a sum (`+`, `-`) with such a value as a term,
    whatever the other (`sum(losses) + reg`). Any other value (a reduction, a `self` attribute, a
    call of other code) may be the function's own: None (`own_loss * scale`, a float parameter,
    must not make a loss the caller's)."""
    node = strip_parens(node)
    path = access_path(node)
    if path is not None:
        root = path[0]
        if root in params:
            return root if counts.get(root, 0) == 0 else None
        parts = [e.value for value in _values_bound(body, root) for e in _elements(value)] if depth > 0 else []
        found = [_combined_from_caller(part, params, counts, body, depth - 1) for part in parts]
        return found[0] if found and all(found) else None
    operands = [part for part in (_held_in(node) or _operands(node)) if not graph_free(strip_parens(part))]
    found = [_combined_from_caller(part, params, counts, body, depth) for part in operands]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        # A sum keeps each term's graph whole, whatever the other is (`sum(losses) + reg`).
        return next((root for root in found if root), None)
    return found[0] if found and all(found) else None


# Review, round 16: the forms that make a loss of the caller's values without reducing any of them
# (`sum(losses)`, `a + b`, `0.5 * loss`, `loss.squeeze()`). `backward()` takes a one-element tensor
# only (but with `gradient=`), and an elementwise form makes one only of one-element operands: each
# handed-in value is then a loss itself, whose graph the caller built. A reduction (`(x * 2).sum()`,
# `x @ y`, `F.mse_loss(out, y)`) may make a loss of a data tensor, which the README takes as data:
# not followed. (The builtin `sum` adds a container's items, each a whole value, as `+` does.)
_ELEMENTWISE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)
_ELEMENTWISE_BUILTINS = frozenset({"sum", "abs"})
_ELEMENTWISE_METHODS = frozenset({
    "clone", "float", "double", "half", "to", "cpu", "cuda", "contiguous", "squeeze", "unsqueeze", "view",
    "reshape", "flatten", "neg", "abs", "exp", "log", "tanh", "sigmoid", "relu", "add", "sub", "mul", "div", "pow",
})


def _operands(node: cst.BaseExpression) -> List[cst.BaseExpression]:
    """What an elementwise form (`_ELEMENTWISE_OPERATORS`, `_ELEMENTWISE_BUILTINS`,
    `_ELEMENTWISE_METHODS`) is made of: an operator's operands, a builtin's arguments, a method's
    receiver and arguments; none for any other form."""
    if isinstance(node, cst.BinaryOperation):
        return [node.left, node.right] if isinstance(node.operator, _ELEMENTWISE_OPERATORS) else []
    if isinstance(node, cst.UnaryOperation):
        return [node.expression] if isinstance(node.operator, (cst.Minus, cst.Plus)) else []
    if not isinstance(node, cst.Call):
        return []
    arguments = [arg.value for arg in node.args]
    func = node.func
    if isinstance(func, cst.Name) and func.value in _ELEMENTWISE_BUILTINS:
        return arguments
    if isinstance(func, cst.Attribute) and func.attr.value in _ELEMENTWISE_METHODS:
        return [func.value, *arguments]
    return []


def _matching_element(assign: cst.Assign, name: str) -> Optional[cst.BaseExpression]:
    """`a, b = x, losses`: the element bound to `name` (`losses` for `b`), where one flat target and a
    display of as many elements, no starred part, match; else None."""
    value = assign.value
    if len(assign.targets) != 1 or not isinstance(value, (cst.Tuple, cst.List)):
        return None
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(value.elements):
        return None
    if any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        return None
    for element, bound in zip(target.elements, value.elements):
        if isinstance(element.value, cst.Name) and element.value.value == name:
            return bound.value
    return None


def _elements(value: cst.BaseExpression) -> List[cst.BaseElement]:
    """A tuple or list display's elements (nested ones too, as `Element`s), else the value itself
    wrapped alike."""
    if isinstance(value, (cst.Tuple, cst.List)):
        return [inner for e in value.elements for inner in _elements(e.value)]
    return [cst.Element(value=value)]


# Review, round 15: builtins and methods whose result is, or holds, items of their arguments (or
# receiver) as they are, the same tensors: a loss read through them is read from those
# (`_held_in`). (A builtin that computes, `sum`, `abs`, makes a new tensor: the function's own.)
_SELECTING_BUILTINS = frozenset({
    "enumerate", "zip", "reversed", "sorted", "list", "tuple", "iter", "next", "dict", "set", "frozenset",
    "filter", "min", "max", "getattr", "vars",
})
_SELECTING_METHODS = ITEM_GETTERS | frozenset({"values", "items", "copy", "popitem", "__iter__", "__next__"})


def _held_in(node: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The access paths (`losses`, `out.loss`, `xs[0]`) whose objects `node` may be, or hold, as
    they are: `node` itself where it is a path; else through the forms that select rather than
    compute: a conditional's branches, `and`/`or`'s operands, a subscript's or attribute's holder
    (`list(losses)[0]`), a display's elements, a comprehension's iterables, the arguments of a
    selecting builtin (`enumerate`, `zip`, `list`, `dict`, `next`, `getattr`...) and the receiver
    of a selecting method (`get`, `pop`, `values`, `items`, `copy`). Any other form (an operator,
    a tensor method) computes a new value: none."""
    node = strip_parens(node)
    if access_path(node) is not None:
        return [node]
    if isinstance(node, cst.IfExp):
        return [*_held_in(node.body), *_held_in(node.orelse)]
    if isinstance(node, cst.BooleanOperation):
        return [*_held_in(node.left), *_held_in(node.right)]
    if isinstance(node, (cst.Subscript, cst.Attribute)):
        return _held_in(node.value)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set, cst.Dict)):
        return [held for e in node.elements for held in _held_in(e.value)]
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
        return [held for f in nodes_within(node, cst.CompFor) for held in _held_in(f.iter)]
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SELECTING_METHODS:
            return _held_in(func.value)
        if isinstance(func, cst.Name) and func.value in _SELECTING_BUILTINS:
            return [held for a in node.args for held in _held_in(a.value)]
    return []
