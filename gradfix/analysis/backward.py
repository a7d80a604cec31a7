"""`backward` calls in a straight-line block: what they backpropagate, and how.

Shared by the rules that look at backward passes (GF001, GF003, GF004, GF005). The spellings:
`loss.backward(...)`, `scaler.scale(loss).backward(...)`, Lightning's
`self.manual_backward(loss, ...)`, `torch.autograd.backward(loss, ...)`, and Accelerate's
`accelerator.backward(loss, ...)` where the file proves the receiver an `accelerate.Accelerator`
(`accelerator_receivers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, AbstractSet, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple, Union

import libcst as cst

if TYPE_CHECKING:
    from gradfix.analysis.facts import FileFacts

from gradfix.analysis.introspection import ATTRIBUTE_GETTERS, names_by_string
from gradfix.analysis.loops import function_parameters, graph_free, loop_reasons
from gradfix.analysis.vocabulary import BACKPROP_NAMES, FRESH_FUNCTIONS, HARMLESS_DECORATORS, MODULE_LEAF_METHODS, MUTATING_METHODS, STEP_METHODS, VALUE_FUNCTIONS, VALUE_METHODS, names_gradient_hook_table
from gradfix.reasons import BETWEEN, CUSTOM_FUNCTION, HOOK, INLINE_LOSS, LATER_BACKWARD, SPELLING, Reason
from gradfix.analysis.between import names_bound_to_gradients, scan_between, stores_into
from gradfix.analysis.statements import may_catch, walk_statements
from gradfix.analysis.exprs import _DropFunctionBodies, access_path, all_nodes, binding_counts, code_of, is_literal, last_name, nodes_within, read_paths, same_expr, scope_bindings, strip_parens, string_value
from gradfix.analysis.walk import children, nodes_of_type, walk_tree


@dataclass
class BackwardCall:
    """One `loss.backward(...)`, `scaler.scale(loss).backward(...)`, `self.manual_backward(loss, ...)`
    or `torch.autograd.backward(loss, ...)` statement."""

    index: int  # position of the statement in its block
    statement: cst.SimpleStatementLine
    call: cst.Call  # the `.backward(...)` call itself
    receiver: cst.BaseExpression  # the loss (inside `scaler.scale(...)` when scaled); a node of the tree
    scaler: Optional[cst.BaseExpression]
    keywords: Dict[str, cst.BaseExpression] = field(default_factory=dict)
    # Positional arguments or `**kwargs`: a `gradient` we cannot see through.
    opaque_args: bool = False
    # Accelerate's `accelerator.backward(loss, ...)`: under DeepSpeed each call also steps the
    # optimizer, so calls are never merged safely (`accelerate_reasons`).
    accelerator: bool = False

    @property
    def retain_keyword(self) -> Optional[str]:
        """The keyword that keeps the graph, as written: `retain_graph`, or `retain_variables`
        (OLD_RETAIN, its pre-0.4 name) passed alone with the literal `True`; None for neither.
        Both together, or the old name with any other value, is a call gradfix does not read
        (every supported torch raises TypeError on it; what was meant is not certain): None."""
        if OLD_RETAIN in self.keywords:
            return OLD_RETAIN if "retain_graph" not in self.keywords and _is_true(self.keywords[OLD_RETAIN]) else None
        return "retain_graph" if "retain_graph" in self.keywords else None

    @property
    def old_spelling(self) -> bool:
        """`retain_variables=True`, read as the `retain_graph=True` it meant (`old_keyword_reasons`)."""
        return self.retain_keyword == OLD_RETAIN

    @property
    def retains_graph(self) -> bool:
        keyword = self.retain_keyword
        return keyword is not None and _is_true(self.keywords[keyword])

    @property
    def plain(self) -> bool:
        """First order, whole-graph, unit gradient (docs/design.md §1, E7). `retain_variables`
        counts as the `retain_graph` it meant only where `retain_keyword` reads it."""
        allowed = {"retain_graph"} if not self.old_spelling else {OLD_RETAIN}
        return not self.opaque_args and not set(self.keywords) - allowed

    @property
    def loss_is_argument(self) -> bool:
        """`self.manual_backward(loss, ...)` or `torch.autograd.backward(loss, ...)`, not `loss.backward(...)`."""
        func = self.call.func
        return self.accelerator or isinstance(func, cst.Attribute) and (func.attr.value != "backward" or _is_autograd(func.value))

    @property
    def loss_name(self) -> Optional[str]:
        loss = strip_parens(self.receiver)
        return loss.value if isinstance(loss, cst.Name) else None


# `retain_graph`'s name before PyTorch 0.4 (`loss.backward(retain_variables=True)`). Every torch
# gradfix supports (>= 2.1) raises TypeError on it; gradfix reads it as the `retain_graph` it
# meant, and never offers a fix of such a call as safe (`old_keyword_reasons`).
OLD_RETAIN = "retain_variables"


def _is_true(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "True"


def old_keyword_reasons(calls: Sequence[BackwardCall]) -> List[Reason]:
    """Why a fix that rewrites backward calls one of which passes `retain_variables=True` is not
    exact (empty: none does). The original raises TypeError on every supported torch (the keyword
    was renamed `retain_graph` in 0.4) where the rewrite, written in the modern spelling
    (`gradfix.fixes.build.modern_spelling`), runs: a change of behaviour the user must confirm. Shared by the rules
    that rewrite backward calls (GF001, GF003, GF004, GF005)."""
    if not any(c.old_spelling for c in calls):
        return []
    return [
        Reason(
            f"`{OLD_RETAIN}` was removed from PyTorch (0.4 renamed it `retain_graph`): the original raises "
            f"TypeError on torch >= 2.1 and the rewrite runs; check that this is the intent",
            SPELLING,
        )
    ]


def old_keyword_note(calls: Sequence[BackwardCall]) -> str:
    """What a finding's message adds where a call passes `retain_variables=True` (empty: none does)."""
    if not any(c.old_spelling for c in calls):
        return ""
    return f" (`{OLD_RETAIN}=True` read as `retain_graph=True`: PyTorch 0.4 renamed it)"


def backward_call(block: Sequence[cst.BaseStatement], index: int, accelerators: AbstractSet[str] = frozenset()) -> Optional[BackwardCall]:
    """The backward call that statement `index` of the block is, or None. `accelerators`: the
    receivers the file proves hold an `accelerate.Accelerator` (`FileFacts.accelerators`)."""
    statement = block[index]
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None
    call = small.value
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    args = list(call.args)
    accelerator = func.attr.value == "backward" and bool(accelerators) and code_of(func.value).strip() in accelerators
    if func.attr.value == "manual_backward" or (func.attr.value == "backward" and (_is_autograd(func.value) or accelerator)):
        # Lightning's `self.manual_backward(loss, ...)` and `torch.autograd.backward(loss, ...)`:
        # the loss is the first argument (a list or tuple of tensors is one backward already).
        first = args[0] if args else None
        if first is None or first.keyword is not None or first.star or isinstance(strip_parens(first.value), (cst.List, cst.Tuple)):
            return None
        receiver = first.value
        args = args[1:]
    elif func.attr.value == "backward":
        receiver = func.value
    else:
        return None
    keywords: Dict[str, cst.BaseExpression] = {}
    opaque = False
    for arg in args:
        if arg.keyword is None or arg.star:
            opaque = True  # a `gradient` (or `grad_tensors`) or `**kwargs`
        else:
            keywords[arg.keyword.value] = arg.value
    scaler = None
    loss = strip_parens(receiver)  # for type checks only: children keep their identity
    if (
        isinstance(loss, cst.Call)
        and isinstance(loss.func, cst.Attribute)
        and loss.func.attr.value == "scale"
        and len(loss.args) == 1
        and loss.args[0].keyword is None
        and not loss.args[0].star
    ):
        scaler = loss.func.value
        receiver = loss.args[0].value
    return BackwardCall(index, statement, call, receiver, scaler, keywords, opaque, accelerator)


def _is_autograd(node: cst.BaseExpression) -> bool:
    """`torch.autograd` or `autograd`, as written."""
    text = code_of(node).strip()
    return text in ("torch.autograd", "autograd")


def backward_calls(block: Sequence[cst.BaseStatement], accelerators: AbstractSet[str] = frozenset()) -> List[BackwardCall]:
    return [c for c in (backward_call(block, i, accelerators) for i in range(len(block))) if c is not None]


# Where `accelerate.Accelerator` is imported from, and its qualified names.
_ACCELERATE_MODULES = ("accelerate", "accelerate.accelerator")
ACCELERATOR_CLASSES = frozenset(f"{module}.Accelerator" for module in _ACCELERATE_MODULES)


def accelerator_receivers(module: cst.Module, counts: Mapping[str, int]) -> FrozenSet[str]:
    """The names that can only hold an `accelerate.Accelerator`: every binding of the name in the
    file (`counts`: `exprs.binding_counts`) is `name = Accelerator(...)`, with `Accelerator` imported
    at the top level from `accelerate` and bound once (or `accelerate.Accelerator(...)` under
    `import accelerate`), in a file that binds no name by a string (`introspection.names_by_string`).
    A parameter or any other binding proves nothing; neither does an attribute (`self.accelerator` may be set by a base class of another library)."""
    constructors = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative and not isinstance(small.names, cst.ImportStar):
                if code_of(small.module).strip() in _ACCELERATE_MODULES:
                    for alias in small.names:
                        if code_of(alias.name).strip() == "Accelerator":
                            local = alias.asname.name.value if alias.asname is not None else "Accelerator"  # type: ignore[attr-defined]
                            if counts.get(local) == 1:
                                constructors.add(local)
            elif isinstance(small, cst.Import):
                for alias in small.names:
                    if code_of(alias.name).strip() == "accelerate":
                        local = alias.asname.name.value if alias.asname is not None else "accelerate"  # type: ignore[attr-defined]
                        if counts.get(local) == 1:
                            constructors.add(f"{local}.Accelerator")
    if not constructors or names_by_string(module):  # `globals()["accelerator"] = ...`
        return frozenset()
    made: Dict[str, int] = {}  # name -> its `= Accelerator(...)` bindings
    # Names whose attributes the file sets (`accelerator.backward = f`, `Accelerator.backward = f`,
    # `setattr(accelerator, ...)`): their `backward` may not be accelerate's.
    patched = set()

    def base(node: cst.BaseExpression) -> Optional[str]:
        while isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        return node.value if isinstance(node, cst.Name) else None

    class Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            value = node.value
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                if isinstance(value, cst.Call) and code_of(value.func).strip() in constructors:
                    name = node.targets[0].target.value
                    made[name] = made.get(name, 0) + 1

        def _store(self, target: cst.BaseExpression) -> None:
            if isinstance(target, (cst.Attribute, cst.Subscript)):
                patched.add(base(target))
            elif isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    self._store(element.value)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._store(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._store(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._store(node.target)

        def visit_Call(self, node: cst.Call) -> None:
            if code_of(node.func).strip() in ("setattr", "object.__setattr__", "delattr") and node.args:
                patched.add(base(node.args[0].value))

    walk_tree(module, Collect())
    if patched & {c.split(".")[0] for c in constructors}:
        return frozenset()  # the class itself (or the `accelerate` module) patched
    return frozenset(name for name, count in made.items() if counts.get(name) == count and name not in patched)


def accelerate_reasons(calls: Sequence[BackwardCall]) -> List[Reason]:
    """Why a fix of `accelerator.backward(...)` calls is never proven exact. Merging two: under
    DeepSpeed each call also steps the optimizer (at a gradient-accumulation boundary), which
    backend runs being chosen when the script is launched, not in the file. Any fix: the receiver
    is an `Accelerator` by its bindings in the file only (`accelerator_receivers`); that nothing
    patches its `backward` (through an alias, `type(...)`, `mock.patch`) or binds the name where
    the call reads it (a builtin, another module) is not proven."""
    accelerated = [c for c in calls if c.accelerator]
    if not accelerated:
        return []
    shown = code_of(accelerated[0].call.func).strip()
    if len(calls) > 1:
        return [
            Reason(
                f"`{shown}(...)` steps the optimizer after each call under DeepSpeed (a launch setting gradfix "
                "cannot see): one call instead of two would step once",
                SPELLING,
            )
        ]
    return [
        Reason(
            f"`{shown}` is taken to be accelerate's `Accelerator.backward` from its bindings in the file; that "
            "nothing patches it or binds the name elsewhere is not proven",
            SPELLING,
        )
    ]


def single_assign(statement: cst.BaseStatement) -> Optional[cst.Assign]:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            return small
    return None


def definition(block: Sequence[cst.BaseStatement], index: int, name: Union[str, cst.BaseExpression]) -> Optional[Tuple[int, cst.Assign]]:
    """The nearest `name = ...` above `index` in the block, if nothing else binds `name` between.

    `name` may be a node that holds a value (`held`): `self.vq_loss` or `losses["adv"]`, matched as
    written; then nothing between may store into it, into another item of the same object, or
    into the object (`self = ...`, `losses = {}`)."""
    if isinstance(name, str):
        name = cst.Name(name)
    path = access_path(name)
    if path is None:
        return None
    for j in range(index - 1, -1, -1):
        assign = single_assign(block[j])
        if assign is not None and same_expr(assign.targets[0].target, name):
            return j, assign
        if stores_into(block[j], [path]) is not None:
            return None
    return None


def held(node: cst.BaseExpression) -> bool:
    """A value held by a name, an attribute of a name (`self.loss_G`) or an item of a name under a
    literal key (`losses["adv"]`, `losses[0]`): what `definition` can find the binding of."""
    node = strip_parens(node)
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Attribute):
        return isinstance(node.value, cst.Name)
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1:
        index = node.slice[0].slice
        return isinstance(index, cst.Index) and isinstance(index.value, (cst.SimpleString, cst.Integer))
    return False


@dataclass
class BackwardRun:
    """Consecutive backward calls that backpropagate one objective, their sum (docs/design.md §1, E3, E7).

    Every call but the last keeps the graph, all are plain (no `gradient=`,
    `inputs=`, `create_graph=`), all use the same scaler or none, and nothing
    between them steps, zeroes, reads or clips gradients or rebinds a loss
    backpropagated later. Gradients accumulate, so the run leaves the same
    `.grad` as one backward of the sum of its losses.
    """

    calls: List[BackwardCall]
    unknown: List[str]  # what stands between that gradfix cannot vouch for, rendered ("`f()`", "`with lock:`")
    updates: List[str]  # statements between that may update a saved tensor in place


def backward_runs(
    block: Sequence[cst.BaseStatement],
    harmless: Optional[Callable[[cst.BaseExpression], bool]] = None,
    accelerators: AbstractSet[str] = frozenset(),
) -> List[BackwardRun]:
    """The runs of two or more backward calls in the block, in order, none overlapping."""
    calls = backward_calls(block, accelerators)
    runs: List[BackwardRun] = []
    i = 0
    while i < len(calls):
        run = _run_from(block, calls, i, harmless)
        if len(run.calls) >= 2:
            runs.append(run)
            i += len(run.calls)
        else:
            i += 1
    return runs


def _run_from(block, calls: List[BackwardCall], start: int, harmless) -> BackwardRun:
    """The longest run of mergeable calls from `start`."""
    first = calls[start]
    run = BackwardRun([first], [], [])
    if not first.plain or not first.retains_graph:
        return run
    for candidate in calls[start + 1 :]:
        previous = run.calls[-1]
        if not previous.retains_graph or not candidate.plain:
            break
        if (previous.scaler is None) != (candidate.scaler is None):
            break
        if previous.scaler is not None and not same_expr(previous.scaler, candidate.scaler):  # type: ignore[arg-type]
            break
        if _spelling(candidate) != _spelling(first):
            # The merged call keeps one spelling: `self.manual_backward(l1, ...)` then
            # `l2.backward()` would lose (or gain) the precision plugin's scaling and the
            # backward hooks for one loss (review, stop 24).
            break
        # The losses already in the run are backpropagated later than
        # before: nothing between may change them or the gradients.
        watched = [p for call in run.calls for p in read_paths(call.receiver)]
        if previous.scaler is not None:
            watched += read_paths(previous.scaler)
        between = list(block[previous.index + 1 : candidate.index])
        if candidate.loss_name is None:
            # A loss written inline in the call is evaluated where it stands, but now before the
            # earlier losses' backward: it is between the passes too (`F.relu(h, inplace=True)`
            # on a tensor their graph saved, a read of `.grad`; review, stop 24).
            between.append(cst.Expr(candidate.receiver))
        verdict = scan_between(between, watched, harmless)
        if verdict.barrier is not None or _reads_gradient_alias(between, harmless):
            break
        run.unknown.extend(verdict.unknown)
        run.updates.extend(_inplace_updates(between))
        run.calls.append(candidate)
    return run


def _reads_gradient_alias(statements: Sequence[cst.CSTNode], policy) -> bool:
    """Whether the statements read a name bound (anywhere in its scope) to a value that reads a
    `.grad`: `g = y.grad` before the first backward, read between the passes, sees what that
    backward added into it, which a merge defers (review, stop 24). Without the file's policy
    (its classifier resolves names), any name may be one: then only the syntax is checked."""
    classifier = getattr(policy, "classifier", None)
    return classifier is not None and any(names_bound_to_gradients(statement, classifier) for statement in statements)


def _spelling(call: BackwardCall) -> str:
    """How the call backpropagates: `backward` for `loss.backward(...)` (scaled or not) and
    `torch.autograd.backward(loss, ...)` (which `Tensor.backward` calls), else its callee as
    written (`self.manual_backward`, `accelerator.backward`)."""
    func = call.call.func
    if not call.loss_is_argument or (isinstance(func, cst.Attribute) and func.attr.value == "backward" and _is_autograd(func.value) and not call.accelerator):
        return "backward"
    return code_of(func).strip()


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
        walk_tree(statement, Collect())
    return found


def computed_method_calls(module: cst.CSTNode) -> List[cst.CSTNode]:
    """Calls that may call a method whose name the code computes, in the file's order (review, round
    5: `getattr(h, "register_" + "hook")(fn)`): `getattr(x, name)` called at once or bound to a name,
    `methodcaller(name)`, `attrgetter(name)` where `name` is not a string literal and may spell
    `register_...` (an f-string or a sum whose first part is a literal only where that literal is a
    prefix or an extension of `register_`; anything else: a name, a call). Review, round 6: also
    `x.__getattribute__(name)`, `object.__getattribute__(x, name)`, `inspect.getattr_static(x, name)`,
    a class's namespace read by such a key (`torch.Tensor.__dict__[name]`, `vars(T)[name]`), a
    getter handed on or renamed (`ga = getattr`), and any string the code builds that may spell
    `register_...` wherever it goes (`"register_" + "hook"`)."""
    found: List[cst.CSTNode] = []
    parents: Dict[int, cst.CSTNode] = {}
    for node in _walk(module):
        for child in children(node):
            parents[id(child)] = node
    builtins_names = _builtins_module_names(module)
    for node in _walk(module):
        if _runs_text_elsewhere(node, parents, builtins_names):
            found.append(node)
            continue
        if _namespace(node) and not _namespace_read_by_name(node, parents):
            found.append(node)  # `T.__dict__.get(k)`, `dict(vars(T))[k]`, `inspect.getmembers(T)`: methods by any key
            continue
        if isinstance(node, cst.Subscript):
            # `T.__dict__[name]`, `vars(T)[name]`: a class's methods by a computed key.
            keys = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
            if _namespace(node.value) and any(_may_spell_register(k) for k in keys):
                found.append(node)
            continue
        if isinstance(node, (cst.Name, cst.Attribute)) and last_name(node) in _GETTERS:
            parent = parents.get(id(node))
            # Review, round 8: a getter taken from (`getattr.__call__(w, name)`) is one handed on; an
            # import under another name (`from operator import attrgetter as pick`) calls it by that
            # name, which the calls below do not read.
            named = (
                (isinstance(parent, cst.Attribute) and parent.attr is node)
                or (isinstance(parent, cst.ImportAlias) and parent.asname is None)
                or isinstance(parent, (cst.FunctionDef, cst.Param))
                or (isinstance(parent, cst.Arg) and parent.keyword is node)
            )
            if not (isinstance(parent, cst.Call) and parent.func is node) and not named:
                found.append(node)  # `ga = getattr`, `map(getattr, ...)`: called elsewhere, by another name
            continue
        if isinstance(node, cst.Name) and node.value in _CODE_RUNNERS and _runs_code_text(node, parents):
            # Review, round 8: `eval("w.regis" + "ter_hook")(fn)`, `exec(src)`: code in a string, which
            # may name any method however the string is built.
            found.append(node)
            continue
        if isinstance(node, (cst.BinaryOperation, cst.FormattedString)) and not isinstance(parents.get(id(node)), cst.BinaryOperation):
            if _literal_prefix(node) is not None and _may_spell_register(node):
                found.append(node)
            continue
        if not isinstance(node, cst.Call):
            continue
        call = node
        name = last_name(call.func)
        if name not in _GETTERS:
            continue
        positional = [a for a in call.args if a.keyword is None]
        position = 1 if name in ("getattr", "getattr_static") or (name == "__getattribute__" and len(positional) == 2) else 0
        if any(a.star for a in call.args):
            found.append(call)
            continue
        if len(positional) <= position:
            continue
        if not _may_spell_register(positional[position].value):
            continue
        parent = parents.get(id(call))
        # Review, round 8: what a getter returns may be called wherever it goes (`partial(getattr(w,
        # name), fn)()`, `[getattr(w, name)]`, a lambda's result), not only at once or by a name it
        # is assigned to: it counts unless it is only displayed, compared or dropped.
        if name in ("methodcaller", "attrgetter") or not _value_only_shown(call, parents):
            found.append(call)
    # A string built inside a getter's call is shown as that call.
    calls = [n for n in found if isinstance(n, cst.Call)]
    return [n for n in found if isinstance(n, (cst.Call, cst.Subscript, cst.Name, cst.Attribute)) or not any(_within(n, c) for c in calls)]


def _namespace(node: cst.CSTNode) -> bool:
    """An object's or a class's namespace, whose values are its methods: `T.__dict__`, `vars(T)`,
    `inspect.getmembers(T)` (and `getmembers_static`)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "__dict__"
    return isinstance(node, cst.Call) and last_name(node.func) in ("vars", "getmembers", "getmembers_static")


# Where a namespace may go without its methods being called by a computed key: a display of it
# (`print(vars(args))`, `json.dump(vars(args), f)`, a log), its keys (`sorted(vars(x))`, `.keys()`),
# a store into it (`self.__dict__.update(kw)`).
_NAMESPACE_DISPLAYS = frozenset(
    {"print", "str", "repr", "len", "format", "sorted", "list", "set", "tuple", "dumps", "dump", "pprint", "pformat",
     "log", "info", "debug", "warning", "error"}
)


def _namespace_read_by_name(node: cst.CSTNode, parents: Dict[int, cst.CSTNode]) -> bool:
    """A namespace (`_namespace`) read only where gradfix sees the key (review, round 7): a subscript
    (its key checked by `computed_method_calls`), `.get(key)`/`.pop(key)`/`.setdefault(key, ...)`
    with a key that cannot spell `register_...`, `.keys()`, a store (`.update(...)`, `.clear()`,
    an assignment target), a display of it (`_NAMESPACE_DISPLAYS`, an f-string). Anything else
    (`.items()`, `.values()`, `.copy()`, `dict(vars(T))`, a name bound to it, handed to a function)
    may call a method by a key gradfix does not see."""
    parent = parents.get(id(node))
    if isinstance(parent, cst.Subscript) and parent.value is node:
        return True
    if isinstance(parent, cst.AssignTarget) or isinstance(parent, cst.FormattedStringExpression):
        return True
    if isinstance(parent, cst.Attribute) and parent.value is node:
        method = parent.attr.value
        if method in ("keys", "update", "clear"):
            return True
        call = parents.get(id(parent))
        if method in ("get", "pop", "setdefault") and isinstance(call, cst.Call) and call.func is parent and call.args:
            return not call.args[0].star and not _may_spell_register(call.args[0].value)
        return False
    if isinstance(parent, cst.Arg) and not parent.star:
        call = parents.get(id(parent))
        return isinstance(call, cst.Call) and last_name(call.func) in _NAMESPACE_DISPLAYS
    return False


# Calls that read an attribute by a name given as a value (`computed_method_calls`).
_GETTERS = frozenset({"getattr", "methodcaller", "attrgetter", "__getattribute__", "getattr_static"})
# Builtins that run code given as text (`computed_method_calls`).
_CODE_RUNNERS = frozenset({"eval", "exec"})


# Review, round 9: ways to run code given as text other than `eval`/`exec` by those names. The
# builtins reached as a module (`getattr(builtins, "exec")`, `builtins.__dict__["eval"]`, `B.eval`
# for `import builtins as B`, `__builtins__`, `from builtins import exec as run`), `compile` (whose
# code object `exec` or `types.FunctionType` runs), the name of one as a string a getter is given,
# and the standard library's runners of code text or files (`runpy.run_path`, `code`,
# `cProfile.run("...")`, `pdb.run`, `timeit.timeit("...")`).
_TEXT_RUNNERS = _CODE_RUNNERS | {"compile"}
_TEXT_RUNNING_MODULES = frozenset({"runpy", "code", "codeop", "cProfile", "profile", "pdb", "bdb"})
_TIMEIT_RUNNERS = frozenset({"timeit", "repeat", "Timer"})


def _builtins_module_names(module: cst.CSTNode) -> FrozenSet[str]:
    """The names the file binds to the `builtins` module (`import builtins`, `import builtins as B`)."""
    found = {"builtins"}
    for alias in nodes_within(module, cst.ImportAlias):
        if isinstance(alias.name, cst.Name) and alias.name.value == "builtins" and alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            found.add(alias.asname.name.value)
    return frozenset(found)


def _runs_text_elsewhere(node: cst.CSTNode, parents: Dict[int, cst.CSTNode], builtins_names: AbstractSet[str]) -> bool:
    """`node` may run code given as text, another way than `eval(...)`/`exec(...)` (`_TEXT_RUNNERS`)."""
    if isinstance(node, cst.SimpleString):
        text = string_value(node)
        if text == "builtins":
            return True  # `sys.modules["builtins"]`, `import_module("builtins")`
        parent = parents.get(id(node))
        call = parents.get(id(parent)) if isinstance(parent, cst.Arg) else None
        # `getattr(builtins, "exec")`, `methodcaller("eval")`: a runner by its name as a getter's key.
        return text in _TEXT_RUNNERS and isinstance(call, cst.Call) and last_name(call.func) in _GETTERS
    if isinstance(node, cst.Subscript):
        keys = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        return _namespace(node.value) and any(string_value(k) in _TEXT_RUNNERS for k in keys)
    if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
        module_name = code_of(node.module).strip()
        if module_name in _TEXT_RUNNING_MODULES or module_name.split(".")[0] in _TEXT_RUNNING_MODULES:
            return True
        if isinstance(node.names, cst.ImportStar):
            return module_name in ("builtins", "timeit")
        names = {last_name(a.name) for a in node.names}
        return (module_name == "builtins" and bool(names & (_TEXT_RUNNERS | {"__dict__"}))) or (module_name == "timeit" and bool(names & _TIMEIT_RUNNERS))
    if isinstance(node, cst.Import):
        return any(code_of(a.name).strip().split(".")[0] in _TEXT_RUNNING_MODULES for a in node.names)
    if not isinstance(node, cst.Name):
        return False
    parent = parents.get(id(node))
    if node.value == "compile":
        return _runs_code_text(node, parents)  # (the builtin: `re.compile`, `torch.compile` are attributes)
    if node.value == "__builtins__":
        return True
    if node.value == "timeit" and isinstance(parent, cst.Attribute) and parent.value is node:
        return parent.attr.value in _TIMEIT_RUNNERS
    if node.value not in builtins_names:
        return False
    if isinstance(parent, cst.Attribute):
        if parent.attr is node:
            return False  # `x.builtins`
        return parent.attr.value in _TEXT_RUNNERS | {"__dict__", "__getattribute__"}
    if isinstance(parent, (cst.ImportAlias, cst.AsName, cst.Param, cst.FunctionDef, cst.ClassDef, cst.AssignTarget)):
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is node:
        return False
    return True  # the module handed on (`vars(builtins)`, `getattr(builtins, name)`)


def _runs_code_text(node: cst.Name, parents: Dict[int, cst.CSTNode]) -> bool:
    """`eval`/`exec` as the builtin (called, or handed on), not a name being bound or an attribute's
    name (`net.eval()`), a keyword (`f(eval=1)`), a parameter or a definition's name."""
    parent = parents.get(id(node))
    if isinstance(parent, cst.Attribute):
        return parent.value is node  # `eval.__call__`; not `net.eval`
    if isinstance(parent, cst.Arg) and parent.keyword is node:
        return False
    if isinstance(parent, cst.ImportAlias) and parent.asname is not None:
        return True  # `from builtins import exec as run` (review, round 9): called by another name
    return not isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AssignTarget))


def _value_only_shown(call: cst.CSTNode, parents: Dict[int, cst.CSTNode]) -> bool:
    """A getter's result (`getattr(cfg, key)`) only displayed (an argument of a `_NAMESPACE_DISPLAYS`
    call, an f-string), compared, or dropped (an expression statement): never called."""
    parent = parents.get(id(call))
    if isinstance(parent, (cst.Expr, cst.FormattedStringExpression, cst.ComparisonTarget)):
        return True
    if isinstance(parent, cst.Comparison) and parent.left is call:
        return True
    if isinstance(parent, cst.Arg) and not parent.star:
        outer = parents.get(id(parent))
        return isinstance(outer, cst.Call) and last_name(outer.func) in _NAMESPACE_DISPLAYS
    return False


def _within(node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    return any(n is node for n in _walk(outer))


def _literal_prefix(expr: cst.BaseExpression) -> Optional[str]:
    """The literal text a built string starts with (`"register_" + k`, `f"register_{k}"`), or None."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left = expr.left
        while isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Add):
            left = left.left
        return string_value(left) if isinstance(left, cst.SimpleString) else None
    if isinstance(expr, cst.FormattedString) and expr.parts and isinstance(expr.parts[0], cst.FormattedStringText):
        return expr.parts[0].value
    return None


def _may_spell_register(expr: cst.BaseExpression) -> bool:
    """Whether a computed attribute name may be `register_...` (`_walk` of its first literal part)."""
    if isinstance(expr, cst.SimpleString):
        return False  # a literal: `facts.gradient_hooks` reads it
    first: Optional[str] = None
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left = expr.left
        while isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Add):
            left = left.left
        first = string_value(left) if isinstance(left, cst.SimpleString) else None
    elif isinstance(expr, cst.ConcatenatedString) and isinstance(expr.left, cst.SimpleString):
        first = string_value(expr.left)
    elif isinstance(expr, cst.FormattedString) and expr.parts and isinstance(expr.parts[0], cst.FormattedStringText):
        first = expr.parts[0].value
    if first is None:
        return True
    return "register_".startswith(first) or first.startswith("register_")


def hook_reasons(facts: "FileFacts") -> List[Reason]:
    """Why merging backward passes is not proven exact in a file that registers a gradient hook.

    A hook runs once per backward pass on that pass's gradient: two passes
    give `h(g1) + h(g2)`, one pass of the sum `h(g1 + g2)`, equal only for a
    linear, stateless hook (`g.clamp(...)`, `grads.append(g)` are not).
    Shared by the rules whose rewrite replaces two backward passes by one
    (GF001, GF003, GF004). Hooks registered in another module are not seen.
    """
    hooks = facts.gradient_hooks
    if not hooks:
        computed = computed_method_calls(facts.module)
        if computed:
            return [Reason(
                f"`{code_of(computed[0]).strip()}` (line {facts.line(computed[0])}) calls a method by a computed name: it may "
                f"register a gradient hook, which runs once per backward pass: one backward instead of two is exact only if "
                f"every hook is linear and stateless",
                HOOK,
            )]
        return []
    hook = hooks[0]
    # A name as a string (`getattr(w, "register_hook")`) is shown as written, not as a call; so is a
    # hook table (`lin._backward_hooks`), which holds hooks rather than registers them.
    text = string_value(hook) if isinstance(hook, cst.SimpleString) else last_name(hook)
    shown = code_of(hook).strip() if isinstance(hook, cst.SimpleString) else f"{code_of(hook).strip()}()"
    does = "registers a gradient hook, which runs"
    if text is not None and names_gradient_hook_table(text):
        shown, does = code_of(hook).strip(), "may hold or register gradient hooks, which run"
    return [
        Reason(
            f"`{shown}` (line {facts.line(hook)}) {does} once per backward "
            f"pass: one backward instead of two is exact only if every hook is linear and stateless",
            HOOK,
        )
    ]


def spelling_reasons(statements: Sequence[cst.CSTNode], facts: "FileFacts") -> List[Reason]:
    """Why a fix that changes `self.manual_backward(...)` calls (merges them, or drops their
    `retain_graph=True`) is not proven exact in this file (empty: no such call, or nothing).

    Lightning's `manual_backward` runs the strategy's backward: the precision plugin's loss
    scaling, `LightningModule.backward` (`loss.backward(...)`), then its hooks; linear in the loss,
    so the merge is exact (README, "What a safe fix assumes"). A `manual_backward` defined in the
    file, or a `backward(self, ...)` method (LightningModule's hook, which `manual_backward`
    calls), may do anything per call (clip gradients after each): unsafe, naming its line.
    """
    if not any(_is_manual(s) for s in statements):
        return []
    for node in _definitions(facts.module):
        name = node.name.value
        params = node.params.params
        if name == "manual_backward" or (name == "backward" and params and params[0].name.value == "self"):
            return [
                Reason(
                    f"`{name}` is defined in the file (line {facts.line(node)}): gradfix does not prove that "
                    f"`manual_backward` only backpropagates, linearly in the loss",
                    SPELLING,
                )
            ]
    return []


def _in_own_dict(receiver: cst.BaseExpression, scope: cst.CSTNode) -> bool:
    """`losses["adv"]`: an item under a literal key of a dict the function builds itself
    (`losses = {}` or `dict()`), the name bound once in the whole function (nested code included)
    and not a parameter. Read again at the merged backward it is the tensor stored there, since a
    store into `losses` between the calls stops the run (`scan_between`); so it counts as a loss
    held by name, not one written inline."""
    node = strip_parens(receiver)
    if not (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1):
        return False
    index = node.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, (cst.SimpleString, cst.Integer))):
        return False
    name = node.value.value
    if not isinstance(scope, cst.FunctionDef) or name in function_parameters(scope) or binding_counts(scope).get(name) != 1:
        return False
    values: List[cst.BaseExpression] = []

    class Find(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
                values.append(node.value)

    walk_tree(scope, Find())
    if len(values) != 1:
        return False
    value = values[0]
    if isinstance(value, cst.Dict):
        return True
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict" and not value.args


def _is_manual(statement: cst.CSTNode) -> bool:
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and statement.body else None
    call = small.value if isinstance(small, cst.Expr) else None
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "manual_backward"


def _definitions(module: cst.CSTNode) -> List[cst.FunctionDef]:
    found: List[cst.FunctionDef] = []

    class Collect(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            found.append(node)

    walk_tree(module, Collect())
    return found


def file_merge_reasons(facts: "FileFacts", classifier=None) -> List[Reason]:
    """What in the file keeps any merge of backward passes from being proven exact (empty: nothing).

    Whatever runs once per backward pass sees `g1 + g2` once instead of `g1` and
    `g2`: gradient hooks registered in the file (`hook_reasons`) and custom
    autograd Functions whose backward is not proven linear in its gradients and
    stateless (`functions.function_reasons`), and activation checkpoints, which rerun their forward in every pass (`FileFacts.unpreserved_checkpoints`,
    `FileFacts.checkpoint_uses`). Shared by every rule whose rewrite
    replaces two backward passes by one (GF001, GF003, GF004).
    """
    # The same for every run of every rule in the file (what it reads of the classifier is
    # `handed_functions`, the file's too): computed once per file (`FileFacts.shared`).
    key = "file merge reasons" if classifier is not None else "file merge reasons without a classifier"
    found = facts.shared.get(key)
    if found is None:
        found = facts.shared[key] = tuple(_file_merge_reasons(facts, classifier))
    return list(found)


def _file_merge_reasons(facts: "FileFacts", classifier) -> List[Reason]:
    reasons = hook_reasons(facts) + [Reason(text, CUSTOM_FUNCTION) for text in facts.function_reasons]
    reasons.extend(torch_hook_reasons(facts))
    reasons.extend(implicit_dunder_reasons(facts))
    reasons.extend(escaped_function_reasons(facts, classifier))
    for call in facts.unpreserved_checkpoints[:1]:
        reasons.append(Reason(
            f"`{code_of(call.func).strip()}(...)` (line {facts.line(call)}) recomputes its forward in every backward pass "
            f"without the first run's random state: two passes draw two dropout masks, one pass one",
            CUSTOM_FUNCTION,
        ))
    for store in facts.gradient_stores[:1]:
        reasons.append(Reason(
            f"line {facts.line(store)} stores a `.grad` tensor (`{_brief(store)}`) where code between the passes may read it: "
            f"it sees what the first pass added in the original, not in the merged pass",
            BETWEEN,
        ))
    for use in facts.saved_tensor_hooks[:1]:
        reasons.append(Reason(
            f"`{code_of(use).strip()}` (line {facts.line(use)}) may install saved-tensor hooks: the unpack hook runs once "
            f"per backward pass for each saved tensor, twice in two passes, once in one merged pass",
            CUSTOM_FUNCTION,
        ))
    if not facts.unpreserved_checkpoints:
        for use in facts.checkpoint_uses[:1]:
            reasons.append(Reason(
                f"`{_brief(use)}` (line {facts.line(use)}) is an activation checkpoint: it reruns its forward in every backward "
                f"pass, and state that forward changes (BatchNorm running statistics, spectral norm's estimate, dropout "
                f"masks) is changed once per pass, twice in two passes, once in one",
                CUSTOM_FUNCTION,
            ))
    return reasons


def torch_hook_reasons(facts: "FileFacts") -> List[Reason]:
    """A `__torch_function__` (of a tensor subclass or a mode) runs at every torch call on the tensors
    it covers, a tensor subclass's methods in place of torch's: code of the file that may count, log
    or draw, twice in the original and once after a rewrite that merges two evaluations (review,
    round 5) or two backward passes (`Tensor.backward` is a torch call too, and the merged sum's `+`
    one more; review, round 6). Proven only where the file has none. Shared by every merge (one
    text: `Reasons` keeps it once)."""
    hooks = [*facts.torch_function_overrides, *facts.tensor_subclasses]
    if not hooks:
        return []
    first = hooks[0]  # (each list in file order: a mention of `__torch_function__` first)
    shown = first.name.value if isinstance(first, cst.ClassDef) else code_of(first).strip()
    return [Reason(
        f"`{shown}` (line {facts.line(first)}) may run code of the file at each torch call on a tensor "
        f"(`__torch_function__`, a tensor subclass): twice in the original, once after the rewrite",
        CUSTOM_FUNCTION,
    )]


def _brief(node: cst.CSTNode) -> str:
    """A checkpoint use as a reason names it: `ckpt(...)` for a call, else its code."""
    if isinstance(node, cst.Call):
        return f"{code_of(node.func).strip()}(...)"
    return code_of(node).strip()


def implicit_dunder_reasons(facts: "FileFacts") -> List[Reason]:
    """A special method of the file that Python runs without a call by name and that may change
    state (`FileFacts.implicit_dunders`): between the evaluations or passes a rewrite merges, a
    `len(x)`, `x[i]`, `if x` or `x.a = v` may run it and rebind an operand (review, stop 24)."""
    for dunder in facts.implicit_dunders[:1]:
        # A method, or a special method bound by an assignment (`__radd__ = kept.append`, `Acc.__radd__ = f`).
        shown = dunder.name.value if isinstance(dunder, cst.FunctionDef) else code_of(dunder).strip().split("\n")[0][:60]
        return [Reason(
            f"`{shown}` (line {facts.line(dunder)}) runs without a call by name (`len(x)`, `x[i]`, `if x`, "
            f"operators, `x.a = v`) and may change state or read a gradient: gradfix does not follow where it runs",
            BETWEEN,
        )]
    return []


def escaped_function_reasons(facts: "FileFacts", classifier) -> List[Reason]:
    """A function of the file handed to code outside it (`CalleeClassifier.handed_functions`:
    `weakref.finalize(box, report)`, `sys.setprofile(prof)`, `warnings.showwarning = show`) runs
    when that code decides, with no call gradfix sees: a finalizer when a rebinding between the
    passes drops the last reference, a profile or trace function at every call (the second
    `backward` too), a hook at a warning or a log record. Where it may read a gradient or change
    state (`facts._changes_state`), it sees the first pass's gradients in the original and none
    after the merge (review, round 11). Without a classifier to find them, any may."""
    from gradfix.analysis.facts import changes_state

    if classifier is None:
        return []
    for node in classifier.handed_functions():
        if changes_state(node, facts):
            shown = node.name.value if isinstance(node, cst.FunctionDef) else "a lambda"
            return [Reason(
                f"`{shown}` (line {facts.line(node)}) is handed to code outside the file, which may run it between the "
                f"passes (a finalizer, a profile or trace function, a warning or logging hook, a data loader's `collate_fn`), "
                f"and it may change state or read a gradient",
                BETWEEN,
            )]
    return []


def generator_reasons(facts: "FileFacts", between: bool) -> List[Reason]:
    """A generator function's body runs where the generator is advanced (`list(g)`, `for v in g`,
    `sum(g)`), not where it is called (review, round 11): `seen = watch()` before the passes and
    `list(seen)` between them runs `watch`'s body between them. Where it may change state or read
    a gradient (`facts._changes_state`), and something stands between the passes (`between`:
    only code there advances it)."""
    from gradfix.analysis.facts import changes_state

    if not between:
        return []
    for node in walk_statements(facts.module):
        if isinstance(node, cst.FunctionDef) and (node.asynchronous is not None or nodes_within(node.body, (cst.Yield,))):
            if _may_be_advanced(node, facts) and changes_state(node, facts):
                return [Reason(
                    f"`{node.name.value}` (line {facts.line(node)}) is a generator function: its body runs where the generator "
                    f"is advanced (`list(g)`, a `for`), which may be between the passes, and it may change state or read a gradient",
                    BETWEEN,
                )]
    # Review, round 12: a generator expression is a generator too: `seen = (look() for _ in xs)`
    # before the passes runs `look()` at `list(seen)` between them. Harmless only where it is
    # exhausted where it stands (`_exhausted_now`) or its code changes nothing and reads no gradient.
    consumed = _exhausted_now(facts)
    for expression in nodes_within(facts.module, cst.GeneratorExp):
        if id(expression) in consumed:
            continue
        body = cst.FunctionDef(
            name=cst.Name("_genexp"), params=cst.Parameters(),
            body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Return(expression)])]),
        )
        if changes_state(body, facts):
            return [Reason(
                f"the generator expression at line {facts.line(expression)} runs its code where it is advanced (`list(g)`, "
                f"a `for`), which may be between the passes, and it may change state or read a gradient",
                BETWEEN,
            )]
    return []


# Builtins that exhaust an iterable they are handed before they return, keeping nothing of it.
_EXHAUSTING_BUILTINS = frozenset({"list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "any", "all", "min", "max"})


def _exhausted_now(facts: "FileFacts") -> Set[int]:
    """The generator expressions run to their end (or dropped) where they stand: the argument of an
    exhausting builtin the file does not rebind (`sum(x for x in xs)`, `list(...)`), of `str.join`
    on a string literal, unpacked (`f(*g)`, `[*g]`, `x, y = g`), or the iterable of a `for`
    statement: their code runs at that statement,
    which gradfix judges where it stands (review, round 12)."""
    found: Set[int] = set()
    builtins_kept = not facts.changes_builtins
    for call in nodes_within(facts.module, cst.Call):
        func = call.func
        exhausting = (
            isinstance(func, cst.Name) and func.value in _EXHAUSTING_BUILTINS and func.value not in facts.binding_counts and builtins_kept
        ) or (isinstance(func, cst.Attribute) and func.attr.value == "join" and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString)))
        for arg in call.args:
            if isinstance(arg.value, cst.GeneratorExp) and (arg.star == "*" or exhausting and not arg.keyword and not arg.star):
                found.add(id(arg.value))  # (`f(*g)` unpacks it before the call)
    for loop in nodes_within(facts.module, cst.For):
        if isinstance(loop.iter, cst.GeneratorExp):
            found.add(id(loop.iter))
    for assign in nodes_within(facts.module, cst.Assign):
        # `x, y = (f(v) for v in vs)`: unpacked at the assignment.
        if isinstance(assign.value, cst.GeneratorExp) and all(isinstance(t.target, (cst.Tuple, cst.List)) for t in assign.targets):
            found.add(id(assign.value))
    for element in nodes_within(facts.module, cst.StarredElement):
        if isinstance(element.value, cst.GeneratorExp):
            found.add(id(element.value))  # `[*g]`, `(*g,)`: unpacked where it stands
    return found


# Decorators that only wrap a generator function: the generator is still made by a call of its
# name (`with quiet():`), and nothing runs its body at the decoration.
_WRAPPING_DECORATORS = frozenset({"contextlib.contextmanager", "contextlib.asynccontextmanager"})
_WRAPPING_BUILTINS = frozenset({"staticmethod", "classmethod"})


def _may_be_advanced(function: cst.FunctionDef, facts: "FileFacts") -> bool:
    """Whether a generator of the generator function `function` may exist: its name is read in
    the file (a call, `obj.name`, a value handed on) or reached by a string
    (`introspection.names_reached_by_string`), or a decorator other than one that only wraps it
    gets the function (and may call it). A generator function the file never names makes no
    generator, so its body runs nowhere (a `@contextlib.contextmanager` never entered)."""
    from gradfix.analysis.introspection import names_reached_by_string

    name = function.name.value
    for decorator in function.decorators:
        text = code_of(decorator.decorator).strip()
        if text in _WRAPPING_BUILTINS and text not in facts.binding_counts and not facts.changes_builtins:
            continue
        if facts.sole_imports.qualified(text, facts.line(decorator)) in _WRAPPING_DECORATORS:
            continue
        return True
    for read in nodes_within(facts.module, cst.Name):
        if read.value == name and read is not function.name:
            return True
    if any(attribute.attr.value == name for attribute in nodes_within(facts.module, cst.Attribute)):
        return True
    return names_reached_by_string(facts.module, name, method=True) is not None or names_reached_by_string(facts.module, name, method=False) is not None


def caught_reasons(statement: cst.CSTNode, scope: cst.CSTNode, module: cst.Module, line: Callable[..., int]) -> List[Reason]:
    """Why an exception between the backward passes a rewrite merges (at `statement`, the first
    pass's) may leave a trace: the original's first pass has written its gradients when the
    statements after it raise (out of memory, a bad batch), the merged pass has written none. That
    matters where the exception is caught and the program goes on: a `try` with a handler, or a
    `with` whose context manager may swallow it (`contextlib.suppress`), around `statement` in
    `scope`; for a function, around a call of it or of a function of the file that calls it (to a
    fixed point), or where it is handed on by name (review, stop 24). Callers in other files are
    not seen (README, "What a safe fix assumes")."""
    guards = _guards_around(scope, statement, module)
    if guards:
        return [Reason(
            f"an exception after the first backward (out of memory, a bad batch) may be caught at line {line(guards[-1])}: "
            f"the original has written the first pass's gradients by then, the merged pass none",
            BETWEEN,
        )]
    if not isinstance(scope, cst.FunctionDef):
        return []
    if not any(may_catch(statement, module) for statement in walk_statements(module)):
        return []  # no `try` or `with` in the file may catch it (a walk of statements only)
    names, _ = _callers(scope, module)
    functions = [s for s in walk_statements(module) if isinstance(s, cst.FunctionDef)]
    calls = {}  # the node naming a call's callee -> the call
    for call in nodes_within(module, cst.Call):
        calls[id(call.func.attr if isinstance(call.func, cst.Attribute) else call.func)] = call
    own = {id(function.name) for function in functions}
    for node in nodes_within(module, cst.Name):
        if node.value not in names or id(node) in own:
            continue
        call = calls.get(id(node))
        if call is None:
            return [Reason(
                f"`{node.value}` is handed on by name (line {line(node)}): gradfix does not follow where it is called, "
                f"maybe where an exception after the first backward is caught (the original keeps the first pass's "
                f"gradients, the merged pass none)",
                BETWEEN,
            )]
        guards = _guards_around(module, call, module)
        if guards:
            return [Reason(
                f"`{node.value}` is called where an exception may be caught (line {line(guards[-1])}): an exception after "
                f"the first backward (out of memory, a bad batch) leaves the original's first-pass gradients, the merged pass none",
                BETWEEN,
            )]
    lazy = _lazy_call(scope, module, names, functions)
    if lazy is not None:
        return [Reason(
            f"`{code_of(lazy).strip()}` (line {line(lazy)}) runs later than its line (a lambda, a generator): gradfix does not "
            f"follow where, maybe where an exception after the first backward is caught (the original keeps the first "
            f"pass's gradients, the merged pass none)",
            BETWEEN,
        )]
    return []


def _calls_one_of(call: cst.Call, names) -> bool:
    return last_name(call.func) in names


# What turns gradient recording off, by its last name: `torch.no_grad()`, `torch.inference_mode()`,
# `torch.set_grad_enabled(False)`, `torch._C._set_grad_enabled(False)`, `torch.autograd.grad_mode.no_grad`.
GRAD_OFF_NAMES = frozenset({"no_grad", "inference_mode", "set_grad_enabled", "_set_grad_enabled"})


def grad_mode_reasons(statement: cst.CSTNode, scope: cst.CSTNode, facts: "FileFacts") -> List[Reason]:
    """Why gradient recording may be off where a merge builds the sum of the losses (at `statement`,
    the last backward call, in `scope`): a backward runs under `torch.no_grad()`, but the merged
    `(l1 + l2)` built there has no graph and its backward raises (review, round 3). Unsafe: a `with`
    around it whose context manager turns recording off (`no_grad`, `inference_mode`,
    `set_grad_enabled`), or is a class or function of the file that mentions one; a decorator of
    the function that does; a switch called as a statement anywhere in the file (module level
    too: `torch.set_grad_enabled(False)` holds until it is switched back, wherever that is); such
    a `with` or decorator around a call of the function or of a function of the file that calls it
    (to a fixed point, by name), or, where it is handed on by name, anywhere in the file (review,
    round 4). Context managers and callers outside the file are not seen."""
    node: Optional[cst.CSTNode] = statement
    path: List[cst.CSTNode] = []  # the nodes from the statement up to `node`
    while node is not None and node is not scope:
        if isinstance(node, cst.With):
            for item in node.items:
                if _may_turn_grad_off(item.item, facts) and not _phase_switch_on(item.item, node, path, scope, facts):
                    return [_grad_mode_reason(f"`with {code_of(item.item).strip()}:`", facts.line(node))]
        path.append(node)
        node = facts.nodes.parents.get(node)
    if isinstance(scope, cst.FunctionDef):
        for decorator in scope.decorators:
            if _may_turn_grad_off(decorator.decorator, facts):
                return [_grad_mode_reason(f"`@{code_of(decorator.decorator).strip()}`", facts.line(decorator))]
    switches = _grad_off_names(facts)
    # Lambda bodies included: `register_step_pre_hook(lambda *a: torch.set_grad_enabled(False))`
    # switches where the lambda is called (review, round 5).
    for call in _all_within(facts.module, cst.Call):
        if last_name(call.func) in switches and not isinstance(facts.nodes.parents.get(call), (cst.WithItem, cst.Decorator)):
            if last_name(call.func) == "set_grad_enabled" and _only_true(call):
                continue  # `torch.set_grad_enabled(True)`: recording on
            return [_grad_mode_reason(f"`{code_of(call.func).strip()}(...)`", facts.line(call))]
    unplaced = _unplaced_switch(facts, switches)
    if unplaced is not None:
        return [_grad_mode_reason(f"`{code_of(unplaced).strip()}`, handed on or named by a string,", facts.line(unplaced))]
    if not isinstance(scope, cst.FunctionDef):
        return []
    names, handed_on = _callers(scope, facts.module)
    for site in nodes_within(facts.module, (cst.With, cst.FunctionDef)):
        entered = site.items if isinstance(site, cst.With) else site.decorators
        off = [e for e in entered if _may_turn_grad_off(e.item if isinstance(e, cst.WithItem) else e.decorator, facts)]
        if not off:
            continue
        body = site.body if isinstance(site, cst.With) else site
        if handed_on is not None or any(_calls_one_of(c, names) for c in nodes_within(body, cst.Call)):
            shown = f"with {code_of(off[0].item).strip()}:" if isinstance(site, cst.With) else f"@{code_of(off[0].decorator).strip()}"
            where = f"handed on by name (line {facts.line(handed_on)})" if handed_on is not None else "called"
            return [_grad_mode_reason(f"`{scope.name.value}` is {where} in the file, and `{shown}`", facts.line(off[0]))]
    return []


def _unplaced_switch(facts: "FileFacts", switches: FrozenSet[str]) -> Optional[cst.CSTNode]:
    """A grad-mode switch the file names where gradfix does not place its effect (review, round 5):
    handed on rather than called, entered or bound to a name (`map(torch.set_grad_enabled,
    [False])`, `partial(torch.set_grad_enabled, False)` passed on, `[torch.no_grad]`), or named by a
    string (`getattr(torch, "set_grad_enabled")(False)`). Placed: the callee of a call (judged
    as a call), a `with` item or decorator, the value of an assignment to names (an alias, judged
    by its name: `_grad_off_names`), an import."""
    parents = facts.nodes.parents
    for node in _all_within(facts.module, cst.SimpleString):
        if string_value(node) in GRAD_OFF_NAMES:
            return node
    for node in (*_all_within(facts.module, cst.Attribute), *_all_within(facts.module, cst.Name)):
        if last_name(node) not in switches:
            continue
        parent = parents.get(node)
        if isinstance(parent, cst.Attribute) and (parent.attr is node or parent.value is node):
            if parent.attr is node or last_name(parent) in switches:
                continue  # a part of a longer name (`torch.no_grad`'s `no_grad`), judged as that name
            return node  # `torch.no_grad.__enter__`, `torch.set_grad_enabled.__call__`
        if isinstance(parent, cst.Call) and parent.func is node:
            continue
        if isinstance(parent, (cst.WithItem, cst.Decorator, cst.ImportAlias, cst.AsName, cst.FunctionDef, cst.ClassDef, cst.Param)):
            continue
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Assign) and all(isinstance(t.target, cst.Name) for t in parent.targets)):
            continue
        if isinstance(parent, (cst.ImportFrom, cst.Import)) or isinstance(parent, cst.Attribute) is False and _in_import(node, parents):
            continue
        return node
    return None


def _in_import(node: cst.CSTNode, parents) -> bool:
    while node is not None:
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            return True
        node = parents.get(node)
    return False


def _only_true(call: cst.Call) -> bool:
    return len(call.args) == 1 and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "True"


def _grad_off_names(facts: "FileFacts") -> FrozenSet[str]:
    """`GRAD_OFF_NAMES` and the names the file binds to one (`ng = torch.no_grad`, `from torch
    import no_grad as ng`), to a fixed point; by name, anywhere in the file (an overestimate). Once per file."""
    known = facts.__dict__.get("_grad_off_names")
    if known is not None:
        return known
    names = set(GRAD_OFF_NAMES)
    for node in nodes_within(facts.module, cst.ImportAlias):
        if node.asname is not None and isinstance(node.asname.name, cst.Name) and last_name(node.name) in names:
            names.add(node.asname.name.value)
    assigns = list(nodes_within(facts.module, cst.Assign))
    changed = True
    while changed:
        changed = False
        for assign in assigns:
            if any(last_name(n) in names for n in (*nodes_within(assign.value, cst.Name), *nodes_within(assign.value, cst.Attribute))):
                for target in assign.targets:
                    if isinstance(target.target, cst.Name) and target.target.value not in names:
                        names.add(target.target.value)
                        changed = True
    facts.__dict__["_grad_off_names"] = frozenset(names)
    return facts.__dict__["_grad_off_names"]


def _callers(scope: cst.FunctionDef, module: cst.Module) -> Tuple[set, Optional[cst.Name]]:
    """The names of `scope` and of the functions of the file that may call it, through any number
    of calls (by name: an overestimate), and the first reference to one of them that is no call
    (handed on: it may be called anywhere), or None."""
    names = {scope.name.value}
    functions = [s for s in walk_statements(module) if isinstance(s, cst.FunctionDef)]
    changed = True
    while changed:  # the functions that may call it, through any number of calls
        changed = False
        for function in functions:
            if function.name.value not in names and any(_calls_one_of(c, names) for c in nodes_within(function.body, cst.Call)):
                names.add(function.name.value)
                changed = True
    called = {id(c.func.attr if isinstance(c.func, cst.Attribute) else c.func) for c in nodes_within(module, cst.Call)}
    own = {id(function.name) for function in functions}
    for node in nodes_within(module, cst.Name):
        if node.value in names and id(node) not in own and id(node) not in called:
            return names, node
    return names, _lazy_call(scope, module, names, functions)


def _lazy_call(scope: cst.FunctionDef, module: cst.Module, names: set, functions) -> Optional[cst.CSTNode]:
    """A call of one of `names` that runs later than where it stands, or None: in a lambda (bound to a
    name, a default argument, an item: `run = lambda: step()`, `def run(f=lambda: step())`), in a
    generator expression, or a generator function among them (its body runs at `next()`); where it
    runs, a `with torch.no_grad():` or a `try` may stand (review, round 5)."""
    for lazy in _all_within(module, (cst.Lambda, cst.GeneratorExp)):
        for call in _all_within(lazy, cst.Call):
            if _calls_one_of(call, names):
                return call
    for function in functions:
        if function is not scope and function.name.value in names and nodes_within(function.body, (cst.Yield,)):
            return function.name
        if function.name.value in names:
            continue
        for call in _all_within(function.params, cst.Call):
            if _calls_one_of(call, names):
                return call  # a default argument's call runs where the function is defined
    return None


_SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"})


def _phase_switch_on(expr: cst.BaseExpression, site: cst.With, path: List[cst.CSTNode], scope: cst.CSTNode, facts: "FileFacts") -> bool:
    """Whether the `with` item `expr` provably leaves gradient recording on where the merged sum is
    built (`path`: the nodes from that statement up to `site`, the `with`): the training loop of
    torch's tutorials, `for phase in ["train", "val"]: with torch.set_grad_enabled(phase ==
    "train"): ... if phase == "train": loss.backward()`. Proven only where
    - `expr` is torch's `set_grad_enabled` (by the file's sole import of `torch` or of the function)
      called on one operand `C`: `N == "lit"` or `N != "lit"` (either side), `N` a name;
    - the statement stands in the body of an `if` inside the `with` whose test is `C` again (as text);
    - `N` is bound in `scope` only as the target of one `for N in [...]` over string literals,
      whose body holds the `with`: `N` is a `str` and the same one at the `with` and at the `if`,
      so `C` is the same bool at both, and true at the `if`.
    Any other switch, condition or binding stays a reason (`_may_turn_grad_off`)."""
    if not (isinstance(expr, cst.Call) and len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star):
        return False
    if facts.sole_imports.qualified(code_of(expr.func).strip(), facts.line(expr)) not in _SET_GRAD_ENABLED:
        return False
    condition = expr.args[0].value
    name = _compared_name(condition)
    if name is None:
        return False
    in_if = any(
        isinstance(node, cst.If) and index > 0 and path[index - 1] is node.body and same_expr(node.test, condition)
        for index, node in enumerate(path)
    )
    if not in_if:
        return False
    # (a loop target counts twice: one `for` is the only binding where the count is 2)
    counts = facts.binding_counts if isinstance(scope, cst.Module) else binding_counts(scope)
    if counts.get(name) != 2:
        return False
    if names_by_string(facts.module):
        return False  # `globals()["phase"] = ...`, `exec`, a frame's locals: a binding no form shows
    below, node = site, facts.nodes.parents.get(site)
    while node is not None and below is not scope:
        if isinstance(node, cst.For) and below is node.body:
            if not node.asynchronous and isinstance(node.target, cst.Name) and node.target.value == name:
                return _string_literals(node.iter)
        below, node = node, facts.nodes.parents.get(node)
    return False


def _compared_name(condition: cst.BaseExpression) -> Optional[str]:
    """`N` where `condition` is `N == "lit"`, `N != "lit"` or the same the other way round; else None."""
    if not (isinstance(condition, cst.Comparison) and len(condition.comparisons) == 1):
        return None
    target = condition.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
        return None
    left, right = condition.left, target.comparator
    for one, other in ((left, right), (right, left)):
        if isinstance(one, cst.Name) and isinstance(other, cst.SimpleString) and not one.lpar and not other.lpar:
            return one.value
    return None


def _string_literals(expr: cst.BaseExpression) -> bool:
    """A list or tuple display of string literals only (no f-string, no starred item)."""
    return (
        isinstance(expr, (cst.List, cst.Tuple))
        and bool(expr.elements)
        and all(isinstance(e, cst.Element) and isinstance(e.value, cst.SimpleString) for e in expr.elements)
    )


def _grad_mode_reason(what: str, at: int) -> Reason:
    return Reason(
        f"{what} (line {at}) may turn gradient recording off where the merged sum of the losses is built: "
        f"it would have no graph, and its backward raises",
        BETWEEN,
    )


def _may_turn_grad_off(expr: cst.BaseExpression, facts: "FileFacts") -> bool:
    """`expr` (a context manager or decorator) names a grad-mode switch, or a class or function of the
    file whose code mentions one (a context manager of the file entering `torch.no_grad()`)."""
    func = expr.func if isinstance(expr, cst.Call) else expr
    name = last_name(func)
    switches = _grad_off_names(facts)
    if name in switches:
        return True
    own = [d for d in walk_statements(facts.module) if isinstance(d, (cst.FunctionDef, cst.ClassDef)) and d.name.value == name]
    return any(last_name(n) in switches for d in own for n in (*nodes_within(d, cst.Name), *nodes_within(d, cst.Attribute)))


def _guards_around(scope: cst.CSTNode, node: cst.CSTNode, module: cst.Module) -> List[cst.CSTNode]:
    """The statements around `node`, inside `scope`, that may catch an exception it raises, outermost
    first: a `try` with a handler (its body only), a `with` whose context manager is not one known
    to let exceptions through (`__exit__` may return True: `contextlib.suppress`)."""
    stack: List[cst.CSTNode] = []
    found: List[List[cst.CSTNode]] = []

    class Walk(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if found:
                return False
            if n is node:
                found.append(list(stack))
                return False
            if not may_catch(n, module):
                return True
            # Only its body is guarded: a handler's, `else`'s or `finally`'s code is not.
            stack.append(n)
            walk_tree(n.body, self)  # type: ignore[attr-defined]
            stack.pop()
            for part in (*getattr(n, "handlers", ()), getattr(n, "orelse", None), getattr(n, "finalbody", None)):
                if part is not None:
                    walk_tree(part, self)
            return False

    walk_tree(scope, Walk())
    return found[0] if found else []


def later_use_reasons(
    after: int, scope: cst.CSTNode, line: Callable[..., int], facts: "FileFacts", classifier=None
) -> List[Reason]:
    """Why freeing the graph at the merged backward (ending on line `after`) may break a later call.

    The original's earlier backward kept its graph alive with `retain_graph=True`;
    the merged call, which keeps only the last call's `retain_graph`, frees it.
    A later call in `scope` (the function holding the merge) that may backpropagate
    may go through it and raise: a `backward()`, `grad()` or `manual_backward()`
    (a lambda's too), and a call of, or a reference to (`opt.step(closure)`), code
    of the file (`module`) that may backpropagate (`Backpropagators`). Calls of
    code outside the file are assumed not to backpropagate through a graph of
    this function (README, "What a safe fix assumes"). Shared by GF001, GF003,
    GF004 and GF005. With the rule's `classifier`, a later `loss.backward()` on a loss built
    afresh after the point (`fresh.fresh_backward`) is none.
    """
    from gradfix.analysis.fresh import fresh_backward

    uses = facts.backpropagators.uses(scope)
    for node in uses:
        at = line(node)
        if at > after:
            if classifier is not None and isinstance(node, cst.Call) and fresh_backward(node, after, scope, facts.module, classifier, line):
                continue
            shown = code_of(node.func if isinstance(node, cst.Call) else node).strip()
            what = f"`{shown}()`" if isinstance(node, cst.Call) else f"`{shown}`, which may backpropagate,"
            if _graph_reader(node):
                what = f"`{shown}`, which may read tensors the graph saved,"
            return [Reason(f"a later {what} (line {at}) may use a graph that `retain_graph=True` kept alive", LATER_BACKWARD)]
    for node in uses:
        if _runs_later(node, scope, facts):
            # Handed on (`atexit.register(finish)`, `signal.signal(SIGUSR1, handler)`,
            # `weakref.finalize(obj, finish)`, `cb = finish`) or in a lambda: called whenever its
            # taker decides, after the merged backward too, whatever its line (review, round 3).
            shown = code_of(node.func if isinstance(node, cst.Call) else node).strip()
            if isinstance(node, cst.Call) and last_name(node.func) in facts.backpropagators.generators:
                return [Reason(
                    f"`{shown}` (line {line(node)}) is a generator that may backpropagate: its body runs at `next()`, "
                    f"`close()` or its collection, after the merged backward too, and may use a graph that "
                    f"`retain_graph=True` kept alive",
                    LATER_BACKWARD,
                )]
            return [Reason(
                f"`{shown}` (line {line(node)}) may backpropagate later than its line: handed on (a callback, a decorator) or in a "
                f"lambda, it may run after the merged backward and use a graph that `retain_graph=True` kept alive",
                LATER_BACKWARD,
            )]
    # The function's own runs again are its callers' to check (`t(h)` twice: GF005's callers).
    for method in [m for m in facts.backpropagators.implicit_methods if m is not scope][:1]:
        # `__del__`, `__exit__`, `__call__`, `__repr__`: Python runs them when an object goes, a block
        # is left, an instance is called, printed or iterated, not where a line names them (review,
        # rounds 3 and 4); a property where its attribute is read (round 5).
        return [Reason(
            f"`{method.name.value}` (line {line(method)}) may backpropagate when Python runs it (an object collected, a `with` "
            f"block left, an instance called, printed or iterated, a property read), at a time gradfix does not place: it may use a graph "
            f"that `retain_graph=True` kept alive",
            LATER_BACKWARD,
        )]
    if isinstance(scope, cst.Module):
        # Module-level code: a method a base class runs by another name (`probe(loss)` running
        # `Probe.forward`) may run after the point (in a function, `outside_backward_reasons` and
        # GF005's own proof that nothing keeps the graph see it; review, round 5).
        for method in facts.backpropagators.based_methods[:1]:
            return [Reason(
                f"`{method.name.value}` (line {line(method)}) of a class with a base may backpropagate when the base's code runs "
                f"it (`nn.Module.__call__` runs `forward`), at a time gradfix does not place: it may use a graph that "
                f"`retain_graph=True` kept alive",
                LATER_BACKWARD,
            )]
    return []


def outside_backward_reasons(scope: cst.CSTNode, facts: "FileFacts", classifier, calls: Sequence[BackwardCall]) -> List[Reason]:
    """Why code of the file outside the function holding a merge (`scope`) may backpropagate through
    the graph the original's `retain_graph=True` kept alive and the merged backward frees (review,
    round 5). A way to backpropagate (`backward()`, `grad()`, an alias of one, one handed on)
    anywhere in the file but `scope` runs where gradfix does not place it, after the merge too: in
    a caller's later code (`l = step(); l.backward()`), as a hook or callback torch calls
    (`register_step_pre_hook`, `register_forward_hook`), in a module's `forward` run by `model(x)`.
    It reaches the graph only where a tensor of it leaves the function (`_graph_leaves`): where
    nothing may, code outside backpropagates through graphs of its own (a GAN's `d_step` and
    `g_step`). The function's arguments are taken as data (as GF005 takes them): a graph the caller
    built and only the earlier losses reach is not seen. Module-level code (the scope a module) has
    nothing outside it: its later code is `later_use_reasons`'."""
    if not isinstance(scope, cst.FunctionDef):
        return []
    for node in facts.backpropagators.direct_sites:
        parent: Optional[cst.CSTNode] = node
        while parent is not None and parent is not scope:
            parent = facts.nodes.parents.get(parent)
        if parent is not None:
            continue
        leaves = _graph_leaves(scope, facts, classifier, calls)
        if leaves is None:
            return []
        shown = code_of(node.func if isinstance(node, cst.Call) else node).strip()
        shown = f"{shown}()" if isinstance(node, cst.Call) else shown
        return [Reason(
            f"{leaves}, and `{shown}` (line {facts.line(node)}) backpropagates outside `{scope.name.value}`: it may run after "
            f"the merged backward (a caller's later code, a hook or callback, a module's `forward`) and go through the graph "
            f"that `retain_graph=True` kept alive",
            LATER_BACKWARD,
        )]
    return []


def value_like(node: Optional[cst.BaseExpression], facts: Optional["FileFacts"] = None) -> bool:
    """An expression whose result carries no graph: a literal, an f-string, `.item()`, `float(...)`,
    and tuples or lists of those (GF005's escapes and the merges' `_graph_leaves` share it). With
    the file's `facts`, a builtin read by its text counts only where the file does not bind its
    name (`def float(t): return t`) nor may rebind builtins (review, round 6)."""
    if node is None or is_literal(node) or isinstance(node, cst.FormattedString):
        return True
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in VALUE_METHODS:
            return True
        if isinstance(func, cst.Name) and func.value in VALUE_FUNCTIONS:
            return facts is None or not (func.value in facts.binding_counts or facts.changes_builtins)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(value_like(e.value, facts) for e in node.elements)
    return False


def fresh_binding(name: str, function: cst.FunctionDef, facts: Optional["FileFacts"] = None) -> bool:
    """`name` is bound in `function` only to new objects (literals, values, graph-free factories,
    arithmetic results): an augmented assignment to it (`keep += [loss]`, `total += loss`) changes
    nothing from outside the call. A parameter, or a name bound to what another name holds
    (`keep = store`), may be a list or a tensor of the caller's, which `+=` changes in place (GF005's
    escapes and the merges' `_graph_leaves` share it; review, round 6)."""
    # `t += x` keeps `t`'s object or makes a new one: only the other bindings decide.
    if name in function_parameters(function):
        return False  # `if keep is None: keep = []` leaves a caller's list bound (review, round 7)
    # Every binding of the name in the function's own scope must be a plain assignment of a value:
    # an import (`from m import kept as keep`), a `match` capture, `except ... as`, a tuple or loop
    # target, `global`/`nonlocal` may bind an object from outside (review, round 7). `binding_counts`
    # counts every form (an augmented assignment twice); the forms read here must account for all.
    own = function.body.visit(_DropFunctionBodies())
    values: List[cst.BaseExpression] = []
    weight = 0
    for node in _walk(own):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    values.append(node.value)
                    weight += 1
        elif isinstance(node, (cst.AnnAssign, cst.NamedExpr)) and isinstance(node.target, cst.Name) and node.target.value == name:
            if node.value is None:
                return False  # (an annotation alone binds nothing, but counts as a binding form)
            values.append(node.value)
            weight += 1
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and node.target.value == name:
            weight += 2
    if binding_counts(own).get(name, 0) != weight:
        return False
    return bool(values) and all(value_like(v, facts) or graph_free(v) or isinstance(v, cst.BinaryOperation) for v in values)


def _graph_leaves(scope: cst.FunctionDef, facts: "FileFacts", classifier, calls: Sequence[BackwardCall]) -> Optional[str]:
    """How a tensor of the graph built in `scope` may leave it (a phrase naming the line), or None:
    a `return` of a tensor, a `yield`, a store into an attribute or an item, `global`/`nonlocal`, a
    nested function, lambda or class (a closure), or a call not proven to keep nothing (every call
    but optimizer and scaler calls, backward calls, `model.train()`-like calls with plain values,
    torch optimizers built, and `between.harmless_call`'s; a container's `append` of a tensor, a
    module of the file or a function handed a tensor keep it). GF005's `_escape` and
    `_first_keeping` in one pass (an overestimate: `return loss` is a leave even where the caller
    only prints it)."""
    from gradfix.analysis.between import harmless_call

    line = facts.line
    scalers = [c.scaler for c in calls if c.scaler is not None]
    for node in _walk(scope.body):
        if isinstance(node, cst.Return) and not value_like(node.value, facts):
            return f"`return {code_of(node.value).strip()}` (line {line(node)}) may hand a tensor of the graph to the caller"  # type: ignore[union-attr]
        if isinstance(node, (cst.Yield, cst.Await, cst.Global, cst.Nonlocal)):
            return f"`{code_of(node).strip()[:40]}` (line {line(node)}) may let a tensor of the graph outlive the call"
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return f"a nested function, lambda or class (line {line(node)}) may keep a tensor of the graph"
        value = getattr(node, "value", None) if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)) else None
        if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name) and not value_like(node.value, facts):
            if not fresh_binding(node.target.value, scope, facts):
                # `keep += [l1]` on a parameter extends the caller's list in place (review, round 6).
                return (
                    f"`{node.target.value} {code_of(node.operator).strip()}` (line {line(node)}) may change an object from "
                    f"outside the call in place, which then holds a tensor of the graph"
                )
        for target in store_targets(node):
            if isinstance(target, (cst.Attribute, cst.Subscript)) and not (value is not None and value_like(value, facts)):
                return f"`{code_of(target).strip()}` (line {line(target)}) keeps a value that may carry the graph beyond the call"
        if isinstance(node, cst.Assign):
            for target in node.targets:
                for inner in store_targets(target):
                    if isinstance(inner, (cst.Attribute, cst.Subscript)) and not value_like(node.value, facts):
                        return f"`{code_of(inner).strip()}` (line {line(inner)}) keeps a value that may carry the graph beyond the call"
        if isinstance(node, cst.Call) and not _keeps_nothing(node, classifier, scalers, harmless_call, facts, scope):
            return f"`{code_of(node.func).strip()}()` (line {line(node)}) is not proven to keep no tensor of the graph"
    return None


def _all_within(node: cst.CSTNode, kind) -> list:
    """`nodes_within`, lambda bodies included (callers only read the list)."""
    return nodes_of_type(node, kind)


def _walk(node: cst.CSTNode) -> List[cst.CSTNode]:
    """Every node within `node`, in order (nested functions and lambdas included): `exprs.all_nodes`,
    a module's list made once per file (callers only read it)."""
    return all_nodes(node)


# Methods proven harmless between two passes (`between.harmless_call`) that still keep what they
# are handed: a logger's record holds its arguments (`log.info("%s", loss)`: `LogRecord.args`, which
# a `MemoryHandler` or a handler of the file keeps), a tracker or progress bar may keep its values.
_RECORDING_METHODS = frozenset(
    {"log", "info", "debug", "warning", "warn", "error", "critical", "exception", "add_scalar", "add_scalars", "add_histogram", "set_postfix", "set_description"}
)


def hands_on_arguments(call: cst.Call, classifier, facts: Optional["FileFacts"] = None) -> Optional[str]:
    """How `call`, harmless between two passes, may still keep a tensor it is handed beyond the call
    (a phrase), or None: a logging or tracking call given a tensor (`log.info("%s", loss)`), or a
    `key=` function other than a builtin value function, which the callee runs on each item
    (`sorted([loss], key=keep.append)`, `max(..., key=...)`; review, round 6). Lightning's `self.log`
    keeps a detached copy (`CalleeClassifier.lightning_log`). Shared by the merges' `_graph_leaves`
    and GF005's keeping calls."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "key":
            key = arg.value
            builtin = isinstance(key, cst.Name) and key.value in FRESH_FUNCTIONS | VALUE_FUNCTIONS
            if not (builtin and (facts is None or not (key.value in facts.binding_counts or facts.changes_builtins))):  # type: ignore[union-attr]
                return f"runs `{code_of(key).strip()}` on what it is handed"
    if last_name(call.func) in _RECORDING_METHODS and not all(value_like(a.value, facts) for a in call.args):
        if classifier is not None and classifier.lightning_log(call):
            return None
        return "may keep what it is handed (a logging record holds its arguments)"
    return None


def _keeps_nothing(call: cst.Call, classifier, scalers, harmless_call, facts: Optional["FileFacts"] = None, scope: Optional[cst.CSTNode] = None) -> bool:
    """A call in the function holding a merge that cannot keep a tensor for later (`_graph_leaves`)."""
    if hands_on_arguments(call, classifier, facts) is not None:
        return False
    func = call.func
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        if method in STEP_METHODS and not call.args:
            return True
        if method in MODULE_LEAF_METHODS and all(value_like(a.value, facts) for a in call.args):
            return True
        if method in BACKPROP_NAMES and all(a.keyword is not None and a.keyword.value != "create_graph" for a in call.args):
            return True  # `loss.backward(retain_graph=True)`: it leaves gradients, no graph
        if method in ("step", "scale", "unscale_", "update") and any(same_expr(func.value, s) for s in scalers) and len(call.args) <= 1:
            return True  # `scaler.scale(loss)`, `scaler.step(opt)`, `scaler.update()`
        if method in MUTATING_METHODS and not all(value_like(a.value, facts) for a in call.args):
            return False
    if classifier is not None and scope is not None and optimizer_built(call, classifier):
        return optimizer_keeps_nothing(call, scope, facts)
    return harmless_call(call, classifier)


def optimizer_built(call: cst.Call, classifier) -> bool:
    """`torch.optim.SGD(...)`, `torch.optim.lr_scheduler.StepLR(...)`: a torch optimizer or scheduler built."""
    return any(name.startswith("torch.optim.") and name.rsplit(".", 1)[-1][:1].isupper() for name in classifier.qualified(call.func))


def optimizer_keeps_nothing(call: cst.Call, scope: cst.CSTNode, facts: Optional["FileFacts"] = None) -> bool:
    """A torch optimizer or scheduler built in `scope` (`optimizer_built`) holds parameters, never a
    tensor of `scope`'s graph, where no argument reads a name `scope` binds: its param groups keep
    every key they are given (`{"params": [w], "extra": loss}`) and its hyperparameters may be
    tensors (`lr=loss`), which a step hook or a later reader of `opt.param_groups` reaches (review,
    round 6). Values (`lr=0.1`, `loss.item()`) and names from outside (`model.parameters()`,
    `args.lr`) are fine."""
    local = scope_bindings(scope.body) if isinstance(scope, cst.FunctionDef) else frozenset()
    return not any(_reads_local(arg.value, local, facts) for arg in call.args)


def _reads_local(node: cst.CSTNode, local: AbstractSet[str], facts: Optional["FileFacts"]) -> bool:
    """`node` reads a name in `local` other than inside a value (`l1.item()`, `float(l1)`)."""
    if isinstance(node, cst.BaseExpression) and value_like(node, facts):
        return False
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("parameters", "named_parameters") and not node.args:
        return False  # `net.parameters()`: leaves (an optimizer refuses a tensor with a graph)
    if isinstance(node, cst.Name):
        return node.value in local
    if isinstance(node, cst.Attribute):
        return _reads_local(node.value, local, facts)
    return any(_reads_local(child, local, facts) for child in node.children)


def _property(function: cst.FunctionDef) -> bool:
    """A method made a property or one of its accessors (`@property`, `@x.setter`, `@cached_property`)."""
    return any(last_name(d.decorator).endswith("property") or last_name(d.decorator) in ("setter", "getter", "deleter") for d in function.decorators)


def _implicit(name: str) -> bool:
    """A special method (`__del__`, `__exit__`, `__call__`, `__repr__`, `__iter__`, ...): Python runs
    it without a call by its name (an object collected, a `with` block left, `fin()`, `print(fin)`,
    `for g in fin`), at a time gradfix does not place (review, round 4)."""
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _runs_later(node: cst.CSTNode, scope: cst.CSTNode, facts: "FileFacts") -> bool:
    """Whether a use of backpropagating code in `scope` may run later than its line: a reference
    handed on (not a call: an argument, a decorator), or a call inside a lambda, which may be handed
    on unnamed (`atexit.register(lambda: loss.backward())`). (A call in a nested `def` runs where
    the function is called or handed on: those uses are seen.)"""
    if isinstance(node, cst.Attribute) and node.attr.value == "grad" and last_name(node.value) not in ("autograd", "func"):
        return False  # `print(w.grad)`: a tensor's gradient read, not `torch.autograd.grad` handed on
    if not isinstance(node, cst.Call):
        return True
    if last_name(node.func) in facts.backpropagators.generators:
        return True  # a generator's body runs at `next(g)`, `g.close()`, its collection: not at its call
    parent = facts.nodes.parents.get(node)
    while parent is not None and parent is not scope:
        if isinstance(parent, cst.Lambda):
            return True
        parent = facts.nodes.parents.get(parent)
    return False


# Constructors of torch objects whose methods run no code of the file by name (`_torch_attribute`),
# by the module path their dotted name resolves to through the file's imports of torch.
_TORCH_CONSTRUCTORS = ("torch.optim.", "torch.nn.", "torch.amp.", "torch.cuda.amp.")


def store_targets(node: cst.CSTNode) -> List[cst.BaseExpression]:
    """The targets a statement or clause stores into, by any form: assignment (tuple, list and star
    targets included), augmented and annotated assignment, `for` and comprehension targets, `with
    ... as`, `del`."""
    if isinstance(node, cst.AssignTarget):
        roots = [node.target]
    elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.Del)):
        roots = [node.target]
    elif isinstance(node, cst.WithItem) and node.asname is not None:
        roots = [node.asname.name]
    else:
        return []
    found: List[cst.BaseExpression] = []
    while roots:
        target = roots.pop()
        if isinstance(target, (cst.Tuple, cst.List)):
            roots.extend(element.value for element in target.elements)
        elif isinstance(target, cst.StarredElement):
            roots.append(target.value)
        else:
            found.append(target)
    return found


def _chain(node: cst.BaseExpression) -> Optional[List[str]]:
    """`a.b.c` as `["a", "b", "c"]`; None for anything but a dotted chain of names."""
    parts: List[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return parts[::-1]


class Backpropagators:
    """The code of a file that may backpropagate when called: its functions and methods whose body
    calls a BACKPROP_NAMES callee or, to a fixed point, another of them.

    A call `g(...)` may reach the file's functions named `g`; `x.m(...)`, on any receiver, its
    methods named `m` (an instance may come from anywhere: a factory, a list, the class itself).
    By name, not by resolution: every function of that name counts (an overestimate, never an
    omission; `opt.step()` counts where a class of the file has a backpropagating `step`).
    """

    def __init__(self, module: cst.CSTNode) -> None:
        functions: Dict[str, List[cst.FunctionDef]] = {}
        methods: Dict[str, List[cst.FunctionDef]] = {}
        assigns: List[cst.Assign] = []

        class Collect(cst.CSTVisitor):
            def __init__(self) -> None:
                super().__init__()
                self.in_class: List[bool] = [False]

            def visit_ClassDef(self, node: cst.ClassDef) -> None:
                self.in_class.append(True)
                if any(not (isinstance(b.value, cst.Name) and b.value.value == "object") for b in node.bases if b.keyword is None) or node.keywords:
                    based.update(id(s) for s in node.body.body if isinstance(s, cst.FunctionDef))

            def leave_ClassDef(self, node: cst.ClassDef) -> None:
                self.in_class.pop()

            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                (methods if self.in_class[-1] else functions).setdefault(node.name.value, []).append(node)
                self.in_class.append(False)

            def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
                self.in_class.pop()

            def visit_Assign(self, node: cst.Assign) -> None:
                assigns.append(node)
                if self.in_class[-1] and isinstance(node.value, cst.Name):
                    # `__call__ = forward` in a class body: the method runs by that name too
                    # (`probe(l1)`; review, round 6).
                    renamed.extend((t.target.value, node.value.value) for t in node.targets if isinstance(t.target, cst.Name))
                elif self.in_class[-1] and isinstance(node.value, cst.Call):
                    # `again = property(run)`, `cached_property(run)`, a descriptor of any maker: the
                    # method may run where the attribute is read, without a call (review, round 6).
                    for arg in node.value.args:
                        if isinstance(arg.value, cst.Name):
                            wrapped.extend((t.target.value, arg.value.value) for t in node.targets if isinstance(t.target, cst.Name))

            def on_visit(self, node: cst.CSTNode) -> bool:
                # Every store into an attribute, by any form (review, round 5: `self.opt, n = Fin(), 0`,
                # `for self.opt in ...`, `with ... as self.opt`); only `x.X = value` alone, or
                # annotated, records its value (None: any other form).
                for target in store_targets(node):
                    if isinstance(target, cst.Attribute):
                        plain = isinstance(node, cst.AnnAssign) and node.value is not None
                        if isinstance(node, cst.AssignTarget):
                            parent = assign_of.get(id(node))
                            plain = parent is not None and len(parent.targets) == 1 and parent.targets[0].target is target
                        value = (assign_of[id(node)].value if isinstance(node, cst.AssignTarget) else node.value) if plain else None  # type: ignore[attr-defined]
                        attribute_values.setdefault(target.attr.value, []).append(value)
                        attribute_stores.append(target)
                if isinstance(node, cst.Assign):
                    for target in node.targets:
                        assign_of[id(target)] = node
                return super().on_visit(node)

            def visit_Name(self, node: cst.Name) -> None:
                if node.value in ("setattr", "vars", "__dict__", "__setattr__"):
                    dynamic.append(node)

            def visit_Import(self, node: cst.Import) -> None:
                for alias in node.names:
                    path = code_of(alias.name).strip()
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        bound, module_path = alias.asname.name.value, path
                    else:
                        bound = module_path = path.split(".")[0]
                    if module_path == "torch" or module_path.startswith("torch."):
                        torch_imports.setdefault(bound, []).append(module_path)

            def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
                if node.module is not None and not isinstance(node.names, cst.ImportStar) and node.relative == ():
                    path = code_of(node.module).strip()
                    if path == "torch" or path.startswith("torch."):
                        for alias in node.names:
                            bound_node = alias.asname.name if alias.asname is not None else alias.name
                            if isinstance(bound_node, cst.Name) and isinstance(alias.name, cst.Name):
                                torch_imports.setdefault(bound_node.value, []).append(f"{path}.{alias.name.value}")
                # `from torch.autograd import grad as agrad`: `agrad(...)` backpropagates.
                if not isinstance(node.names, cst.ImportStar):
                    for alias in node.names:
                        if isinstance(alias.name, cst.Name) and alias.name.value in BACKPROP_NAMES and alias.asname is not None:
                            if isinstance(alias.asname.name, cst.Name):
                                aliases.add(alias.asname.name.value)

        aliases: set = set()
        renamed: List[Tuple[str, str]] = []  # (name, method name) of class-body `name = method`
        wrapped: List[Tuple[str, str]] = []  # (name, method name) of class-body `name = maker(method)`
        based: set = set()  # ids of the methods defined in a class with a base (`class Net(nn.Module)`)
        # What the file stores into attributes, by attribute name (None: a store other than
        # `x.X = value`), every attribute store target, the names the file binds by an import of
        # torch (and the module path each import gives), and whether it may store attributes or
        # bind names by a computed name (`setattr`, `vars`, `__dict__`, `globals()`, ...).
        attribute_values: Dict[str, List[Optional[cst.BaseExpression]]] = {}
        attribute_stores: List[cst.Attribute] = []
        assign_of: Dict[int, cst.Assign] = {}
        torch_imports: Dict[str, List[str]] = {}
        dynamic: List[cst.CSTNode] = []
        walk_tree(module, Collect())
        read_runs: set = set()  # (name, id of the def) run where the attribute `name` is read
        for name, method in renamed + wrapped:
            for definition in list(methods.get(method, [])):
                if all(d is not definition for d in methods.setdefault(name, [])):
                    methods[name].append(definition)
                if (name, method) in wrapped:
                    read_runs.add((name, id(definition)))
        self._attribute_values = attribute_values
        self._attribute_stores = attribute_stores
        self._torch_imports = torch_imports
        self._counts = binding_counts(module)
        self._class_names: set = set()
        for node in nodes_within(module, cst.ClassDef):
            self._class_names |= scope_bindings(node.body)
        self._dynamic = bool(dynamic) or (isinstance(module, cst.Module) and names_by_string(module))
        # Names bound to a way to backpropagate, called later by that name (review, stop 24):
        # `bw = l1.backward`, `g = torch.autograd.grad`, `again = lambda: l1.backward()`,
        # `step = partial(l1.backward)`. By name, anywhere in the file (an overestimate).
        changed = True
        while changed:
            changed = False
            for node in assigns:
                if self._backpropagating_value(node.value, aliases) and not self._gradients_of_call(node.value, aliases):
                    for target in node.targets:
                        if isinstance(target.target, cst.Name) and target.target.value not in aliases:
                            aliases.add(target.target.value)
                            changed = True
        self.aliases = frozenset(aliases)
        self._module = module
        self._direct: Optional[List[cst.CSTNode]] = None
        self._parent_map: Optional[Dict[cst.CSTNode, cst.CSTNode]] = None
        self.functions: set = set()
        self.methods: set = set()
        changed = True
        while changed:
            changed = False
            for table, names in ((functions, self.functions), (methods, self.methods)):
                for name, defs in table.items():
                    if name not in names and any(self.uses(d) for d in defs):
                        names.add(name)
                        changed = True
        # The special methods that may backpropagate (`later_use_reasons`).
        # With them, a property of the file that may backpropagate: it runs where its attribute is read
        # (`fin.again`, `if fin.again:`, `f"{fin.again}"`), which names no call (review, round 5).
        self.implicit_methods: List[cst.FunctionDef] = [
            d for name in sorted(self.methods) for d in methods[name]
            if (_implicit(name) or _property(d) or (name, id(d)) in read_runs) and self.uses(d)
        ]
        # The methods of a class with a base that may backpropagate: the base's code may call them
        # by another name (`nn.Module.__call__` runs `forward`, a base's template method its hooks;
        # review, round 5: `probe(loss)` running a `forward` that backpropagates).
        self.based_methods: List[cst.FunctionDef] = [
            d for name in sorted(self.methods) if not _implicit(name) for d in methods[name] if id(d) in based and self.uses(d)
        ]
        # Generator (and coroutine) functions and methods that may backpropagate: their body runs
        # when the generator is advanced or closed, later than their call (review, round 4).
        self.generators = frozenset(
            d.name.value
            for table in (functions, methods)
            for defs in table.values()
            for d in defs
            if (d.name.value in self.functions or d.name.value in self.methods)
            and (d.asynchronous is not None or nodes_within(d.body, (cst.Yield,)))
        )

    def _gradients_of_call(self, value: cst.BaseExpression, aliases) -> bool:
        """`value` is a call of torch's `torch.autograd.grad` (through names the file binds only by
        imports of torch, and no attribute of a torch module stored: `torch.autograd.grad = mine`)
        whose arguments mention no way to backpropagate: its result is a tuple of tensors, no way to
        backpropagate itself (`gradients = torch.autograd.grad(loss, params)`; iterating it used to
        count as a use of one, the field's GradNorm loop). The call is a backward site of its own."""
        if not isinstance(value, cst.Call) or self._dynamic:
            return False
        if self._torch_path(value.func) != "torch.autograd.grad" or self._stores_into_torch:
            return False
        return not any(self._backpropagating_value(arg.value, aliases) for arg in value.args)

    def _torch_path(self, expr: cst.BaseExpression) -> Optional[str]:
        """The dotted path of torch `expr` names (`nn.Linear` -> `torch.nn.Linear`), through a first
        name the file binds only by imports of torch (`_torch_root`); None for anything else."""
        chain = _chain(expr)
        if chain is None or not self._torch_root(chain[0]):
            return None
        return ".".join([self._torch_imports[chain[0]][0], *chain[1:]])

    @cached_property
    def _stores_into_torch(self) -> bool:
        """Whether the file stores an attribute of a torch module (`torch.autograd.grad = mine`,
        `optim.SGD = Mine`), through a name bound only by imports of torch."""
        return any((stored := _chain(t.value)) is not None and self._torch_root(stored[0]) for t in self._attribute_stores)

    @staticmethod
    def _backpropagating_value(value: cst.BaseExpression, aliases) -> bool:
        """A value that, called, may backpropagate: a `backward`/`grad` attribute or an alias of one,
        or anything (a lambda, a `partial(...)`) that mentions one."""
        found = []

        class Find(cst.CSTVisitor):
            def visit_Attribute(self, node: cst.Attribute) -> None:
                if node.attr.value in BACKPROP_NAMES:
                    found.append(node)

            def visit_Name(self, node: cst.Name) -> None:
                if node.value in aliases:
                    found.append(node)

        walk_tree(value, Find())
        return bool(found)

    def suspect(self, node: cst.BaseExpression) -> bool:
        """Whether calling `node` (a callee or a reference handed on) may backpropagate."""
        if isinstance(node, cst.Name):
            return node.value in self.functions or node.value in self.aliases
        if isinstance(node, cst.Attribute):
            # On any receiver: an instance may come from a factory, a list, the class itself
            # (`make().finish()`, `fins[0].finish()`, `Fin.finish()`; review, round 4). By name: an
            # overestimate for other objects' methods of that name, except on `self.opt` where the
            # file stores only torch objects into `opt` (`self.opt.step()` in a trainer whose own
            # `step` backpropagates).
            # A name bound to a way to backpropagate counts as a method too (`again =
            # staticmethod(torch.Tensor.backward)` in a class body, called `self.again(l1)`; review, round 5).
            if node.attr.value in self.aliases:
                return True
            return node.attr.value in self.methods and not self._torch_attribute(node.value, node.attr.value)
        return False

    def _torch_attribute(self, receiver: cst.BaseExpression, method: str) -> bool:
        """`self.X` where every store into an attribute `X` in the file is `x.X = C(...)` (alone, or
        annotated) with `C` a torch optimizer, module or scaler constructor (`torch.optim.SGD`,
        `nn.Linear`) reached through a name the file binds only by an import of torch; no class of
        the file binds `X` in its body (a class attribute, a method, a property); the file stores no
        attribute of a name bound by an import of torch (`torch.optim.SGD = Mine`), named as a part of
        `C` (`o.SGD = Mine`) or named `method` (`SGD.step = f`, `self.opt.step = f`), and stores no
        attribute and binds no name by a computed name: then torch's object calls no method of the
        file by its name (a closure or hook handed to it is a use of its own, `uses`; review, round 5:
        a class of the file named `nn`, a subclass patched into `torch.optim`)."""
        if not (isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self"):
            return False
        name = receiver.attr.value
        values = self._attribute_values.get(name)
        if self._dynamic or not values or name in self._class_names:
            return False
        parts: set = set()
        for value in values:
            chain = _chain(value.func) if isinstance(value, cst.Call) else None
            path = self._torch_path(value.func) if chain is not None else None
            if path is None or not path.startswith(_TORCH_CONSTRUCTORS):
                return False
            parts.update(chain[1:])  # type: ignore[index]
        if self._stores_into_torch:
            return False
        return not any(target.attr.value in parts or target.attr.value == method for target in self._attribute_stores)

    def _torch_root(self, name: str) -> bool:
        """`name` is bound in the file only by imports of torch, all to one module path."""
        paths = self._torch_imports.get(name, [])
        return bool(paths) and len(set(paths)) == 1 and self._counts.get(name, 0) == len(paths)

    @property
    def direct_sites(self) -> List[cst.CSTNode]:
        """The places in the file that backpropagate themselves, not by calling code of the file
        (whose body is a place of its own): a call of a BACKPROP_NAMES callee or an alias of one,
        `getattr(l, "backward")(...)`, and a way to backpropagate handed on or stored
        (`partial(torch.autograd.backward, l)`, `bw = l.backward`); a tensor's `.grad` read is none.
        Once per file (`outside_backward_reasons`)."""
        if self._direct is None:
            sites: List[cst.CSTNode] = []
            for node in self.uses(self._module):
                if isinstance(node, cst.Call):
                    func = node.func
                    if last_name(func) in BACKPROP_NAMES or (isinstance(func, cst.Name) and func.value in self.aliases) or last_name(func) in ATTRIBUTE_GETTERS:
                        sites.append(node)
                elif _graph_reader(node):
                    sites.append(node)  # a read of a graph's saved tensors (`_GRAPH_READERS`)
                elif self._bound_to_names(node):
                    continue  # `bw = l.backward`, `again = staticmethod(torch.Tensor.backward)`: its calls are sites
                elif isinstance(node, cst.Attribute):
                    if node.attr.value in BACKPROP_NAMES and not (node.attr.value == "grad" and last_name(node.value) not in ("autograd", "func")):
                        sites.append(node)
                elif isinstance(node, cst.Name) and node.value in self.aliases:
                    sites.append(node)
            self._direct = sites
        return self._direct

    def _bound_to_names(self, node: cst.CSTNode) -> bool:
        """`node` (a reference) is in the value of an assignment to plain names only, which are
        aliases (`self.aliases`): whoever calls it calls it by one of them."""
        parents = self._parents()
        parent = parents.get(node)
        while parent is not None and not isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement, cst.Lambda)):
            parent = parents.get(parent)
        return isinstance(parent, cst.Assign) and all(
            isinstance(t.target, cst.Name) and t.target.value in self.aliases for t in parent.targets
        )

    def _parents(self) -> Dict[cst.CSTNode, cst.CSTNode]:
        if self._parent_map is None:
            parents: Dict[cst.CSTNode, cst.CSTNode] = {}

            class Walk(cst.CSTVisitor):
                def on_visit(self, node: cst.CSTNode) -> bool:
                    for child in children(node):
                        parents[child] = node
                    return True

            walk_tree(self._module, Walk())
            self._parent_map = parents
        return self._parent_map

    def uses(self, scope: cst.CSTNode) -> List[cst.CSTNode]:
        """The calls in `scope` that may backpropagate (lambda bodies and nested functions
        included), and the references to code of the file that may, handed on as arguments
        (`opt.step(closure)`: called where it goes), decorators of it, or stored or returned."""
        found: List[cst.CSTNode] = []
        outer = self

        class Collect(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                # `@atexit.register def finish(): loss.backward()`: a decorator is handed the
                # function (review, round 3).
                if node is not scope and (node.name.value in outer.functions or node.name.value in outer.methods):
                    found.extend(d for d in node.decorators if code_of(d.decorator).strip() not in HARMLESS_DECORATORS)

            def visit_Call(self, node: cst.Call) -> None:
                func = node.func
                name = last_name(func)
                if name in BACKPROP_NAMES or outer.suspect(func):
                    found.append(node)
                elif name in ATTRIBUTE_GETTERS and any(string_value(arg.value) in BACKPROP_NAMES for arg in node.args):
                    # `getattr(l1, "backward")()`, `methodcaller("backward")`: a way to backpropagate by
                    # its name (review, stop 24).
                    found.append(node)

            def visit_Arg(self, node: cst.Arg) -> None:
                value = node.value
                if isinstance(value, (cst.Name, cst.Attribute)) and outer.suspect(value):
                    found.append(value)
                elif isinstance(value, cst.Attribute) and value.attr.value in BACKPROP_NAMES:
                    # Handed on to be called elsewhere (review, stop 24): `partial(torch.autograd.backward,
                    # l1)`, `map(torch.Tensor.backward, ls)`, `max(ls, key=torch.Tensor.backward)`.
                    found.append(value)

            # Stored or returned rather than called (`cb = finish`, `handlers["exit"] = finish`,
            # `[finish]`, `return finish`): whoever reads it may call it, at any time (review, round 3).
            def _held(self, value: Optional[cst.BaseExpression]) -> None:
                if isinstance(value, (cst.Name, cst.Attribute)) and outer.suspect(value):
                    found.append(value)
                # `cb = finish if ok else None`, `cb = finish or None`, `(cb := finish)`: the value may
                # be the function itself (review, round 6).
                elif isinstance(value, cst.IfExp):
                    self._held(value.body)
                    self._held(value.orelse)
                elif isinstance(value, cst.BooleanOperation):
                    self._held(value.left)
                    self._held(value.right)
                elif isinstance(value, cst.NamedExpr):
                    self._held(value.value)

            def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
                self._held(node.value)

            def visit_Assign(self, node: cst.Assign) -> None:
                self._held(node.value)

            def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                self._held(node.value)

            def visit_Element(self, node: cst.Element) -> None:
                self._held(node.value)

            def visit_DictElement(self, node: cst.DictElement) -> None:
                self._held(node.value)

            def visit_Return(self, node: cst.Return) -> None:
                self._held(node.value)

            # Any other reference but a call's callee is a use too (review, round 7): it may be
            # called where gradfix does not see a call of its name (`(finish if ok else f)()`,
            # `(finish or f)()`, `finish.__call__()`, `match finish: case cb: cb()`).
            def visit_Name(self, node: cst.Name) -> None:
                self._reference(node)
                if node.value in _GRAPH_READERS and _reads_graph(node, parents, outer._counts):
                    found.append(node)

            def visit_Attribute(self, node: cst.Attribute) -> None:
                self._reference(node)
                if node.attr.value in _GRAPH_READERS and _reads_graph(node, parents, outer._counts):
                    found.append(node)

            def visit_SimpleString(self, node: cst.SimpleString) -> None:
                if string_value(node) in _GRAPH_READERS:
                    found.append(node)  # `getattr(l1, "grad_fn")`: by its name as a string

            def _reference(self, node: cst.BaseExpression) -> None:
                if not outer.suspect(node):
                    return
                parent = parents.get(node)
                if isinstance(parent, cst.Call) and parent.func is node:
                    return  # a call: `visit_Call`
                if isinstance(parent, cst.Attribute) and parent.attr is node:
                    return  # `x.finish`: the attribute is checked as a whole
                if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Param)) and parent.name is node:
                    return
                if isinstance(parent, cst.Arg) and parent.keyword is node:
                    return
                if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.NameItem, cst.AsName, cst.ImportAlias)):
                    return  # a binding of the name, not a read
                found.append(node)

        parents = self._parents()
        walk_tree(scope, Collect())
        seen: set = set()
        return [n for n in found if not (id(n) in seen or seen.add(id(n)))]


# What reaches a graph's nodes, whose saved tensors a backward without `retain_graph=True` frees
# (review, round 8): `l1.grad_fn.next_functions[0][0]._saved_result`, a node called by hand
# (`l1.grad_fn(g)`), `torch.autograd.graph.get_gradient_edge(l1).node`. Reading one after the
# graph is freed raises, as a second backward does: a use of the graph like a backward call.
_GRAPH_READERS = frozenset({"grad_fn", "_grad_fn", "get_gradient_edge"})
# Where a `grad_fn` read reaches no saved tensor: shown or tested (`print(l.grad_fn)`, `if l.grad_fn
# is None`).
_GRAPH_READ_SHOWN = frozenset({"print", "str", "repr", "type", "isinstance", "bool", "format", "id"})


def _graph_reader(node: cst.CSTNode) -> bool:
    """`node` (a use) is a reference to `_GRAPH_READERS`, not a call that may backpropagate."""
    if isinstance(node, cst.SimpleString):
        return string_value(node) in _GRAPH_READERS
    return isinstance(node, (cst.Name, cst.Attribute)) and last_name(node) in _GRAPH_READERS


def _reads_graph(node: cst.BaseExpression, parents, bound: AbstractSet[str] = frozenset()) -> bool:
    """A reference to `_GRAPH_READERS` that may reach a saved tensor: anything but a name being
    bound or defined, an attribute's name (`x.grad_fn` is checked as a whole), a keyword, and a
    `grad_fn` only compared (`is None`), tested (`if`, `not`, an `and`/`or` itself only tested), shown
    (an f-string, `_GRAPH_READ_SHOWN` unless the file binds the name: `bound`)."""
    parent = parents.get(node)
    if isinstance(node, cst.Name):
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return False
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Param, cst.AssignTarget, cst.ImportAlias, cst.AsName)):
            return False
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return False
    # Review, round 9: `and`/`or` give one of their operands, not a bool: `node = l.grad_fn or
    # None` holds the node (and `node.next_functions[0][0]._saved_result` reads a saved tensor).
    # The operation as a whole stands where the `grad_fn` would.
    while isinstance(parent, cst.BooleanOperation):
        node, parent = parent, parents.get(parent)
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.FormattedStringExpression, cst.UnaryOperation, cst.If, cst.While)):
        return False
    if isinstance(parent, cst.Arg) and not parent.star:
        call = parents.get(parent)
        # (the builtin: a function of the file named `format` may read the node's saved tensors;
        # review, round 9)
        return not (
            isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in _GRAPH_READ_SHOWN
            and call.func.value not in bound
        )
    return True


def _adjacent(statements: Sequence[cst.CSTNode], line: Callable[..., int]) -> bool:
    """Each statement is the one before (`a.backward(...); b.backward()`) or starts on the line after
    it ends: nothing stands between them (a comment line does, conservatively)."""
    return all(b is a or line(b) in (line(a, end=True), line(a, end=True) + 1) for a, b in zip(statements, statements[1:]))


def merge_reasons(
    run: BackwardRun, scope: cst.CSTNode, line: Callable[..., int], facts: "FileFacts", classifier=None
) -> List[Reason]:
    """What keeps one backward of the run's sum from being proven exact (empty: a safe merge).

    `scope` is the function (or module) holding the run; `line(node, end=False)`
    gives a node's line; `facts` are the file's (gradient hooks, custom autograd
    Functions, what may backpropagate: `gradfix.analysis.facts`).
    """
    calls = run.calls
    reasons: List[Reason] = []
    inline = [code_of(c.receiver).strip() for c in calls[:-1] if c.loss_name is None and not _in_own_dict(c.receiver, scope)]
    if inline:
        reasons.append(Reason(f"the loss `{inline[0]}` is written inline and would be evaluated later than before", INLINE_LOSS))
    if run.unknown:
        reasons.append(Reason(f"{', '.join(dict.fromkeys(run.unknown))} between the backward calls may step, zero or read gradients", BETWEEN))
    if run.updates:
        names = ", ".join(f"`{u}`" for u in dict.fromkeys(run.updates))
        reasons.append(Reason(f"{names} between the backward calls may modify in place a tensor the retained graph saved", BETWEEN))
    reasons.extend(caught_reasons(calls[0].statement, scope, facts.module, line))
    reasons.extend(grad_mode_reasons(calls[-1].statement, scope, facts))
    if not calls[-1].retains_graph:
        reasons.extend(later_use_reasons(line(calls[-1].call, end=True), scope, line, facts, classifier))
        reasons.extend(outside_backward_reasons(scope, facts, classifier, calls))
        reasons.extend(loop_reasons(calls[-1].statement, scope, facts.module, line))
    reasons.extend(file_merge_reasons(facts, classifier))
    reasons.extend(generator_reasons(facts, not _adjacent([c.statement for c in calls], line)))
    reasons.extend(spelling_reasons([c.statement for c in calls], facts))
    reasons.extend(accelerate_reasons(calls))
    reasons.extend(old_keyword_reasons(calls))
    return reasons


