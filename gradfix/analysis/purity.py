"""Is a callee provably parameter-free and deterministic? (docs/design.md §1, E1 and E2)

The rewrite evaluates the callee once instead of twice. That is exact only if
the callee draws no random numbers, updates no state, and owns no trainable
tensors (their gradients cancel to (a+b)·∂f/∂θ in the original). gradfix
proves this from explicit allowlists (`vocabulary.py`), never from names that
merely look right:

- functions of `torch` and `torch.nn.functional` listed there;
- loss-module instances built from the classes listed there, in the same file;
- lambdas and functions of the same file whose bodies use only the above,
  pure tensor methods, arithmetic, their own parameters and locals, and whose
  default argument values are constants (a default is evaluated once, where
  the function is defined, and read by the body through its parameter: a
  trainable tensor there is as much a global read as one in the body);
- methods of the enclosing class called on `self`, under the same conditions;
  inside them, `self.name(...)` is such a method or a loss module, and a
  plain read `self.name` only a number assigned once; and nothing else in
  the file may bind the name (subclasses, mixins, `Class.name = ...`,
  `obj.name = ...`, `setattr`: `CalleeClassifier.bound_elsewhere`).

Anything else is *unknown* (the fix is unsafe and says why), or *random*
(dropout and friends, and torch.nn containers or wrappers built with them:
the two evaluations are not the same computation, so there is no pattern to
report).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Dict, Optional, Set

import libcst as cst
from libcst.metadata import (
    ParentNodeProvider,
    PositionProvider,
    QualifiedName,
    QualifiedNameProvider,
    QualifiedNameSource,
    ScopeProvider,
)

from gradfix.analysis.exprs import code_of, inplace_keyword, is_inplace_call
from gradfix.analysis.vocabulary import (
    CALLEE_BUILTINS,
    DETERMINISTIC_LAYERS,
    GRAD_MODE_CONTEXTS,
    LAYER_HOLDERS,
    LOSS_MODULES,
    MODULE_PASS_THROUGH,
    MODULE_READS,
    NN_CONTAINERS,
    PURE_FUNCTIONS,
    PURE_TENSOR_METHODS,
    RANDOM_FUNCTIONS,
    RANDOM_MODULES,
    SYMMETRIC,
    TRANSPARENT_DECORATORS,
    WHOLE_OBJECT_ATTRIBUTES,
    has_inplace_suffix,
    is_nn_class,
    names_forward_hook,
)

PURE = "pure"
RANDOM = "random"
MODULE = "module"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Callee:
    kind: str  # PURE, RANDOM, MODULE or UNKNOWN
    symmetric: bool = False
    reason: str = ""  # for UNKNOWN / MODULE / RANDOM: what was not proven
    # MODULE only: built in this file from stateless, deterministic layers, so
    # one forward equals two and only its parameters' gradients need care.
    deterministic: bool = False
    # PURE or MODULE: a condition of an exact merge left unproven although the kind is
    # known (a forward hook registered in the file runs once per call of a module: the
    # one evaluation runs it once where the original ran it twice). Empty: none.
    unproven: str = ""


GetMeta = Callable[..., object]


class CalleeClassifier:
    """Classifies callees of one module; `get_metadata` is the rule visitor's."""

    def __init__(self, get_metadata: GetMeta) -> None:
        self.meta = get_metadata
        self._function_cache: Dict[tuple, Callee] = {}
        self._bound_cache: Dict[tuple, Optional[str]] = {}
        self._index: Optional[tuple] = None
        # GF004: helper defs inlined although their name may be bound elsewhere -> why.
        self._rebound_inlined: Dict[int, str] = {}

    # -- metadata helpers ----------------------------------------------------------
    def qualified(self, node: cst.CSTNode) -> Set[str]:
        """Import-resolved names of a dotted name (`F.mse_loss` -> torch.nn.functional.mse_loss).

        Only plain dotted chains: libcst also names `f(x).mean` or `(u - v).pow`
        (as `f.mean`, `builtins.None`), which would be wrong here.
        """
        base = node
        while isinstance(base, cst.Attribute):
            base = base.value
        if not isinstance(base, cst.Name):
            return set()
        names: Collection[QualifiedName] = self.meta(QualifiedNameProvider, node, set())  # type: ignore[assignment]
        return {q.name for q in names if q.source in (QualifiedNameSource.IMPORT, QualifiedNameSource.BUILTIN)}

    def _assigned_values(self, name: cst.Name) -> Optional[list]:
        """The nodes bound to `name` in its scope: Assign values, defs, or None if unresolvable."""
        scope = self.meta(ScopeProvider, name, None)
        if scope is None:
            return None
        values = []
        for assignment in scope[name.value]:
            node = getattr(assignment, "node", None)
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                values.append(node)
                continue
            if isinstance(node, cst.Name):
                parent = self.meta(ParentNodeProvider, node, None)
                if isinstance(parent, cst.AssignTarget):
                    statement = self.meta(ParentNodeProvider, parent, None)
                    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
                        values.append(statement.value)
                        continue
                if isinstance(parent, cst.AnnAssign) and parent.value is not None:
                    values.append(parent.value)
                    continue
            return None  # imports, parameters, loop targets, tuple unpacking ...
        return values

    def harmless(self, func: cst.BaseExpression) -> bool:
        """A call that cannot step, zero or read gradients: a proven-pure or random
        function, building or running a torch.nn module of this file, or gradfix's op.

        (In-place calls, `step`, `zero_grad` and the like never get here: the
        scanner stops at them first.)"""
        names = self.qualified(func)
        if names & GRAD_MODE_CONTEXTS or any(is_nn_class(n) or n.startswith("gradfix.autograd.") for n in names):
            return True
        return self.classify(func).kind in (PURE, RANDOM, MODULE)

    # -- classification ---------------------------------------------------------------
    def classify(self, func: cst.BaseExpression) -> Callee:
        text = code_of(func).strip()
        inlined = self._inlined_from_rebound(func)
        if inlined is not None:
            return Callee(UNKNOWN, reason=f"`{text}`: {inlined}")
        names = self.qualified(func)
        if names:
            return self._classify_qualified(text, names)
        if isinstance(func, cst.Name):
            values = self._assigned_values(func)
            if values is None or len(values) != 1:
                return Callee(UNKNOWN, reason=f"`{text}` is not bound once in this file to something gradfix can prove parameter-free and deterministic")
            return self._classify_value(text, values[0])
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            return self._classify_self_member(text, func)
        return Callee(UNKNOWN, reason=f"gradfix cannot resolve `{text}`")

    def _classify_self_member(self, text: str, func: cst.Attribute) -> Callee:
        """`self.name`: a value assigned once on `self` in the class, or a method defined once in it."""
        found = self._self_member(text, func)
        if isinstance(found, Callee):
            return found
        return self._classify_value(text, found)

    def _self_member(self, text: str, func: cst.Attribute):
        """What `self.name` is bound to (an assigned value or a method's def), or why that is unknown."""
        cls = self.enclosing_class(func)
        if cls is None:
            return Callee(UNKNOWN, reason=f"gradfix cannot resolve `{text}` outside a class")
        values = self._self_attribute_values(func)
        members = _class_members(cls, func.attr.value)
        if members and values:
            return Callee(UNKNOWN, reason=f"`{text}` is both defined in its class and assigned on `self`")
        if values:
            if len(values) != 1:
                return Callee(UNKNOWN, reason=f"`{text}` is not assigned exactly once in its class")
            elsewhere = self.bound_elsewhere(cls, func.attr.value, own_def=False)
            if elsewhere is not None:
                return Callee(UNKNOWN, reason=f"`{text}` {elsewhere}")
            return values[0]
        if not members:
            return Callee(
                UNKNOWN,
                reason=f"`{text}` is neither a method of its class nor assigned on `self` in it (inherited or set elsewhere)",
            )
        if len(members) != 1:
            return Callee(UNKNOWN, reason=f"`{text}` is defined more than once in its class")
        method = members[0]
        if not isinstance(method, cst.FunctionDef):
            return Callee(UNKNOWN, reason=f"`{text}` is bound in its class body to something gradfix cannot prove parameter-free and deterministic")
        elsewhere = self.bound_elsewhere(cls, func.attr.value, own_def=True)
        if elsewhere is not None:
            return Callee(UNKNOWN, reason=f"`{text}` {elsewhere}")
        return method

    def inlined_method(self, func: cst.Attribute) -> Optional[cst.FunctionDef]:
        """The def of the enclosing class that `self.name` names, for GF004 to inline.

        None unless the class body defines `name` with exactly one def. When
        `self.name` is not proven to be that def (`_self_member`: also assigned on
        `self`, bound again in the class body, or bound elsewhere in the file), the
        def is still returned, so the pattern is reported, but every call inside
        the inlined expression classifies as unknown with that reason: the fix is
        unsafe and says why.
        """
        cls = self.enclosing_class(func)
        if cls is None:
            return None
        defs = [
            s for s in cls.body.body  # type: ignore[union-attr]
            if isinstance(s, cst.FunctionDef) and s.name.value == func.attr.value
        ]
        if len(defs) != 1:
            return None
        text = code_of(func).strip()
        member = self._self_member(text, func)
        if member is not defs[0]:
            reason = member.reason if isinstance(member, Callee) else f"`{text}` is also assigned on `self`"
            self._rebound_inlined[id(defs[0])] = f"it is inlined from `{text}`, but {reason}"
        return defs[0]

    def _inlined_from_rebound(self, node: cst.CSTNode) -> Optional[str]:
        """The reason recorded by `inlined_method` when `node` lies in a def inlined although rebound."""
        if not self._rebound_inlined:
            return None
        parent: Optional[cst.CSTNode] = node
        while parent is not None and not isinstance(parent, cst.Module):
            if isinstance(parent, cst.FunctionDef) and id(parent) in self._rebound_inlined:
                return self._rebound_inlined[id(parent)]
            parent = self.meta(ParentNodeProvider, parent, None)
        return None

    # -- where else a member of `self` may be bound ---------------------------------------
    def bound_elsewhere(self, cls: cst.ClassDef, attr: str, own_def: bool) -> Optional[str]:
        """Why `self.attr`, as `cls` binds it, may be something else at run time; None if nothing in this file can.

        `own_def`: `cls`'s own body binds `attr` (a method); otherwise `attr` is assigned on
        `self` in its methods. The rule, for the whole file:

        (a) Classes. Only a class that can share an instance's MRO with `cls` matters: one a
            class of this file derives from together with `cls` ("related": `cls`'s
            subclasses, mixins listed beside it in their bases, its own bases). Any of them
            that binds `attr` in its body or assigns `self.attr` in its methods may win,
            except a base of `cls` binding `attr` in its body when `cls`'s own body does too
            (C3 puts a class before all its bases, so `cls`'s own entry comes first in every
            MRO that holds it). Instance assignments win over class bodies wherever they
            are, and a class-body descriptor (a property) catches `self.attr = ...`, so for
            an attribute assigned on `self` every related class counts. A related class
            that is not a base of `cls` and derives from a class not defined in this file
            may inherit `attr` from it (it can come before `cls` in the MRO); one defining
            `__setattr__` or `__getattribute__` may change any attribute.
        (b) Stores from outside: `X.attr = ...`, `del X.attr`, `setattr(X, "attr", ...)`
            (and `delattr`, `__setattr__`, `X.__dict__[...] = ...`) anywhere in the file,
            and the same with a name gradfix cannot read (`setattr(X, name, ...)`),
            except `self.attr = ...` in a method of a class: that is the class's own
            binding, judged by (a) (and, for `cls` itself, by `_self_attribute_values`,
            which sees all but `setattr` and `del`).
        (c) Attributes a member reads (`self.scale` in `dist`) are checked the same way
            where they are read (`_BodyChecker._self_read`).

        Subclasses and patches in other files are not seen: gradfix checks one file.
        """
        key = (id(cls), attr, own_def)
        if key not in self._bound_cache:
            self._bound_cache[key] = self._find_binding(cls, attr, own_def)
        return self._bound_cache[key]

    def _module_index(self, cls: cst.ClassDef) -> Optional["_ModuleIndex"]:
        module: Optional[cst.CSTNode] = cls
        while module is not None and not isinstance(module, cst.Module):
            module = self.meta(ParentNodeProvider, module, None)
        if module is None:
            return None
        if self._index is None or self._index[0] is not module:
            collector = _Bindings()
            module.visit(collector)
            self._index = (module, _ModuleIndex(collector.classes, collector.bindings))
        return self._index[1]

    def _line(self, node: cst.CSTNode) -> str:
        position = self.meta(PositionProvider, node, None)
        return f"line {position.start.line}" if position is not None else "another line"

    def _find_binding(self, cls: cst.ClassDef, attr: str, own_def: bool) -> Optional[str]:
        index = self._module_index(cls)
        if index is None:
            return f"gradfix cannot find the module of `{cls.name.value}`"
        name = cls.name.value
        derived = index.derived(name)
        related = index.related(name)
        bases = index.ancestors(name) - {name}
        hooks = ("__setattr__", "__getattribute__")
        for other in index.classes:
            other_name = other.name.value
            if other_name not in related:
                continue
            hook = next((h for h in hooks if _class_members(other, h)), None)
            if hook is not None:
                return f"may be changed by `{other_name}.{hook}` (defined at {self._line(_class_members(other, hook)[0])})"
            if other is cls:
                continue
            members = _class_members(other, attr)
            if members and not (own_def and other_name in bases and other_name != name):
                what = _describe_member(members[0], attr)
                if other_name in derived:
                    where = f"in `{other_name}`, a subclass of `{name}`"
                    return f"is overridden in a subclass of this file: bound at {self._line(members[0])} ({what} {where})"
                where = f"in `{other_name}`, {index.relation(name, other_name)}"
                return f"is also bound at {self._line(members[0])} ({what} {where})"
            if other_name not in bases or other_name == name:
                for base in other.bases:
                    base_name = code_of(base.value).strip()
                    if base_name != "object" and base_name not in index.names:
                        return (
                            f"may be inherited from `{base_name}`, a base of `{other_name}` (defined at "
                            f"{self._line(other)}) that is not a class of this file"
                        )
        for binding in index.bindings:
            if binding.attr is not None and binding.attr != attr:
                continue
            if binding.owner is not None:
                if binding.owner is cls and not binding.dynamic:
                    continue  # `self.attr = ...` in `cls`: `_self_attribute_values`
                if binding.owner is not cls and binding.owner.name.value not in related:
                    continue  # `self` there is an instance of an unrelated class
            where = ""
            if binding.owner is not None and binding.owner is not cls:
                owner = binding.owner.name.value
                where = f" in `{owner}`, " + (f"a subclass of `{name}`" if owner in derived else index.relation(name, owner))
            return f"is also bound at {self._line(binding.node)} (`{binding.text}`{where})"
        return None

    def _classify_qualified(self, text: str, names: Set[str]) -> Callee:
        if names & RANDOM_FUNCTIONS:
            return Callee(RANDOM, reason=f"`{text}` draws random numbers")
        if names & PURE_FUNCTIONS:
            return Callee(PURE, symmetric=bool(names & SYMMETRIC))
        return Callee(UNKNOWN, reason=f"`{text}` is not on gradfix's list of deterministic parameter-free functions")

    def _forward_hook(self, text: str, node: cst.CSTNode) -> str:
        """Why a module `text` (built at `node`) may not run the same once as twice: a forward
        hook registered anywhere in the file (on it, on another module, or on every module);
        empty when the file registers none (`forward_hooks`)."""
        module: Optional[cst.CSTNode] = node
        while module is not None and not isinstance(module, cst.Module):
            module = self.meta(ParentNodeProvider, module, None)
        if module is None:
            return f"gradfix cannot find the file of `{text}` to look for forward hooks"
        hooks = forward_hooks(module)
        if not hooks:
            return ""
        hook = hooks[0]
        return (
            f"`{text}` is an nn.Module and `{code_of(hook).strip()}()` ({self._line(hook)}) registers a forward hook, "
            f"which runs at every call of a module: twice in the original, once after the rewrite"
        )

    def _classify_value(self, text: str, value: cst.CSTNode) -> Callee:
        if isinstance(value, cst.Call):
            callee = self._classify_construction(text, value)
            if callee.kind in (PURE, MODULE) and self.qualified(value.func):
                why = self._forward_hook(text, value) or self._changed_after_construction(text, value)
                if why:
                    return Callee(callee.kind, callee.symmetric, callee.reason, callee.deterministic, unproven=why)
            return callee
        return self._classify_definition(text, value)

    def _changed_after_construction(self, text: str, node: cst.CSTNode) -> str:
        """Why a module `text` proven from its construction at `node` may be another module when
        called: a use anywhere in the file that may change it (`crit.append(nn.Dropout())`,
        `crit[1] = ...`, `crit.lin = ...`, `add_dropout(crit)`); empty when every use is a call of
        it, a read, or an allowlisted method (`MODULE_READS`). Matched by text, so a shadowing
        name counts too."""
        module: Optional[cst.CSTNode] = node
        while module is not None and not isinstance(module, cst.Module):
            module = self.meta(ParentNodeProvider, module, None)
        if module is None:
            return f"gradfix cannot find the file of `{text}` to look for changes to it"
        found = _module_changes(module, text)
        if not found:
            return ""
        use = found[0]
        return (
            f"`{text}` is changed after it was built: `{code_of(use).strip()}` ({self._line(use)}) may make it another "
            f"(random or stateful) module than its construction shows"
        )

    def _classify_construction(self, text: str, value: cst.Call) -> Callee:
        names = self.qualified(value.func)
        if names & LOSS_MODULES:
            return Callee(PURE, symmetric=bool(names & SYMMETRIC))
        if names & RANDOM_MODULES:
            return Callee(RANDOM, reason=f"`{text}` is a dropout module")
        if any(n.startswith("torch.nn.") for n in names):
            layer = self._random_layer(value, set())
            if layer is not None:
                return Callee(RANDOM, reason=f"`{text}` is built with a random layer (`{layer}`)")
            cls = code_of(value.func).strip()
            if self._deterministic_module(value):
                return Callee(MODULE, reason=f"`{text}` is an nn.Module (`{cls}`) with trainable parameters", deterministic=True)
            return Callee(
                MODULE,
                reason=f"`{text}` is an nn.Module (`{cls}`) that gradfix cannot prove deterministic and stateless "
                f"(dropout, batch statistics) and that may own trainable parameters",
            )
        return Callee(UNKNOWN, reason=f"`{text}` may own trainable parameters or be non-deterministic")

    def _classify_definition(self, text: str, value: cst.CSTNode) -> Callee:
        if isinstance(value, (cst.Lambda, cst.FunctionDef)):
            verdict = self._function(value)
            if verdict.kind == PURE:
                return Callee(PURE)
            return Callee(verdict.kind, reason=f"`{text}`: {verdict.reason}")
        return Callee(UNKNOWN, reason=f"`{text}` may own trainable parameters or be non-deterministic")

    def _random_layer(self, node: cst.CSTNode, seen: Set[int]) -> Optional[str]:
        """The dropout-like layer a torch.nn construction is built with, or None.

        Looks through the arguments of torch.nn containers and wrappers
        (`nn.Sequential(..., nn.Dropout(0.3))`, `nn.ModuleList([...])`,
        `nn.ModuleDict({...})`, `nn.Sequential(OrderedDict([...]))`,
        `nn.Sequential(*layers)`, `spectral_norm(...)`), through list, tuple,
        dict and comprehension literals, and through names bound once in this
        file to such values.
        """
        if id(node) in seen:
            return None
        seen.add(id(node))
        if isinstance(node, cst.Call):
            names = self.qualified(node.func)
            if names & RANDOM_MODULES:
                return code_of(node).strip()
            if any(n.startswith("torch.nn.") for n in names) or names & LAYER_HOLDERS:
                for arg in node.args:
                    found = self._random_layer(arg.value, seen)
                    if found is not None:
                        return found
            return None
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            for element in node.elements:
                found = self._random_layer(element.value, seen)
                if found is not None:
                    return found
            return None
        if isinstance(node, cst.Dict):
            for element in node.elements:
                found = self._random_layer(element.value, seen)  # `key: value` or `**other`
                if found is not None:
                    return found
            return None
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self._random_layer(node.elt, seen)
        if isinstance(node, cst.DictComp):
            return self._random_layer(node.value, seen)
        if isinstance(node, cst.Name):
            values = self._assigned_values(node)
            for value in values or ():
                found = self._random_layer(value, seen)
                if found is not None:
                    return found
            return None
        return None

    def _deterministic_module(self, construction: cst.Call) -> bool:
        """`nn.Linear(...)`, or `nn.Sequential(...)` of such layers, spelled out in the call."""
        names = self.qualified(construction.func)
        if names & DETERMINISTIC_LAYERS:
            return True
        if names & NN_CONTAINERS:
            return bool(construction.args) and all(
                arg.keyword is None and not arg.star and isinstance(arg.value, cst.Call) and self._deterministic_module(arg.value)
                for arg in construction.args
            )
        return False

    def enclosing_class(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        """The class whose body (at any depth) holds `node`, or None."""
        cls: Optional[cst.CSTNode] = node
        while cls is not None and not isinstance(cls, cst.ClassDef):
            cls = self.meta(ParentNodeProvider, cls, None)
        return cls  # type: ignore[return-value]

    def _self_attribute_values(self, func: cst.Attribute) -> list:
        cls = self.enclosing_class(func)
        if cls is None:
            return []
        attr = func.attr.value
        values: list = []

        def is_member(t: cst.CSTNode) -> bool:
            return isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self" and t.attr.value == attr

        def unpacks(t: cst.CSTNode) -> bool:
            if isinstance(t, cst.StarredElement):
                return unpacks(t.value)
            if isinstance(t, (cst.Tuple, cst.List)):
                return any(unpacks(e.value) for e in t.elements)
            return is_member(t)

        class Collect(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                for target in node.targets:
                    t = target.target
                    if is_member(t):
                        values.append(node.value if len(node.targets) == 1 else None)
                    elif unpacks(t):
                        values.append(None)  # `self.a, self.b = ...`: not resolved

            def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                if is_member(node.target):
                    values.append(node.value)  # None (a bare annotation) leaves it unresolved

            def visit_AugAssign(self, node: cst.AugAssign) -> None:
                if is_member(node.target):
                    values.append(None)

            def visit_For(self, node: cst.For) -> None:
                if unpacks(node.target):
                    values.append(None)

            def visit_CompFor(self, node: cst.CompFor) -> None:
                if unpacks(node.target):
                    values.append(None)

            def visit_WithItem(self, node: cst.WithItem) -> None:
                if node.asname is not None and unpacks(node.asname.name):
                    values.append(None)

        cls.visit(Collect())
        # `setattr(self, ...)`, `del self.x` and stores from elsewhere: `bound_elsewhere`.
        return [v for v in values if v is not None] if None not in values else [None, None]

    def pure_function(self, node: cst.FunctionDef) -> bool:
        """A helper of this file that can be replaced by its returned expression (GF004's inlining).

        Its body is deterministic, changes nothing and reads no global that may
        be a trainable tensor. A method may read `self.name` freely here: the
        inlined expression reads the same attribute of the same object, and
        the rule then judges every call in it on its own (`classify`). Calls
        `self.m(...)` must be to such methods of the class (or loss modules).
        """
        return self._function(node, inline=True).kind == PURE

    def _function(self, node: cst.CSTNode, inline: bool = False) -> Callee:
        """A lambda's or def's verdict; `inline`: see `pure_function` (a callee needs the strict one)."""
        key = (id(node), inline)
        if key in self._function_cache:
            return self._function_cache[key]
        # Provisional answer breaks recursion: a recursive helper is judged by the rest of its body.
        self._function_cache[key] = Callee(PURE)
        result = self._judge(node, inline)
        self._function_cache[key] = result
        return result

    def _judge(self, node: cst.CSTNode, inline: bool) -> Callee:
        if isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                applied = decorator.decorator
                if isinstance(applied, cst.Call):
                    applied = applied.func
                if not self.qualified(applied) & TRANSPARENT_DECORATORS:
                    return Callee(UNKNOWN, reason=f"is decorated with `@{code_of(decorator.decorator).strip()}`")
        if not isinstance(node, (cst.FunctionDef, cst.Lambda)):
            return Callee(UNKNOWN, reason="is not a function")
        checker = _BodyChecker(self, node, self_name=self._self_parameter(node), inline=inline)
        node.body.visit(checker)
        if checker.verdict is not None and checker.verdict.kind == RANDOM:
            return checker.verdict
        # Default values are evaluated once, where the function is defined, and
        # read by the body through their parameters: a trainable tensor there
        # is a global read like one in the body (docs/design.md §1, E2).
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is None:
                continue
            defaults = _DefaultChecker(self, param)
            param.default.visit(defaults)
            if defaults.verdict is not None:
                return defaults.verdict
        return checker.verdict or Callee(PURE)

    def _self_parameter(self, node: cst.CSTNode) -> Optional[str]:
        """`self` when `node` is a plain method (defined in a class body, first parameter `self`)."""
        if not isinstance(node, cst.FunctionDef) or node.decorators:
            return None
        block = self.meta(ParentNodeProvider, node, None)
        if not isinstance(block, cst.IndentedBlock) or not isinstance(self.meta(ParentNodeProvider, block, None), cst.ClassDef):
            return None
        positional = (*node.params.posonly_params, *node.params.params)
        if positional and positional[0].name.value == "self":
            return "self"
        return None


def _target_names(target: cst.BaseExpression) -> Set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _target_names(element.value)}
    return set()


class _BodyChecker(cst.CSTVisitor):
    """Walks a lambda or function body and records the first impurity found."""

    def __init__(
        self, classifier: CalleeClassifier, owner: Optional[cst.CSTNode], self_name: Optional[str] = None, inline: bool = False
    ) -> None:
        self.c = classifier
        self.owner = owner
        self.verdict: Optional[Callee] = None
        self.params: Set[str] = set()
        if owner is not None:
            params = owner.params  # type: ignore[attr-defined]
            self.params = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    self.params.add(star.name.value)
        # A method's `self`: only its proven members may be used (see `_self_read`),
        # unless the method is to be inlined (`CalleeClassifier.pure_function`).
        self.self_name = self_name
        self.inline = inline
        self.locals: Set[str] = set()

    def _fail(self, kind: str, reason: str) -> None:
        if self.verdict is None or (self.verdict.kind == UNKNOWN and kind == RANDOM):
            self.verdict = Callee(kind, reason=reason)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        self._fail(UNKNOWN, "defines a nested function")
        return False

    def visit_Global(self, node: cst.Global) -> None:
        self._fail(UNKNOWN, "uses `global`")

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._fail(UNKNOWN, "uses `nonlocal`")

    def visit_Yield(self, node: cst.Yield) -> None:
        self._fail(UNKNOWN, "is a generator")

    def _rebinds_self(self, target: cst.CSTNode) -> None:
        if self.self_name is not None and self.self_name in _target_names(target):  # type: ignore[arg-type]
            self._fail(UNKNOWN, f"rebinds `{self.self_name}`")

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._rebinds_self(node.target)
        if isinstance(node.target, cst.Name):
            self.locals.add(node.target.value)
        elif isinstance(node.target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in node.target.elements):
            self.locals.update(e.value.value for e in node.target.elements)  # type: ignore[union-attr]
        else:
            self._fail(UNKNOWN, f"stores into `{code_of(node.target).strip()}`")

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        target = node.target
        if not isinstance(target, cst.Name) or target.value in self.params:
            self._fail(UNKNOWN, f"modifies `{code_of(target).strip()}` in place")
            return
        # `d -= v` updates the tensor `d` holds in place: an argument, when `d` is another name
        # for it (`d = u`, `d = u.view(-1)`, a loop over `(u, v)`). After the rewrite that
        # argument is `grad_scale(...)`, a view, and the update raises (or, on a detached
        # operand, writes into the caller's tensor). Only a name every binding of which
        # is a fresh value (`_fresh_binding`) may be updated so.
        binding = _aliasing_binding(self.owner, target.value) if self.owner is not None else node
        if binding is self.owner:
            binding = node  # nothing in the body binds it
        if binding is not None:
            shown = "" if binding is node else f": `{code_of(binding).strip()}` ({self.c._line(binding)}) may make it another name for an argument"
            self._fail(
                UNKNOWN,
                f"modifies `{target.value}` in place ({self.c._line(node)}){shown or ', which gradfix cannot prove a fresh value'}",
            )

    def visit_For(self, node: cst.For) -> None:
        self._rebinds_self(node.target)
        if isinstance(node.target, cst.Name):
            self.locals.add(node.target.value)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._rebinds_self(node.target)
        self.locals.update(_target_names(node.target))

    def _comprehension(self, node: cst.CSTNode) -> None:
        # The element is visited before its `for` clauses: bind their targets first.
        clause = getattr(node, "for_in", None)
        while clause is not None:
            self.locals.update(_target_names(clause.target))
            clause = clause.inner_for_in

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comprehension(node)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._comprehension(node)

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comprehension(node)

    def visit_Arg(self, node: cst.Arg) -> Optional[bool]:
        node.value.visit(self)  # the keyword is a parameter name, not a read
        return False

    def visit_Param(self, node: cst.Param) -> Optional[bool]:
        if node.default is not None:
            node.default.visit(self)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        # The attribute name is not a read; only what it is taken from is.
        # (`torch.nn.functional.x` ends in the Name `torch`, checked by import.)
        if self._is_self(node.value):
            if not self.inline:
                self._self_read(node)
            return False
        node.value.visit(self)
        return False

    def _is_self(self, node: cst.CSTNode) -> bool:
        # (Rebinding `self` in the body makes the function unknown: `_rebinds_self`.)
        return self.self_name is not None and isinstance(node, cst.Name) and node.value == self.self_name

    def _self_read(self, node: cst.Attribute) -> None:
        """`self.name` read as a value: only a number assigned once on `self` in the class."""
        text = code_of(node).strip()
        cls = self.c.enclosing_class(node)
        values = self.c._self_attribute_values(node) if cls is not None else []
        if cls is not None and len(values) == 1 and _is_number(values[0]) and not _class_members(cls, node.attr.value):
            elsewhere = self.c.bound_elsewhere(cls, node.attr.value, own_def=False)
            if elsewhere is None:
                return
            self._fail(UNKNOWN, f"reads `{text}`, which {elsewhere} (a trainable tensor there would change its gradient)")
            return
        self._fail(UNKNOWN, f"reads `{text}` (a trainable tensor there would change its gradient)")

    def visit_Name(self, node: cst.Name) -> None:
        self._check_name(node)

    def _check_name(self, node: cst.Name) -> None:
        name = node.value
        if self._is_self(node) and not self.inline:
            # `self` passed on as a whole: whatever it owns may be read.
            self._fail(UNKNOWN, f"uses `{name}` itself (trainable tensors it owns would change their gradients)")
            return
        if name in self.params or name in self.locals or name in ("True", "False", "None"):
            return
        if name in CALLEE_BUILTINS:
            return
        qualified = self.c.qualified(node)
        if any(q == "torch" or q.startswith("torch.") or q == "math" or q.startswith("math.") for q in qualified):
            return
        values = self.c._assigned_values(node)
        if values and len(values) == 1:
            value = values[0]
            if _is_number(value):
                return
            if isinstance(value, (cst.FunctionDef, cst.Lambda)):
                verdict = self.c._function(value, self.inline)
                if verdict.kind != PURE:
                    self._fail(verdict.kind, f"calls `{name}`, which {verdict.reason}")
                return
        # A global tensor here could be a trainable parameter that the two
        # evaluations' gradients cancel on.
        self._fail(UNKNOWN, f"reads `{name}` from outside (a trainable tensor there would change its gradient)")

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        func = node.func
        names = self.c.qualified(func)
        if names & RANDOM_FUNCTIONS:
            self._fail(RANDOM, f"calls `{code_of(func).strip()}`, which draws random numbers")
            return True
        if names & PURE_FUNCTIONS:
            if is_inplace_call(node):
                # `F.relu(v, inplace=True)` on an operand: each evaluation writes into it (the
                # second through `v.detach()`, which shares its storage), the one evaluation once.
                self._fail(UNKNOWN, f"modifies a tensor in place (`{code_of(func).strip()}(..., {inplace_keyword(node)})`)")
                return True
            for arg in node.args:
                arg.visit(self)
            return False
        if isinstance(func, cst.Attribute) and self._is_self(func.value):
            # `self.kl(...)`: a method of the class, or a module assigned on `self`.
            callee = self.c.classify(func)
            if self.inline and callee.kind != PURE:
                member = self.c._self_member(code_of(func).strip(), func)
                if isinstance(member, cst.FunctionDef):
                    verdict = self.c._function(member, inline=True)
                    callee = Callee(PURE) if verdict.kind == PURE else Callee(verdict.kind, reason=f"`{code_of(func).strip()}`: {verdict.reason}")
            if callee.kind == PURE and callee.unproven:
                self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`: {callee.unproven}")
            elif callee.kind == PURE:
                for arg in node.args:
                    arg.visit(self)
            elif callee.kind == RANDOM:
                self._fail(RANDOM, f"calls `{code_of(func).strip()}`, which draws random numbers")
            else:
                self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`: {callee.reason}")
            return False
        if isinstance(func, cst.Attribute) and not names:
            method = func.attr.value
            if has_inplace_suffix(method):
                self._fail(UNKNOWN, f"modifies a tensor in place (`.{method}()`)")
            elif method not in PURE_TENSOR_METHODS:
                self._fail(UNKNOWN, f"calls `.{method}()`, which is not a known pure tensor method")
            return True
        if names and all(n.startswith("builtins.") for n in names):
            if isinstance(func, cst.Name) and func.value in CALLEE_BUILTINS:
                for arg in node.args:
                    arg.visit(self)
                return False
            self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`")
            return True
        if names:
            self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`, which is not on gradfix's list of deterministic parameter-free functions")
            return True
        return True  # a Name call: `_check_name` resolves it


class _DefaultChecker(_BodyChecker):
    """A parameter's default value: evaluated once where the function is defined.

    It must be a constant: literals, names bound once to numbers, `torch`/`math`
    names (`torch.float32`, `F.mse_loss`) or proven-pure functions of this file.
    Calls are not evaluated (a tensor built there may require grad), so any call
    makes the function unknown.
    """

    def __init__(self, classifier: CalleeClassifier, param: cst.Param) -> None:
        super().__init__(classifier, None)
        self.param = param

    def _fail(self, kind: str, reason: str) -> None:
        if self.verdict is None:
            default = code_of(self.param.default).strip() if self.param.default is not None else ""
            self.verdict = Callee(UNKNOWN, reason=f"its default `{self.param.name.value}={default}` {reason}")

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        self._fail(UNKNOWN, "is computed by a call where the function is defined (a tensor there may require grad)")
        return False

    def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
        self._fail(UNKNOWN, "is a lambda")
        return False


_forward_hook_cache: Dict[int, tuple] = {}


def forward_hooks(module: cst.CSTNode) -> list:
    """Every reference to a forward-hook registration in `module`, in order (imports skipped)."""
    cached = _forward_hook_cache.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1]
    found: list = []

    class Collect(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> bool:
            return False

        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            if names_forward_hook(node.attr.value):
                found.append(node)
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if names_forward_hook(node.value):
                found.append(node)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            if names_forward_hook(node.value):
                found.append(node)  # `getattr(D, "register_forward_hook")`

    module.visit(Collect())
    _forward_hook_cache.clear()
    _forward_hook_cache[id(module)] = (module, found)
    return found


def _is_number(value: cst.CSTNode) -> bool:
    """A numeric literal, possibly signed: `2`, `0.5`, `-1e-4`."""
    while isinstance(value, cst.UnaryOperation) and isinstance(value.operator, (cst.Minus, cst.Plus)):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.Float))


def _class_members(cls: cst.ClassDef, attr: str) -> list:
    """The statements of `cls`'s own body that bind `attr`: defs, classes, assignments."""
    found: list = []
    for statement in cls.body.body:  # type: ignore[union-attr]
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            if statement.name.value == attr:
                found.append(statement)
            continue
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets: list = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                    targets = [small.target]
                if any(attr in _target_names(t) for t in targets):
                    found.append(small)
        elif isinstance(statement, cst.BaseCompoundStatement) and _mentions(statement, attr):
            found.append(statement)  # `if`/`try`/`for` in a class body: anything may be bound there
    return found


def _fresh_value(value: cst.BaseExpression) -> bool:
    """An expression whose result is a new object, never one of its operands: a number, an
    arithmetic or comparison result (`u - v`, `-u`, `u < v`), a container display, or
    `x.clone()`. (Not `+u`: `Tensor.__pos__` returns the tensor itself.)"""
    while isinstance(value, cst.BaseExpression) and getattr(value, "lpar", None):
        value = value.with_changes(lpar=[], rpar=[])
    if isinstance(value, (cst.Integer, cst.Float, cst.Imaginary, cst.BinaryOperation, cst.Comparison)):
        return True
    if isinstance(value, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp)):
        return True  # a new container (`d += [x]` extends it, not what it holds)
    if isinstance(value, cst.UnaryOperation):
        return isinstance(value.operator, (cst.Minus, cst.BitInvert, cst.Not))
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "clone":
        return True
    return False


def _aliasing_binding(owner: cst.CSTNode, name: str) -> Optional[cst.CSTNode]:
    """The first binding of `name` in `owner`'s body that is not a fresh value (`_fresh_value`), or the
    function itself when nothing in the body binds `name` (a global or builtin); None when every
    binding is fresh. Augmented assignments themselves rebind `name` to the updated object: skipped."""
    found: list = []
    bound: list = []

    class Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if found:
                return False
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Name) and target.target.value == name:
                        bound.append(node)
                        if not _fresh_value(node.value):
                            found.append(node)
                    elif _mentions(target.target, name):
                        found.append(node)  # `d, e = u, v`, `x[d] = ...`: not followed
            elif isinstance(node, cst.AnnAssign):
                if isinstance(node.target, cst.Name) and node.target.value == name and node.value is not None:
                    bound.append(node)
                    if not _fresh_value(node.value):
                        found.append(node)
            elif isinstance(node, (cst.For, cst.CompFor)):
                if _mentions(node.target, name):
                    found.append(node.target)
            elif isinstance(node, cst.WithItem):
                if node.asname is not None and _mentions(node.asname, name):
                    found.append(node)
            elif isinstance(node, cst.NamedExpr):
                if _mentions(node.target, name):
                    found.append(node)
            elif isinstance(node, cst.ExceptHandler):
                if node.name is not None and _mentions(node.name, name):
                    found.append(node.name)
            elif isinstance(node, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.Del, cst.MatchAs, cst.MatchStar)):
                if _mentions(node, name):
                    found.append(node)
            return True

    owner.body.visit(Find())  # type: ignore[attr-defined]
    if found:
        return found[0]
    return None if bound else owner


def _mentions(node: cst.CSTNode, name: str) -> bool:
    seen: list = []

    class Find(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                seen.append(n)

    node.visit(Find())
    return bool(seen)



def _describe_member(member: cst.CSTNode, attr: str) -> str:
    """How a class body binds `attr`, for a message: `def dist`, `dist = ...`."""
    if isinstance(member, cst.FunctionDef):
        return f"`def {attr}`"
    if isinstance(member, cst.ClassDef):
        return f"`class {attr}`"
    if isinstance(member, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        return f"`{attr} = ...`"
    return f"a statement binding `{attr}`"


@dataclass(frozen=True)
class _Binding:
    """A store into an attribute somewhere in the file (`CalleeClassifier.bound_elsewhere`)."""

    attr: Optional[str]  # None: any attribute (`setattr(x, name, v)`, `x.__dict__.update(...)`)
    node: cst.CSTNode
    text: str  # as written, shortened: `Trainer.dist = ...`
    # `self.attr = ...` (or `setattr(self, ...)`) in a method of this class: `self` is its instance.
    owner: Optional[cst.ClassDef]
    # Not seen by `_self_attribute_values` (`setattr`, `del`, `__dict__`).
    dynamic: bool


class _Bindings(cst.CSTVisitor):
    """Every class of a module, and every store into an attribute in it."""

    def __init__(self) -> None:
        self.classes: list = []
        self.bindings: list = []
        # The enclosing classes and functions: (node, the class whose method it is, if its `self` is that class's instance).
        self._stack: list = []

    # -- context ------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node)
        self._stack.append((node, None))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        owner = None
        if self._stack and isinstance(self._stack[-1][0], cst.ClassDef):
            positional = (*node.params.posonly_params, *node.params.params)
            if positional and positional[0].name.value == "self":
                owner = self._stack[-1][0]
        self._stack.append((node, owner))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._stack.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._stack.append((node, None))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._stack.pop()

    def _owner(self, obj: cst.CSTNode) -> Optional[cst.ClassDef]:
        if isinstance(obj, cst.Name) and obj.value == "self" and self._stack:
            return self._stack[-1][1]
        return None

    # -- stores -------------------------------------------------------------------------------
    def _add(self, obj: cst.CSTNode, attr: Optional[str], node: cst.CSTNode, text: str, dynamic: bool) -> None:
        if attr in WHOLE_OBJECT_ATTRIBUTES:
            attr, dynamic = None, True
        self.bindings.append(_Binding(attr, node, text, self._owner(obj), dynamic))

    def _target(self, target: cst.CSTNode, text: str, dynamic: bool = False) -> None:
        """Record the attributes a store target writes; `text` has `{}` for the target."""
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, text, dynamic)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value, text, dynamic)
        elif isinstance(target, cst.Attribute):
            self._add(target.value, target.attr.value, target, text.format(code_of(target).strip()), dynamic)
        elif isinstance(target, cst.Subscript):
            obj = _dict_of(target.value)
            if obj is not None:
                key = _literal_key(target)
                self._add(obj, key, target, text.format(code_of(target).strip()), True)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target, "{} = ...")

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target, "{} " + code_of(node.operator).strip() + " ...")

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target, "{} = ...")

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target, "for {} in ...")

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._target(node.target, "for {} in ...")

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name, "with ... as {}")

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target, "del {}", dynamic=True)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        args = [a for a in node.args if a.keyword is None and not a.star]
        obj: Optional[cst.CSTNode] = None
        name: Optional[cst.CSTNode] = None
        if isinstance(func, cst.Name) and func.value in ("setattr", "delattr"):
            obj = args[0].value if args else None
            name = args[1].value if len(args) > 1 else None
        elif isinstance(func, cst.Attribute) and func.attr.value in ("__setattr__", "__delattr__"):
            # `x.__setattr__(name, v)`, or `object.__setattr__(x, name, v)`
            if isinstance(func.value, cst.Name) and func.value.value in ("object", "type"):
                obj = args[0].value if args else None
                name = args[1].value if len(args) > 1 else None
            else:
                obj = func.value
                name = args[0].value if args else None
        elif isinstance(func, cst.Attribute) and func.attr.value in ("update", "setdefault", "__setitem__"):
            obj = _dict_of(func.value)
            if obj is None:
                return
            self._add(obj, None, node, f"{code_of(func).strip()}(...)", True)
            return
        else:
            return
        shown = ", ".join([code_of(a.value).strip() for a in args[:2]] + ["..."] * (len(node.args) > 2))
        attr = name.evaluated_value if isinstance(name, cst.SimpleString) and isinstance(name.evaluated_value, str) else None
        self._add(obj if obj is not None else func, attr, node, f"{code_of(func).strip()}({shown})", True)


def _dict_of(node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """`x` for `x.__dict__` or `vars(x)`; None otherwise."""
    if isinstance(node, cst.Attribute) and node.attr.value == "__dict__":
        return node.value
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "vars" and node.args:
        return node.args[0].value
    return None


def _literal_key(subscript: cst.Subscript) -> Optional[str]:
    if len(subscript.slice) == 1:
        index = subscript.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            value = index.value.evaluated_value
            return value if isinstance(value, str) else None
    return None


class _ModuleIndex:
    """The classes of a module, how they derive from each other (by name), and its attribute stores."""

    def __init__(self, classes: list, bindings: list) -> None:
        self.classes = classes
        self.bindings = bindings
        self.names = {c.name.value for c in classes}
        self.bases_of: Dict[str, Set[str]] = {}
        for c in classes:
            self.bases_of.setdefault(c.name.value, set()).update(
                code_of(base.value).strip().split(".")[-1] for base in c.bases
            )

    def derived(self, name: str) -> Set[str]:
        """`name` and the classes of the module deriving from it, directly or not."""
        found = {name}
        changed = True
        while changed:
            changed = False
            for other, bases in self.bases_of.items():
                if other not in found and bases & found:
                    found.add(other)
                    changed = True
        return found

    def ancestors(self, name: str) -> Set[str]:
        """`name` and the classes of the module it derives from, directly or not."""
        found = {name}
        todo = [name]
        while todo:
            for base in self.bases_of.get(todo.pop(), ()):
                if base in self.names and base not in found:
                    found.add(base)
                    todo.append(base)
        return found

    def related(self, name: str) -> Set[str]:
        """The classes that may share an instance's MRO with `name`."""
        found: Set[str] = set()
        for sub in self.derived(name):
            found |= self.ancestors(sub)
        return found

    def relation(self, name: str, other: str) -> str:
        if other in self.ancestors(name):
            return f"a base of `{name}`"
        for sub in sorted(self.derived(name)):
            if other in self.ancestors(sub):
                return f"which `{sub}` derives from along with `{name}`"
        return f"related to `{name}`"




def _module_changes(module: cst.Module, text: str) -> list:
    """Nodes of `module` that may change the object spelled `text` (or a part of it: `text[0]`,
    `text.layer`): a store into it, a method not in `MODULE_READS` called on it, or it passed to
    a function (which may change it)."""
    found: list = []

    def rooted(node: cst.CSTNode) -> bool:
        code = code_of(node).strip()
        return code == text or code.startswith(text + ".") or code.startswith(text + "[")

    class Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and rooted(func.value) and func.attr.value not in MODULE_READS:
                found.append(node)
                return
            if isinstance(func, cst.Name) and func.value in MODULE_PASS_THROUGH:
                return
            for arg in node.args:
                value = arg.value
                if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)) and rooted(value):
                    found.append(node)
                    return

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._store(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._store(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._store(node.target)

        def visit_Del(self, node: cst.Del) -> None:
            self._store(node.target)

        def _store(self, target: cst.CSTNode) -> None:
            if isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    self._store(element.value)
            elif isinstance(target, (cst.Attribute, cst.Subscript)) and rooted(target.value):
                found.append(target)

    module.visit(Find())
    return found
