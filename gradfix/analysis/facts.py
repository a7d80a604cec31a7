"""What the rules ask about a whole file, computed once per parsed file and handed to every rule.

The engine builds one `FileFacts` per parsed file (`engine._run`) and passes it in the
`RuleContext`; each fact is computed on first use, then shared by every rule and every finding of
that file: the names bound once to a number (coefficients, `merge.module_constants`), the
gradient-hook and forward-hook registrations, the custom autograd Functions whose backward is not
proven linear, and the functions and methods that may backpropagate. (Each rule's
`CalleeClassifier` stays its own: GF004 answers metadata questions for the helper code it inlines
as the helper's nodes, so its classifications differ from the other rules'.)
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import AbstractSet, Dict, FrozenSet, List, Optional, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from gradfix.analysis.backward import Backpropagators, accelerator_receivers
from gradfix.analysis.between import gradient_stores
from gradfix.analysis.exprs import binding_counts, code_of, is_literal, may_change_builtins, may_write, is_inplace_call, last_name, name_references, nodes_within, scope_bindings, string_value, format_field_attributes
from gradfix.analysis.functions import function_reasons
from gradfix.analysis.imported_names import SoleImports
from gradfix.analysis.introspection import bound_attribute_names
from gradfix.analysis.loops import assignments, function_parameters
from gradfix.analysis.merge import module_constants
from gradfix.analysis.positions import NodeMaps
from gradfix.analysis.statements import class_defs, walk_statements
from gradfix.analysis.vocabulary import (
    DETERMINISTIC_TENSOR_FUNCTIONS, FRESH_TENSOR_FACTORIES, MODULE_MUTATORS, MUTATING_METHODS, PURE_FUNCTIONS, PURE_TENSOR_METHODS,
    LIGHTNING_MODULES, is_nn_class, names_forward_hook, names_gradient_hook,
)
from gradfix.analysis.walk import walk_tree


# Packages whose checkpoint modules rerun a forward in backward (`torch.utils.checkpoint`,
# `torch.distributed.algorithms._checkpoint`, `deepspeed.checkpointing`, `fairscale.nn.checkpoint`).
_CHECKPOINT_PACKAGES = frozenset({"torch", "deepspeed", "fairscale"})


class FileFacts:
    def __init__(self, module: cst.Module, nodes: NodeMaps) -> None:
        """`nodes`: the positions, statement spans and parents of the module's nodes
        (`analysis.positions.node_maps`)."""
        self.module = module
        self.nodes = nodes
        # What an analysis that needs a rule's `CalleeClassifier` computed about the whole file
        # (`CalleeClassifier.handed_functions`, `backward.file_merge_reasons`): each rule has a
        # classifier of its own, and all of them answer alike for the file's nodes, so the first
        # rule's answer serves the others (stop 33: recomputed per rule and per backward run, it was
        # a third of a small training file's time).
        self.shared: Dict[str, object] = {}

    def line(self, node: cst.CSTNode, end: bool = False) -> int:
        """The line a node of the file starts (or, with `end`, ends) on."""
        position = self.nodes.positions[node]
        return (position.end if end else position.start).line  # type: ignore[attr-defined]

    @cached_property
    def code(self) -> str:
        """The file's text, as libcst writes the module (written by `node_maps`' pass)."""
        return self.nodes.code

    @cached_property
    def sole_imports(self) -> SoleImports:
        """The names bound once in the file, by a top-level import (`imported_names`)."""
        return SoleImports(self.module, self.binding_counts, lambda statement: self.line(statement, end=True))

    @cached_property
    def lines(self) -> List[str]:
        """The file's lines as the positions number them (line N is `lines[N - 1]`)."""
        return self.code.splitlines(keepends=True)

    def text_of(self, first: cst.CSTNode, last: cst.CSTNode) -> str:
        """The source text of the whole lines from `first`'s start to `last`'s end."""
        return "".join(self.lines[self.line(first) - 1 : self.line(last, end=True)])

    @cached_property
    def layout(self):
        """Where the file's statements sit, for turning rewrites into text edits (`fixes.rewrite.Layout`)."""
        from gradfix.fixes.rewrite import Layout

        return Layout(self.module, self.nodes.spans, self.code)

    @cached_property
    def binding_counts(self) -> Dict[str, int]:
        """How many times each name is bound anywhere in the file, by any form (`exprs.binding_counts`)."""
        return binding_counts(self.module)

    @cached_property
    def changes_builtins(self) -> bool:
        """Whether the file may rebind builtins by a form that binds no name of the file
        (`exprs.may_change_builtins`: `builtins.sum = f`, `from m import *`)."""
        return may_change_builtins(self.module)

    @cached_property
    def bound_attribute_names(self) -> Optional[FrozenSet[str]]:
        """The attribute names the file may bind (`introspection.bound_attribute_names`; None: any)."""
        return bound_attribute_names(self.module)

    @cached_property
    def accelerators(self) -> FrozenSet[str]:
        """The names that only ever hold an `accelerate.Accelerator` (`backward.accelerator_receivers`):
        `accelerator.backward(loss, ...)` on one is a backward call."""
        return accelerator_receivers(self.module, self.binding_counts)

    @cached_property
    def constants(self) -> Dict[str, Optional[object]]:
        """Names bound exactly once in the file, to the number they are bound to (`merge.module_constants`)."""
        return module_constants(self.module, self.binding_counts)

    @cached_property
    def gradient_hooks(self) -> List[cst.CSTNode]:
        """Every reference to a gradient-hook registration in the file, in order (imports skipped):
        `p.register_hook(fn)`, `register_multi_grad_hook(ts, fn)`, `reg = p.register_hook`, and the
        name as a string (`getattr(w, "register_hook")(fn)`; review, stop 24). Review, round 8: also
        the name a registration is imported as (`register_multi_grad_hook as on_grads`), which
        `on_grads(ts, fn)` calls by a name no list of hook names has."""
        found = name_references(self.module, names_gradient_hook, strings=True) + _imported_as(self.module, names_gradient_hook)
        return sorted(found, key=self.line)

    @cached_property
    def forward_hooks(self) -> List[cst.CSTNode]:
        """Every reference to a forward-hook registration in the file, in order (imports skipped;
        `getattr(D, "register_forward_hook")` too; an import under another name, review round 8)."""
        found = name_references(self.module, names_forward_hook, strings=True) + _imported_as(self.module, names_forward_hook)
        return sorted(found, key=self.line)

    @cached_property
    def functions_by_name(self) -> Dict[str, List[cst.FunctionDef]]:
        """Every function and method of the file (at any depth), by its name."""
        found: Dict[str, List[cst.FunctionDef]] = {}
        for node in walk_statements(self.module):
            if isinstance(node, cst.FunctionDef):
                found.setdefault(node.name.value, []).append(node)
        return found

    @cached_property
    def attribute_store_names(self) -> Optional[FrozenSet[str]]:
        """The attribute names the file stores into (`x.keep = f`, `for x.k in ...`, `x.k += ...`,
        `del x.k`); None where it may bind any (`bound_attribute_names`)."""
        if self.bound_attribute_names is None:
            return None
        found = set()
        for kind in (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.WithItem, cst.Del):
            for node in nodes_within(self.module, kind):
                if isinstance(node, cst.WithItem):
                    target = node.asname.name if node.asname is not None else None
                else:
                    target = node.target
                if target is not None:
                    found.update(n.attr.value for n in nodes_within(target, cst.Attribute))
        return frozenset(found)

    def base_may_call(self, node: cst.ClassDef, name: str) -> bool:
        """Whether the bases of the class `node` may call its method `name` on an instance with no
        call by name the file shows (`_base_self_calls`): a library base calls it with arguments it
        was handed elsewhere (`UserDict.__init__(initial)` calls `self.update(initial)`; review,
        round 17, GF005's callers)."""
        if not any(not (isinstance(b.value, cst.Name) and b.value.value == "object") for b in node.bases):
            return False
        calls = self._base_self_calls(node, set())
        return calls is None or name in calls

    def _base_self_calls(self, node: cst.ClassDef, seen: set) -> Optional[FrozenSet[str]]:
        """The plain-named methods the bases of the class `node` may call on an instance of it with
        no call by name the file shows (review, round 14), None for any: a library class's special
        methods, which builtins run between the passes (`print`, `len`, `list`), call methods of the
        instance (`Counter.__repr__` its `most_common`, `OrderedDict.__repr__` its `items`,
        `MutableSequence.append` its `insert`; `Thread.start` its `run`, in another thread). Proven
        for `object`, the builtin exceptions, the classes of the file (their own bases in turn),
        `abc.ABC`, `typing.Generic` and torch's: an `nn.Module` (Lightning's too) calls the methods
        `_MODULE_SELF_CALLS` lists, a `Dataset`, an autograd `Function` none, an `Optimizer` what
        `_LIBRARY_SELF_READS` lists (`_PLAIN_LIBRARY_BASES`). Any other base may call any method.
        Review, round 15: a name the base's special methods read on the instance counts as one it
        calls, for a property of the file by that name runs its getter at the read (`print(opt)`
        runs `Optimizer.__repr__`, which reads `self.param_groups`)."""
        if id(node) in seen:
            return frozenset()
        seen.add(id(node))
        found: set = set()
        for base in node.bases:
            value = base.value
            if isinstance(value, cst.Subscript):
                value = value.value  # `Generic[T]`, `Dataset[int]`: the class subscripted
            dotted = get_full_name_for_node(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
            if dotted is None or base.keyword is not None or base.star:
                return None
            if isinstance(value, cst.Name) and dotted in self.class_names:
                for other in self.class_names[dotted]:
                    calls = self._base_self_calls(other, seen)
                    if calls is None:
                        return None
                    found |= calls
                continue
            if isinstance(value, cst.Name) and dotted in _PLAIN_BUILTIN_BASES and dotted not in self.binding_counts and not self.changes_builtins:
                continue
            qualified = self.sole_imports.qualified(dotted, self.line(node)) or ""
            if is_nn_class(qualified) or qualified in LIGHTNING_MODULES:
                found |= _MODULE_SELF_CALLS
            elif qualified in _PLAIN_LIBRARY_BASES:
                found |= _LIBRARY_SELF_READS.get(qualified, frozenset())
            else:
                return None
        return frozenset(found)

    @cached_property
    def class_names(self) -> Dict[str, List[cst.ClassDef]]:
        """The file's classes, by name (every class statement, nested ones too)."""
        found: Dict[str, List[cst.ClassDef]] = {}
        for node in class_defs(self.module):
            found.setdefault(node.name.value, []).append(node)
        return found

    @cached_property
    def implicit_dunders(self) -> List[cst.CSTNode]:
        """The special methods of the file's classes that Python runs without a call by name
        (`len(x)`, `x[i]`, `if x`, operators, `x.a = v`, f-strings) and that may change state:
        `__setattr__`, `__delattr__`, `__set__`, `__delete__` always; any other (not `__init__`,
        `__call__`, `__enter__`, `__exit__` and the like: `_CALLED_DUNDERS`, whose call sites are
        checked where they stand) whose body stores an
        attribute or an item, updates in place, declares `global`/`nonlocal`, deletes, or calls
        `setattr`. Between two evaluations or passes they may rebind an operand (review, stop 24).

        Only the first by line (a list of one, or none): the one reason the rules give names it
        (`backward.implicit_dunder_reasons`). The candidates are listed first, cheaply, and their
        bodies analysed in line order up to the first that may change state (stop 35: analysing
        every special method of a big file was a sixth of its GF002 finding's cost)."""
        # node -> the tests of its candidacies (None: it counts as it is), in the order first listed
        candidates: Dict[int, Tuple[cst.CSTNode, List[Optional[cst.FunctionDef]]]] = {}

        def add(node: cst.CSTNode, body: Optional[cst.FunctionDef] = None) -> None:
            # `body`: the method whose `_changes_state` decides; None: counts whatever its body.
            candidates.setdefault(id(node), (node, []))[1].append(body)

        for node in class_defs(self.module):
            methods = {s.name.value: s for s in walk_statements(node.body) if isinstance(s, cst.FunctionDef)}
            in_methods = {id(n) for m in methods.values() for n in walk_statements(m.body)}
            based = any(not (isinstance(b.value, cst.Name) and b.value.value == "object") for b in node.bases)
            # Review, round 14: what the bases' own code may call on an instance by a plain name
            # (None: any method): `print(tally)` runs `Counter.__repr__`, which calls
            # `self.most_common()`, an override of the file.
            self_calls = self._base_self_calls(node, set()) if based else frozenset()
            # Review, round 12: a class decorator (`@dataclass`, attrs) may generate special methods
            # (`__repr__`, `__eq__`, `__hash__`, order) that read each field, a property of the class
            # too: `print(s)` runs its getter with no call by name. Every field the body annotates.
            generated = bool(node.decorators)
            fields = {
                small.target.value
                for line in node.body.body if isinstance(line, cst.SimpleStatementLine)
                for small in line.body if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
            }
            for statement in walk_statements(node.body):
                if isinstance(statement, cst.FunctionDef):
                    name = statement.name.value
                    inherited = (self_calls is None or name in self_calls) and name not in _CALLED_DUNDERS
                    if not (_implicit(name) or inherited or generated and name in fields):
                        continue
                    add(statement, None if name in ("__setattr__", "__delattr__", "__set__", "__delete__") else statement)
                elif isinstance(statement, cst.SimpleStatementLine) and id(statement) not in in_methods:
                    # A special method bound by a class-body assignment (review, round 7): `__radd__ =
                    # kept.append`, `__radd__ = list.append`, a lambda: code gradfix does not read. An
                    # alias of a method of the class (`__radd__ = __add__`) is that method; a literal
                    # (`__hash__ = None`, `__slots__ = ("a",)`) is no code.
                    for small in statement.body:
                        for target, value in _assigned(small):
                            if isinstance(target, cst.Name) and _implicit(target.value) and target.value not in _NAMES_NO_CODE:
                                if not _inert_dunder_value(value, methods, self):
                                    add(small)
            # Review, round 14: and the methods it inherits from classes of the file, which its other
            # bases' code calls as surely (`class Tally(Watched, Counter)`: `Watched.most_common`).
            if self_calls is None or self_calls:
                for ancestor in self._file_ancestors(node, set()):
                    for statement in ancestor.body.body:
                        if not isinstance(statement, cst.FunctionDef) or statement.name.value in _CALLED_DUNDERS:
                            continue
                        if self_calls is None or statement.name.value in self_calls:
                            add(statement, statement)
        # `Acc.__radd__ = record`, anywhere: a special method set on a class from outside it.
        for target in nodes_within(self.module, cst.AssignTarget):
            if isinstance(target.target, cst.Attribute) and _implicit(target.target.attr.value) and target.target.attr.value not in _NAMES_NO_CODE:
                add(target.target)
        # `setattr(Acc, "__radd__", kept.append)`: the same by its name as a literal.
        for call in nodes_within(self.module, cst.Call):
            if last_name(call.func) in ("setattr", "__setattr__"):
                names = [string_value(a.value) for a in call.args if isinstance(a.value, cst.SimpleString)]
                if any(n is not None and _implicit(n) and n not in _NAMES_NO_CODE for n in names):
                    add(call)
        # In line order (ties in the order listed: `sorted` is stable), the first that counts.
        for node, tests in sorted(candidates.values(), key=lambda entry: self.line(entry[0])):
            if any(body is None or _changes_state(body, self) for body in tests):
                return [node]
        return []

    def _file_ancestors(self, node: cst.ClassDef, seen: set) -> List[cst.ClassDef]:
        """The classes of the file that `node` is based on, by name, and theirs in turn."""
        out: List[cst.ClassDef] = []
        for base in node.bases:
            if isinstance(base.value, cst.Name):
                for other in self.class_names.get(base.value.value, ()):
                    if id(other) not in seen:
                        seen.add(id(other))
                        out.append(other)
                        out.extend(self._file_ancestors(other, seen))
        return out

    @cached_property
    def parametrizations(self) -> List[cst.CSTNode]:
        """Every mention of torch's parametrizations (`register_parametrization`, `parametrize.cached`,
        `weight_norm`, `spectral_norm`, `orthogonal`), strings too: a parametrized module may keep
        its computed weight, with its graph, between calls (`parametrize.cached()`)."""
        words = ("register_parametrization", "cached", "parametrize", "parametrizations")
        if not _may_name(self.code, words):
            return []  # (a walk of every node, spared)
        return name_references(self.module, words.__contains__, strings=True)

    @cached_property
    def torch_function_overrides(self) -> List[cst.CSTNode]:
        """Every mention of `__torch_function__` / `__torch_dispatch__` (strings too): a class of the
        file may then pass for a tensor in torch's functions without being one."""
        words = ("__torch_function__", "__torch_dispatch__")
        if not _may_name(self.code, words):
            return []  # (a walk of every node, spared)
        return name_references(self.module, words.__contains__, strings=True)

    @cached_property
    def tensor_subclasses(self) -> List[cst.CSTNode]:
        """The classes of the file that may subclass a tensor (a base whose name ends in `Tensor` or
        `Parameter`): any tensor method they define runs in place of torch's on their instances.
        Review, round 7: also a base that may name one under another name (`TT = torch.Tensor`,
        `from torch import Tensor as Base`, `type(torch.zeros(1))`: `_may_name_tensor_class`), and a
        class made by a call (`type("Logged", (torch.Tensor,), ns)`, `types.new_class`), whose bases
        gradfix does not read."""
        found: List[cst.CSTNode] = []
        bindings = _class_name_bindings(self.module, self.binding_counts)
        for node in walk_statements(self.module):
            if isinstance(node, cst.ClassDef) and any(_may_name_tensor_class(base.value, bindings, set()) for base in node.bases):
                found.append(node)
        for call in nodes_within(self.module, cst.Call):
            name = last_name(call.func)
            if (name == "type" and len(call.args) >= 3) or name in ("new_class", "prepare_class") or any(a.star for a in call.args if name == "type"):
                found.append(call)
        found.sort(key=self.line)
        return found

    @cached_property
    def data_overrides(self) -> List[cst.CSTNode]:
        """The classes of the file that may give `x.data` another meaning on a tensor: a subclass of
        a tensor (a base whose name ends in `Tensor` or `Parameter`: it may define `data` as a
        property that keeps the gradient), or a class whose body binds `data`, `__getattr__` or
        `__getattribute__` (at any depth of the body, nested functions aside)."""
        found: List[cst.CSTNode] = []
        for node in class_defs(self.module):
            bases = [code_of(base.value).strip().rsplit(".", 1)[-1] for base in node.bases]
            if any(base.endswith(("Tensor", "Parameter")) for base in bases) or _binds(node.body, _DATA_NAMES):
                found.append(node)
        return found

    @cached_property
    def computed_attributes(self) -> "tuple[FrozenSet[str], bool]":
        """The attribute names a class of the file may compute on each read, and whether one may
        compute any. A name: a def in a class body (at any depth of it: under `if`, `try`)
        decorated by anything but `_PLAIN_DECORATORS` (`@property`, `@cached`, `@_prop`: a
        decorator may make a descriptor); a class-body binding to a call of something whose name
        ends in `property` or is bound to one (`reg = _prop(f)`); an attribute set on a class of
        the file from outside it (`VQ.reg = property(f)`, `setattr(VQ, "reg", ...)`). Any name:
        a class defining `__getattr__`, `__getattribute__` or `__get__`, or `setattr` on a class
        with a computed name. Two reads of `self.S` may then be two values, and a read runs code
        (review, stop 24)."""
        names = set()
        anything = False
        aliases = _property_aliases(self.module) if "property" in self.code else frozenset()
        classes = {node.name.value for node in class_defs(self.module)}
        for node in class_defs(self.module):
            for statement in walk_statements(node.body):
                if isinstance(statement, cst.FunctionDef):
                    if statement.name.value in ("__getattr__", "__getattribute__", "__get__"):
                        anything = True
                    texts = [code_of(d.decorator).strip() for d in statement.decorators]
                    if any(t not in _PLAIN_DECORATORS for t in texts):
                        names.add(statement.name.value)
                elif isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                    for small in statement.body:
                        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                            callee = last_name(small.value.func)
                            if callee.endswith("property") or callee in aliases:
                                names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
        if any(isinstance(s, cst.FunctionDef) and s.name.value in ("__getattr__", "__dir__") for s in self.module.body):
            anything = True  # PEP 562: `m.z` on this module may compute a value on each read (review, stop 24)
        for small in _small_statements(self.module, cst.Assign):
            for target in small.targets:  # type: ignore[attr-defined]
                if isinstance(target.target, cst.Attribute) and isinstance(target.target.value, cst.Name) and target.target.value.value in classes:
                    names.add(target.target.attr.value)
        for call in nodes_within(self.module, cst.Call) if "setattr" in self.code else ():
            if isinstance(call.func, cst.Name) and call.func.value == "setattr" and call.args:
                if isinstance(call.args[0].value, cst.Name) and call.args[0].value.value in classes:
                    key = string_value(call.args[1].value) if len(call.args) > 1 else None
                    if key is not None:
                        names.add(key)
                    else:
                        anything = True
        return frozenset(names), anything

    @cached_property
    def property_getters(self) -> "tuple[Dict[str, Optional[List[cst.FunctionDef]]], bool]":
        """For each name of `computed_attributes`, the code a read of it runs, where gradfix reads it:
        the defs of that name decorated by `@property` alone (the builtin); None where the name is
        made otherwise (another decorator, `reg = property(f)`, `VQ.reg = ...`, `setattr(VQ, "reg",
        ...)`: code not read). And whether a class of the file gets an attribute by a computed name
        (`setattr(VQ, name, ...)`: any read may run code). A def decorated `@reg.setter` or
        `@reg.deleter` runs on a store or a deletion only (review, round 9: `_reads_computed`)."""
        found: Dict[str, Optional[List[cst.FunctionDef]]] = {}
        names, _ = self.computed_attributes
        plain_property = "property" not in self.binding_counts and not self.changes_builtins
        for node in class_defs(self.module):
            for statement in walk_statements(node.body):
                if not isinstance(statement, cst.FunctionDef) or statement.name.value not in names:
                    continue
                name = statement.name.value
                texts = [code_of(d.decorator).strip() for d in statement.decorators]
                if all(t in (f"{name}.setter", f"{name}.deleter") for t in texts):
                    found.setdefault(name, [])
                elif texts == ["property"] and plain_property:
                    getters = found.setdefault(name, [])
                    if getters is not None:
                        getters.append(statement)
                else:
                    found[name] = None
        defined = {n for n, v in found.items() if v}
        for name in names - defined:
            found[name] = None  # (made by an assignment or `setattr`: code gradfix does not read)
        # A name both a `@property` def and bound otherwise (`VQ.reg = property(f)` after the class).
        for small in _small_statements(self.module, cst.Assign):
            for target in small.targets:  # type: ignore[attr-defined]
                if isinstance(target.target, cst.Attribute) and target.target.attr.value in names:
                    found[target.target.attr.value] = None
        for node in class_defs(self.module):
            for name in scope_bindings(node.body):
                if name in names and not any(
                    isinstance(s, cst.FunctionDef) and s.name.value == name for s in walk_statements(node.body)
                ):
                    found[name] = None
        computed_setattr = any(
            isinstance(call.func, cst.Name) and call.func.value == "setattr" and len(call.args) > 1
            and string_value(call.args[1].value) is None
            for call in (nodes_within(self.module, cst.Call) if "setattr" in self.code else ())
        )
        return found, computed_setattr

    def computed_path(self, path: Tuple[str, ...]) -> bool:
        """Whether reading `path` (`("self", "S")`) may compute an attribute anew (`computed_attributes`)."""
        names, anything = self.computed_attributes
        return len(path) > 1 and (anything or bool(names & set(path[1:])))

    @cached_property
    def unpreserved_checkpoints(self) -> List[cst.Call]:
        """Activation checkpoints that recompute their forward in each backward pass without the
        random state of the first run: `checkpoint(f, x, preserve_rng_state=False)` (or the keyword
        passed in `**kwargs`), `checkpoint_sequential` alike. Two backward passes then draw two
        dropout masks, one pass one (review, stop 24)."""
        found: List[cst.Call] = []

        class Find(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                if last_name(node.func) not in ("checkpoint", "checkpoint_sequential"):
                    return
                for arg in node.args:
                    if arg.star == "**" or (
                        arg.keyword is not None and arg.keyword.value == "preserve_rng_state"
                        and not (isinstance(arg.value, cst.Name) and arg.value.value == "True")
                    ):
                        found.append(node)
                        return

        walk_tree(self.module, Find())
        return found

    @cached_property
    def checkpoint_uses(self) -> List[cst.CSTNode]:
        """Activation checkpoints however spelled, in the file's order: a call named `checkpoint` or
        `checkpoint_sequential`, an import from a checkpoint module of torch (or DeepSpeed,
        FairScale: `from torch.utils.checkpoint import checkpoint as ckpt`, then used under any
        name, through `functools.partial`), `torch.utils.checkpoint` as an attribute, and anything
        named `*checkpointing*` (`model.gradient_checkpointing_enable()`,
        `apply_activation_checkpointing`). A checkpoint reruns its forward in every backward pass:
        state that forward changes (BatchNorm running statistics, spectral norm's estimate, dropout
        masks drawn without the first run's random state) is changed once per pass, so two passes
        and one merged pass leave other state and, from spectral norm on, other gradients (review,
        round 3). gradfix does not prove the rerun forward stateless: any use counts."""
        found: List[cst.CSTNode] = []

        def checkpoint_module(dotted: str) -> bool:
            return dotted.split(".")[0] in _CHECKPOINT_PACKAGES and "checkpoint" in dotted

        class Find(cst.CSTVisitor):
            def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
                if node.module is None or node.relative:
                    return
                module = code_of(node.module).strip()
                names = [] if isinstance(node.names, cst.ImportStar) else [code_of(alias.name).strip() for alias in node.names]
                if checkpoint_module(module) or any(checkpoint_module(f"{module}.{name}") for name in names):
                    found.append(node)

            def visit_Import(self, node: cst.Import) -> None:
                if any(checkpoint_module(code_of(alias.name).strip()) for alias in node.names):
                    found.append(node)

            def visit_Attribute(self, node: cst.Attribute) -> None:
                # On any receiver (`ckpt.checkpoint`, where `ckpt = importlib.import_module(...)`;
                # review, round 4): an overestimate for other objects' `checkpoint` attributes.
                attr = node.attr.value
                if "checkpointing" in attr.lower() or attr in ("checkpoint", "checkpoint_sequential"):
                    found.append(node)

            def visit_SimpleString(self, node: cst.SimpleString) -> None:
                # A checkpoint module named by a string (`importlib.import_module("torch.utils.checkpoint")`,
                # `sys.modules[...]`; review, round 4).
                text = string_value(node)
                if text is not None and (checkpoint_module(text) or "utils.checkpoint" in text or "checkpointing" in text):
                    found.append(node)

            def visit_Name(self, node: cst.Name) -> None:
                if "checkpointing" in node.value.lower():
                    found.append(node)

            def visit_Call(self, node: cst.Call) -> None:
                if last_name(node.func) in ("checkpoint", "checkpoint_sequential"):
                    found.append(node)

        walk_tree(self.module, Find())
        return sorted(found, key=self.line)

    @cached_property
    def gradient_stores(self) -> List[cst.CSTNode]:
        """Where the file keeps a `.grad` tensor elsewhere than in a plain local name
        (`between.gradient_stores`)."""
        return gradient_stores(self.module) if "grad" in self.code else []

    @cached_property
    def saved_tensor_hooks(self) -> List[cst.CSTNode]:
        """Saved-tensor hooks however spelled, in the file's order: any name, attribute or string
        that mentions `saved_tensors` and `hook` (`torch.autograd.graph.saved_tensors_hooks(pack, unpack)`, a
        subclass of it, `register_saved_tensors_hooks`, `_register_saved_tensors_default_hooks`)
        and `save_on_cpu`. The unpack hook runs once per backward pass for each saved tensor it
        gives back: two passes run it twice, one merged pass once (a random decompression, a
        counter; review, round 4). By its words, an overestimate: no hook is proven harmless."""
        found: List[cst.CSTNode] = []

        def mentions(text: Optional[str]) -> bool:
            # Not `ctx.saved_tensors` (a custom Function's saved tensors): a hook's words only.
            return text is not None and (("saved_tensors" in text and "hook" in text) or "save_on_cpu" in text)

        class Find(cst.CSTVisitor):
            def visit_Name(self, node: cst.Name) -> None:
                if mentions(node.value):
                    found.append(node)

            def visit_SimpleString(self, node: cst.SimpleString) -> None:
                if mentions(string_value(node)):
                    found.append(node)

        walk_tree(self.module, Find())
        return sorted(found, key=self.line)

    @cached_property
    def function_reasons(self) -> List[str]:
        """Why a merge of backward passes is not proven exact in this file because of a custom
        autograd Function it defines (`functions.function_reasons`); empty when none."""
        return function_reasons(self.module, self.line)

    @cached_property
    def backpropagators(self) -> Backpropagators:
        """The functions and methods of the file that may backpropagate when called."""
        return Backpropagators(self.module)


_DATA_NAMES = frozenset({"data", "__getattr__", "__getattribute__"})


# A backslash in a string literal that may stand for a letter, a digit or `_` (`\x5f`, `\u0066`,
# `\N{LOW LINE}`, `\137`) or join two lines (a backslash before a line end).
_SPELLING_ESCAPE = re.compile(r"\\(?:[0-7xuUN]|\r?\n)")


def _may_name(code: str, words: Tuple[str, ...]) -> bool:
    """Whether a name or string literal of `code` may stand for one of `words` (`name_references`
    with `strings`): a word is in the text, or an escape may spell one in a string literal."""
    return any(word in code for word in words) or _SPELLING_ESCAPE.search(code) is not None


def _binds(body: cst.CSTNode, names: frozenset) -> bool:
    """Whether a class body binds one of `names` in its own scope (`exprs.scope_bindings`)."""
    return any(name in names for name in scope_bindings(body))


# Decorators that make no descriptor of a method: a read of the name is a plain lookup.
_PLAIN_DECORATORS = frozenset({
    "staticmethod", "classmethod", "abstractmethod", "abc.abstractmethod", "override", "typing.override",
    "torch.no_grad()", "torch.enable_grad()", "torch.inference_mode()", "torch.compile", "torch.jit.script",
    "torch.jit.export", "torch.jit.ignore", "torch.jit.unused", "functools.wraps",
})
# Special methods whose calls are calls (`Cls(...)`): the call sites are checked as calls.
# (`with` statements, `obj(...)` calls and decorators are checked where they stand, as unknown code.)
# (Not `__class_getitem__` nor `__set_name__`: `M[0]` runs the one, a class body holding an instance
# made before (`class K: d = dd`) the other, with no call gradfix sees; review, round 10.)
_CALLED_DUNDERS = frozenset({
    "__init__", "__new__", "__init_subclass__", "__post_init__",
    "__enter__", "__exit__", "__aenter__", "__aexit__", "__call__",
})


def _property_aliases(module: cst.Module) -> FrozenSet[str]:
    """Names the file binds to `property` or a `...property` (`_prop = property`, `from functools
    import cached_property as cached`)."""
    found = set()
    for small in _small_statements(module, cst.Assign):
        if last_name(small.value).endswith("property"):  # type: ignore[attr-defined]
            found.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))  # type: ignore[attr-defined]
    for node in _small_statements(module, cst.ImportFrom):
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if last_name(alias.name).endswith("property") and alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    found.add(alias.asname.name.value)
    return frozenset(found)


def _imported_as(module: cst.Module, matches) -> List[cst.CSTNode]:
    """The names the file imports a matching name as, under another name (`from torch.autograd.graph
    import register_multi_grad_hook as on_grads`: the `on_grads` of the import): uses of it elsewhere
    carry no matching name (review, round 8)."""
    found: List[cst.CSTNode] = []
    for alias in nodes_within(module, cst.ImportAlias):
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name) and matches(last_name(alias.name)):
            if alias.asname.name.value != last_name(alias.name):
                found.append(alias.asname.name)
    return found


def _small_statements(module: cst.Module, kind: type) -> List[cst.BaseSmallStatement]:
    """The small statements of type `kind` anywhere in the module (a walk of statements only)."""
    return [
        small
        for statement in walk_statements(module)
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        for small in statement.body
        if isinstance(small, kind)
    ]


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


# Review, round 11: methods with no dunder name that Python calls by protocol, with no call by
# name: `keys` (then `__getitem__`) by mapping unpacking (`{**m}`, `f(**m)`, `"{a}".format(**m)`)
# and `dict(m)`; `extra_repr` by torch's `Module.__repr__` (`print(net)`). (`write`/`flush` of a
# stream, and a logging handler's, are the print's and the logger's: `between._writes_through_file`.)
_PROTOCOL_METHODS = frozenset({"keys", "extra_repr"})
# Review, round 12: torch's `nn.Module` calls these methods of its own on `self` (or on its
# children) from its other methods: `print(net)` runs `_get_name` and `extra_repr`, `net.eval()`
# runs `train`, `net.to(d)` runs `_apply`, `net.zero_grad()` runs `parameters`, `named_parameters`,
# `named_modules`, `state_dict()` runs `_save_to_state_dict` and `get_extra_state`. An override in
# a class of the file with a base (which may be a Module) runs with no call by its name. Derived
# from torch 2.x's `Module` source (the `self.m(...)`, `module.m(...)` calls of its methods), less
# `forward` (run by `net(x)`, a call gradfix judges where it stands) and the hook getters, with
# `buffers` and `modules` (the same walks, public).
_MODULE_SELF_CALLS = frozenset({
    "_apply", "_get_name", "_load_from_state_dict", "_named_members", "_save_to_state_dict", "add_module",
    "apply", "children", "extra_repr", "get_extra_state", "get_submodule", "named_buffers", "named_children",
    "named_modules", "named_parameters", "parameters", "register_buffer", "register_parameter", "set_extra_state",
    "state_dict", "train", "buffers", "modules",
    # Review, round 15: and the attributes its special methods read on `self` (`__repr__`, `__dir__`,
    # `__setattr__`, `__delattr__`, `__setstate__`, from torch 2.x's source), which a property of the
    # file by the name overrides: its getter runs at `print(net)`, `dir(net)`, `net.x = v`.
    "_buffers", "_modules", "_non_persistent_buffers_set", "_parameters",
    "_backward_hooks", "_backward_pre_hooks", "_forward_hooks", "_forward_hooks_always_called",
    "_forward_hooks_with_kwargs", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
    "_is_full_backward_hook", "_load_state_dict_post_hooks", "_load_state_dict_pre_hooks",
    "_state_dict_hooks", "_state_dict_pre_hooks",
})
# Review, round 14: bases proven to call no plain-named method of a subclass (`FileFacts._base_self_calls`):
# `object` and the builtin exceptions (whose `__str__`/`__repr__` read `args`), torch's datasets,
# `abc.ABC` and `typing.Generic` (which add no method), torch's autograd Function and Optimizer.
# (Not `threading.Thread`, whose `start()` runs `run` in another thread, concurrently with what
# stands between the passes; nor the collections, whose special methods call `most_common`, `items`,
# `insert`.)
_PLAIN_BUILTIN_BASES = frozenset({"object"}) | frozenset(
    n for n, v in vars(__import__("builtins")).items() if isinstance(v, type) and issubclass(v, BaseException)
) - {"BaseExceptionGroup", "ExceptionGroup"}  # (whose `split`/`subgroup` call `self.derive(...)`)
_PLAIN_LIBRARY_BASES = frozenset({
    "torch.utils.data.Dataset", "torch.utils.data.IterableDataset", "torch.utils.data.dataset.Dataset", "abc.ABC",
    "typing.Generic",
    # A custom autograd Function's `forward`/`setup_context` run at its `apply` calls, which are
    # judged where they stand, and its `backward` in a backward pass (`functions.function_reasons`).
    "torch.autograd.Function", "torch.autograd.function.Function",
    # An optimizer calls its own methods from its constructor, `step`, `zero_grad` and the state-dict
    # methods (calls by name: barriers, or unknown code, between the passes); its `__repr__` none.
    "torch.optim.Optimizer", "torch.optim.optimizer.Optimizer",
})
# Review, round 15: what the special methods of a base of `_PLAIN_LIBRARY_BASES` read or call on the
# instance by a plain name (from torch 2.x's source), which a method or a property of the file by
# that name overrides: `Optimizer.__repr__` (`print(opt)`) reads `param_groups`, `__getstate__`
# (`copy.copy(opt)`, pickling) `defaults`, `state`, `param_groups`, `__setstate__` calls
# `_patch_step_function` and reads the hooks' dicts. (A `Dataset`'s `__add__` reads none; `Function`
# has no special method an instance runs; `ABC`, `Generic` none.) A base missing here reads none.
_OPTIMIZER_SELF_READS = frozenset({
    "param_groups", "defaults", "state", "_patch_step_function",
    "_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
})
_LIBRARY_SELF_READS: Dict[str, FrozenSet[str]] = {
    "torch.optim.Optimizer": _OPTIMIZER_SELF_READS, "torch.optim.optimizer.Optimizer": _OPTIMIZER_SELF_READS,
}
# Special names whose binding is no code: nothing Python runs reads them as code. Python 2's
# `__metaclass__` in a class body is an attribute like any other in Python 3 (held-out corpus, stop 35:
# `__metaclass__ = abc.ABCMeta` was named as a special method that runs without a call).
_NAMES_NO_CODE = frozenset({"__doc__", "__module__", "__qualname__", "__name__", "__metaclass__"})


def _implicit(name: str) -> bool:
    """`name` is a special method Python runs without a call by name (`_CALLED_DUNDERS` aside), or
    a protocol method (`_PROTOCOL_METHODS`)."""
    return (_dunder(name) or name in _PROTOCOL_METHODS) and name not in _CALLED_DUNDERS


def _assigned(small: cst.BaseSmallStatement) -> List[Tuple[cst.BaseExpression, Optional[cst.BaseExpression]]]:
    """(target, value) for each target an assignment statement binds (tuple targets: value None)."""
    if isinstance(small, cst.Assign):
        return [(t.target, small.value if isinstance(t.target, cst.Name) else None) for t in small.targets]
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        return [(small.target, small.value)]
    if isinstance(small, cst.AugAssign):
        return [(small.target, None)]
    return []


def _inert_dunder_value(value: Optional[cst.BaseExpression], methods: Dict[str, cst.FunctionDef], facts: "FileFacts") -> bool:
    """A class-body value bound to a special method's name that runs no code that may change state:
    a literal or a tuple/list of literals, or the name of a method of the class that changes none."""
    if value is None:
        return False
    if is_literal(value):
        return True
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(not isinstance(e, cst.StarredElement) and is_literal(e.value) for e in value.elements)
    if isinstance(value, cst.Name) and value.value in methods:
        method = methods[value.value]
        return not _changes_state(method, facts)
    return False


def _class_name_bindings(module: cst.Module, counts: Dict[str, int]) -> Dict[str, List[Optional[cst.BaseExpression]]]:
    """What each name of the file may be bound to, for reading class bases (`_may_name_tensor_class`):
    an assignment's value, an import's imported name (`from torch import Tensor as Base`: `Tensor`),
    a class statement's bases (as a tuple), None for any other binding form."""
    found: Dict[str, List[Optional[cst.BaseExpression]]] = {}
    for name in counts:  # (the file's `binding_counts`)
        found[name] = []
    covered: Dict[str, int] = {}

    def add(name: str, value: Optional[cst.BaseExpression], weight: int = 1) -> None:
        found.setdefault(name, []).append(value)
        covered[name] = covered.get(name, 0) + weight

    for node in nodes_within(module, cst.Assign):
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                add(target.target.value, node.value)
    for node in nodes_within(module, cst.ImportAlias):
        if node.asname is not None and isinstance(node.asname.name, cst.Name):
            add(node.asname.name.value, cst.Name(last_name(node.name) or "_"))
        elif isinstance(node.name, cst.Name):
            add(node.name.value, node.name)
    for node in walk_statements(module):
        if isinstance(node, cst.ClassDef):
            add(node.name.value, cst.Tuple([cst.Element(b.value) for b in node.bases]))
    for name, values in found.items():
        if counts.get(name, 0) != covered.get(name, 0):
            values.append(None)  # bound by another form too (a parameter, a loop target, `global`...)
    return found


def _may_name_tensor_class(expr: cst.BaseExpression, bindings, seen: set) -> bool:
    """Whether a class base may be a tensor class: a name or attribute ending in `Tensor` or
    `Parameter`, a name of the file bound to one (`TT = torch.Tensor`, an import under another
    name, a class of the file that subclasses one), a call's result (`type(torch.zeros(1))`; not
    `namedtuple(...)`), or anything else gradfix does not read. A subscript is its value's
    (`Generic[T]`); a name or attribute the file does not bind is the class it names."""
    if isinstance(expr, cst.Subscript):
        return _may_name_tensor_class(expr.value, bindings, seen)
    if isinstance(expr, cst.Tuple):
        return any(_may_name_tensor_class(e.value, bindings, seen) for e in expr.elements)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        name = last_name(expr)
        if name.endswith(("Tensor", "Parameter")):
            return True
        if not isinstance(expr, cst.Name) or expr.value in seen or expr.value not in bindings:
            return False  # `nn.Module`, `object`, a class of another module
        seen.add(expr.value)
        return any(value is None or _may_name_tensor_class(value, bindings, seen) for value in bindings[expr.value])
    if isinstance(expr, cst.Call):
        return last_name(expr.func) not in ("namedtuple", "NamedTuple")
    return True


def _changes_state(function: cst.FunctionDef, facts: Optional["FileFacts"] = None, seen: Optional[set] = None) -> bool:
    """Whether the body stores an attribute or an item, updates in place, declares `global` or
    `nonlocal`, deletes, calls `setattr`, or fills a container not made in the body
    (`keep.append(x)`, `self.seen.add(x)`) (its nested functions' and lambdas' bodies included).
    With the file's `facts` (review, round 7): also where it calls a function or method of the file
    (by its name, `record(x)`, `self.keep(x)`) that changes state, or hands a parameter (`other`,
    `self`, a name the body binds) to a callee not proven to keep nothing (`heapq.heappush(kept, other)`,
    `kept.__iadd__([other])`, `app(other)` for `app = kept.append`): `_hands_on`."""
    body = function.body
    for target in _within_all(body, cst.AssignTarget):
        if isinstance(target.target, (cst.Attribute, cst.Subscript)):
            return True
    if _within_all(body, cst.AugAssign) or _within_all(body, cst.Global) or _within_all(body, cst.Nonlocal):
        return True
    if _within_all(body, cst.Del):
        return True
    calls = _within_all(body, cst.Call)
    for call in calls:
        if last_name(call.func) in ("setattr", "__setattr__", "delattr", "__delattr__") or is_inplace_call(call):
            return True
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in MUTATING_METHODS and not _new_container(call.func.value, function):
            # `keep.append(other)` in a `__radd__`: `loss + acc` keeps the loss (review, round 6).
            return True
    if facts is None:
        return False
    seen = set() if seen is None else seen
    seen.add(id(function))
    # Review, round 8: a gradient read is state a backward pass writes. A special method run between
    # two passes (`print(f"{norm}")` running `__format__`, which reads `w.grad`) sees the first
    # pass's gradient in the original and none after the merge. By attribute (`.grad`, `._grad`)
    # or by its name as a string (`getattr(w, "grad")`).
    if any(n.attr.value in _GRADIENT_ATTRIBUTES for n in _within_all(body, cst.Attribute)):
        return True
    if any(string_value(n) in _GRADIENT_ATTRIBUTES for n in _within_all(body, cst.SimpleString)):
        return True
    # Review, round 11: or by a template's field (`"{0.grad}".format(w)`, `format_map`, a
    # `string.Formatter`), and a `.format` of a template gradfix does not read may name one.
    if any(_names_gradient_field(n) for n in _within_all(body, cst.SimpleString)):
        return True
    if any(formats_computed(call.func.value, facts) for call in calls if _formats(call)):
        return True
    if _reads_computed(body, facts, seen):
        return True
    # What may hold a parameter: the parameters and every name the body binds (`out = [other]`).
    params = function_parameters(function) | set(binding_counts(function.body))
    for call in calls:
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in MUTATING_METHODS:
            continue  # (on a container the body makes: seen above; what it holds goes on only by a name)
        name = last_name(call.func)
        helpers = facts.functions_by_name.get(name, ())
        for helper in helpers:
            if id(helper) not in seen and _changes_state(helper, facts, seen):
                return True  # `record(other)`, `self.keep(other)`: a function of the file that keeps it
        if helpers and _runs_only_the_file_s(call, facts):
            continue  # (those functions, just checked, change nothing)
        if _hands_on(call, params, facts):
            return True
        # Review, round 8: a call given none of the method's operands changes state too
        # (`opt.zero_grad()`, `net.load_state_dict(snapshot)`, `torch.manual_seed(0)` in a
        # `__rmod__`): every callee must be proven to change nothing, whatever it is handed.
        if not _changes_nothing(call, facts):
            return True
    return False


def changes_state(node: cst.CSTNode, facts: "FileFacts") -> bool:
    """`_changes_state` of a def or a lambda (read as a def returning its body)."""
    if isinstance(node, cst.Lambda):
        node = cst.FunctionDef(
            name=cst.Name("_lambda"), params=node.params,
            body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Return(node.body)])]),
        )
    return isinstance(node, cst.FunctionDef) and _changes_state(node, facts)


def _reads_computed(body: cst.CSTNode, facts: "FileFacts", seen: set) -> bool:
    """The body reads an attribute a class of the file computes on each read, whose code may change
    state or read a gradient (review, round 9): `format(self.gnorm, ".4f")` in a `__format__`, where
    `gnorm` is a `@property` reading `w.grad`, runs that getter between the passes as surely as a
    call would, but names no call. By attribute (`self.gnorm`) or by its name as a string
    (`getattr(self, "gnorm")`, `hasattr`). A getter gradfix reads (`@property` alone) is followed
    (`_changes_state`); any other maker of the name, a class given attributes by a computed name, or
    a module `__getattr__` (PEP 562) that may change state counts. (A class's own `__getattr__`,
    `__getattribute__`, `__get__` are special methods of the file, checked on their own.)"""
    names, _ = facts.computed_attributes
    getters, computed_setattr = facts.property_getters
    read = {n.attr.value for n in _within_all(body, cst.Attribute)}
    read |= {string_value(n) for n in _within_all(body, cst.SimpleString)} - {None}  # type: ignore[operator]
    # Review, round 10: `"{0.gnorm:.4f}".format(self)` reads `gnorm` by its template's field, and a
    # template not written where it is used (`FMT.format(self)`) may read any attribute.
    for text in {string_value(n) for n in _within_all(body, cst.SimpleString)} - {None}:
        read |= format_field_attributes(text) or frozenset()  # type: ignore[arg-type]
    if (names or computed_setattr) and any(formats_computed(call.func.value, facts) for call in _within_all(body, cst.Call) if _formats(call)):
        return True
    if computed_setattr and read:
        return True
    for name in sorted(read & names):
        defs = getters.get(name)
        if defs is None:
            return True
        if any(id(d) not in seen and _changes_state(d, facts, seen) for d in defs):
            return True
    for module_getattr in (s for s in facts.module.body if isinstance(s, cst.FunctionDef) and s.name.value in ("__getattr__", "__dir__")):
        if id(module_getattr) not in seen and _changes_state(module_getattr, facts, seen):
            return True
    return False


def _names_gradient_field(node: cst.SimpleString) -> bool:
    """A string literal whose `str.format` fields read a gradient attribute (`"{0.grad}"`)."""
    text = string_value(node)
    fields = None if text is None or "{" not in text else format_field_attributes(text)
    return bool(fields and fields & _GRADIENT_ATTRIBUTES)


def _formats(call: cst.Call) -> bool:
    """`call` is `<template>.format(...)`/`.format_map(...)` (a string's method, by its name)."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in ("format", "format_map")


def formats_computed(template: cst.BaseExpression, facts: "FileFacts") -> bool:
    """`template.format(...)` may read an attribute a class of the file computes (review, round 10):
    `str.format` reads the attributes its replacement fields name (`"{0.gnorm:.4f}".format(m)` runs
    the `gnorm` property) by `getattr`, with no attribute node gradfix sees. Where the file computes
    any attribute (`FileFacts.computed_attributes`): a literal template naming one of those (any, for a
    class that computes every name), or a template gradfix does not read (`FMT.format(m)`)."""
    # Review, round 11: a field may name a gradient too (`"{0.grad}".format(w)` reads `w.grad`, no
    # attribute node either), in any file: a template gradfix does not read may name one.
    names, anything = facts.computed_attributes
    text = string_value(template)
    fields = None if text is None else format_field_attributes(text)
    if fields is None:
        return True
    return bool(fields & (names | _GRADIENT_ATTRIBUTES)) or (anything and bool(fields))


# Attributes a backward pass writes (a special method reading one sees which passes have run).
_GRADIENT_ATTRIBUTES = frozenset({"grad", "_grad"})


def _changes_nothing(call: cst.Call, facts: "FileFacts") -> bool:
    """`call`, in a special method, is proven to change no state, whatever it is handed (review,
    round 8): a builtin of `_DUNDER_SAFE_BUILTINS` the file does not rebind (`getattr`/`hasattr`
    by a literal name only: a computed one may be `grad`); a read-only or pure tensor method
    (`_DUNDER_SAFE_METHODS`, `PURE_TENSOR_METHODS`, but `MODULE_MUTATORS`: `net.half()` casts a
    module in place) no class of the file defines; a pure or deterministic function of torch
    (`PURE_FUNCTIONS`, `DETERMINISTIC_TENSOR_FUNCTIONS`, `FRESH_TENSOR_FACTORIES`) or of `math`,
    through the file's imports. Anything else (`opt.zero_grad()`, `net.load_state_dict(sd)`,
    `torch.manual_seed(0)`, `random.random()`, a callee gradfix cannot name) may."""
    from gradfix.analysis.backward import hands_on_arguments

    if hands_on_arguments(call, None, facts) is not None or may_write(call):
        return False
    func = call.func
    if isinstance(func, cst.Name):
        if func.value not in _DUNDER_SAFE_BUILTINS or func.value in facts.binding_counts or facts.changes_builtins:
            return False
        if func.value in ("getattr", "hasattr"):
            return len(call.args) > 1 and isinstance(call.args[1].value, cst.SimpleString)
        return not (func.value == "print" and _prints_through_file(call, facts))
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    if method in (_DUNDER_SAFE_METHODS | PURE_TENSOR_METHODS) - MODULE_MUTATORS and method not in facts.functions_by_name:
        return True
    dotted = get_full_name_for_node(func)
    qualified = facts.sole_imports.qualified(dotted, facts.line(call)) if dotted else None
    if qualified is None:
        return False
    return qualified in PURE_FUNCTIONS | DETERMINISTIC_TENSOR_FUNCTIONS | FRESH_TENSOR_FACTORIES or qualified.split(".")[:1] == ["math"] and qualified.count(".") == 1


def _prints_through_file(call: cst.Call, facts: "FileFacts") -> bool:
    """A special method's `print(...)` may run a `write`/`flush` of the file (review, round 9:
    `print(..., file=self.sink)`, a `sys.stdout` the file replaced; `between.prints_through_file`)."""
    from gradfix.analysis.between import prints_through_file

    bound = facts.bound_attribute_names
    return prints_through_file(call, facts, lambda name: bound is None or name in bound)


def _runs_only_the_file_s(call: cst.Call, facts: "FileFacts") -> bool:
    """`call` runs a function of the file of its name, not another object bound to that name: a name
    the file binds once (its `def`), or a method called on `self`/`cls` whose name the file never
    binds on an object by a store (`self.keep = f`) nor may bind by a computed name."""
    func = call.func
    if isinstance(func, cst.Name):
        return facts.binding_counts.get(func.value) == 1 and not facts.changes_builtins
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
        stored = facts.attribute_store_names
        return stored is not None and func.attr.value not in stored
    return False


def _within_all(node: cst.CSTNode, kind: type) -> list:
    """Every node of type `kind` inside `node`, lambdas' bodies included (code that may run there)."""
    from gradfix.analysis.backward import _all_within

    return _all_within(node, kind)


# Builtins a special method may hand its parameters to: they compute a value and keep nothing
# (`key=` functions aside: `hands_on_arguments`). Code of the file they run (`__len__`, `__str__`,
# `__iter__`) is a special method of the file, checked on its own.
_DUNDER_SAFE_BUILTINS = frozenset(
    {"print", "len", "float", "int", "str", "bool", "round", "abs", "min", "max", "sum", "isinstance", "issubclass", "repr",
     "format", "list", "tuple", "dict", "range", "enumerate", "zip", "sorted", "any", "all", "hasattr", "getattr", "type",
     "id", "hash", "callable", "iter"}
)
# Methods a special method may call on anything with its parameters: they read and compute.
_DUNDER_SAFE_METHODS = frozenset({"item", "tolist", "numpy", "detach", "get", "keys", "values", "items", "format", "copy"})


def _hands_on(call: cst.Call, params: AbstractSet[str], facts: "FileFacts") -> bool:
    """`call` hands a name of `params` (or something read from one) to a callee not proven to keep
    nothing: a callee other than a builtin of `_DUNDER_SAFE_BUILTINS` the file does not rebind, a
    read-only or pure tensor method (`_DUNDER_SAFE_METHODS`, `PURE_TENSOR_METHODS`) no class of the
    file defines, or a function of `torch`, `math` or `numpy` (not a registration of a hook)."""
    from gradfix.analysis.backward import _walk, hands_on_arguments

    handed = any(isinstance(n, cst.Name) and n.value in params for arg in call.args for n in _walk(arg.value))
    if not handed:
        return False
    func = call.func
    if isinstance(func, cst.Name):
        trusted = func.value in _DUNDER_SAFE_BUILTINS and func.value not in facts.binding_counts and not facts.changes_builtins
        if trusted and func.value == "print" and _prints_through_file(call, facts):
            return True
        return not trusted or hands_on_arguments(call, None, facts) is not None
    if not isinstance(func, cst.Attribute):
        return True  # `(lambda: ...)(other)`, `table[k](other)`: code not seen
    method = func.attr.value
    if method in _DUNDER_SAFE_METHODS | PURE_TENSOR_METHODS and method not in facts.functions_by_name:
        return False
    dotted = get_full_name_for_node(func)
    qualified = facts.sole_imports.qualified(dotted, facts.line(call)) if dotted else None
    if qualified is not None and qualified.split(".")[0] in ("torch", "math", "numpy") and not re.search("hook|register", qualified):
        return False
    return True


def _new_container(receiver: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """`receiver` is a name `function` binds only to a new display or comprehension (`out = []`)."""
    if not isinstance(receiver, cst.Name):
        return False
    values = [v for name, v in assignments(function) if name == receiver.value]
    displays = (cst.List, cst.Dict, cst.Set, cst.Tuple, cst.ListComp, cst.DictComp, cst.SetComp)
    return bool(values) and all(isinstance(v, displays) for v in values)
