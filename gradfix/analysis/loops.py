"""A backward inside a loop: can the next iteration need a graph this one kept alive?

`l1.backward(retain_graph=True); l2.backward()` keeps, after `l2.backward()`,
every part of the graph `l2` did not traverse: what only `l1` reached. The
one backward of a merge (GF001, GF003, GF004) frees all of it. When the losses
read a tensor built *before* the loop (`y = torch.cos(b)` above it), the next
iteration backpropagates through that tensor's graph again: the original
works, the rewrite raises "Trying to backward through the graph a second
time" (fuzz regressions 002 and 003). The same holds for a tensor carried from
one iteration to the next (`h = cell(x, h)`).

Allowlist: every name the loop reads that is not bound afresh in each
iteration must be bound only to values proven to hold no graph (`graph_free`:
numbers, strings, torch factories, `nn`/`optim` constructors given graph-free
arguments, a module's parameters, imports; functions and classes only where what
they read from around them is, since a function kept in a list, a dict, an
attribute or a torch object and called in the loop reads it at each call; a name
within them proven where every value the function binds or stores into it is,
its nested functions' `nonlocal` bindings and stores included); otherwise the
merge is unsafe and the reason names the name and its line. What an object
registers or is set (`register_buffer`, `register_forward_hook`, `setattr`) is
stored into it; a forward hook registered anywhere in the file runs at each
module call of the loop; a torch object or container handed before the loop to
code that may store into it is not proven; nor is a graph-free tensor (or a torch object's
tensor) read, up to the loop's end, other than in ways that make no alias of it that code could
write a graph into (`_tensor_read`: not `bv = buf[:]`, `v = buf`, `buf.__iadd__(h)`,
`m2 = m.train()`, `for b in m.buffers()`). Function parameters and attributes
(`self.h`) are not proven (they may hold a graph built by the caller or an
earlier call).
"""

from __future__ import annotations

import sys
from typing import AbstractSet, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from gradfix.analysis.exprs import (
    access_path,
    all_nodes,
    binding_counts,
    bound_names,
    code_of,
    dynamic_global,
    imported_names,
    is_literal,
    literal_key,
    may_change_builtins,
    scope_bindings,
    single_return,
    strip_parens,
    string_value,
)
from gradfix.analysis.introspection import bound_attribute_names, names_by_string
from gradfix.analysis.package_names import REFUSED as _REFUSED_MODULE_NAMES
from gradfix.analysis.statements import may_catch
from gradfix.reasons import LOOP, Reason
from gradfix.analysis.vocabulary import (
    BUILTIN_NAMES,
    BUILTINS_GRAPH_FREE,
    COLLECTING_METHODS,
    FRESH_LOSSES,
    FRESH_METHODS,
    FUNCTIONAL_INPLACE_POSITION,
    GRAD_MODE_CONTEXTS,
    INPLACE_KEYWORDS,
    GRAPH_FREE_CLASSES,
    GRAPH_FREE_FACTORIES,
    HARMLESS_DECORATORS,
    KEEPS_GRAPH_FREE,
    MODULE_LEAF_METHODS,
    MODULE_PARAMETER_METHODS,
    OPTIMIZER_PACKAGES,
    PYTHON_VALUES,
    STEP_METHODS,
    TRUSTED_MODULES,
    VALUE_METHODS,
    VIEW_METHODS,
    has_inplace_suffix,
)
from gradfix.analysis.walk import children, nodes_of_type, per_file, walk_tree

_LOOPS = (cst.For, cst.While)


# Of `GRAPH_FREE_FACTORIES`, those that make no tensor under any of torch's modules
# (`torch.cuda.manual_seed(0)`, `torch.cuda.device(0)`).
_NO_TENSOR_FACTORIES = frozenset({"manual_seed", "device", "Generator"})


# Review, round 15: `graph_free`, `_torch_object`, `_plain_tensor` and `_class_graph_free` read a
# call as torch's by its text (`torch.zeros`, `nn.Parameter(h)`, `optim.SGD`, `F.relu`); the text
# proves it only where each of these roots is bound to torch's module by an import and nothing else
# (`nn = types.SimpleNamespace(Parameter=lambda t: t * 1)` makes `nn.Parameter(h)` hold h: X_12).
_TORCH_ROOTS = {"torch": "torch", "nn": "torch.nn", "optim": "torch.optim", "F": "torch.nn.functional"}


def torch_roots_rebound(module: cst.Module) -> Optional[cst.CSTNode]:
    """The first binding in the file (in walk order) of a `_TORCH_ROOTS` name by anything but an
    import of that torch module (`import torch`, `import torch.nn as nn`, `from torch import nn`,
    `from torch.nn import functional as F`; `import torch.nn` binds `torch`), or a star import
    (which may bind any of them); None where there is none (`walk.per_file`)."""
    return per_file("torch roots rebound", module, _torch_roots_rebound)


def _torch_roots_rebound(module: cst.Module) -> Optional[cst.CSTNode]:
    for node in all_nodes(module):
        if isinstance(node, cst.ImportFrom):
            if isinstance(node.names, cst.ImportStar):
                return node
            base = "" if node.relative or node.module is None else code_of(node.module).strip()
            for alias in node.names:
                bound = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else code_of(alias.name).strip()
                if bound in _TORCH_ROOTS and f"{base}.{code_of(alias.name).strip()}" != _TORCH_ROOTS[bound]:
                    return node
        elif isinstance(node, cst.Import):
            for alias in node.names:
                dotted = code_of(alias.name).strip()
                if alias.asname is not None:
                    bound = alias.asname.name.value if isinstance(alias.asname.name, cst.Name) else ""
                    if bound in _TORCH_ROOTS and dotted != _TORCH_ROOTS[bound]:
                        return node
                elif dotted.split(".")[0] in _TORCH_ROOTS and dotted.split(".")[0] != "torch":
                    return node
        else:
            targets: List[cst.CSTNode] = []
            if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del)):
                targets = [node.target]
            elif isinstance(node, cst.WithItem) and node.asname is not None:
                targets = [node.asname.name]
            elif isinstance(node, cst.ExceptHandler) and node.name is not None:
                targets = [node.name.name]
            elif isinstance(node, (cst.Param, cst.FunctionDef, cst.ClassDef)):
                targets = [node.name]
            elif isinstance(node, (cst.Global, cst.Nonlocal)):
                targets = [item.name for item in node.names]
            elif isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
                targets = [node.name]
            if any(name in _TORCH_ROOTS for target in targets for name in bound_names(target)):
                return node
    return None


# Review, round 16: the text proves a call torch's only where torch's object of that name is still
# what the file calls: `torch.zeros_like = lambda t: t * 1` (graph-free itself: it reads nothing)
# makes `torch.zeros_like(h)` hold h's graph (X_01), `torch.Tensor.detach = ...` makes `h.detach()`
# hold it, `nn.Buffer = ...`, `torch.nn = Fake` the same. `patch_reasons` judges only the value
# stored, not what a call through it returns. The names these proofs read by text: every part of a
# call's dotted path rooted at a `_TORCH_ROOTS` name in the file, and the methods `graph_free` and
# `_python_value` trust on any receiver.
_TRUSTED_METHOD_NAMES = KEEPS_GRAPH_FREE | MODULE_PARAMETER_METHODS | VALUE_METHODS


def torch_names_patched(module: cst.Module) -> Optional[str]:
    """A name the text-reading proofs trust (see `_TRUSTED_METHOD_NAMES`) that the file may store as
    an attribute of some object (`introspection.bound_attribute_names`: an assignment, `setattr` with
    that literal name, a namespace dict's key) or define in a class, or a builtin they trust by
    name (`_TRUSTED_BUILTINS`) that it binds: the first in sorted order; `"*"` where it may store
    any name (a computed `setattr`) or change builtins unseen (`may_change_builtins`); None where
    there is none. Once per file."""
    return per_file("torch names patched", module, _torch_names_patched)


def _torch_names_patched(module: cst.Module) -> Optional[str]:
    stored = bound_attribute_names(module, scopes=False)
    if stored is None or may_change_builtins(module):
        return "*"
    read = set(_TRUSTED_METHOD_NAMES)
    for node in nodes_of_type(module, cst.Call):
        if isinstance(node.func, cst.Attribute):
            parts = code_of(node.func).strip().split(".")
            if parts[0] in _TORCH_ROOTS:
                # (The root too: `builtins.nn = Fake` is the `nn` of a file that imports none.)
                read.update(part.strip() for part in parts)
    # A method of a class of the file named as one of those (`def item(self): return self.h`:
    # `_python_value` takes `box.item()` for a Python value whatever `box` is), and a builtin the
    # proofs trust by its name that the file binds anywhere (`def float(t): return t * 1` makes
    # `float(h)` hold h's graph; `str = lambda t: t`, a local `float = ...`).
    classes = {name for node in nodes_of_type(module, cst.ClassDef) for name in scope_bindings(node.body)}
    counts = binding_counts(module)
    rebound = {name for name in _TRUSTED_BUILTINS if counts.get(name, 0)}
    hits = sorted((stored & read) | (classes & _TRUSTED_METHOD_NAMES) | rebound)
    return hits[0] if hits else None


# Builtins `graph_free` and `_python_value` trust by name (`float(h)` is a number, `list(xs)` holds
# what `xs` holds).
_TRUSTED_BUILTINS = PYTHON_VALUES | BUILTINS_GRAPH_FREE


def graph_free(value: cst.BaseExpression, names: Optional[Callable[[str], bool]] = None) -> bool:
    """A value proven to hold no autograd graph (see the module doc). `names`, where given, says
    whether a name read there is proven to hold none (every binding of it is graph-free); without
    it a name is not proven."""
    def free(part: cst.BaseExpression) -> bool:
        return graph_free(part, names)

    if is_literal(value) or isinstance(value, cst.FormattedString):
        return True
    if isinstance(value, cst.Name):
        return names is not None and names(value.value)
    if isinstance(value, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
        # Code, but it keeps its defaults (`lambda h=h: h`) and reads what it closes over at each
        # call (`lambda: h`): a function kept in a list, a dict, an attribute or a torch object
        # (`LambdaLR(opt, lambda e: h)`) and called in a loop hands the loop that graph (review,
        # round 5). A `def` or `class` of the file (`_bindings_outside` binds its name to its
        # node) is proven only where names are resolved; without `names` its reads are followed
        # where it is called by name (`_add_closure_reads`, `module_graph_reads`).
        if not _plain_function(value):
            return False
        if not isinstance(value, cst.Lambda) and names is None:
            return True
        return all(name in BUILTIN_NAMES or (names is not None and names(name)) for name in free_reads(value))
    if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
        # (`[*hs]` holds what `hs` holds.)
        return all(free(e.value) for e in value.elements)
    if isinstance(value, cst.Dict):
        # (The keys too: `{h: "feats"}` holds `h`, and `for k in d` hands it out.)
        return all(isinstance(e, cst.DictElement) and free(e.key) and free(e.value) for e in value.elements)
    if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return free(value.elt)
    if _python_value(value):  # `loss.item()`, `float(loss)`, `loss_a.item() + loss_b.item()`
        return True
    if isinstance(value, cst.Call):
        func = value.func
        text = code_of(func).strip()
        last = text.rsplit(".", 1)[-1]
        if isinstance(func, cst.Name) and func.value in BUILTINS_GRAPH_FREE:
            return all(free(a.value) for a in value.args)
        if not isinstance(func, (cst.Name, cst.Attribute)):
            return False  # `nn.Tanh()(x @ w)`: what an object returns
        if text.startswith("torch.") and last in GRAPH_FREE_FACTORIES and (text == f"torch.{last}" or last in _NO_TENSOR_FACTORIES):
            # Torch's own factories (`torch.eye`), not a name that only shares the spelling in one
            # of its modules: `torch.nn.init.eye` is the deprecated alias of `eye_`, which fills its
            # argument in place and returns it, graph and all (review, round 14).
            return True
        if last[:1].isupper() and text.startswith(("torch.", "nn.", "optim.")):
            return _class_graph_free(text, value, names)
        if isinstance(func, cst.Attribute) and func.attr.value in KEEPS_GRAPH_FREE:
            return free(func.value)
        if isinstance(func, cst.Attribute) and func.attr.value in MODULE_PARAMETER_METHODS:
            # A module's registered parameters: leaves (assumed: no class of the file redefines
            # `parameters()`).
            return all(not a.star and free(a.value) for a in value.args)
    return False


def _plain_function(value: cst.CSTNode) -> bool:
    """A `def`, `lambda` or `class` whose value is its code: each decorator only marks it or switches
    grad mode (`HARMLESS_DECORATORS`, `@torch.no_grad()`), where `@functools.lru_cache` keeps the
    first call's result, graph and all, for every later call; and no parameter's default that is
    no literal (`cache={}`, `c=CACHE`) is written into or handed on in its body, where what the
    first call puts there is read by the next (review, round 6)."""
    for decorator in getattr(value, "decorators", ()):
        expression = decorator.decorator
        text = code_of(expression.func if isinstance(expression, cst.Call) else expression).strip()
        if text not in HARMLESS_DECORATORS and text not in GRAD_MODE_CONTEXTS:
            return False
    if isinstance(value, cst.ClassDef):
        return True
    params = value.params
    kept = {
        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        if p.default is not None and not is_literal(p.default)
    }
    if not kept:
        return True
    body = value.body
    written = {root for root, _ in [*stores_into_objects(body), *_inplace_updates(body), *nested_writes(value)]}
    return not (kept & written) and not any(_handed_on(value, name, None) for name in kept)


def _class_graph_free(text: str, call: cst.Call, names: Optional[Callable[[str], bool]]) -> bool:
    """A torch class built (`text` its dotted name): graph-free when the class keeps none of its
    arguments' graph (`GRAPH_FREE_CLASSES`: `nn.Parameter(h)` detaches), else only when every
    argument is graph-free: `nn.Sequential(Holder(h))`, `nn.ParameterList([(h,)])`,
    `TensorDataset(feats, y)`, a distribution (`Normal(x @ w, 1.0).loc`) or a loss given a `weight`
    keep what they are given, graph and all. An optimizer's parameters may also be a module's
    (`torch.optim.Adam(model.parameters(), lr=1e-3)`): leaves, which it keeps as they are; but a
    param group's other entries and its settings must be graph-free like any argument."""
    if text in GRAPH_FREE_CLASSES:
        return True
    optimizer = text.startswith(OPTIMIZER_PACKAGES)
    for index, arg in enumerate(call.args):
        if arg.star:
            return False
        is_params = optimizer and (arg.keyword.value == "params" if arg.keyword is not None else index == 0)
        if not graph_free(arg.value, names) and not (is_params and _module_parameters(arg.value)):
            return False
    return True


def _module_parameters(value: cst.BaseExpression) -> bool:
    """`model.parameters()`, `list(G.parameters()) + list(D.parameters())`: a module's registered
    parameters, leaves (assumed: a class of the file does not redefine `parameters()`)."""
    value = strip_parens(value)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return _module_parameters(value.left) and _module_parameters(value.right)
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in MODULE_PARAMETER_METHODS
    return (
        isinstance(func, cst.Name) and func.value in ("list", "tuple") and len(value.args) == 1
        and not value.args[0].star and _module_parameters(value.args[0].value)
    )


def _python_value(value: cst.BaseExpression) -> bool:
    """Arithmetic on values that are no tensors or hold no graph and need none (`a.item() + 1.0`,
    `-h.detach()`). Not on graph-free tensors in general: `torch.randn(3, requires_grad=True) * w`
    is built from two graph-free values and holds a graph."""
    if isinstance(value, cst.BinaryOperation):
        return _python_value(value.left) and _python_value(value.right)
    if isinstance(value, cst.UnaryOperation):
        return _python_value(value.expression)
    if is_literal(value):
        return True
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in VALUE_METHODS:
            return True
        return isinstance(func, cst.Name) and func.value in PYTHON_VALUES
    return False


def loop_reasons(
    statement: cst.CSTNode,
    scope: cst.CSTNode,
    module: cst.Module,
    line: Callable[..., int],
    *,
    parameters: bool = True,
    graph_free_names: AbstractSet[str] = frozenset(),
) -> List[Reason]:
    """Why a merged backward at `statement` (inside `scope`) may free a graph the next iteration needs.

    `parameters=False` leaves out the function's parameters (in module-level code, the module's
    names) that the loop only calls, iterates or steps (`model(x)`, `for x, y in loader`,
    `opt.zero_grad()`): GF005 names those itself (`loop_inputs`); a parameter read as a value (`h * 2`, `loss.backward()`) or rebound in the
    loop, and a store into `self`, still count. `graph_free_names`: names the file proves hold only
    an object without tensors wherever they are bound (`FileFacts.accelerators`).
    """
    loop = _innermost_loop(scope, statement)
    if loop is None:
        return []
    trusted = set() if parameters else set(loop_inputs(statement, scope))
    reads, bound_inside = _reads_and_binds(loop.body)
    if isinstance(loop, cst.For):
        bound_inside |= set(bound_names(loop.target))
        if not _iterable_graph_free(loop.iter, scope, module) and not (trusted and _reads_only(loop.iter, trusted)):
            return [
                Reason(
                    f"the loop (line {line(loop)}) iterates over `{code_of(loop.iter).strip()}`, which gradfix cannot prove "
                    f"free of a graph built before it: a later iteration may backpropagate through it again, which "
                    f"the one backward frees",
                    LOOP,
                )
            ]
    outside = _bindings_outside(scope, loop)
    if scope is not module:
        # What the function's nested functions put into its names (`nonlocal h; h = ...`,
        # `def fill(): outs.append(h)`, `cur.add_(h)`): values bound before or in the loop.
        for root, value in nested_writes(scope):
            if root in outside:
                outside[root].append(value)
    inside = _bindings_outside(loop.body, None)
    # A name the body binds is new in each iteration only if bound before any read of it on every
    # path (`_fresh_in_each_iteration`): bound under an `if` (`if step % k == 0: feats = ...`) or
    # after a read (`h_prev = h` at the end), it hands one iteration's value to the next.
    fresh = _fresh_in_each_iteration(loop, module)
    _add_closure_reads(reads, scope, module)
    # A container or object from before the loop that the loop stores values into (`outs.append(out)`,
    # `cache[k] = h`) hands them to the next iteration.
    for name, value in stores_into_objects(loop.body):
        if name in bound_inside or graph_free(value):
            continue
        if name in ("self", "cls") and parameters:
            continue  # (reading `self` in the loop is a reason of its own below)
        return [
            Reason(
                f"`{name}` collects `{code_of(value).strip()}` (line {line(value)}) across iterations: the next "
                f"iteration may backpropagate through its graph again, which the one backward frees",
                LOOP,
            )
        ]
    hooks = forward_hook_reasons(module, line) or patch_reasons(module, line)
    if hooks:
        return hooks
    module_bindings = _bindings_outside(module, scope) if scope is not module else {}
    params = function_parameters(scope)
    # Names whose value before the loop comes from elsewhere: a parameter (`def f(h)`), a name the
    # function declares `global`/`nonlocal`. Rebound in the loop, they are carried like a name
    # bound before it.
    entering = params | _declared(scope)
    writes: Optional[Dict[str, List[Optional[cst.BaseExpression]]]] = None  # `_module_writes`, when first needed
    rebinder: Optional[Tuple[Optional[cst.CSTNode], bool]] = None  # `dynamic_global`, `may_change_builtins`, when first needed
    shadowed = _shadowed_builtins(module)
    names_free = _names_graph_free(scope, module, entering, loop, shadowed)
    for name in sorted(reads, key=lambda n: (line(reads[n]), n)):
        # Rebound in the loop and bound before it, or not bound afresh before its reads: one
        # iteration hands its value to the next.
        stale = name in inside and name not in fresh
        carried = name in bound_inside and (name in outside or name in entering or stale)
        if name in bound_inside and not carried:
            continue
        if name in graph_free_names and not carried:
            continue  # every binding of it in the file is proven to hold no graph
        if name in trusted and not carried and name not in params:
            continue  # a module-level name the loop uses only as code (`loop_inputs`): GF005 names it
        if name in params or name in ("self", "cls"):
            if name in trusted and not carried:
                continue
            if name in ("self", "cls") and not _self_attributes_read(loop.body):
                continue
            return [
                Reason(
                    f"`{name}` (read on line {line(reads[name])}) comes into the loop from outside it and may hold a graph "
                    f"that the next iteration backpropagates through again, which the one backward frees",
                    LOOP,
                )
            ]
        if name not in outside or scope is module:
            # A name of the module, or a builtin: `globals()["h"] = ...`, `exec`, `setattr` on the
            # module (maybe this file's own: `import train`), `builtins.abs = ...` may bind it to any
            # value, unseen by the bindings below (review, round 6).
            if rebinder is None:
                rebinder = (dynamic_global(module), may_change_builtins(module))
            if rebinder[0] is not None:
                shown = code_of(rebinder[0]).strip().splitlines()[0]
                return [
                    Reason(
                        f"`{name}` (read on line {line(reads[name])}) is a name of the module, which `{shown}` "
                        f"(line {line(rebinder[0])}) may bind to any value: the next iteration may backpropagate "
                        f"through a graph built before the loop, which the one backward frees",
                        LOOP,
                    )
                ]
            if rebinder[1] and name in BUILTIN_NAMES and name not in module_bindings:
                return [
                    Reason(
                        f"`{name}` (read on line {line(reads[name])}) is a builtin the file may rebind (a star import, "
                        f"`__builtins__`, a write to the `builtins` module) to any value: the next iteration may "
                        f"backpropagate through a graph built before the loop, which the one backward frees",
                        LOOP,
                    )
                ]
        values = list(outside.get(name, []) or module_bindings.get(name, []))
        if name not in outside or scope is module:
            # A name of the module: what any function of the file stores into what it holds
            # (`feats["a"] = torch.sin(a)` in another function) or binds it to under `global`.
            if writes is None:
                writes = _module_writes(module)
            values += writes.get(name, [])
        if name in outside:
            # What the function stores into the object before or after the loop (`outs = [];
            # outs.append(h)`); the loop's own stores are checked above.
            in_loop = {id(value) for _, value in stores_into_objects(loop.body)}
            values += [value for root, value in _scope_stores(scope) if root == name and id(value) not in in_loop]
            # What it is updated with in place, before the loop or in it (`buf.copy_(h)`): a tensor
            # from before the loop so updated chains the graph onto it (review, round 6).
            values += [value for root, value in _inplace_updates(scope.body if isinstance(scope, cst.FunctionDef) else scope) if root == name]
        if carried:
            values += inside.get(name, [])  # what one iteration hands to the next
        if not values and name not in BUILTIN_NAMES:
            # Bound neither here nor at module level: a variable of an enclosing function, or a
            # `global`/`nonlocal` name bound elsewhere, whatever it holds.
            return [
                Reason(
                    f"`{name}` (read on line {line(reads[name])}) is bound outside the function and may hold a graph "
                    f"that the next iteration backpropagates through again, which the one backward frees",
                    LOOP,
                )
            ]
        held = [value for value in values if _mutable_container(value)]

        def bound_to(other: str) -> Sequence[Optional[cst.BaseExpression]]:
            return outside.get(other, []) or module_bindings.get(other, [])

        # (`buf = packed.to("cpu")` of a `PackedSequence` is that object: `_copy_of_object`.)
        objects = [value for value in values if _torch_object(value) or _copy_of_object(value, bound_to)]
        if objects and not held and _handed_on(scope if name in outside else module, name, loop, names_free, shadowed=shadowed):
            # `object.__setattr__(m, "b", h)`, `vars(m)["b"] = h`, `register_parametrization(lin,
            # "weight", Holder(h))`, `put(m, h)`: a torch object handed to code that may store a
            # graph into it (review, round 5).
            return [
                Reason(
                    f"`{name}` (line {line(objects[0])}) is an object the function hands on (to another name or a "
                    f"call that may store into it) before the loop reads it: what it holds is not proven free of a "
                    f"graph the next iteration backpropagates through again, which the one backward frees",
                    LOOP,
                )
            ]
        tensors = [value for value in values if _plain_tensor(value) and not _copy_of_object(value, bound_to)]
        if tensors and not held and not objects and _handed_on(
            scope if name in outside else module, name, loop, names_free, tensor=_torch_objects(module), shadowed=shadowed,
        ):
            # `v = buf; v.copy_(h)`, `torch.Tensor.copy_(buf, h)`, `put(buf, h)`: a tensor handed
            # before the loop to code that may write a graph into it in place (review, round 6);
            # in the loop too, and through its views (`bv = buf[:]; bv.copy_(h)`), special methods
            # (`buf.__iadd__(h)`) and calls (`operator.iadd`, a module of the file given it) (review, round 7).
            return [
                Reason(
                    f"`{name}` (line {line(tensors[0])}) is a tensor the function hands on (to another name or a "
                    f"call that may write into it) before the loop reads it: what it holds is not proven free of a "
                    f"graph the next iteration backpropagates through again, which the one backward frees",
                    LOOP,
                )
            ]
        for source, read in _copied_from(tensors) if tensors and not held and not objects else ():
            if source == name:
                continue  # (`x = x.float()`: the reads of `x` are checked above)
            # `buf = x.float()` is `x` itself where `x` is float already (`to`, `contiguous`, a view
            # of it: `x[0].float()`): what is written into `x` under another name (`v = x;
            # v.copy_(h)`) is written into `buf` (review, round 7).
            where = scope if source in outside else module
            if _handed_on(where, source, loop, names_free, tensor=_torch_objects(module), skip={id(read)}, shadowed=shadowed):
                return [
                    Reason(
                        f"`{name}` (line {line(tensors[0])}) may be `{source}` itself, a tensor the function hands on (to another "
                        f"name or a call that may write into it) before the loop reads it: what it holds is not proven free of a "
                        f"graph the next iteration backpropagates through again, which the one backward frees",
                        LOOP,
                    )
                ]
        if held and _handed_on(scope if name in outside else module, name, loop, names_free, shadowed=shadowed):
            # `alias = outs; alias.append(h)`, `fill(outs, h)`: what goes into it is stored under
            # another name, unseen by the stores checked here (review, round 4). Its items too: read
            # as a torch object's parts are (`_only_read`), since an item may be a tensor or an object
            # written into under another name (`t = bufs[0]; t.copy_(h)`, `for t in bufs: t.copy_(h)`;
            # review, round 8).
            return [
                Reason(
                    f"`{name}` (line {line(held[0])}) is a container the function hands on (to another name or a "
                    f"call) before the loop reads it: what it holds is not proven free of a graph the next "
                    f"iteration backpropagates through again, which the one backward frees",
                    LOOP,
                )
            ]
        for value in values:
            if value is not None and graph_free(value, names_free):
                continue
            if isinstance(value, (cst.Lambda, cst.FunctionDef, cst.ClassDef)) and _plain_function(value) and all(n in reads for n in free_reads(value)):
                continue  # a function the loop reads by name: what it reads is among the loop's reads, checked on their own
            where = f"line {line(value)}" if value is not None else "outside the loop"
            if stale and name not in outside and name not in entering:
                return [
                    Reason(
                        f"`{name}` is not bound afresh before every read of it in an iteration (bound on {where} "
                        f"under a condition, after a read, or in a `try` or a `with` that may stop its body early): an iteration may read the value an earlier one built "
                        f"and backpropagate through its graph again, which the one backward frees",
                        LOOP,
                    )
                ]
            return [
                Reason(
                    f"`{name}` ({where}) is built before the loop and read in it: the next iteration may backpropagate "
                    f"through its graph again, which the one backward frees where the original kept it",
                    LOOP,
                )
            ]
    # Every proof above read torch's calls by their text (`graph_free`): sound only where the roots
    # are torch's modules (`torch_roots_rebound`; review, round 15). Last, so that a reason of its own
    # comes first.
    rebound_root = torch_roots_rebound(module)
    if rebound_root is not None:
        return [
            Reason(
                f"`{code_of(rebound_root).strip()[:40]}` (line {line(rebound_root)}) binds a name gradfix reads as torch's "
                f"(`torch`, `nn`, `optim`, `F`) to something else: what a call through it builds before the loop is not "
                f"proven free of a graph the next iteration backpropagates through again, which the one backward frees",
                LOOP,
            )
        ]
    # The same proofs read torch's and the builtins' names by their text: sound only where the file
    # stores and binds none of them (`torch_names_patched`; review, round 16).
    patched = torch_names_patched(module)
    if patched is not None:
        what = (
            "may store attributes of any name (a computed `setattr`) or rebind builtins unseen, where gradfix reads names"
            if patched == "*" else f"binds or stores `{patched}`, where gradfix reads `{patched}`"
        )
        return [
            Reason(
                f"the file {what} in a call's text as torch's or a builtin's (`torch.zeros_like(h)`, `h.detach()`, "
                f"`float(h)`): what a call of it builds before the loop is not proven free of a graph the next iteration "
                f"backpropagates through again, which the one backward frees",
                LOOP,
            )
        ]
    return []


def _names_graph_free(
    scope: cst.CSTNode,
    module: cst.Module,
    entering: AbstractSet[str],
    loop: Optional[cst.CSTNode] = None,
    shadowed: AbstractSet[str] = frozenset(),
) -> Callable[[str], bool]:
    """Whether a name read in a value bound before the loop (`[w, v]` in `torch.optim.SGD([w, v])`)
    is proven to hold no graph: every value bound to it, stored into it or written into it in place
    in `scope` (a name of the module: anywhere in the file) is graph-free, names within them in
    turn; and where it holds an object code could write a graph into (a tensor, a torch object, a
    container), that object is not handed on, up to the end of `loop` (`loop_reasons`' checks for a
    name the loop reads). A parameter, a declared name or a name bound nowhere seen is not proven."""
    in_scope: Optional[Dict[str, List[Optional[cst.BaseExpression]]]] = None  # when first needed
    module_values: Optional[Dict[str, List[Optional[cst.BaseExpression]]]] = None
    rebound: List[Optional[bool]] = [None]  # `dynamic_global`, when first needed
    visiting: Set[str] = set()
    handed: Dict[str, bool] = {}

    def free(name: str) -> bool:
        nonlocal in_scope, module_values
        if name in entering:
            return False
        if name in visiting:
            return True  # (a cycle, `def f(): return f(...)`: what enters it is checked where it enters)
        if in_scope is None:
            in_scope = _bindings_outside(scope, None)
            # What the scope writes into a name's object in place (`x.copy_(h)`, `m.b.copy_(h)`): a
            # name bound to it (`buf = x`, `seq = nn.Sequential(m)`) holds that too (review, round 8).
            body = scope.body if isinstance(scope, cst.FunctionDef) else scope
            writes = [*_scope_stores(scope), *nested_writes(scope)]
            if scope is not module:
                writes += _inplace_updates(body)  # (the module's: `_module_writes`)
            for root, value in writes:
                in_scope.setdefault(root, []).append(value)
        values = list(in_scope.get(name, []))
        own = name in in_scope and scope is not module
        if name not in in_scope or scope is module:
            if rebound[0] is None:
                rebound[0] = dynamic_global(module) is not None
            if rebound[0]:
                return False  # `globals()["h"] = ...`: a module name bound to any value
            if module_values is None:
                module_values = _bindings_outside(module, scope) if scope is not module else {}
                for root, value in _module_writes(module).items():
                    module_values.setdefault(root, []).extend(value)
            values += module_values.get(name, [])
        if not values:
            return False
        visiting.add(name)
        try:
            if not all(value is not None and graph_free(value, free) for value in values):
                return False
            if name not in handed:
                # An object code could write a graph into, read by another name (`buf = x; v = x;
                # v.copy_(h)`, `m2 = m; m2.b.copy_(h)`): proven only where it is not handed on, as a
                # name the loop reads is, or only to names proven as its own (review, round 8).
                # (As `loop_reasons` sorts them: `model = model.to(d)` of a torch object is an object's.)
                def bound_to(other: str) -> Sequence[Optional[cst.BaseExpression]]:
                    return (in_scope or {}).get(other, []) or (module_values or {}).get(other, [])

                other = any(_mutable_container(v) or _torch_object(v) or _copy_of_object(v, bound_to) for v in values)
                tensor = not other and any(_plain_tensor(v) for v in values)
                thing = tensor or other
                handed[name] = thing and passed_on(name, own, tensor)
            return not handed[name]
        finally:
            visiting.discard(name)

    def passed_on(name: str, own: bool, tensor: bool) -> bool:
        """Whether the object `name` holds is handed on (a tensor's reads judged by `_tensor_read`, an
        object's or a container's by `_only_read`), a name bound to it (`buf = x`, `buf = x.float()`,
        `model = nn.Sequential(enc)`) counting as one where it is not proven graph-free and not handed
        on in turn."""
        if name in passing:
            return True  # (`a = b; b = a`: not followed around)
        passing.add(name)
        try:
            def bound(other: str) -> bool:
                return free(other) and not passed_on(other, other in (in_scope or {}) and scope is not module, tensor)

            where = scope if own else module
            if tensor:
                return _handed_on(where, name, loop, free, tensor=_torch_objects(module), shadowed=shadowed, bound_ok=bound)
            return _handed_on(where, name, loop, free, shadowed=shadowed, bound_ok=bound)
        finally:
            passing.discard(name)

    passing: Set[str] = set()
    return free


def _torch_objects(module: cst.Module) -> Callable[[str, List[cst.CSTNode]], bool]:
    """Whether a name read under `parents` (its enclosing function's, or the module's where that
    binds it nowhere) is bound only to torch objects (`_torch_object`: `nn.Linear(3, 3)`), whose
    call runs torch's code."""
    cache: Dict[int, Dict[str, List[Optional[cst.BaseExpression]]]] = {}

    def bindings(scope: cst.CSTNode) -> Dict[str, List[Optional[cst.BaseExpression]]]:
        if id(scope) not in cache:
            cache[id(scope)] = _bindings_outside(scope, None) if scope is not module else _bindings_outside(module, None)
        return cache[id(scope)]

    def objects(name: str, parents: List[cst.CSTNode]) -> bool:
        scope = next((p for p in reversed(parents) if isinstance(p, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), module)
        if isinstance(scope, (cst.Lambda, cst.ClassDef)):
            return False
        values = bindings(scope).get(name)
        if values is None and scope is not module:
            if name in function_parameters(scope) or name in _declared(scope):
                return False
            values = bindings(module).get(name)
        return bool(values) and all(_torch_object(value) or _moved(value, name) for value in values)

    return objects


def _moved(value: Optional[cst.BaseExpression], name: str) -> bool:
    """`model = model.to(device)`, `model = model.train()`: the object bound to `name`, moved or switched."""
    return (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name)
        and value.func.value.value == name and value.func.attr.value in _TENSOR_COPIES | {"train", "eval"}
    )


def _mutable_container(value: Optional[cst.BaseExpression]) -> bool:
    """A list, dict or set built by a display, a comprehension or `list()`/`dict()`/`set()`: code
    that holds it under another name may put a graph into it."""
    if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return True
    return isinstance(value, cst.Call) and code_of(value.func).strip() in ("list", "dict", "set", "collections.deque", "deque")


def _torch_object(value: Optional[cst.BaseExpression]) -> bool:
    """An object of a torch class (`nn.Module()`, `nn.Linear(3, 3)`, an optimizer): one can set
    attributes on it, register buffers, hooks or parametrizations, by code that holds it."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, (cst.Name, cst.Attribute)):
        return False
    text = code_of(value.func).strip()
    return text.rsplit(".", 1)[-1][:1].isupper() and text.startswith(("torch.", "nn.", "optim.")) and text not in GRAPH_FREE_CLASSES


# Methods that return a tensor of what they are called on (a copy, or a view: `detach`).
_TENSOR_COPIES = frozenset({"to", "cuda", "cpu", "float", "double", "half", "long", "int", "bool", "detach", "clone"})


def _plain_tensor(value: Optional[cst.BaseExpression]) -> bool:
    """A tensor built without a graph (`torch.zeros(3)`, `x.clone()`): code that holds it may write
    one into it in place (`buf.copy_(h)`). Not one built with `requires_grad=True`: a leaf that
    requires grad raises on an in-place update outside `no_grad`, and builds no graph inside it."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    if value.func.attr.value in _TENSOR_COPIES:
        return True
    text = code_of(value.func).strip()
    if not (text.startswith("torch.") and value.func.attr.value in GRAPH_FREE_FACTORIES):
        return False
    return not any(
        arg.keyword is not None and arg.keyword.value == "requires_grad" and code_of(arg.value).strip() == "True"
        for arg in value.args
    )


def _copy_of_object(
    value: Optional[cst.BaseExpression],
    lookup: Callable[[str], Sequence[Optional[cst.BaseExpression]]],
    seen: AbstractSet[str] = frozenset(),
) -> bool:
    """A `_TENSOR_COPIES` call (`_plain_tensor` by its method) whose receiver may be no tensor: a torch
    object or a container, given directly or by a name `lookup` finds bound to one (in turn to such
    a copy). `.to()`, `.float()` and the others return the object itself there: a module
    (`model.float()`), a `PackedSequence` (`packed.to("cpu")`, a tuple, whose `+ ()` is a tuple of the
    same tensors). Such a value is judged as an object's (`_only_read`), not as a new tensor's
    (review, round 15)."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in _TENSOR_COPIES):
        return False
    receiver = strip_parens(value.func.value)
    if _torch_object(receiver) or _mutable_container(receiver) or _copy_of_object(receiver, lookup, seen):
        return True
    if not isinstance(receiver, cst.Name) or receiver.value in seen:
        return False
    more = {*seen, receiver.value}
    return any(_torch_object(bound) or _mutable_container(bound) or _copy_of_object(bound, lookup, more) for bound in lookup(receiver.value))


def _copied_from(values: Sequence[Optional[cst.BaseExpression]]) -> List[Tuple[str, cst.Name]]:
    """For tensors bound by a method that may return its receiver (`x.float()`, `x.to(device)`,
    `x[0].contiguous()`; not `.clone()`, a copy, nor `.detach()`, which autograd does not link to
    it): the name the receiver's storage is rooted at and its node."""
    found: List[Tuple[str, cst.Name]] = []
    for value in values:
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)) or value.func.attr.value not in _TENSOR_COPIES - {"clone", "detach"}:
            continue
        node: cst.BaseExpression = value.func.value
        while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
            node = node.func if isinstance(node, cst.Call) else node.value
        if isinstance(node, cst.Name):
            found.append((node.value, node))
    return found


# Builtins that only read what they are given (an object handed to them stays as it is).
_READING_BUILTINS = frozenset({"print", "len", "repr", "str", "id", "type", "isinstance", "hash", "format"})


def _handed_on(
    scope: cst.CSTNode,
    name: str,
    loop: Optional[cst.CSTNode],
    names_free: Optional[Callable[[str], bool]] = None,
    *,
    before: bool = False,
    tensor: Optional[Callable[[str, List[cst.CSTNode]], bool]] = None,
    skip: AbstractSet[int] = frozenset(),
    shadowed: AbstractSet[str] = frozenset(),
    bound_ok: Optional[Callable[[str], bool]] = None,
) -> bool:
    """Whether `scope` reads `name`, up to the end of `loop`, other than as the receiver of a
    method call (`outs.append(h)`: `stores_into_objects` sees it), a subscripted value (`outs[0]`),
    `len(outs)` or a `for` loop's iterable: bound to another name, passed to a call, returned, put
    in a display, a bound method taken (`add = outs.append`), or any read in a function or lambda
    nested in a function (its stores are not among the function's). What comes after the loop
    (`return history`) cannot fill it for the loop. Review, round 4: `alias = outs;
    alias.append(h)` and `fill(outs, h)` put a graph in a list proven from `[]`. `before`: up to the
    start of `loop`. In the module (`scope`), after the loop only the rest of the function that holds
    it is left out: a function defined below it may be called before the loop (review, round 6).
    `tensor` (a tensor's name; says whether a name holds a torch module object): each read, the
    loop's included, must be one `_tensor_read` proves makes no alias of it (review, round 7). `skip`: reads
    (ids of the names) left out, examined where they stand. `shadowed`: builtins the file may bind
    (`_shadowed_builtins`), not trusted by name. `bound_ok`: a read that binds the object to another
    name is one only where this says that name is proven (`_tensor_read`)."""
    found = [False]
    done = [False]
    nested_counts = not isinstance(scope, cst.Module)
    holder: List[Optional[cst.CSTNode]] = [None]  # the function that holds `loop`, once it is left

    class Reads(cst.CSTVisitor):
        def __init__(self) -> None:
            self.parents: List[cst.CSTNode] = []
            self.nested = 0

        def on_visit(self, node: cst.CSTNode) -> bool:
            # (libcst calls on_leave also where on_visit declined the children: always pushed.)
            if before and node is loop:
                self._done()
            if not (found[0] or done[0]) and isinstance(node, cst.Name) and node.value == name and self.parents and id(node) not in skip:
                grand = self.parents[-2] if len(self.parents) > 1 else None
                if tensor is not None:
                    plain = _tensor_read(node, self.parents, tensor, shadowed=shadowed, bound_ok=bound_ok)
                elif names_free is None:
                    plain = _plain_use(node, self.parents[-1], grand)
                else:
                    # (Not `_plain_use`'s method calls and items: `m.buffers()`, `m.train()` may hand
                    # out what it holds; `_only_read` follows them. Review, round 7.)
                    plain = _binding_use(node, self.parents[-1]) or _only_read(node, self.parents, names_free, shadowed, bound_ok)
                found[0] = not plain or (self.nested > 0 and not _defines(node, self.parents[-1]))
            if nested_counts and isinstance(node, (cst.FunctionDef, cst.Lambda)) and node is not scope:
                self.nested += 1
            self.parents.append(node)
            return not (found[0] or done[0])

        def _done(self) -> None:
            done[0] = True
            if not nested_counts:
                holder[0] = next((p for p in reversed(self.parents) if isinstance(p, cst.FunctionDef)), None)

        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.parents.pop()
            if nested_counts and isinstance(original_node, (cst.FunctionDef, cst.Lambda)) and original_node is not scope:
                self.nested -= 1
            if original_node is loop and not done[0]:
                self._done()
            if holder[0] is not None and original_node is holder[0]:
                done[0] = False  # (the rest of the module: its functions may run before the loop)
                holder[0] = None

    walk_tree(scope, Reads())
    return found[0]


# Attributes of a tensor that are no view of its storage, or a view autograd does not link to it
# (`.data`, like `.detach()`: what is written into it puts no graph into the tensor).
_TENSOR_FACTS = frozenset({"shape", "dtype", "device", "ndim", "requires_grad", "is_leaf", "is_cuda", "layout", "data", "grad", "grad_fn"})
# Attributes that are views of the tensor.
_TENSOR_VIEWS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# Builtins that read what they are given and return a new value.
_VALUE_BUILTINS = _READING_BUILTINS | {"float", "int", "bool", "round", "abs"}


def _tensor_read(
    node: cst.Name,
    parents: List[cst.CSTNode],
    torch_object: Callable[[str, List[cst.CSTNode]], bool],
    *,
    holder: bool = False,
    shadowed: AbstractSet[str] = frozenset(),
    start: Optional[Tuple[cst.CSTNode, int]] = None,
    bound_ok: Optional[Callable[[str], bool]] = None,
) -> bool:
    """For a tensor proven graph-free where bound (`_handed_on` with `tensor`): a read that makes no
    alias of its storage that code could write a graph into. Followed through its views (`buf[:]`,
    `buf.view(-1)`, `.T`) and in-place updates (`buf.mul_(0.9)`, which return it and which
    `_inplace_updates` sees), until a value that is new (`FRESH_METHODS`, `.detach()`, an operand
    of arithmetic, an index, a reading builtin's argument, a `FRESH_METHODS` function of torch) or
    discarded (a statement of its own; a store into it, which `stores_into_objects` sees). A call of
    a torch module object (`model(x)`) may return its input (`nn.Identity`): its result is followed
    in turn. Not: bound to another name (`bv = buf[:]; bv.copy_(h)`), a special method
    (`buf.__iadd__(h)`), a method not listed, iterated (its rows are views), handed to any other
    call (`operator.iadd(buf, h)`, `getattr(buf, "copy_")`, a module of the file whose `forward`
    writes into its input) (review, round 7). `holder`: `node` holds tensors (a torch object):
    its attributes and items are followed as views (`m.b.view(-1)`), a collecting method's result
    (`None`) is discarded. `shadowed`: builtins the file may bind, not trusted by name. `start`: the
    node the walk starts from and its index in `parents` (a call's result, `_only_read`), else `node`.
    `bound_ok`: a name other than `node`'s the value may be bound to, proven where it holds
    (`names_free`), else not."""
    first = parents[-1]
    if isinstance(first, (cst.AssignTarget, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)) and first.target is node:
        return True  # a binding of the name, no read
    if isinstance(first, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName, cst.Global, cst.Nonlocal, cst.NameItem)):
        return True  # a definition's name
    k = len(parents) - 1
    child: cst.CSTNode = node
    if start is not None:
        child, k = start
    # Review, round 15: past a step that `_storage_root` and `_root` do not cross (an operand of
    # `bufs + []`, an item of a display, `list(bufs)`, a torch module's result `ident(buf)`), a write
    # into what the chain reaches (`(bufs + [])[0].copy_(h)`, `list(bufs)[0][:] = h`) is rooted at no
    # name `_inplace_updates` or `stores_into_objects` reports: unseen, so no harmless read.
    gathered = start is not None and isinstance(parents[start[1]], cst.BinaryOperation)
    while k >= 0:
        parent = parents[k]
        if isinstance(parent, cst.Attribute) and parent.value is child:
            attr = parent.attr.value
            if k >= 1 and isinstance(parents[k - 1], cst.Call) and parents[k - 1].func is parent:
                if ((attr in FRESH_METHODS or attr == "detach") and _method_trusted(attr, shadowed)) or (holder and attr in COLLECTING_METHODS):
                    return True
                if attr.startswith("__") or not (holder or has_inplace_suffix(attr) or attr in VIEW_METHODS or attr in _TENSOR_COPIES):
                    return False
                if gathered and has_inplace_suffix(attr):
                    return False  # (a write no root walk reaches: see `gathered`)  # (`x.float()` may be `x` itself: followed as it; review, round 8)
                # (A holder's method may return what it holds, or itself: `m.buffers()`, `m.train()`.)
                child, k = parents[k - 1], k - 2  # a view, or the tensor itself (in place)
                continue
            if attr.startswith("__"):
                return False
            if holder:
                child, k = parent, k - 1  # a tensor it holds, or an object
                continue
            if attr in _TENSOR_FACTS:
                return True
            if attr not in _TENSOR_VIEWS:
                return False
            child, k = parent, k - 1
            continue
        if isinstance(parent, cst.Subscript) and parent.value is child:
            child, k = parent, k - 1
            continue
        if holder and isinstance(parent, cst.BinaryOperation):
            gathered = True
            child, k = parent, k - 1  # `list(a.parameters()) + list(b.parameters())` holds the same objects
            continue
        if holder and isinstance(parent, (cst.Element, cst.StarredElement)) and parent.value is child and k >= 1 and isinstance(parents[k - 1], (cst.List, cst.Tuple)):
            gathered = True
            child, k = parents[k - 1], k - 2  # `[*a.parameters(), *b.parameters()]` holds the same objects
            continue
        if holder and isinstance(parent, cst.Call) and parent.func is child:
            child, k = parent, k - 1  # `seq[0](x)`: a module it holds, called
            continue
        if holder and isinstance(parent, cst.For) and parent.iter is child:
            return _only_switches_grad(parent)  # `for p in model.parameters(): p.requires_grad_(False)`
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)):
            # (Not where the file binds a special method that may get the tensor: `Keeper() * buf`
            # may return `buf`; review, round 9.)
            return _operator_trusted(parent, shadowed)
        if isinstance(parent, cst.Index):
            # An index is handed to the subscripted object's `__getitem__` or `__class_getitem__`,
            # which no text proves torch's: a builtin class keeps it (`list[buf]`, a `GenericAlias`
            # holding `buf` in `__args__`), so does `typing.Literal[buf]`, and numpy's `np.s_[buf]`
            # returns it (review, round 10; round 9 trusted it where the file bound no
            # `_INDEX_DUNDERS`).
            return False
        if isinstance(parent, cst.Expr):
            return parent.value is child
        if isinstance(parent, cst.Assign) and parent.value is child:
            # `model = model.to(device)`, `buf = buf.view(-1)`: bound again to its own name only
            if all(isinstance(t.target, cst.Name) and t.target.value == node.value for t in parent.targets):
                return True
            # `model = nn.Sequential(enc, dec)`: a name that holds it, proven as its own (`bound_ok`)
            return bound_ok is not None and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name) and bound_ok(parent.targets[0].target.value)
        if isinstance(parent, (cst.If, cst.While)):
            return parent.test is child
        if isinstance(parent, cst.AssignTarget):
            return parent.target is child and child is not node and not gathered  # `buf[0] = v`: a store (`stores_into_objects`)
        if isinstance(parent, cst.AugAssign):
            return parent.target is child and not gathered  # `buf += v`, `buf[0] += v`: a binding or a store, seen as such
        if not isinstance(parent, cst.Arg) or parent.value is not child or parent.star or k < 1:
            return False
        call = parents[k - 1]
        if not isinstance(call, cst.Call) or not isinstance(call.func, (cst.Name, cst.Attribute)):
            return False
        text = code_of(call.func).strip()
        if isinstance(call.func, cst.Name) and text in _VALUE_BUILTINS and text not in shadowed and (text not in _DUNDER_BUILTINS or _operators_trusted(shadowed)):
            return True  # (`def abs(t): return t` in the file: not the builtin; review, round 8)
        if holder and text.startswith(OPTIMIZER_PACKAGES) and text.rsplit(".", 1)[-1][:1].isupper():
            return True  # `torch.optim.Adam(model.parameters())`: leaves it steps under `no_grad`
        if holder and isinstance(call.func, cst.Name) and text in ("list", "tuple"):
            gathered = True
            child, k = call, k - 2  # the same objects in a new container
            continue
        if _fresh_torch_call(call, shadowed):
            return True  # (not `F.relu(buf, inplace=True)`, which returns `buf`: review, round 8)
        if isinstance(call.func, cst.Name) and torch_object(text, parents[: k - 1]):
            gathered = True
            child, k = call, k - 2  # what a torch module returns may be its input
            continue
        return False
    return False


def _only_switches_grad(loop: cst.For) -> bool:
    """A `for` loop over what an object holds whose body only switches each item's `requires_grad`
    (`p.requires_grad_(False)`, `p.requires_grad = False`, given literals): it writes no value into
    them (review, round 7: the freezing loop before a training loop)."""
    if not isinstance(loop.target, cst.Name) or loop.orelse is not None:
        return False
    target = loop.target.value
    ok = [True]

    class Walk(cst.CSTVisitor):
        def __init__(self) -> None:
            self.parents: List[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.Name) and node.value == target and ok[0]:
                ok[0] = self._switch(node)
            self.parents.append(node)
            return ok[0]

        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.parents.pop()

        def _switch(self, node: cst.Name) -> bool:
            if len(self.parents) < 3:
                return False
            attr, up, top = self.parents[-1], self.parents[-2], self.parents[-3]
            if not (isinstance(attr, cst.Attribute) and attr.value is node):
                return False
            if attr.attr.value == "requires_grad_" and isinstance(up, cst.Call) and up.func is attr and isinstance(top, cst.Expr):
                return all(not a.star and is_literal(a.value) for a in up.args)
            if attr.attr.value == "requires_grad" and isinstance(up, cst.AssignTarget) and isinstance(top, cst.Assign):
                return len(top.targets) == 1 and is_literal(top.value)
            return False

    walk_tree(loop.body, Walk())
    return ok[0]


def _only_read(
    node: cst.Name,
    parents: List[cst.CSTNode],
    names_free: Callable[[str], bool],
    shadowed: AbstractSet[str] = frozenset(),
    bound_ok: Optional[Callable[[str], bool]] = None,
) -> bool:
    """For a torch object (`_handed_on` with `names_free`): a read that does not hand the object on.
    Through attributes and items (`opt.param_groups[0]["lr"]`; no dunder such as `m.__dict__`),
    it is the receiver of a method (`stores_into_objects` sees what that stores), the target of a
    store, a `for` loop's iterable, an operand; or it is handed only to a builtin that reads it
    (`print(model)`) or to a torch callable given nothing else that may hold a graph
    (`nn.init.xavier_uniform_(lin.weight)`, `torch.compile(model)`; not
    `register_parametrization(lin, "weight", Holder(h))`, `nn.Module.__setattr__(m, "b", h)`).
    Not: bound to another name, returned, put in a display, passed to any other call. Review, round 8:
    a torch callable's result may be what it was given (`nn.init.zeros_(m.b)` returns `m.b`,
    `torch.compile(m)` wraps `m`): followed as a method's is; iterated, its items are followed in
    the loop's body (`_items_kept`)."""
    k = len(parents) - 1
    child: cst.CSTNode = node
    while k >= 0 and isinstance(parents[k], (cst.Attribute, cst.Subscript)) and parents[k].value is child:
        if isinstance(parents[k], cst.Attribute) and parents[k].attr.value.startswith("__"):
            return False
        child = parents[k]
        k -= 1
    if k < 0:
        return False
    parent = parents[k]
    if isinstance(parent, cst.Call) and parent.func is child and child is not node:
        # A method of it or of a part of it (`m.b.view(-1)`, `m.buffers()`, `m.train()`, which returns
        # it): what it returns may be a tensor the object holds, or a view of one, written into under
        # another name (review, round 7). Not `zero_grad` or `step`, which return none of them.
        if isinstance(child, cst.Attribute) and child.value is node and child.attr.value in ("zero_grad", "step"):
            return True
        return _tensor_read(node, parents, lambda name, where: False, holder=True, shadowed=shadowed, bound_ok=bound_ok)
    if isinstance(parent, cst.Call):
        return parent.func is child  # called (`model(x)`)
    if isinstance(parent, cst.AssignTarget):
        return child is not node  # `m.x = v`: a store (`stores_into_objects`)
    if isinstance(parent, (cst.For, cst.CompFor)):
        # (`for t in bufs: t.copy_(h)`: its items, under the target's name; review, round 8.)
        if parent.iter is not child:
            return False
        holder = next((p for p in reversed(parents[:k]) if isinstance(p, (cst.FunctionDef, cst.Module))), None)
        counters = _range_counters(holder) if holder is not None else set()
        return _items_kept(parent, parents[k - 1] if k >= 1 else parent, names_free, shadowed, counters)
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _GATHERING_OPERATORS):
        # `more = bufs + []` holds the same items, and so may `bufs[0] * 2` where the item is a list:
        # followed as what it holds (review, round 9).
        return _tensor_read(node, parents, lambda name, where: False, holder=True, shadowed=shadowed, start=(child, k), bound_ok=bound_ok)
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)):
        return _operator_trusted(parent, shadowed)  # (`Keeper() < bufs`: a special method of the file may keep it)
    if isinstance(parent, (cst.Expr, cst.If, cst.While)):
        return child is not node
    if not isinstance(parent, cst.Arg) or parent.value is not child or parent.star or k < 1:
        return False
    call = parents[k - 1]
    if not isinstance(call, cst.Call) or not isinstance(call.func, (cst.Name, cst.Attribute)):
        return False
    text = code_of(call.func).strip()
    if isinstance(call.func, cst.Name) and text in _READING_BUILTINS and text not in shadowed and (text not in _DUNDER_BUILTINS or _operators_trusted(shadowed)):
        return True
    if isinstance(call.func, cst.Name) and parents and isinstance(parents[0], cst.Module) and text in _reading_helpers(parents[0]):
        return True  # `loss_fn(bufs[0], y)` with `def loss_fn(u, v): return torch.mean((u - v) ** 2)`
    if not text.startswith(("torch.", "nn.", "optim.", "F.")) or "setattr" in text or "__" in text:
        return False
    if not all(arg is parent or (not arg.star and graph_free(arg.value, names_free)) for arg in call.args):
        return False
    if text.startswith(OPTIMIZER_PACKAGES) and text.rsplit(".", 1)[-1][:1].isupper():
        return True  # `torch.optim.Adam(params)`: leaves it steps under `no_grad`, as `_tensor_read` has it
    if _fresh_torch_call(call, shadowed):
        return True  # a new tensor (`F.mse_loss(bufs[0], y)`): it holds nothing it was given
    # What it returns may be what it was given, or hold it (`b = nn.init.zeros_(m.b)`, `cm =
    # torch.compile(m)`): followed, a name bound to it proven as its own (review, round 8).
    return _tensor_read(node, parents, lambda name, where: False, holder=True, shadowed=shadowed, start=(call, k - 2), bound_ok=bound_ok)


def _items_kept(
    loop: cst.CSTNode, body: cst.CSTNode, names_free: Callable[[str], bool], shadowed: AbstractSet[str], counters: AbstractSet[str] = frozenset()
) -> bool:
    """For a `for` loop or a comprehension's `for` over what an object holds (`loop`; `body`, the
    comprehension): its target names the items, which may be tensors or objects the loop writes
    into (`for t in bufs: t.copy_(h)`). Proven where each target is a name that the body does not
    hand on (`_only_read`) and that everything stored or written into in place through it is
    graph-free (`t.mul_(0.9)`, `p.requires_grad_(False)`), or a number computed from literals and
    `counters` (`_range_counters`: `g["lr"] = 0.1 / (step + 1)`) (review, round 8)."""

    def number(value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.BinaryOperation):
            return number(value.left) and number(value.right)
        if isinstance(value, cst.UnaryOperation):
            return number(value.expression)
        return isinstance(value, (cst.Integer, cst.Float)) or (isinstance(value, cst.Name) and value.value in counters)

    target = loop.target
    parts = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
    if not all(isinstance(part, cst.Name) for part in parts) or (isinstance(loop, cst.For) and loop.orelse is not None):
        return False
    inner = loop.body if isinstance(loop, cst.For) else body
    writes = [*stores_into_objects(inner), *_inplace_updates(inner), *nested_writes(inner)]
    # `t += h` on an item updates it in place (a tensor's, a list's `__iadd__`), though it binds the
    # target too, and `_tensor_read` takes it for a binding (review, round 9).
    writes += [
        (node.target.value, node.value) for node in all_nodes(inner) if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name)
    ]
    for part in parts:
        name = part.value  # type: ignore[union-attr]
        if any(root == name and (value is None or not (number(value) or graph_free(value, names_free))) for root, value in writes):
            return False
        # An item may be a tensor or an object: every read of it proven by one of the two checks.
        if _handed_on(inner, name, None, names_free, shadowed=shadowed) and _handed_on(
            inner, name, None, tensor=lambda text, where: False, shadowed=shadowed
        ):
            return False
    return True


def _range_counters(scope: cst.CSTNode) -> Set[str]:
    """Names every binding of which in `scope` is a `for` target over `range(...)` (`step` in `for step
    in range(3)`): integers, which hold no graph (`g["lr"] = 0.1 / (step + 1)` stores none)."""
    counts = binding_counts(scope)
    if "range" in counts:
        return set()
    found: Dict[str, int] = {}
    for node in all_nodes(scope):
        if (
            isinstance(node, cst.For) and isinstance(node.target, cst.Name) and isinstance(node.iter, cst.Call)
            and isinstance(node.iter.func, cst.Name) and node.iter.func.value == "range"
        ):
            found[node.target.value] = found.get(node.target.value, 0) + 1
    return {name for name, n in found.items() if counts.get(name, 0) == 2 * n}  # (`binding_counts` counts a `for` target twice)


def _reading_helpers(module: cst.Module) -> FrozenSet[str]:
    """The functions of the file that only read their parameters and return a new tensor: bound
    once in the file (which binds no name by a string), by a top-level `def` (no decorator, not
    async) whose body is one `return E`
    (`exprs.single_return`), `E` no parameter itself, and every parameter read in `E` only as an
    operand of arithmetic or a comparison, an argument of a function of torch that returns a new
    tensor (`_fresh_torch_call`) or the receiver of a `FRESH_METHODS` method (`def loss_fn(u, v):
    return torch.mean((u - v) ** 2)`). Given an object, such a call hands it on to nowhere: the
    result holds none of it. (Found by `tests/test_properties.py` after review round 8 made a
    container's items followed: a loss helper given `bufs[0]` had lost its safe fix.) Once per
    file (`walk.per_file`)."""
    return per_file("reading helpers", module, _list_reading_helpers)


def _list_reading_helpers(module: cst.Module) -> FrozenSet[str]:
    counts = binding_counts(module)
    found = set()
    # (`globals()["loss_fn"] = keep`, `exec(...)`, a star import: a binding the counts do not see)
    for statement in () if names_by_string(module) else module.body:
        if not isinstance(statement, cst.FunctionDef) or statement.decorators or statement.asynchronous is not None:
            continue
        params = statement.params
        if params.star_arg is not cst.MaybeSentinel.DEFAULT or params.star_kwarg is not None:
            continue
        names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        returned = single_return(statement)
        if counts.get(statement.name.value) == 1 and returned is not None and _only_fresh_reads(returned, names, _shadowed_builtins(module)):
            found.add(statement.name.value)
    return frozenset(found)


def _only_fresh_reads(expr: cst.BaseExpression, names: AbstractSet[str], shadowed: AbstractSet[str]) -> bool:
    """Whether `expr` reads the names only as operands (`_reading_helpers`), and is none of them."""
    bare = strip_parens(expr)
    if isinstance(bare, cst.Name) and bare.value in names:
        return False
    ok = [True]

    class Check(cst.CSTVisitor):
        def __init__(self) -> None:
            self.stack: List[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.Lambda, cst.NamedExpr, cst.BaseComp, cst.Yield, cst.Await)):
                ok[0] = False  # (code that runs later, binds or suspends: not followed)
            elif isinstance(node, cst.Name) and node.value in names and not _fresh_operand(node, self.stack, shadowed):
                ok[0] = False
            self.stack.append(node)  # (`on_leave` runs for every node visited)
            return ok[0]

        def on_leave(self, node: cst.CSTNode) -> None:
            self.stack.pop()

    walk_tree(expr, Check())
    return ok[0]


def _fresh_operand(node: cst.Name, stack: List[cst.CSTNode], shadowed: AbstractSet[str]) -> bool:
    """A parameter read whose value goes only into a new value: an operand of arithmetic or a
    comparison, an argument of a fresh torch call, the receiver of a `FRESH_METHODS` method; each
    where the file proves it torch's (`_Untrusted`: `loss_fn(bufs[0], Keeper())` runs a `__rsub__`
    of the file on `u - v`, which may return `u`; review, round 9)."""
    parent = stack[-1] if stack else None
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _GATHERING_OPERATORS):
        # Review, round 14: a helper may be given a container (`_only_read`: `keep(bufs, 1)`), and
        # on a list, tuple, set or dict these make a container of the same items (`u * k`, `u + v`,
        # as `_only_read` follows them). Fresh only where what the chain of them makes goes on into
        # a new value (`torch.mean((u - v) ** 2)`), never where it is what the helper returns.
        if not _operator_trusted(parent, shadowed) or len(stack) < 2:
            return False
        return _fresh_operand(parent, stack[:-1], shadowed)  # type: ignore[arg-type]
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)):
        return _operator_trusted(parent, shadowed)
    if isinstance(parent, cst.Arg) and parent.value is node and not parent.star and len(stack) >= 2:
        call = stack[-2]
        return isinstance(call, cst.Call) and _fresh_torch_call(call, shadowed)
    if isinstance(parent, cst.Attribute) and parent.value is node and len(stack) >= 2:
        call = stack[-2]
        # (Not a name that on a container stores its argument: `u.add(x)` is a tensor's new sum but
        # a set's insertion, and a helper may be given a set: `put(bufs)`; review, round 14.)
        return (
            isinstance(call, cst.Call) and call.func is parent and parent.attr.value in FRESH_METHODS
            and parent.attr.value not in COLLECTING_METHODS and _method_trusted(parent.attr.value, shadowed)
        )
    return False


def _fresh_torch_call(call: cst.Call, shadowed: AbstractSet[str]) -> bool:
    """A call of a function of torch whose result is a new tensor or a Python value, never what it
    was given nor a view of it: a `FRESH_METHODS` name (`torch.tanh`, `torch.sum`) or a loss
    (`FRESH_LOSSES`: `F.mse_loss`), not given `inplace=`/`out=` (`_writes_in_place`). By its text
    (`torch.`, `F.`), where the file proves the text is torch's (review, round 9; `_Untrusted`):
    its first name bound only by imports of torch (not `class F:` of the file), no part of its path
    an attribute name the file may store (`torch.mean = lambda t: t`), and no `__torch_function__`
    of the file that an argument could bring in."""
    text = code_of(call.func).strip()
    if not text.startswith(("torch.", "F.")) or "Tensor" in text:
        return False
    parts = text.split(".")
    name = parts[-1]
    if parts[0] not in getattr(shadowed, "torch_roots", frozenset()) or not all(_method_trusted(part, shadowed) for part in parts[1:]):
        return False
    return (name in FRESH_METHODS or name in FRESH_LOSSES) and not _writes_in_place(call)


def _writes_in_place(call: cst.Call) -> bool:
    """A torch call given `inplace=`/`out=` or an in-place flag by position (`F.relu(h, True)`:
    `FUNCTIONAL_INPLACE_POSITION`): it returns the tensor it writes into."""
    if any(arg.star or (arg.keyword is not None and arg.keyword.value in INPLACE_KEYWORDS) for arg in call.args):
        return True
    position = FUNCTIONAL_INPLACE_POSITION.get(code_of(call.func).strip().rsplit(".", 1)[-1])
    return position is not None and sum(arg.keyword is None for arg in call.args) > position


# Special methods through which an operator, `in`, `isinstance`, `abs`/`round` or a
# torch function hands its operand to code the file may define: `Keeper() * buf` runs
# `Keeper.__mul__(buf)`, which may return `buf` or keep it; `torch.add(buf, k)` runs
# `k.__torch_function__`, whatever `torch.add` is (review, round 9).
_OPERAND_DUNDERS = frozenset(
    {f"__{p}{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow", "lshift", "rshift", "and", "xor", "or") for p in ("", "r", "i")}
    | {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__", "__contains__", "__neg__", "__pos__", "__invert__", "__abs__", "__round__"}
    | {"__instancecheck__", "__subclasscheck__", "__torch_function__", "__torch_dispatch__"}
    # numpy's operators hand both operands to these hooks of an operand's class
    # (`NDArrayOperatorsMixin.__mul__` calls `np.multiply(self, buf)`, which calls the file's
    # `__array_ufunc__`, free to return `buf`; review, round 11).
    | {"__array_ufunc__", "__array_function__", "__array_wrap__", "__array_prepare__", "__array_finalize__", "__array__"}
)
# Builtins whose result `_OPERAND_DUNDERS` of the file may make (`abs(x)` is `x.__abs__()`).
_DUNDER_BUILTINS = frozenset({"abs", "round", "isinstance"})
# Binary operators that, on lists, tuples, sets or dicts (an item of a container may be one), make a
# container holding the same objects (`bufs + []`, `bufs * 2`, `{t} | s`).
_GATHERING_OPERATORS = (cst.Add, cst.Multiply, cst.BitOr, cst.BitAnd, cst.BitXor, cst.Subtract)


class _Untrusted(frozenset):
    """`_shadowed_builtins`' answer: the builtins that may not be trusted by name (the set), and
    what else the file's text must prove before `_tensor_read`, `_only_read` and `_fresh_operand`
    take a value for new (review, round 9): `torch_roots`, the names the file binds only by imports
    of torch; `stored`, the attribute names it may store on some object (None: any), which may be a
    torch function or tensor method it patches (`torch.mean = lambda t: t`); `operators`, that it
    binds none of `_OPERAND_DUNDERS`, so an operator or a torch function given a tensor
    runs torch's code; `set_views`, that it may keep a mapping's key or item view, a set under `-`,
    `^` and `&` whatever the other operand (`_set_views_held`; review, round 13). A plain set (the
    default elsewhere) proves none of them."""

    torch_roots: FrozenSet[str] = frozenset()
    stored: Optional[FrozenSet[str]] = None
    operators: bool = False
    set_views: bool = True


def _shadowed_builtins(module: cst.Module) -> AbstractSet[str]:
    """The builtins `_tensor_read` and `_only_read` trust by name (`print`, `abs`, ...) that the file
    may bind: `def abs(t): return t` returns its argument (review, round 8). All of them where it may
    rebind builtins unseen (a star import, `builtins.abs = f`). With what the file proves of torch's
    names and of operators (`_Untrusted`). Once per file (`walk.per_file`)."""
    return per_file("untrusted names", module, _list_untrusted)


def _list_untrusted(module: cst.Module) -> "_Untrusted":
    counts = binding_counts(module)
    if may_change_builtins(module):
        found = _Untrusted(_VALUE_BUILTINS)
    else:
        found = _Untrusted(name for name in _VALUE_BUILTINS if counts.get(name, 0))
    if names_by_string(module):
        return found  # (`globals()["F"] = Mine`, `sys.modules["torch"].mean = f`: nothing proven)
    imports: Dict[str, int] = {}
    for node in all_nodes(module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                dotted = code_of(alias.name).strip()
                if dotted == "torch" or dotted.startswith("torch."):
                    local = code_of(alias.asname.name).strip() if alias.asname is not None else "torch"
                    imports[local] = imports.get(local, 0) + 1
        elif isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None and not isinstance(node.names, cst.ImportStar):
            path = code_of(node.module).strip()
            if path == "torch" or path.startswith("torch."):
                for alias in node.names:
                    local = code_of(alias.asname.name if alias.asname is not None else alias.name).strip()
                    imports[local] = imports.get(local, 0) + 1
    found.torch_roots = frozenset(name for name, n in imports.items() if counts.get(name, 0) == n)
    found.stored = bound_attribute_names(module, scopes=False)
    every = bound_attribute_names(module)
    # Review, round 10: the special methods that get an operand need not be the file's: an object of
    # an imported class may have them (`unittest.mock.MagicMock` with `m.__mul__.side_effect = lambda
    # o: o` returns the operand, and records it in `call_args`; `collections.UserList() + buf` holds
    # `list(buf)`, views of its rows; a class of another module of the project may return or keep
    # it). Operators are proven only where every module the file imports is one whose objects are
    # known to make new values of an operand (`_OPERAND_MODULES`, through `_module_paths_proven`).
    found.operators = (
        every is not None and not (every & _OPERAND_DUNDERS)
        and _module_paths_proven(module) and not _classes_made_unseen(module)
    )
    found.set_views = _set_views_held(module)
    return found


# Review, round 13: a mapping's key and item views are sets that take any iterable as the other
# operand of `-`, `^` and `&` (`{}.keys() ^ buf`, `buf - os.environ.keys()`: the builtin dict views
# and `collections.abc`'s `Set` mixins alike), and make a set of its items: of a tensor, its rows,
# views of it. They are made by these methods (a `dict`'s, an `OrderedDict`'s, any `Mapping`'s,
# `nn.ModuleDict.keys()`), and only a view the file keeps can reach an operator: proven where every
# `keys`/`items` the file names (as an attribute or a string) is called and its result at once
# iterated (`for k, v in d.items()`), tested with `in`, or given to a builtin that reads it
# (`_view_only_read`: as an argument it never returns).
_VIEW_METHODS = frozenset({"keys", "items"})
_VIEW_READERS = frozenset({"list", "tuple", "sorted", "set", "frozenset", "len", "enumerate", "zip", "print", "dict", "reversed", "iter", "any", "all", "min", "max", "sum", "str", "repr"})


def _set_views_held(module: cst.Module) -> bool:
    found = [False]
    # (`def sorted(v): return v` in the file: not the builtin, which reads the view and keeps none)
    counts = binding_counts(module)
    readers = frozenset() if may_change_builtins(module) else frozenset(name for name in _VIEW_READERS if not counts.get(name, 0))

    class Find(cst.CSTVisitor):
        def __init__(self) -> None:
            self.parents: List[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.SimpleString) and string_value(node) in _VIEW_METHODS:
                found[0] = True  # (`getattr(d, "keys")()`)
            elif isinstance(node, cst.Attribute) and node.attr.value in _VIEW_METHODS and not self._consumed(node):
                found[0] = True
            self.parents.append(node)
            return not found[0]

        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.parents.pop()

        def _consumed(self, attr: cst.Attribute) -> bool:
            parents = self.parents
            if len(parents) < 2 or not (isinstance(parents[-1], cst.Call) and parents[-1].func is attr):
                return False
            call, up = parents[-1], parents[-2]
            if isinstance(up, (cst.For, cst.CompFor)):
                return up.iter is call
            if isinstance(up, cst.ComparisonTarget):
                return up.comparator is call and isinstance(up.operator, (cst.In, cst.NotIn))
            if isinstance(up, cst.Arg) and up.value is call and not up.star and len(parents) >= 3:
                outer = parents[-3]
                return isinstance(outer, cst.Call) and isinstance(outer.func, cst.Name) and outer.func.value in readers and _view_only_read(outer, up)
            return False

    walk_tree(module, Find())
    return found[0]


def _view_only_read(call: cst.Call, arg: cst.Arg) -> bool:
    """A view given to a `_VIEW_READERS` builtin as an argument it reads and never returns (review,
    round 14): positional (`dict(k=view)` keeps it); `min`'s and `max`'s only one, with no `default=`
    (`min([], default=view)` is the view when the iterable is empty, as `min(view, x)` may be);
    `sum`'s only argument (`sum((), view)` returns its start)."""
    if arg.keyword is not None:
        return False
    name = call.func.value if isinstance(call.func, cst.Name) else ""
    others = [other for other in call.args if other is not arg]
    if name in ("min", "max"):
        return all(other.keyword is not None and other.keyword.value == "key" for other in others)
    if name == "sum":
        return not others
    return True


# Modules whose objects, given a tensor as an operand, make a new value (or raise), keep no reference
# to it and run no code of the file (review, round 10): torch's own (its operators, `Size`,
# `nn.Module`s, which define none), numpy's (an array defers to a tensor's operator by
# `__array_priority__`), and the standard library's modules with no class that keeps an operand
# (`typing.Any | buf` type-checks and raises; not `unittest.mock`, nor `collections`:
# `UserList.__add__` stores `list(other)`). (Subscripts are never proven: `np.s_[buf]` is `buf`.)
_OPERAND_MODULES = frozenset({
    "__future__", "torch", "numpy", "math", "cmath", "random", "os", "sys", "time", "argparse",
    "logging", "warnings", "typing", "json", "itertools", "functools", "dataclasses", "shutil",
    "traceback", "copy", "datetime",
})


# Review, round 11: a module is reached by more than its import. A module's attribute may be another
# module (`typing.collections.UserList() + buf` holds views of `buf`'s rows, though `collections`
# is not imported), and a package proven for its tensors' operators holds submodules whose classes
# keep an operand (`torch.utils.data.TensorDataset(x) + buf` is a `ConcatDataset` holding `buf`,
# with no import but `torch`). Proven: every path the file reaches from an imported module (the
# import's own path and each attribute chain rooted at the name it binds) through public names
# only, none of them a module outside the allowlist: a standard module's name (`collections`,
# `types`) other than `_OPERAND_MODULES`'; of torch and numpy, their submodules
# (`_PACKAGE_SUBMODULES`) only as far as `_PROVEN_SUBMODULES` allows. A module object bound by
# `import` read other than as an attribute chain's root (`u = torch`) proves nothing.
_PACKAGE_SUBMODULES = {
    "torch": frozenset({
        "accelerator", "amp", "ao", "autograd", "backends", "compiler", "contrib", "cpu", "cuda", "distributed",
        "distributions", "export", "fft", "func", "functional", "futures", "fx", "hub", "jit", "library", "linalg",
        "masked", "monitor", "mps", "mtia", "multiprocessing", "nativert", "nested", "nn", "numa", "onnx", "optim",
        "overrides", "package", "profiler", "quantization", "quasirandom", "random", "return_types", "serialization",
        "signal", "sparse", "special", "storage", "testing", "torch_version", "types", "utils", "version", "xpu",
    }),
    "numpy": frozenset({
        "char", "core", "ctypeslib", "distutils", "dtypes", "exceptions", "f2py", "fft", "lib", "linalg", "ma",
        "matlib", "matrixlib", "polynomial", "random", "rec", "strings", "testing", "typing", "version",
    }),
    # (`logging.config.dictConfig` builds any object a `"()"` factory returns and sets the attributes
    # its `"."` mapping names by strings: `{"()": lambda: F.torch, ".": {"mean": f}}` patches torch.)
    "logging": frozenset({"config", "handlers"}),
}
# The submodules (and their subtrees) whose classes make new values of an operand: torch's modules,
# optimizers, autograd, devices and functions; numpy's linear algebra, transforms and generators.
_PROVEN_SUBMODULES = {
    "torch": frozenset({
        ("nn",), ("optim",), ("autograd",), ("cuda",), ("backends",), ("linalg",), ("fft",), ("special",),
        ("amp",), ("random",), ("distributions",), ("functional",), ("cpu",), ("mps",), ("utils", "checkpoint"),
    }),
    "numpy": frozenset({("linalg",), ("fft",), ("random",)}),
    "logging": frozenset({("handlers",)}),
}
# Standard modules that an allowed module holds as attributes (the fallback where
# `sys.stdlib_module_names`, Python 3.10+, is missing).
_STANDARD_MODULE_NAMES = frozenset(getattr(sys, "stdlib_module_names", ())) | frozenset({
    "collections", "contextlib", "functools", "operator", "re", "types", "warnings", "inspect", "keyword",
    "builtins", "abc", "io", "weakref", "threading", "atexit", "linecache", "textwrap", "fnmatch", "stat",
    "errno", "posix", "nt", "codecs", "itertools", "copy", "sys", "os", "time", "importlib", "unittest", "enum",
})


# Review, round 12: typing's objects are no safe operands as a whole. The classes it re-exports from
# `collections.abc` and `collections` bring operators of their own to a class of the file that
# subclasses them (`class K(list, typing.AbstractSet)`: `K() | buf` is `Set.__or__`, which makes
# `K(rows of buf)`; `typing.KeysView(d) | buf` a set of them; `Mapping.__contains__` hands `buf` to the
# file's `__getitem__`), and `typing.ABCMeta`/`NamedTupleMeta` make a class from a namespace mapping.
# Proven anywhere: these names (typing's own forms, functions and protocols, Python 3.11, with a few
# later ones), whose objects only build a `Union` under `|` (which `_fresh_operand` never trusts);
# `_TYPING_CLASS_CHECKS` only as `isinstance`'s class (not in an annotation, whose value is read
# back: `hint.__annotations__["x"]`, `typing.get_type_hints`); any other name nowhere. Not
# `get_origin`, `get_args` nor `get_type_hints`, which read classes back out of annotation objects
# as `__origin__` does: `typing.get_origin(typing.Type[int])` is `type`, and so is the hint of
# `def f(x: "type")` (review, round 13).
_TYPING_ANY_USE = frozenset({
    "Annotated", "Any", "AnyStr", "AsyncContextManager", "AsyncGenerator", "AsyncIterable", "AsyncIterator",
    "Awaitable", "BinaryIO", "Callable", "ClassVar", "Concatenate", "ContextManager", "Coroutine", "Dict",
    "Final", "FrozenSet", "Generator", "Generic", "Hashable", "IO", "Iterable", "Iterator", "List", "Literal",
    "LiteralString", "MappingView", "Match", "NamedTuple", "Never", "NoReturn", "NotRequired", "Optional",
    "Protocol", "Required", "Reversible", "Self", "Set", "Sized", "SupportsBytes", "SupportsComplex",
    "SupportsFloat", "SupportsIndex", "SupportsInt", "TYPE_CHECKING", "Text", "TextIO", "Tuple", "Type",
    "TypeAlias", "TypeGuard", "TypeVarTuple", "TypedDict", "Union", "Unpack", "abstractmethod", "assert_never",
    "assert_type", "cast", "clear_overloads", "dataclass_transform", "final",
    "get_overloads", "is_typeddict", "no_type_check", "no_type_check_decorator", "overload",
    "reveal_type", "runtime_checkable", "TypeVar", "NewType", "ParamSpec", "ParamSpecArgs",
    "ParamSpecKwargs", "Pattern", "SupportsAbs", "SupportsRound", "override", "TypeAliasType", "ReadOnly", "TypeIs",
})
_TYPING_CLASS_CHECKS = frozenset({
    "AbstractSet", "MutableSet", "KeysView", "ItemsView", "ValuesView", "Mapping", "MutableMapping", "Sequence",
    "MutableSequence", "Collection", "Container", "ByteString", "ChainMap", "Counter", "DefaultDict", "Deque",
    "OrderedDict", "defaultdict",
})


# The special names a proven path may go through: names, documentation and the protocol methods
# of a class or function called as such (`nn.Module.__init__(self)`, `nn.Module.__call__`).
_PATH_DUNDERS = frozenset({
    "__name__", "__qualname__", "__module__", "__doc__", "__version__", "__file__", "__init__", "__call__",
    "__enter__", "__exit__",
})


def _path_proven(path: Sequence[str], class_check: bool = True) -> bool:
    """A dotted path from an imported module (`torch.nn.functional.relu`, `typing.collections`)
    reaches no module outside the allowlist (see `_PACKAGE_SUBMODULES`); `class_check`: where it is
    `isinstance`'s class (or bound by an import, whose reads are checked)."""
    if not path or path[0] not in _OPERAND_MODULES:
        return False
    rest = tuple(path[1:])
    for part in rest:
        if part.startswith("_") and part not in _PATH_DUNDERS:
            # (`argparse._sys`, `torch._C`: private, maybe a module; of the special names, only
            # `_PATH_DUNDERS`: `typing.Type.__origin__` is `type`, `torch.Tensor.__mro__[-1]` is
            # `object`, whose `__subclasses__()` are every class; review, round 12)
            return False
        if part in _STANDARD_MODULE_NAMES and part not in _OPERAND_MODULES:
            return False
    if path[0] == "typing" and rest:
        if not (rest[0] in _TYPING_ANY_USE or (class_check and rest[0] in _TYPING_CLASS_CHECKS)):
            return False
    submodules = _PACKAGE_SUBMODULES.get(path[0])
    if submodules is not None and rest and rest[0] in submodules:
        if not any(rest[: len(allowed)] == allowed for allowed in _PROVEN_SUBMODULES[path[0]]):
            return False
    # Review, round 12: a module of torch or numpy holds other modules under names of its own
    # (`torch.nn.functional.torch.utils.data` is `torch.utils.data`; `torch.nn.modules.activation.F`
    # is `torch.nn.functional`, which a library handed it may patch by strings), and metaclasses. The
    # path's longest prefix that is a module `package_names` lists must go on by none of its
    # `REFUSED` names; past it, the path is in a class, function or value of that module.
    if path[0] in _PACKAGE_SUBMODULES and path[0] != "logging":
        k = max(i for i in range(1, len(path) + 1) if ".".join(path[:i]) in _REFUSED_MODULE_NAMES or i == 1)
        module_name = ".".join(path[:k])
        if module_name not in _REFUSED_MODULE_NAMES:
            return False
        if k < len(path) and path[k] in _REFUSED_MODULE_NAMES[module_name]:
            return False
    return True


def _names_module(path: Sequence[str]) -> bool:
    """The path's last name may be a module: an allowed one, a standard one or a package's submodule
    (`torch.nn.functional.torch` is torch). A module object handed on may reach code that sets its
    attributes by strings (`copy.copy` of an object whose `__reduce__` returns `(lambda: F.torch, (),
    {"mean": f})` patches `torch.mean`; review, round 11)."""
    last = path[-1]
    if ".".join(path) in _REFUSED_MODULE_NAMES:
        return True  # (`torch.nn.modules.activation`: review, round 12)
    return last in _OPERAND_MODULES or last in _STANDARD_MODULE_NAMES or any(last in names for names in _PACKAGE_SUBMODULES.values())


def _module_paths_proven(module: cst.Module) -> bool:
    """Every path the file reaches from its imports is proven (`_path_proven`; review, round 11):
    every module it imports is on the allowlist (a relative import, the project's own, never is;
    review, round 10), and so is every attribute chain from the names those imports bind."""
    roots: Dict[str, Tuple[str, ...]] = {}
    modules: Set[str] = set()  # names bound to a module object for sure (`import torch`)
    for node in all_nodes(module):
        if isinstance(node, cst.Import):
            for alias in node.names:
                path = tuple(code_of(alias.name).strip().split("."))
                if not _path_proven(path):
                    return False
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    roots[alias.asname.name.value] = path
                    modules.add(alias.asname.name.value)
                else:
                    roots[path[0]] = path[:1]
                    modules.add(path[0])
        elif isinstance(node, cst.ImportFrom):
            if node.relative or node.module is None:
                return False
            base = tuple(code_of(node.module).strip().split("."))
            if not _path_proven(base):
                return False
            if isinstance(node.names, cst.ImportStar):
                continue  # (a star import binds names unseen: `names_by_string` proves nothing there)
            for alias in node.names:
                path = base + (code_of(alias.name).strip(),)
                if not _path_proven(path):
                    return False
                local = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(local, cst.Name):
                    roots[local.value] = path
                    if _names_module(path):
                        modules.add(local.value)  # (`from torch import nn`)
    ok = [True]

    class Chains(cst.CSTVisitor):
        def __init__(self) -> None:
            self.parents: List[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                self.parents.append(node)  # (`on_leave` pops it)
                return False  # (the imports' paths are proven above)
            if ok[0] and isinstance(node, cst.Name) and node.value in roots and self.parents:
                ok[0] = self._chain(node)
            self.parents.append(node)
            return ok[0]

        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.parents.pop()

        def _chain(self, node: cst.Name) -> bool:
            parent = self.parents[-1]
            if isinstance(parent, (cst.ImportAlias, cst.AsName, cst.ImportFrom, cst.Import)):
                return True
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                return True  # an attribute's name that shares the spelling
            if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr)) and parent.target is node:
                return True  # the name bound again (`F = object()`): no module handed on
            if isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.NameItem, cst.AsName, cst.Del)):
                return True
            path = list(roots[node.value])
            child: cst.CSTNode = node
            k = len(self.parents) - 1
            while k >= 0 and isinstance(self.parents[k], cst.Attribute) and self.parents[k].value is child:
                path.append(self.parents[k].attr.value)
                child, k = self.parents[k], k - 1
            if child is node and node.value in modules:
                # the module object itself, bound or handed on (`u = torch`); not the object of
                # `setattr(torch, "mean", f)`, whose literal name `bound_attribute_names` sees
                arg = self.parents[-1]
                call = self.parents[-2] if len(self.parents) >= 2 else None
                return (
                    isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
                    and call.func.value in ("setattr", "hasattr", "delattr") and call.args and call.args[0] is arg and arg.keyword is None and not arg.star
                )
            if child is not node and _names_module(path) and not (k >= 0 and isinstance(self.parents[k], cst.Call) and self.parents[k].func is child):
                return False  # a module reached as an attribute, handed on (`lambda: F.torch`)
            return _path_proven(path, class_check=self._class_check(k))

        def _class_check(self, k: int) -> bool:
            """The chain is `isinstance`'s class (review, round 12). Not an annotation: its value is
            read back (`f.__annotations__["x"]`, `typing.get_type_hints`, `dataclasses.fields(C)[0].type`),
            `class K(list, hint.__annotations__["x"])` subclasses `typing.AbstractSet`."""
            arg = self.parents[k] if k >= 0 else None
            call = self.parents[k - 1] if k >= 1 else None
            return (
                isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
                and call.func.value in ("isinstance", "issubclass") and len(call.args) == 2 and call.args[1] is arg
            )

    walk_tree(module, Chains())
    return ok[0]


# Ways to make a class from a namespace mapping, whose special methods no `def` or binding of a class
# body shows (review, round 11): `type.__new__(type, "K", (), {"__mul__": f})`, a metaclass of the
# file called (`Meta("K", (), ns)`) or named (`metaclass=`), `dataclasses.make_dataclass(...,
# namespace=ns)`, `types.new_class`; `type` itself reached through `__class__` (`int.__class__`) or
# `type(int)`. Allowed: `type(x)` given one argument and only compared, printed or read for its name.
_CLASS_MAKERS = frozenset({"make_dataclass", "new_class", "__class__", "__build_class__", "__prepare__", "__new__"}) | frozenset({
    # Review, round 14: a `typing.ForwardRef` evaluates its string as code, builtins in reach
    # (`ForwardRef("type")._evaluate(None, None, frozenset())` is `type`); one is also read back
    # from a typing-made class's `__annotations__` (`typing.NamedTuple("Row", [("k", "type")])`),
    # so `ForwardRef` is off `_TYPING_ANY_USE` and its evaluation is any use of these names.
    "_evaluate", "evaluate_forward_ref", "_eval_type",
})
_TYPE_READERS = frozenset({"print", "str", "repr", "isinstance", "issubclass", "id", "hash"})


# Review, round 12: a class is reached by more than its name. The special attributes walk the class
# graph (`object.__subclasses__()` holds `type`, and every class of the process; `int.__base__`,
# `C.__mro__`, `typing.Type.__origin__`) or reach the builtins module (`print.__self__.type`). Proven:
# a file whose special attributes (and special names as strings: `getattr(x, "__bases__")`) are
# these, which read a name, call a protocol method of a class or read a namespace (`__dict__`,
# judged by `bound_attribute_names`).
_READ_DUNDERS = frozenset({
    "__init__", "__name__", "__qualname__", "__module__", "__doc__", "__version__", "__file__", "__call__",
    "__enter__", "__exit__", "__len__", "__iter__", "__next__", "__repr__", "__str__", "__getitem__",
    "__setitem__", "__dict__", "__setattr__", "__annotations__", "__main__", "__all__",
})


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _classes_made_unseen(module: cst.Module) -> bool:
    found = [False]

    class Find(cst.CSTVisitor):
        def __init__(self) -> None:
            self.parents: List[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.ClassDef) and any(k.keyword is not None for k in node.keywords):
                found[0] = True  # (`metaclass=Meta`, a keyword for `__init_subclass__`)
            elif isinstance(node, cst.Name) and node.value in _CLASS_MAKERS:
                found[0] = True
            elif isinstance(node, cst.SimpleString) and string_value(node) in _CLASS_MAKERS:
                found[0] = True  # (`getattr(int, "__class__")`)
            elif isinstance(node, cst.Attribute) and _dunder(node.attr.value) and node.attr.value not in _READ_DUNDERS:
                found[0] = True  # (`object.__subclasses__()` holds `type`: review, round 12)
            elif isinstance(node, cst.SimpleString) and _dunder(string_value(node) or "") and string_value(node) not in _READ_DUNDERS:
                found[0] = True  # (`getattr(print, "__self__")`, the builtins module)
            elif isinstance(node, cst.Name) and node.value == "__builtins__":
                found[0] = True  # (`__builtins__.type`)
            elif isinstance(node, cst.Name) and node.value == "getattr" and not self._named_getattr(node):
                # Review, round 13: the name a `getattr` reads is checked above as a literal string;
                # a name it computes is any (`getattr(int, "__cl" + "ass__")`, `"__cl" "ass__"` is
                # two strings, neither special), and so is a `getattr` handed on (`g = getattr`).
                found[0] = True
            elif isinstance(node, cst.Name) and node.value == "type" and not self._type_use(node):
                found[0] = True
            elif isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)) and self._in_annotation() and _annotation_string_unseen(node):
                # Review, round 14: a string in an annotation is code that library code evaluates
                # (`functools.singledispatch`'s `register` runs `typing.get_type_hints`, and its
                # `registry` hands the class back: `x: "type"` is `type`); judged as the code it holds.
                found[0] = True
            elif isinstance(node, cst.Subscript) and _namespace_of_class(node.value) and literal_key(node) is None:
                # A class's namespace read by a computed key is any of its special names
                # (`typing.Type[int].__dict__["__ori" + "gin__"]` is `type`, as `vars(...)[...]` is;
                # a literal key is checked above as a string). Not `self.__dict__`, an instance's
                # own attributes, which hold no special name (lead, round 13, after reviewer T).
                found[0] = True
            self.parents.append(node)
            return not found[0]

        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.parents.pop()

        def _in_annotation(self) -> bool:
            return any(isinstance(parent, cst.Annotation) for parent in self.parents)

        def _named_getattr(self, node: cst.Name) -> bool:
            """`getattr(x, "name")` (a default allowed): the attribute's name one literal string."""
            call = self.parents[-1] if self.parents else None
            if not (isinstance(call, cst.Call) and call.func is node and 2 <= len(call.args) <= 3):
                return False
            if any(arg.star or arg.keyword is not None for arg in call.args):
                return False
            return isinstance(call.args[1].value, cst.SimpleString) and string_value(call.args[1].value) is not None

        def _type_use(self, node: cst.Name) -> bool:
            parents = self.parents
            parent = parents[-1] if parents else None
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                return True  # `x.type`: an attribute's name
            if isinstance(parent, (cst.Param, cst.Arg)) and getattr(parent, "keyword", None) is node:
                return True  # `f(type=...)`
            if isinstance(parent, cst.Arg) and parent.value is node and len(parents) >= 2:
                call = parents[-2]
                # `isinstance(cls, type)`
                return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in ("isinstance", "issubclass")
            if not (isinstance(parent, cst.Call) and parent.func is node and len(parent.args) == 1 and parent.args[0].keyword is None and not parent.args[0].star):
                return False
            up = parents[-2] if len(parents) >= 2 else None
            if isinstance(up, (cst.Comparison, cst.ComparisonTarget, cst.FormattedStringExpression)):
                return True
            if isinstance(up, cst.Attribute) and up.value is parent:
                return up.attr.value in ("__name__", "__qualname__", "__module__")
            if isinstance(up, cst.Arg) and up.value is parent and len(parents) >= 3:
                call = parents[-3]
                return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _TYPE_READERS
            return False

    walk_tree(module, Find())
    return found[0]


def _annotation_string_unseen(node: cst.BaseExpression) -> bool:
    """A string of an annotation whose code may reach a class maker (`_classes_made_unseen` of the
    expression it spells), or that spells none that can be read here: one built of parts
    (`"ty" "pe"`, an f-string), or not one expression."""
    text = string_value(node) if isinstance(node, cst.SimpleString) else None
    if text is None:
        return True
    try:
        expression = cst.parse_expression(text.strip())
    except Exception:  # noqa: BLE001 - libcst's parser errors
        return True
    # (Held as an annotation again: a string within it is evaluated in turn, `"Optional['type']"`.)
    annotated = cst.AnnAssign(target=cst.Name("_"), annotation=cst.Annotation(expression), value=None)
    return _classes_made_unseen(cst.Module(body=[cst.SimpleStatementLine(body=[annotated])]))


def _namespace_of_class(value: cst.BaseExpression) -> bool:
    """`X.__dict__` (X not `self`) or `vars(...)`: what may be a class's namespace."""
    if isinstance(value, cst.Attribute) and value.attr.value == "__dict__":
        return not (isinstance(value.value, cst.Name) and value.value.value == "self")
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "vars"


def _operators_trusted(shadowed: AbstractSet[str]) -> bool:
    """Whether an operator or a comparison given a tensor makes a new value: the file
    binds no special method that could receive the tensor instead (`_Untrusted.operators`)."""
    return bool(getattr(shadowed, "operators", False))


def _operator_trusted(operation: cst.CSTNode, shadowed: AbstractSet[str]) -> bool:
    """`_operators_trusted`, for this operator: never unary `+`, nor `|`, which builds a `Union` holding both
    operands where either is an annotation object (review, round 12): `typing.List | buf`, `T | buf`
    of a `TypeVar`, `torch.nn.DataParallel[int] | buf` (a `typing.Generic` class subscripted), and
    `buf | typing.List` as well (the tensor's `__or__` gives way to the other's `__ror__`)."""
    if isinstance(operation, cst.BinaryOperation) and isinstance(operation.operator, cst.BitOr):
        return False
    # Of the operators, only these make a new tensor from a tensor: unary `+` is `torch.positive`,
    # which returns its input itself (`v = +buf; v.copy_(h)` writes into `buf`; review, round 13).
    if isinstance(operation, cst.UnaryOperation) and not isinstance(operation.operator, (cst.Minus, cst.BitInvert, cst.Not)):
        return False
    # (`{}.keys() ^ buf`, `buf - d.items()`: a set of the tensor's rows, where the file may keep a
    # mapping's view; review, round 13: `_set_views_held`.)
    if isinstance(operation, cst.BinaryOperation) and isinstance(operation.operator, (cst.Subtract, cst.BitXor, cst.BitAnd)):
        if getattr(shadowed, "set_views", True):
            return False
    return _operators_trusted(shadowed)


def _method_trusted(name: str, shadowed: AbstractSet[str]) -> bool:
    """Whether a tensor method called by `name` (`buf.mean()`, `buf.detach()`) is torch's: the file
    stores no attribute of that name (`torch.Tensor.mean = f`) and binds no `__torch_function__`
    that its arguments could bring in."""
    stored = getattr(shadowed, "stored", None)
    return _operators_trusted(shadowed) and stored is not None and name not in stored


def _defines(node: cst.Name, parent: cst.CSTNode) -> bool:
    """A definition's own name (`def outs`, a parameter), not a read."""
    return isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef)) and getattr(parent, "name", None) is node


def _binding_use(node: cst.Name, parent: cst.CSTNode) -> bool:
    """A binding or definition of the name, or an attribute's name that only shares the spelling: no read."""
    if isinstance(parent, cst.Attribute):
        return parent.attr is node
    if isinstance(parent, (cst.AssignTarget, cst.For, cst.CompFor)):
        return getattr(parent, "target", None) is node
    return isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName, cst.Global, cst.Nonlocal, cst.NameItem))


def _plain_use(node: cst.Name, parent: cst.CSTNode, grand: Optional[cst.CSTNode]) -> bool:
    if isinstance(parent, cst.Attribute):
        # A method called on it (`outs.append(h)`), or a name that only shares the spelling (`x.outs`).
        return parent.attr is node or (isinstance(grand, cst.Call) and grand.func is parent)
    if isinstance(parent, cst.Subscript):
        return parent.value is node
    if isinstance(parent, (cst.AssignTarget, cst.For, cst.CompFor)):
        return getattr(parent, "target", None) is node or getattr(parent, "iter", None) is node
    if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
        return code_of(grand.func).strip() == "len"
    if isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName, cst.Global, cst.Nonlocal, cst.NameItem)):
        return True  # a definition's name, not a read (`nonlocal cur`: what the nested scope binds is among its values)
    return False


def _names_where_bound(value: cst.CSTNode, module: cst.Module, cache: Dict[int, Callable[[str], bool]]) -> Callable[[str], bool]:
    """`_names_graph_free` for the function of the file that holds `value` (the module where none
    does): `self.opt = torch.optim.Adam(params, lr=1e-3)` reads `params`, a local of `__init__`."""
    holder: List[cst.CSTNode] = [module]

    class Find(cst.CSTVisitor):
        def __init__(self) -> None:
            self.stack: List[cst.CSTNode] = [module]

        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is value:
                holder[0] = self.stack[-1]
                return False
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                self.stack.append(node)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if isinstance(original_node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and self.stack[-1] is original_node:
                self.stack.pop()

    walk_tree(module, Find())
    scope = holder[0]
    if isinstance(scope, (cst.Lambda, cst.ClassDef)):
        return lambda name: False  # a lambda's or a class body's names: not resolved here
    if id(scope) not in cache:
        entering = (function_parameters(scope) | _declared(scope)) if isinstance(scope, cst.FunctionDef) else set()
        cache[id(scope)] = _names_graph_free(scope, module, entering, shadowed=_shadowed_builtins(module))
    return cache[id(scope)]


def _scope_stores(scope: cst.CSTNode) -> List[tuple]:
    """`stores_into_objects` over a function's own body (it does not enter function definitions)."""
    return stores_into_objects(scope.body if isinstance(scope, cst.FunctionDef) else scope)


def _fresh_in_each_iteration(loop: cst.CSTNode, module: cst.Module) -> Set[str]:
    """The names `loop`'s body binds before every read of them in an iteration, on every path
    through it: definite assignment over `if`/`with` (and the loop's own target), where a nested
    loop's, a `try`'s or a swallowing `with`'s bindings count for nothing after it (it may run no
    iteration, or stop at any statement: `with contextlib.suppress(E):`, `statements.may_catch`). Reads in nested functions are not followed here (`_add_closure_reads`)."""
    stale: Set[str] = set()

    def read(node: cst.CSTNode, bound: Set[str]) -> None:
        stale.update(name for name in _reads_and_binds(node)[0] if name not in bound)

    def block(statements, bound: Optional[Set[str]]) -> Optional[Set[str]]:
        # None: no path goes on past the block (`continue`, `return` ...).
        for statement in statements:
            if bound is None:
                return None
            bound = one(statement, bound)
        return bound

    def both(a: Optional[Set[str]], b: Optional[Set[str]]) -> Optional[Set[str]]:
        return b if a is None else a if b is None else a & b

    def one(statement: cst.CSTNode, bound: Set[str]) -> Optional[Set[str]]:
        bound = set(bound)
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                for part in _read_parts(small):
                    read(part, bound)
                if isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
                    return None
                if isinstance(small, cst.Del):
                    bound -= set(_reads_and_binds(small)[0])
                else:
                    bound |= _reads_and_binds(small)[1]
            return bound
        if isinstance(statement, cst.If):
            read(statement.test, bound)
            orelse = statement.orelse
            if orelse is None:
                other: Optional[Set[str]] = bound
            elif isinstance(orelse, cst.If):
                other = one(orelse, bound)
            else:
                other = block(_statements(orelse.body), bound)
            return both(block(_statements(statement.body), bound), other)
        if isinstance(statement, cst.With):
            for item in statement.items:
                read(item.item, bound)
                if item.asname is not None:
                    bound |= set(bound_names(item.asname.name))
            after = block(_statements(statement.body), bound)
            if may_catch(statement, module):
                # `with contextlib.suppress(E):` may stop its body at any statement and go on
                # after it: what the body binds may keep an earlier iteration's value.
                return bound
            return after
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return bound | {statement.name.value}
        # A nested loop, a `try`, a `match`: checked for reads, their bindings not counted after it.
        for child in children(statement):
            if isinstance(child, cst.BaseExpression) and child is not getattr(statement, "target", None):
                read(child, bound)  # a test, an iterable, a subject
        for handler in getattr(statement, "handlers", ()):
            if handler.type is not None:
                read(handler.type, bound)
        for suite in _suites(statement):
            block(suite, set(bound) | _own_targets(statement))
        return bound

    start = set(bound_names(loop.target)) if isinstance(loop, cst.For) else set()
    if isinstance(loop, cst.While):
        read(loop.test, start)
    block(_statements(loop.body), start)
    bound_anywhere = _reads_and_binds(loop.body)[1] | start
    return bound_anywhere - stale


def _read_parts(small: cst.BaseSmallStatement) -> List[cst.CSTNode]:
    """The parts of a simple statement that it reads: a binding's value and what its targets read
    (`x[i] = v` reads `x` and `i`), not the names it binds; all of any other statement
    (`h += x` reads `h`)."""
    if isinstance(small, cst.Assign):
        return [small.value, *(part for target in small.targets for part in _target_reads(target.target))]
    if isinstance(small, cst.AnnAssign):
        return [small.annotation, *([small.value] if small.value is not None else []), *_target_reads(small.target)]
    return [small]


def _target_reads(target: cst.BaseExpression) -> List[cst.CSTNode]:
    if isinstance(target, cst.Name):
        return []
    if isinstance(target, (cst.Tuple, cst.List)):
        return [part for element in target.elements for part in _target_reads(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_reads(target.value)
    return [target]


def _statements(suite: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    """A suite's statements: `if a: x = 1; y = 2` on one line is one statement line."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    return suite.body


def _suites(statement: cst.CSTNode) -> List[Sequence[cst.CSTNode]]:
    """The statement lists of a compound statement (bodies, `else`, handlers, `finally`, cases)."""
    found: List[Sequence[cst.CSTNode]] = []

    class Walk(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.IndentedBlock):
                found.append(node.body)
                return False
            if isinstance(node, cst.SimpleStatementSuite):
                found.append([cst.SimpleStatementLine(body=node.body)])
                return False
            return not isinstance(node, (cst.FunctionDef, cst.ClassDef))

    for child in children(statement):
        walk_tree(child, Walk())
    return found


def _own_targets(statement: cst.CSTNode) -> Set[str]:
    """What a nested `for` binds before its body runs (its target), for the body's own reads."""
    return set(bound_names(statement.target)) if isinstance(statement, cst.For) else set()


def _add_closure_reads(reads: Dict[str, cst.CSTNode], scope: cst.CSTNode, module: cst.Module) -> None:
    """Add to `reads` (name -> first read) what the functions and lambdas the loop reads read from
    around them, and their parameters' defaults: `def feats(): return h` called in the loop reads
    `h` (built before it) at each call, as `lambda: h` and `lambda h=h: h` do."""
    defined: Dict[str, List[cst.CSTNode]] = {}

    class Find(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            if node is scope:
                return True
            defined.setdefault(node.name.value, []).append(node)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Assign(self, node: cst.Assign) -> None:
            if isinstance(node.value, cst.Lambda):
                for target in node.targets:
                    for name in bound_names(target.target):
                        defined.setdefault(name, []).append(node.value)

    walk_tree(scope, Find())
    if scope is not module:
        for statement in module.body:
            if isinstance(statement, cst.FunctionDef):
                defined.setdefault(statement.name.value, []).append(statement)
    pending = [name for name in reads if name in defined]
    seen: Set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for function in defined[name]:
            params = function.params
            own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
            own.update(p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param))
            body_reads, body_binds = _reads_and_binds(function.body)
            found = [n for n in body_reads if n not in own and n not in body_binds]
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                if param.default is not None:
                    found += list(_reads_and_binds(param.default)[0])
            for read_name in found:
                if read_name not in reads:
                    reads[read_name] = reads[name]
                    if read_name in defined:
                        pending.append(read_name)


def module_graph_reads(function: cst.FunctionDef, module: cst.Module) -> List[Tuple[str, Optional[cst.BaseExpression]]]:
    """(name, value) for the module-level names `function` reads without binding them itself
    (called too: `model(x)` may read a graph its module keeps), where a value the file puts in the
    name is not proven graph-free (`h = (x @ w).tanh()`, `model = Net()` at module level), in name
    order. Such a value outlives one call: the next call backpropagates through its graph again.
    (A loop's reads count the same way, `loop_reasons`.)"""
    params = function_parameters(function)
    local = set(binding_counts(function.body)) - _declared(function)
    module_bindings = _bindings_outside(module, function)
    writes = _module_writes(module)
    imported = _imported_from_elsewhere(module)
    by_string = names_by_string(module)  # `globals()["h"] = ...`: any module-level name
    aliased = _aliased_names(module)
    found: List[Tuple[str, Optional[cst.BaseExpression]]] = []
    for name in sorted(_reads_and_binds(function.body)[0]):
        if name in params or name in local:
            continue
        if name in imported:
            if _read_as_data(function.body, name):
                found.append((name, None))  # `from shared import h`: whatever that module built
            continue
        if name not in module_bindings and name not in writes:
            if by_string and name not in BUILTIN_NAMES:
                found.append((name, None))
            continue
        if name in aliased:
            found.append((name, None))  # `alias = box; alias.h = ...`: writes gradfix does not follow
            continue
        # Also what functions of the file bind it to under `global` (`def setup(): global h`).
        for value in [*module_bindings.get(name, []), *writes.get(name, [])]:
            if value is None or not graph_free(value):
                found.append((name, value))
                break
    return found


def writes_into_parameters(function: cst.FunctionDef) -> bool:
    """Whether `function` may write into what a parameter holds (`x.add_(v)`, `x[0] = v`, `x +=
    v`, `xs.append(v)`): a value passed in would hold what it wrote at the next call. A method's
    `self` receives no argument: what it stores into its object is not the argument's."""
    params = function_parameters(function) - {"self", "cls"}
    written = {root for root, _ in [*stores_into_objects(function.body), *_inplace_updates(function.body)]}
    return bool(written & params) or bool(set(binding_counts(function.body)) & params)


def _aliased_names(module: cst.Module) -> Set[str]:
    """Names the file hands on as they are, where another name may then write into what they hold:
    the value of a binding (`v = h`, `a, b = h, w`), a method kept uncalled (`store = hs.append`),
    an argument of a function or class of the file (`setup(box)`), the iterable of a `for` whose
    body writes into its target (`for t in hs: t.add_(v)`)."""
    own = {s.name.value for s in module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))}
    found: Set[str] = set()

    def bare(value: Optional[cst.BaseExpression]) -> None:
        if isinstance(value, cst.Name):
            found.add(value.value)
        elif isinstance(value, (cst.Tuple, cst.List)):
            for element in value.elements:
                bare(element.value)

    class Walk(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            bare(node.value)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            bare(node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            bare(node.value)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            bare(node.value)

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value in own:
                for arg in node.args:
                    bare(arg.value)

        def visit_For(self, node: cst.For) -> None:
            # `for t in hs: t.add_(v)` writes into what `hs` holds through the loop's target.
            targets = set(bound_names(node.target))
            written = {name for name, _ in [*stores_into_objects(node.body), *_inplace_updates(node.body)]}
            root = _storage_root(node.iter)
            if root is not None and targets & written:
                found.add(root)

    # A method read without a call: `store = hs.append`.
    class Methods(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            func = node.func
            if isinstance(func, cst.Attribute):
                walk_tree(func.value, self)
            else:
                walk_tree(func, self)
            for arg in node.args:
                walk_tree(arg.value, self)
            return False

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.attr.value in COLLECTING_METHODS | {"__setitem__", "copy_", "register_buffer"}:
                found.add(node.value.value)

    walk_tree(module, Walk())
    walk_tree(module, Methods())
    return found


def _imported_from_elsewhere(module: cst.Module) -> Set[str]:
    """Module-level names bound by importing from a module outside `TRUSTED_MODULES`
    (`from shared import h`, `import shared`)."""
    names: Set[str] = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    root = code_of(alias.name).strip().split(".")[0]
                    if root not in TRUSTED_MODULES:
                        local = alias.asname.name if alias.asname is not None else alias.name
                        names.add(code_of(local).strip().split(".")[0])
            elif isinstance(small, cst.ImportFrom):
                root = code_of(small.module).strip().split(".")[0] if small.module is not None else ""
                if small.relative or root not in TRUSTED_MODULES:
                    if isinstance(small.names, cst.ImportStar):
                        continue  # (`names_by_string` counts a star import)
                    for alias in small.names:
                        local = alias.asname.name if alias.asname is not None else alias.name
                        names.add(code_of(local).strip())
    return names


def _read_as_data(body: cst.CSTNode, name: str) -> bool:
    """Whether `name` is read in `body` other than as the callee or the root of a called attribute
    chain (`shared.helper(x)`, `helper(x)` are code; `shared.h`, `h * 2` are data)."""
    found = []

    class Walk(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            func = node.func
            while isinstance(func, cst.Attribute):
                func = func.value
            if not isinstance(func, cst.Name):
                walk_tree(node.func, self)
            for arg in node.args:
                walk_tree(arg.value, self)
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            walk_tree(node.value, self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                found.append(node)

        def visit_Arg(self, node: cst.Arg) -> bool:
            walk_tree(node.value, self)
            return False

    walk_tree(body, Walk())
    return bool(found)


# nn.Module's own attributes that hold no tensor (`if self.training:`).
_MODULE_STATE = frozenset({"training"})


def attribute_graph_reads(function: cst.FunctionDef, module: cst.Module, attribute_names: Optional[AbstractSet[str]]) -> List[str]:
    """The attributes `function` reads through `self`, `cls` or a class of the file (`self.h`,
    `Cfg.h`) other than as code (`self.model(x)`, `self.opt.step()`), where a value the file stores
    under that attribute name, on any object, is not proven graph-free, or the file stores none
    (it was set elsewhere), in name order. Such a value outlives one call: `self.h = (x @ w).tanh()`
    in `__init__` is backpropagated through again by the next call. `attribute_names`: the
    attribute names the file may bind (`FileFacts.bound_attribute_names`; None: any, by a
    computed string)."""
    classes = {s.name.value for s in module.body if isinstance(s, cst.ClassDef)}
    # `box.h` of a module-level object too: what the file stores under `h` anywhere.
    objects = set(_bindings_outside(module, function)) - {name for statement in module.body for name in imported_names(statement)}
    local = set(binding_counts(function.body)) | function_parameters(function)
    receivers = ({"self", "cls"} | classes | (objects - local)) - {"torch", "nn", "F"}
    read = _attribute_reads(function.body, receivers)
    if not read:
        return []
    stores = _attribute_stores(module)
    unknown = attribute_names is None  # bound by computed strings
    found = []
    resolvers: Dict[int, Callable[[str], bool]] = {}
    for name in sorted(read):
        values = stores.get(name)
        if unknown or (not values and name not in _MODULE_STATE) or any(
            v is None or not graph_free(v, _names_where_bound(v, module, resolvers)) for v in values or ()
        ):
            found.append(name)
    return found


def _attribute_reads(body: cst.CSTNode, receivers: Set[str]) -> Set[str]:
    found: Set[str] = set()

    class Walk(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            func = node.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in receivers:
                pass  # `self.model(x)`: called
            elif (
                isinstance(func, cst.Attribute)
                and func.attr.value in _CODE_METHODS
                and isinstance(func.value, cst.Attribute)
                and isinstance(func.value.value, cst.Name)
                and func.value.value.value in receivers
            ):
                pass  # `self.opt.step()`, `self.model.train()`
            else:
                walk_tree(func, self)
            for arg in node.args:
                walk_tree(arg.value, self)
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
            target = node.target
            if isinstance(target, cst.Attribute):
                walk_tree(target.value, self)  # `self.h = ...` stores, it does not read `h`
                return False
            return True

        def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
            if isinstance(node.value, cst.Name) and node.value.value in receivers:
                found.add(node.attr.value)
                return False
            return True

    walk_tree(body, Walk())
    return found


def _attribute_stores(module: cst.Module) -> Dict[str, List[Optional[cst.BaseExpression]]]:
    """attribute name -> every value the file stores under it: `obj.h = v`, `obj.h += v`, class
    bodies' bindings (a `def` holds code), `setattr(obj, "h", v)`, `register_buffer("h", v)`
    (None: a value not known, such as a `for obj.h in ...` target)."""
    out: Dict[str, List[Optional[cst.BaseExpression]]] = {}

    def add(target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        if isinstance(target, cst.Attribute):
            out.setdefault(target.attr.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                add(element.value, None)
        elif isinstance(target, cst.StarredElement):
            add(target.value, None)

    class Walk(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                add(target.target, node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            add(node.target, node.value)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            add(node.target, node.value)

        def visit_For(self, node: cst.For) -> None:
            add(node.target, None)

        def visit_AsName(self, node: cst.AsName) -> None:
            add(node.name, None)  # type: ignore[arg-type]

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
            if name in ("setattr", "__setattr__", "register_buffer", "register_parameter") and node.args:
                args = [a.value for a in node.args]
                key = args[1] if name in ("setattr", "__setattr__") and len(args) > 1 else args[0]
                if isinstance(key, cst.SimpleString):
                    value = args[2] if name in ("setattr", "__setattr__") and len(args) > 2 else args[1] if len(args) > 1 else None
                    out.setdefault(key.evaluated_value, []).append(value)  # type: ignore[arg-type]

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            for statement in node.body.body:
                if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                    out.setdefault(statement.name.value, []).append(cst.Integer("0"))  # code
                elif isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        if isinstance(small, (cst.Assign, cst.AnnAssign)):
                            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                            for target in targets:
                                for bound in bound_names(target):
                                    out.setdefault(bound, []).append(small.value)
                else:
                    for bound in scope_bindings(statement):
                        out.setdefault(bound, []).append(None)  # bound under an `if`, a `for`...

    walk_tree(module, Walk())
    return out


def _iterable_graph_free(iterable: cst.BaseExpression, scope: cst.CSTNode, module: cst.Module) -> bool:
    """`range(n)`, a literal, or names bound (in the function, else the module) only to graph-free values."""
    if graph_free(iterable):
        return True
    names = [n for n in _names_in(iterable)]
    if not names:
        return False
    bindings = _bindings_outside(scope, None) if scope is not module else {}
    module_bindings = _bindings_outside(module, scope) if scope is not module else _bindings_outside(module, None)
    params = function_parameters(scope)
    writes: Optional[Dict[str, List[Optional[cst.BaseExpression]]]] = None  # `_module_writes`, when first needed
    for name in names:
        if name in params or name in ("self", "cls"):
            return False
        values = bindings.get(name) or module_bindings.get(name) or []
        if not values and name not in BUILTIN_NAMES:
            return False  # a variable of an enclosing function: whatever it holds
        if name not in bindings:
            if writes is None:
                writes = _module_writes(module)
            values = [*values, *writes.get(name, [])]
        if not all(v is not None and graph_free(v) for v in values):
            return False
    # Only names and calls of graph-free builtins over them (`zip(xs, ys)`, `enumerate(loader)`).
    return _only_builtin_calls(iterable)


def _reads_only(node: cst.CSTNode, names: Set[str]) -> bool:
    """Whether `node` reads one of `names` as a value, and every name it reads as a value (callees
    aside: `tqdm(loader)`) is one of them or a builtin."""
    found = _value_reads(node)
    return bool(found & names) and all(name in names or name in BUILTIN_NAMES for name in found)


def loop_inputs(statement: cst.CSTNode, scope: cst.CSTNode) -> List[str]:
    """The function's parameters that the innermost loop around `statement` uses only as code or a
    source of items: calls (`model(x)`), steps (`opt.zero_grad()`, `model.train()`) or iterates
    (`for x, y in tqdm(loader)`), never rebinding them; in order of first use. (`self` is not
    one: `loop_reasons` already lets calls through it pass.) In module-level code (`scope` the
    module), the module's names bound before the loop to what is not proven graph-free
    (`model = Net()`, `loader = DataLoader(ds)`), used so."""
    loop = _innermost_loop(scope, statement)
    if loop is None:
        return []
    params = function_parameters(scope)
    if isinstance(scope, cst.Module):
        params = {
            name for name, values in _bindings_outside(scope, loop).items()
            if not all(v is not None and graph_free(v) for v in values)
        }
    reads, bound_inside = _reads_and_binds(loop.body)
    order: Dict[str, int] = {}
    if isinstance(loop, cst.For):
        for name in _names_in(loop.iter):
            order.setdefault(name, -1)
        bound_inside |= set(bound_names(loop.target))
    for position, name in enumerate(reads):
        order.setdefault(name, position)
    value_reads = _value_reads(loop.body, _CODE_METHODS)
    return [
        name for name in sorted(order, key=order.__getitem__)
        if name in params and name not in bound_inside and name not in value_reads
    ]


# What a loop may do with a parameter and still only use it as code: the methods of an optimizer,
# a scheduler or a module that step it, zero its gradients or switch its mode.
_CODE_METHODS = STEP_METHODS | MODULE_LEAF_METHODS


def _value_reads(body: cst.CSTNode, code_methods: AbstractSet[str] = frozenset()) -> Set[str]:
    """Names `body` reads other than as a callee (`model(x)`) or the receiver of one of
    `code_methods` (`opt.step()`, `model.eval()`)."""
    found: Set[str] = set()

    class Walk(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            func = node.func
            if isinstance(func, cst.Name):
                pass  # called: code
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value in code_methods:
                pass  # stepped or switched
            else:
                walk_tree(func, self)
            for arg in node.args:
                walk_tree(arg.value, self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            walk_tree(node.value, self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            walk_tree(node.value, self)
            return False

    walk_tree(body, Walk())
    return found


def _names_in(node: cst.CSTNode) -> List[str]:
    names: List[str] = []

    class Walk(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            names.append(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            walk_tree(n.value, self)
            return False

    walk_tree(node, Walk())
    return [n for n in names if n not in BUILTINS_GRAPH_FREE]


def _only_builtin_calls(node: cst.BaseExpression) -> bool:
    ok = [True]

    class Walk(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            if not (isinstance(n.func, cst.Name) and n.func.value in BUILTINS_GRAPH_FREE):
                ok[0] = False

    walk_tree(node, Walk())
    return ok[0]


def _innermost_loop(scope: cst.CSTNode, target: cst.CSTNode) -> Optional[cst.CSTNode]:
    found: List[Optional[cst.CSTNode]] = [None]
    stack: List[cst.CSTNode] = []

    class Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is target:
                found[0] = stack[-1] if stack else None
                return False
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not scope:
                return False
            if isinstance(node, _LOOPS):
                stack.append(node)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if isinstance(original_node, _LOOPS) and stack and stack[-1] is original_node:
                stack.pop()

    walk_tree(scope, Find())
    return found[0]


def _root(node: cst.BaseExpression) -> Optional[str]:
    """The name an access path starts from (`feats` for `feats["a"].x`), or None."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _storage_root(node: cst.BaseExpression) -> Optional[str]:
    """The name whose storage an in-place update may change: through attributes, items and method
    calls, which may return views (`h.view(-1).copy_(v)` writes into `h`)."""
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


def stores_into_objects(body: cst.CSTNode) -> List[tuple]:
    """(root name, stored value) for every store into an object in `body`, in source order:
    `x.append(v)` and the other collecting methods, `x[k] = v`, `x.a = v`, `x[k] += v`; what an
    object registers or is set (`m.register_buffer("b", v)`, `m.register_forward_hook(fn)`,
    `setattr(m, "b", v)`); a function handed to any method (`x.on(lambda: h)`), which the object
    may keep and call later."""
    found: List[tuple] = []

    class Walk(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and (func.attr.value in COLLECTING_METHODS or _registers(func.attr.value)):
                name = _root(func.value)
                if name is not None:
                    found.extend((name, arg.value) for arg in node.args)
            elif isinstance(func, cst.Attribute):
                name = _root(func.value)
                if name is not None:
                    found.extend((name, arg.value) for arg in node.args if isinstance(strip_parens(arg.value), cst.Lambda))
            elif isinstance(func, cst.Name) and func.value == "setattr" and len(node.args) == 3:
                name = _root(node.args[0].value)
                if name is not None:
                    found.append((name, node.args[2].value))

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if isinstance(target.target, (cst.Attribute, cst.Subscript)):
                    name = _root(target.target)
                    if name is not None:
                        found.append((name, node.value))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, (cst.Attribute, cst.Subscript)):
                name = _root(node.target)
                if name is not None:
                    found.append((name, node.value))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    walk_tree(body, Walk())
    return found


def assignments(scope: cst.CSTNode) -> List[tuple]:
    """(name, value) for every binding of a name in `scope` outside nested functions and classes
    (value None for a binding form with no plain value: a loop target, an import)."""
    return [(name, value) for name, values in _bindings_outside(scope, None).items() for value in values]


def names_read(body: cst.CSTNode) -> Dict[str, cst.CSTNode]:
    """The names `body` reads (not attribute names or keywords), each with its first node, in
    source order."""
    return _reads_and_binds(body)[0]


def _reads_and_binds(body: cst.CSTNode):
    """Names the loop body reads (first node of each) and the names it binds."""
    reads: Dict[str, cst.CSTNode] = {}
    binds: Set[str] = set()

    class Walk(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            reads.setdefault(node.value, node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            walk_tree(node.value, self)
            return False  # `.attr` is no name read

        def visit_Arg(self, node: cst.Arg) -> bool:
            walk_tree(node.value, self)
            return False  # a keyword is no name read

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            binds.update(bound_names(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            # (`feats: torch.Tensor` with no value binds nothing: the name keeps the value an
            # earlier iteration bound; review, round 13.)
            if node.value is not None:
                binds.update(bound_names(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            binds.update(bound_names(node.target))

        def visit_For(self, node: cst.For) -> None:
            binds.update(bound_names(node.target))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            binds.update(bound_names(node.target))

        def visit_WithItem(self, node: cst.WithItem) -> None:
            if node.asname is not None:
                binds.update(bound_names(node.asname.name))

        def visit_CompFor(self, node: cst.CompFor) -> None:
            binds.update(bound_names(node.target))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            binds.add(node.name.value)
            return False

    walk_tree(body, Walk())
    # An augmented assignment reads the name it binds: `h += x` carries `h` from the last iteration.
    return reads, binds


def _bindings_outside(scope: cst.CSTNode, inner: Optional[cst.CSTNode]) -> Dict[str, List[Optional[cst.BaseExpression]]]:
    """name -> the values bound to it in `scope` outside `inner` (None: a binding form with no
    plain value, such as a loop target or an import of something that is not a module)."""
    out: Dict[str, List[Optional[cst.BaseExpression]]] = {}

    class Walk(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is inner:
                return False
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not scope:
                out.setdefault(node.name.value, []).append(node)  # code: `graph_free` follows its free reads
                return False
            return super().on_visit(node)

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    out.setdefault(target.target.value, []).append(node.value)
                elif isinstance(target.target, (cst.Attribute, cst.Subscript)):
                    # `feats["a"] = a * 2.0` puts a value into what `feats` holds (fuzz regression 007).
                    path = access_path(target.target)
                    if path is not None:
                        out.setdefault(path[0], []).append(node.value)
                else:
                    for name in bound_names(target.target):
                        out.setdefault(name, []).append(None)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            for name in bound_names(node.target):
                out.setdefault(name, []).append(node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            # `total += loss.item()` keeps `total` graph-free if its other bindings are.
            for name in bound_names(node.target):
                out.setdefault(name, []).append(node.value)

        def visit_For(self, node: cst.For) -> None:
            for name in bound_names(node.target):
                out.setdefault(name, []).append(None)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            for name in bound_names(node.target):
                out.setdefault(name, []).append(node.value)

        def visit_WithItem(self, node: cst.WithItem) -> None:
            if node.asname is not None:
                for name in bound_names(node.asname.name):
                    out.setdefault(name, []).append(None)

        def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
            name = node.asname.name if node.asname is not None else node.name
            # A module or a name imported from one: no graph of this file's making.
            out.setdefault(code_of(name).strip().split(".")[0], []).append(cst.Integer("0"))

    walk_tree(scope, Walk())
    return out




def _module_writes(module: cst.Module) -> Dict[str, List[Optional[cst.BaseExpression]]]:
    """name -> the values the file's functions put into the module-level name: stores into the
    object it holds (`feats["a"] = v`, `box.x = v`, `log.append(v)`) and bindings of it under a
    `global` declaration."""
    out: Dict[str, List[Optional[cst.BaseExpression]]] = {}
    functions: List[cst.FunctionDef] = []

    class Walk(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            functions.append(node)

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            functions.append(node)  # (a class body may declare `global` too; its stores are its scope's)

    walk_tree(module, Walk())
    for name, value in [*stores_into_objects(module), *_inplace_updates(module)]:
        out.setdefault(name, []).append(value)  # module-level code's own
    for function in functions:
        if isinstance(function, cst.FunctionDef):
            for name, value in [*stores_into_objects(function.body), *_inplace_updates(function.body)]:
                out.setdefault(name, []).append(value)
        declared = _declared(function)
        if declared:
            for name, values in _bindings_outside(function, None).items():
                if name in declared:
                    out.setdefault(name, []).extend(values)
    return out


def _inplace_updates(body: cst.CSTNode) -> List[tuple]:
    """(root name, the call) for every in-place update of a tensor in `body` (nested functions
    aside): `x.add_(v)`, `x[0].copy_(v)`, `torch.add(x, v, out=x)`: what it puts there is proven
    graph-free only as `graph_free` proves the call (`torch.zeros(3, out=x)`), or where it is given
    only Python values or detached tensors (`x.mul_(0.9)`, `x.add_(loss.detach())`), which build
    no graph in a tensor that holds none (`_python_value`)."""
    found: List[tuple] = []

    def update(name: str, call: cst.Call) -> None:
        harmless = all(not arg.star and _python_value(arg.value) for arg in call.args if arg.keyword is None or arg.keyword.value != "out")
        found.append((name, cst.Integer("0") if harmless else call))

    class Walk(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and has_inplace_suffix(func.attr.value):
                name = _storage_root(func.value)
                if name is not None:
                    update(name, node)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "out":
                    name = _storage_root(arg.value)
                    if name is not None:
                        update(name, node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    walk_tree(body, Walk())
    return found


def _declared(scope: cst.CSTNode) -> Set[str]:
    """The names `scope` declares `global` or `nonlocal` (not in nested functions or classes)."""
    names: Set[str] = set()

    class Walk(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not scope:
                return False
            if isinstance(node, (cst.Global, cst.Nonlocal)):
                names.update(n.name.value for n in node.names)
            return True

    walk_tree(scope, Walk())
    return names


def function_parameters(scope: cst.CSTNode) -> Set[str]:
    """The names a function's parameters bind (none for a module)."""
    if not isinstance(scope, cst.FunctionDef):
        return set()
    params = scope.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    names.update(p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param))
    return names


def _self_attributes_read(body: cst.CSTNode) -> bool:
    """Whether the loop reads an attribute of `self` as a value (`self.h`), not only calls through
    one (`self.model(x)`, `self.opt.step()`)."""
    found = [False]

    def rooted_at_self(node: cst.BaseExpression) -> bool:
        while isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        return isinstance(node, cst.Name) and node.value in ("self", "cls")

    class Walk(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> Optional[bool]:
            if rooted_at_self(node.func):
                for arg in node.args:
                    walk_tree(arg, self)
                return False
            return True

        def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
            if rooted_at_self(node):
                found[0] = True
                return False
            return True

    walk_tree(body, Walk())
    return found[0]


def free_reads(node: cst.CSTNode) -> List[str]:
    """The names a `lambda`, `def` or `class` reads from around it, in order of first read: what its
    code (nested functions, lambdas and comprehensions included) reads and does not bind itself,
    its parameters' defaults, its decorators and bases (evaluated where it is defined). A name
    declared `global` or `nonlocal` is read from around it too."""
    found: Dict[str, None] = {}

    def outer(expression: Optional[cst.CSTNode]) -> None:
        if expression is not None:
            for name in _scoped_free(expression, set()):
                found.setdefault(name, None)

    if isinstance(node, (cst.Lambda, cst.FunctionDef)):
        params = node.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        for param in every:
            outer(param.default)
        if isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                outer(decorator.decorator)
        for name in _scoped_free(node, set()):
            found.setdefault(name, None)
    elif isinstance(node, cst.ClassDef):
        for decorator in node.decorators:
            outer(decorator.decorator)
        for base in (*node.bases, *node.keywords):
            outer(base.value)
        for name in _scoped_free(node.body, set()):
            found.setdefault(name, None)
    else:
        outer(node)
    return list(found)


def _scoped_free(node: cst.CSTNode, bound: Set[str]) -> List[str]:
    """The names `node` reads that no scope within it (nor `bound`) binds; a function, lambda or
    comprehension at `node` is its own scope (its parameters or targets, and what it binds; a
    class body's bindings are not seen by its methods)."""
    if isinstance(node, cst.Lambda):
        params = node.params
        own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        own |= {p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)}
        return [n for n in _scoped_free(node.body, set()) if n not in own | bound]
    if isinstance(node, cst.FunctionDef):
        own = function_parameters(node) | (_nested_names(node.body) - _declared(node))
        return [n for n in _scoped_free(node.body, set()) if n not in own | bound]
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
        targets: Set[str] = set()
        comp: Optional[cst.CompFor] = node.for_in
        while comp is not None:
            targets |= set(bound_names(comp.target))
            comp = comp.inner_for_in
        inner: List[str] = []
        for child in children(node):
            inner.extend(_scoped_free(child, set()))
        return [n for n in inner if n not in targets | bound]
    if isinstance(node, cst.ClassDef):
        here, nested = _reads_split(node.body)
        own = _nested_names(node.body)
        return [n for n in here if n not in own | bound] + [n for n in nested if n not in bound]
    here, nested = _reads_split(node)
    return [n for n in here + nested if n not in bound]


def _reads_split(node: cst.CSTNode) -> Tuple[List[str], List[str]]:
    """(names `node` reads in its own scope, free names of the scopes nested in it)."""
    here: List[str] = []
    nested: List[str] = []

    class Walk(cst.CSTVisitor):
        def on_visit(self, inner: cst.CSTNode) -> bool:
            if inner is not node and isinstance(inner, (cst.Lambda, cst.FunctionDef)):
                params = inner.params
                for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                    if param.default is not None:
                        walk_tree(param.default, self)
                if isinstance(inner, cst.FunctionDef):
                    for decorator in inner.decorators:
                        walk_tree(decorator.decorator, self)
                nested.extend(_scoped_free(inner, set()))
                return False
            if inner is not node and isinstance(inner, cst.ClassDef):
                for base in (*inner.bases, *inner.keywords):
                    walk_tree(base.value, self)
                for decorator in inner.decorators:
                    walk_tree(decorator.decorator, self)
                nested.extend(_scoped_free(inner, set()))
                return False
            if inner is not node and isinstance(inner, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                nested.extend(_scoped_free(inner, set()))
                return False
            if isinstance(inner, cst.Name):
                here.append(inner.value)
            if isinstance(inner, cst.Attribute):
                walk_tree(inner.value, self)
                return False
            if isinstance(inner, cst.Arg):
                walk_tree(inner.value, self)
                return False
            return True

    walk_tree(node, Walk())
    return here, nested


def _nested_names(body: cst.CSTNode) -> Set[str]:
    """Names a function body binds that `binding_counts` may not count: `def`/`class` names,
    imports, `with ... as`, `except ... as`, `for` targets."""
    names: Set[str] = set()

    class Walk(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                names.add(node.name.value)
                return False
            if isinstance(node, cst.Lambda):
                return False
            if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                return False
            if isinstance(node, cst.ImportAlias):
                alias = node.asname.name if node.asname is not None else node.name
                names.add(code_of(alias).strip().split(".")[0])
            if isinstance(node, (cst.For,)):
                names.update(bound_names(node.target))
            if isinstance(node, cst.AsName):
                names.update(bound_names(node.name))
            if isinstance(node, cst.AssignTarget):
                names.update(bound_names(node.target))
            if isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
                names.update(bound_names(node.target))
            return True

    walk_tree(body, Walk())
    return names


# Methods that keep what they are given in their object: `register_buffer`, `register_forward_hook`,
# `register_hook`, `add_module`, `add_param_group`, `__setattr__`.
# And `apply(fn)`, which hands `fn` every submodule: what `fn` stores into them is stored into it (review, round 6).
_REGISTERING = frozenset({"add_module", "add_param_group", "__setattr__", "__setitem__", "apply", "_apply"})


def _registers(method: str) -> bool:
    return method.startswith("register_") or method in _REGISTERING


def nested_writes(scope: cst.CSTNode) -> List[tuple]:
    """(name, value) for what the functions and lambdas nested in `scope` (at any depth) put into
    the names they read from around them: bindings under `nonlocal`, stores into what a name
    holds (`outs.append(h)`, `box.h = h`) and in-place updates (`cur.add_(h)`, value None)."""
    found: List[tuple] = []

    class Walk(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is not scope and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                # (A class body may declare `nonlocal` too, and runs where it is defined.)
                if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                    own = function_parameters(node) | (_nested_names(node.body) - _declared(node))
                    declared = _declared(node)
                    for name, values in _bindings_outside(node, None).items():
                        if name in declared:
                            found.extend((name, value) for value in values)
                    body: cst.CSTNode = node.body
                else:
                    params = node.params
                    own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
                    body = node.body
                for root, value in [*stores_into_objects(body), *_inplace_updates(body)]:
                    if root not in own:
                        found.append((root, value))
            return True

    walk_tree(scope, Walk())
    return found


def forward_hook_reasons(module: cst.Module, line: Callable[..., int]) -> List[Reason]:
    """A forward hook registered in the file (`m.register_forward_hook(fn)`, the global
    `register_module_forward_hook(fn)`) runs at each module call of the loop, and what it returns
    replaces the module's output: where it reads (or is) a value not proven graph-free where it is
    registered (`lambda m, i, o: o + h`, `h` built before the loop), the next iteration may
    backpropagate through that graph again. A registration that is no call of the name
    (`getattr(m, "register_forward_hook")`, `reg = m.register_forward_hook`) is not followed."""
    from gradfix.analysis.exprs import name_references, nodes_within
    from gradfix.analysis.vocabulary import names_forward_hook

    refs = name_references(module, names_forward_hook, strings=True)
    if not refs:
        return []
    calls = {id(call.func): call for call in nodes_within(module, cst.Call)}
    resolvers: Dict[int, Callable[[str], bool]] = {}
    for ref in refs:
        call = calls.get(id(ref))
        if call is None:
            return [Reason(
                f"`{code_of(ref).strip()}` (line {line(ref)}) registers a forward hook gradfix does not follow: it runs at "
                f"each module call in the loop and may hand it a graph built before it, which the one backward frees",
                LOOP,
            )]
        for arg in call.args:
            if arg.star or not graph_free(arg.value, _names_where_bound(arg.value, module, resolvers)):
                return [Reason(
                    f"the forward hook registered at line {line(call)} (`{code_of(arg.value).strip()}`) is not proven to "
                    f"read only graph-free values: it runs at each module call in the loop and may hand it a graph "
                    f"built before it, which the one backward frees",
                    LOOP,
                )]
    return []


def patch_reasons(module: cst.Module, line: Callable[..., int]) -> List[Reason]:
    """A value the file stores into torch, `builtins` or a module imported from outside
    `TRUSTED_MODULES` (`nn.Linear.forward = lambda self, x: x + h`, `F.linear = f`,
    `setattr(nn.Linear, "forward", f)`, `builtins.abs = f`, `__builtins__["abs"] = f`) is code
    the loop's module calls and builtins may run: where it is not proven graph-free where it is
    stored (it reads `h`, built before the loop), the next iteration may backpropagate through
    that graph again (review, round 6)."""
    patched = {"__builtins__"}
    everything = all_nodes(module)
    for node in everything:
        if isinstance(node, cst.Import):
            for alias in node.names:
                root = code_of(alias.name).strip().split(".")[0]
                if root in ("torch", "builtins") or root not in TRUSTED_MODULES:
                    local = alias.asname.name if alias.asname is not None else alias.name
                    patched.add(code_of(local).strip().split(".")[0])
        elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            root = code_of(node.module).strip().split(".")[0] if node.module is not None else ""
            if node.relative or root in ("torch", "builtins") or root not in TRUSTED_MODULES:
                for alias in node.names:
                    local = alias.asname.name if alias.asname is not None else alias.name
                    patched.add(code_of(local).strip())
    resolvers: Dict[int, Callable[[str], bool]] = {}
    # Stores proper: an assignment to an attribute or item, `setattr` (not a torch function given
    # a function, `LambdaLR(opt, f)`, which `stores_into_objects` counts as kept by its receiver).
    stores: List[Tuple[str, cst.BaseExpression]] = []
    for node in everything:
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target] if isinstance(node, cst.AugAssign) else []
        for target in targets:
            root = _root(target) if isinstance(target, (cst.Attribute, cst.Subscript)) else None
            if root is not None:
                stores.append((root, node.value))
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "setattr" and len(node.args) == 3:
            root = _root(node.args[0].value)
            if root is not None:
                stores.append((root, node.args[2].value))
    for root, value in stores:
        if root in patched and not graph_free(value, _names_where_bound(value, module, resolvers)):
            return [Reason(
                f"`{code_of(value).strip()}` (line {line(value)}) is stored into `{root}`, code the loop may run "
                f"(a torch class or function, a builtin), and is not proven to read only graph-free values: "
                f"it may hand the loop a graph built before it, which the one backward frees",
                LOOP,
            )]
    return []

