"""A later backward on a loss built afresh: it cannot go through a graph built before.

`later_use_reasons` makes a merge (and GF005's removal of `retain_graph=True`) unsafe when a
later `backward` in the function may go through the graph the earlier call kept alive. A later
`loss_g.backward()` whose loss comes from a fresh forward after that point (a GAN's generator
step after the discriminator's: `fake = G(z); loss_g = crit(D(fake), ones)`) cannot: every node
of its graph is created after the point, from leaves and graph-free values.

Proven from an allowlist (`fresh_backward`), else the later backward stays a reason:

- the call is `name.backward(...)` with keywords only (no `gradient`), a statement of its own;
- `name`, and every name its value reads (transitively), is bound in the function only by plain
  assignments `name = value` in the block of that call, after the point and before the call;
  every other name read is bound, in the function and at module level, only to graph-free
  values (`loops.graph_free`: factories, literals; never stored into by any function of the
  file) and is no parameter;
- every call in those values is a pure torch function, a module built in the file of known
  layers, a random one, or a pure tensor method, none in place; no attribute or subscript of
  anything else is read (`self.h` may hold an old graph);
- those names are used nowhere else in the function except where a read ends in a value
  (`float(x)`, `x.item()`, an f-string): nothing can update one of them in place with a tensor
  of the old graph (`fake += h`, `fake.add_(h)`, `foo(fake)`).

A name from before the point may be read too, when its graph is not the one kept alive: a GAN
generator step that reuses the discriminator step's `fake = G(z)`, which the discriminator read
only as `fake.detach()`. Such a name is *kept*: bound once in the function, by a plain assignment
in the same block before the point, whose value passes the same allowlist (its names kept or
graph-free in turn); and every use of it in the function, besides its own binding, the values of
other kept names and the later loss's own statements, is the receiver of `.detach()` or ends in
a value; and nothing could hand its tensors on without naming it (no hook registered in the
file, no read by name string such as `locals()` in the function). Then no tensor built before the point depends on its graph with gradient, so no backward
before the point went through that graph (a name such a backward did go through, `h = D(real)`
read by the discriminator's loss, fails the last condition).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from gradfix.analysis.callee_kinds import MODULE, PURE, RANDOM
from gradfix.analysis.exprs import binding_counts, is_inplace_call
from gradfix.analysis.vocabulary import PURE_TENSOR_METHODS, VALUE_FUNCTIONS, VALUE_METHODS, has_inplace_suffix
from gradfix.analysis.walk import walk_tree


def fresh_backward(call: cst.Call, after: int, scope: cst.CSTNode, module: cst.Module, classifier, line) -> bool:
    """Whether the later backward `call` provably goes only through a graph built after line `after`."""
    from gradfix.analysis.loops import _module_writes, function_parameters, graph_free
    from gradfix.analysis.loops import _bindings_outside

    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "backward" and isinstance(func.value, cst.Name)):
        return False
    if any(arg.keyword is None or arg.keyword.value == "gradient" for arg in call.args):
        return False
    found = _statement_of(scope, call)
    if found is None:
        return False
    block, index = found
    params = function_parameters(scope)
    bindings = binding_counts(scope)  # (nested code counts too; its uses fail `_only_value_uses` anyway)
    module_values = _bindings_outside(module, scope) if scope is not module else {}
    writes: Optional[Dict[str, list]] = None  # `_module_writes`, when first needed
    # The block's `name = value` statements before the backward: after the point, or up to it.
    assigns = [(s, a) for s in block[:index] for a in [_plain_assign(s)] if a is not None]
    candidates = [(s, a) for s, a in assigns if line(s) > after]
    earlier = [(s, a) for s, a in assigns if line(s) <= after]  # where a kept name may be bound
    pending = [func.value.value]
    fresh: Set[str] = set()
    before: Set[str] = set()
    kept: Dict[str, cst.CSTNode] = {}  # names from before the point whose graph the later loss may use
    while pending:
        name = pending.pop()
        if name in fresh or name in kept:
            continue
        values_bound = [value for _, (bound, value) in candidates if bound == name]
        if values_bound:
            if bindings.get(name, 0) != len(values_bound) or name in params:
                return False  # bound some other way too
            fresh.add(name)
            for value in values_bound:
                names = _value_names(value, classifier)
                if names is None:
                    return False
                pending.extend(names)
            continue
        # Not bound afresh: a value from before, kept (its graph untouched before the point), proven
        # graph-free, or nothing of the kind.
        if name in params:
            return False
        if bindings.get(name, 0):
            bound_before = [(s, value) for s, (bound, value) in earlier if bound == name]
            if bindings[name] != 1 or len(bound_before) != 1:
                return False
            statement, value = bound_before[0]
            names = _value_names(value, classifier)
            if names is None:
                return False
            kept[name] = statement
            pending.extend(names)
            continue
        if writes is None:
            writes = _module_writes(module)
        values = list(module_values.get(name, [])) + list(writes.get(name, []))
        if not values or not all(v is not None and graph_free(v) for v in values):
            return False
        before.add(name)
    # (Every binding of a fresh name is one of these: their counts matched.)
    own = {id(s) for s, (bound, _) in candidates if bound in fresh}
    # A graph-free tensor from before stays one only if this function cannot update it in place
    # with a tensor of the old graph (`ones.add_(h)`, `fill(ones, h)`); other functions' in-place
    # updates of a module-level name are among `_module_writes`.
    if kept:
        # Their graphs: no use before the point may have built on them with gradient. A hook of the
        # file may hand a tensor of them on without naming them (a forward hook appending a module's
        # output to a list the retained loss reads), and so may a read by name string (`locals()`).
        from gradfix.analysis.introspection import reads_scope_by_string

        facts = classifier.facts
        if facts.forward_hooks or facts.gradient_hooks or reads_scope_by_string(scope):
            return False
        skipped = own | {id(s) for s in kept.values()} | {id(block[index])}
        if not _every_use(scope, set(kept), lambda node, parents: _detached_or_value(node, parents), skipped):
            return False
    return _only_value_uses(scope, fresh, block[index], own) and _only_safe_uses(scope, before, classifier)


def _statement_of(scope: cst.CSTNode, call: cst.Call) -> Optional[Tuple[Sequence[cst.BaseStatement], int]]:
    """(block, index) of the statement `call` is the whole expression of, in `scope`'s own code."""
    found: List[Tuple[Sequence[cst.BaseStatement], int]] = []

    class Walk(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not scope:
                return False
            body = getattr(node, "body", None)
            if isinstance(node, (cst.Module, cst.IndentedBlock)) and isinstance(body, (list, tuple)):
                for k, statement in enumerate(body):
                    if (
                        isinstance(statement, cst.SimpleStatementLine)
                        and len(statement.body) == 1
                        and isinstance(statement.body[0], cst.Expr)
                        and statement.body[0].value is call
                    ):
                        found.append((body, k))
            return True

    walk_tree(scope, Walk())
    return found[0] if found else None


def _plain_assign(statement: cst.CSTNode) -> Optional[Tuple[str, cst.BaseExpression]]:
    """(name, value) for a statement `name = value` (one target, one statement on the line)."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            return small.targets[0].target.value, small.value
    return None


def _value_names(value: cst.BaseExpression, classifier) -> Optional[List[str]]:
    """The names `value` reads as values, or None when it reads or calls anything not allowlisted."""
    names: List[str] = []
    ok = [True]

    class Walk(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            func = node.func
            if is_inplace_call(node) or any(a.keyword is not None and a.keyword.value == "out" for a in node.args):
                ok[0] = False
                return False
            if isinstance(func, cst.Attribute) and not classifier.qualified(func):
                method = func.attr.value
                if has_inplace_suffix(method) or method not in PURE_TENSOR_METHODS | VALUE_METHODS:
                    ok[0] = False
                    return False
                walk_tree(func.value, self)  # the receiver is read
            elif classifier.classify(func).kind not in (PURE, MODULE, RANDOM):
                ok[0] = False
                return False
            for arg in node.args:
                walk_tree(arg.value, self)
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            ok[0] = False  # `self.h`, `batch.x`: may hold an old graph
            return False

        def visit_Subscript(self, node: cst.Subscript) -> bool:
            return True

        def visit_Name(self, node: cst.Name) -> None:
            if node.value not in ("True", "False", "None"):
                names.append(node.value)

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            ok[0] = False
            return False

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.NamedExpr, cst.Await, cst.Yield)):
                ok[0] = False
                return False
            return super().on_visit(node)

    walk_tree(value, Walk())
    return names if ok[0] else None


def _only_value_uses(scope: cst.CSTNode, names: Set[str], backward: cst.CSTNode, bindings: Set[int]) -> bool:
    """Whether the names are used in `scope` only in their own bindings, the backward statement, and
    reads that end in a value (`float(x)`, `x.item()`, `print(x)`, an f-string)."""
    skipped = bindings | {id(backward)}
    return _every_use(scope, names, lambda node, parents: _ends_in_value(node, parents), skipped)


def _only_safe_uses(scope: cst.CSTNode, names: Set[str], classifier) -> bool:
    """Whether every read of the names in `scope` leaves what they hold as it is: an argument of a
    pure function or known module call (not in place), the receiver of a pure tensor or value
    method, an operand of arithmetic or a comparison, or a read that ends in a value."""
    return not names or _every_use(scope, names, lambda node, parents: _leaves_it(node, parents, classifier))


def _every_use(scope: cst.CSTNode, names: Set[str], allowed, skipped: Set[int] = frozenset()) -> bool:  # type: ignore[assignment]
    """Whether `allowed(name_node, its parents, innermost last)` holds for every use of the names in
    `scope`, the code of the `skipped` nodes (ids) aside."""
    ok = [True]
    stack: List[cst.CSTNode] = []

    class Walk(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.Name) and node.value in names and not allowed(node, stack):
                ok[0] = False
            stack.append(node)  # (libcst calls on_leave for a node whose children it skips too)
            return id(node) not in skipped

        def on_leave(self, original_node: cst.CSTNode) -> None:
            stack.pop()

    walk_tree(scope, Walk())
    return ok[0]


def _detached_or_value(node: cst.CSTNode, parents: List[cst.CSTNode]) -> bool:
    """A read that is the receiver of `.detach()` (no arguments), or ends in a value."""
    if len(parents) > 1:
        attribute, call = parents[-1], parents[-2]
        if (
            isinstance(attribute, cst.Attribute)
            and attribute.value is node
            and attribute.attr.value == "detach"
            and isinstance(call, cst.Call)
            and call.func is attribute
            and not call.args
        ):
            return True
    return _ends_in_value(node, parents)


def _leaves_it(node: cst.CSTNode, parents: List[cst.CSTNode], classifier) -> bool:
    if _ends_in_value(node, parents):
        return True
    parent = parents[-1] if parents else None
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)):
        return True
    if isinstance(parent, cst.Attribute) and parent.value is node and len(parents) > 1:
        call = parents[-2]
        method = parent.attr.value
        return (
            isinstance(call, cst.Call)
            and call.func is parent
            and not has_inplace_suffix(method)
            and method in PURE_TENSOR_METHODS | VALUE_METHODS
            and not is_inplace_call(call)
        )
    if isinstance(parent, cst.Arg) and len(parents) > 1 and parent.value is node:
        call = parents[-2]
        if not isinstance(call, cst.Call) or (parent.keyword is not None and parent.keyword.value == "out"):
            return False
        return not is_inplace_call(call) and classifier.classify(call.func).kind in (PURE, MODULE, RANDOM)
    return False


def _ends_in_value(node: cst.CSTNode, parents: List[cst.CSTNode]) -> bool:
    """A read of `node` whose parents (innermost last) end it in a value.

    Stricter than `exprs.ends_in_value`, which walks up through any expression to the call that
    ends the read: here a read under a subscript, a container or a lambda is not one (the names
    must not reach code that could update them in place)."""
    child: cst.CSTNode = node
    for parent in reversed(parents):
        if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return False
        if isinstance(parent, cst.FormattedStringExpression):
            return True
        if isinstance(parent, cst.Call):
            func = parent.func
            if child is not func:
                return isinstance(func, cst.Name) and func.value in VALUE_FUNCTIONS
        if isinstance(parent, cst.Attribute) and parent.value is child:
            if parent.attr.value in VALUE_METHODS:
                return True
        elif isinstance(parent, cst.Arg):
            pass
        elif not isinstance(parent, (cst.Call, cst.Attribute, cst.BinaryOperation, cst.UnaryOperation)):
            return False
        child = parent
    return False
