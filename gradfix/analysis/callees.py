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
  the body checks are `bodies.py`;
- methods of the enclosing class called on `self`, under the same conditions;
  inside them, `self.name(...)` is such a method or a loss module, and a
  plain read `self.name` only a number assigned once; and nothing else in
  the file may bind the name (subclasses, mixins, `Class.name = ...`,
  `obj.name = ...`, `setattr`: `CalleeClassifier.bound_elsewhere`, over the
  file's class and attribute binding index, `bindings_index.py`).

Anything else is *unknown* (the fix is unsafe and says why), or *random*
(dropout and friends, and torch.nn containers or wrappers built with them:
the two evaluations are not the same computation, so there is no pattern to
report). The verdict is a `Callee` (`callee_kinds.py`).
"""

from __future__ import annotations

from typing import Callable, Collection, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (
    ParentNodeProvider,
    PositionProvider,
    QualifiedName,
    QualifiedNameSource,
    ScopeProvider,
)

from gradfix.analysis.bindings_index import (
    ModuleIndex,
    class_machinery,
    class_members,
    find_binding,
    index_module,
    module_changes,
    self_attribute_values,
)
from gradfix.analysis.bodies import BodyChecker, DefaultChecker
from gradfix.analysis.constants import ModuleConstants
from gradfix.analysis.callee_kinds import MODULE, PURE, RANDOM, UNKNOWN, Callee
from gradfix.analysis.loops import _storage_root, function_parameters
from gradfix.analysis.handed_modules import forwards_of, handed_module_forwards, module_classes
from gradfix.analysis.exprs import code_of, dynamic_global, flag_argument, nodes_within, same_expr, single_return, strip_parens, string_value, unscoped_bindings
from gradfix.analysis.vocabulary import (
    ITEM_GETTERS,
    TRUSTED_MODULES,
    HARMLESS_QUALIFIED,
    LIGHTNING_LOG_METHODS,
    LIGHTNING_MODULES,
    DETERMINISTIC_LAYERS,
    INPLACE_PARAMETER_POSITION,
    GRAD_MODE_CONTEXTS,
    LAYER_HOLDERS,
    LOSS_MODULES,
    NN_CONTAINERS,
    PLAIN_CLASS_MAKERS,
    PURE_FUNCTIONS,
    PURE_TENSOR_METHODS,
    RANDOM_FUNCTIONS,
    RANDOM_MODULES,
    SYMMETRIC,
    TRANSPARENT_DECORATORS,
    is_nn_class,
)
from gradfix.analysis.walk import preorder, walk_tree

GetMeta = Callable[..., object]


# Builtins that call the functions they are handed (`sorted(xs, key=f)`), never keeping them; and
# standard decorators that wrap or cache a function and call it, binding it under no method name
# (`__wrapped__` at most).
_CALLING_BUILTINS = frozenset(f"builtins.{n}" for n in ("map", "filter", "sorted", "min", "max")) | frozenset(
    {
        "contextlib.contextmanager", "contextlib.asynccontextmanager", "functools.wraps", "functools.lru_cache",
        "functools.cache", "functools.cached_property", "abc.abstractmethod", "typing.overload", "atexit.register",
    }
)
# Of those, the callees that run a function they are handed only while they run (`sorted(key=f)`),
# or hand it back to be called by a name the file calls (`functools.wraps`, `lru_cache`), or at exit
# (`atexit`): `CalleeClassifier.handed_functions`. Not `map` and `filter`, whose iterators keep the
# function and run it where they are advanced.
_CALLS_NOW = _CALLING_BUILTINS - {"builtins.map", "builtins.filter"}
# Of those, the ones that run it while they run and return no object holding it (review, round 13:
# the others return the function itself, `atexit.register(f)`, `abc.abstractmethod(f)`, or an object
# that runs or holds it, `lru_cache(f)`, `functools.wraps(f)`, `contextmanager(f)`:
# `sys.setprofile(functools.lru_cache(prof))` hands `prof` on as surely as `sys.setprofile(prof)`).
# Those keep nothing only as a decorator or called where they stand (`lru_cache(f)(x)`).
_RUNS_NOW = frozenset({"builtins.sorted", "builtins.min", "builtins.max"})
# Of those, the one that attaches what it is handed to the def it decorates (`__wrapped__`).
_ATTACHING = frozenset({"functools.wraps"})
# Decorators that only wrap the function they get, called by the name it is bound to: it runs
# where that name is called (review, round 12: `CalleeClassifier.handed_functions`).
_WRAPPING_DECORATORS = _CALLS_NOW | TRANSPARENT_DECORATORS | GRAD_MODE_CONTEXTS | frozenset(
    {"builtins.staticmethod", "builtins.classmethod", "builtins.property", "functools.cached_property"}
)


# The methods a call of a class runs on the new object, with no call by their names (review, round 13).
_CONSTRUCTION = frozenset({"__new__", "__init__", "__post_init__"})


# Class decorators that return the class and keep no reference to it (review, round 13): those
# that only add or wrap members (`PLAIN_CLASS_MAKERS`), and the runtime type checkers, which wrap
# each method in a check of its arguments.
_CLASS_KEEPING_NOTHING = PLAIN_CLASS_MAKERS | frozenset({"beartype.beartype", "typeguard.typechecked"})
# Callees whose string arguments are values, never names they look up (review, round 13): the
# builtins that print or convert, and the logging and writer methods.
_INERT_BUILTINS = frozenset({"print", "str", "repr", "format", "len", "int", "float", "bool", "isinstance", "round", "abs"})
_INERT_METHODS = frozenset({
    "log", "info", "debug", "warning", "error", "critical", "exception", "add_scalar", "add_scalars",
    "add_histogram", "set_postfix", "set_description", "write",
})


# Attributes that give a namespace as a dict (a frame's, a function's globals, an object's), read
# by a key through `vocabulary.ITEM_GETTERS` (review, round 14).
_NAMESPACE_DICTS = frozenset({"__dict__", "f_globals", "f_locals", "__globals__"})


# The attributes and methods that give classes by walking the class graph from another class or an
# object, by no name of theirs (review, round 13: `__class__`; round 14: the others), and `__call__`,
# which read on a class is its metaclass's bound to it: calling it constructs the class
# (`sys.setprofile(Prof.__call__)`, review, round 14).
# Review, round 15: and the attributes that give a class an object was bound to or made with: a
# classmethod bound to its class (`Prof.make.__self__`), a `super` object's (`__thisclass__`,
# `__self_class__`), a method descriptor's (`__objclass__`).
_CLASS_GRAPH_ATTRIBUTES = frozenset({
    "__class__", "__mro__", "__bases__", "__base__", "__call__", "__self__", "__thisclass__", "__self_class__",
    "__objclass__",
})
_CLASS_GRAPH_METHODS = frozenset({"__subclasses__", "mro"})


# The attributes by which a property (`fget`, `fset`, `fdel`) or a `cached_property` (`func`)
# gives the functions it holds (review, round 13).
_ACCESSOR_HOLDERS = frozenset({"fget", "fset", "fdel", "func"})


def classes_all(classes: Dict[str, List[cst.ClassDef]]) -> List[cst.ClassDef]:
    return [c for group in classes.values() for c in group]


def _accessor(function: cst.FunctionDef) -> bool:
    """A property or one of its accessors (`@property`, `@x.setter`, `@cached_property`)."""
    def last(d: cst.BaseExpression) -> str:
        d = d.func if isinstance(d, cst.Call) else d
        return d.attr.value if isinstance(d, cst.Attribute) else d.value if isinstance(d, cst.Name) else ""
    return any(last(d.decorator).endswith("property") or last(d.decorator) in ("setter", "getter", "deleter") for d in function.decorators)


# Special methods whose first parameter Python binds to a class, not an instance (implicit
# classmethods, and `__new__`); `__set_name__` gets the owner class second (review, round 14).
_CLASS_FIRST = frozenset({"__init_subclass__", "__class_getitem__", "__new__"})
# Metaclasses a class of the file may be based on, by name (review, round 14).
_METACLASS_BASES = frozenset({"type", "ABCMeta", "EnumMeta", "EnumType"})


def _class_parameter_reads(classes: Sequence[cst.ClassDef]) -> Set[int]:
    """The `Name` nodes of the methods of `classes` that read a parameter Python binds to a class
    (review, round 14): the first of a `@classmethod`, of `_CLASS_FIRST`, of every method of a
    metaclass of the file (`_metaclass`), with the names its methods bind to a `__new__` call's
    result (the class made), and `__set_name__`'s owner. Every read of the name in the method's body
    counts, nested scopes too (a rebinding there only adds reads)."""
    found: Set[int] = set()
    for cls in classes:
        meta = _metaclass(cls, classes)
        for method in cls.body.body:
            if not isinstance(method, cst.FunctionDef):
                continue
            positional = [*method.params.posonly_params, *method.params.params]
            decorated = any(code_of(d.decorator).strip().split(".")[-1] == "classmethod" for d in method.decorators)
            index = 1 if method.name.value == "__set_name__" else 0 if (decorated or meta or method.name.value in _CLASS_FIRST) else None
            if index is None or len(positional) <= index:
                continue
            names = {positional[index].name.value}
            if meta:
                # `cls = super().__new__(mcs, name, bases, ns)`: the class made, by a name the body binds.
                names.update(
                    t.target.value for a in nodes_within(method.body, cst.Assign) for t in a.targets
                    if isinstance(t.target, cst.Name) and _makes_new(a.value)
                )
            # (Review, round 16: lambdas' bodies too, which `nodes_within` leaves out: `(lambda: cls)()`.)
            found.update(id(n) for n in preorder(method.body) if type(n) is cst.Name and n.value in names)
    # Review, round 15: and, in any method, the bare name `__class__`, the cell Python binds to the
    # class the method is defined in (`sys.setprofile(__class__)`); not an attribute's name
    # (`x.__class__`, read as `_CLASS_GRAPH_ATTRIBUTES` says). Review, round 16: in a lambda's body
    # too (`sys.setprofile((lambda: __class__)())`), and in a method at any depth of the class body
    # (under an `if`): every bare `__class__` in a class (it reaches some class of the file).
    for cls in classes:
        nodes = preorder(cls.body)
        attrs = {id(n.attr) for n in nodes if type(n) is cst.Attribute}
        found.update(id(n) for n in nodes if type(n) is cst.Name and n.value == "__class__" and id(n) not in attrs)
    return found


def _attribute_chain(node: cst.BaseExpression) -> bool:
    """`node` is a name or a chain of attributes of one (`torch.nn.init`), no item or call on the way."""
    node = strip_parens(node)
    while isinstance(node, cst.Attribute):
        node = strip_parens(node.value)
    return isinstance(node, cst.Name)


def _chain_bound_by(node: cst.BaseExpression, facts) -> bool:
    """An attribute on the chain `node` (`torch.me` of `torch.me.prof`) is one the file may bind on
    some object (`facts.bound_attribute_names`; any, where it binds one by a computed name): the
    file may have stored anything there, its own module too (`torch.me = sys.modules[__name__]`,
    review, round 16)."""
    names = facts.bound_attribute_names
    node = strip_parens(node)
    while isinstance(node, cst.Attribute):
        if names is None or node.attr.value in names:
            return True
        node = strip_parens(node.value)
    return False


def _makes_new(value: cst.BaseExpression) -> bool:
    """A call of a `__new__` (`super().__new__(mcs, ...)`, `type.__new__(...)`)."""
    value = strip_parens(value)
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "__new__"


def _metaclass(cls: cst.ClassDef, classes: Sequence[cst.ClassDef]) -> bool:
    """`cls` may be a metaclass: based on `type` or another metaclass by name (`_METACLASS_BASES`,
    `abc.ABCMeta`), or named in a `metaclass=` of a class of the file."""
    for base in cls.bases:
        value = strip_parens(base.value)
        last = value.attr.value if isinstance(value, cst.Attribute) else value.value if isinstance(value, cst.Name) else ""
        if last in _METACLASS_BASES:
            return True
    return any(
        k.keyword is not None and k.keyword.value == "metaclass" and isinstance(k.value, cst.Name) and k.value.value == cls.name.value
        for other in classes for k in other.keywords
    )


class CalleeClassifier:
    """Classifies callees of one module; `get_metadata` is the rule visitor's."""

    def __init__(self, get_metadata: GetMeta, facts, metadata_node=lambda node: node) -> None:
        self.meta = get_metadata
        self.metadata_node = metadata_node  # the parsed node whose metadata answers for a node
        self.facts = facts  # gradfix.analysis.facts.FileFacts of the file
        self._function_cache: Dict[tuple, Callee] = {}
        self._bound_cache: Dict[tuple, Optional[str]] = {}
        self._index: Optional[tuple] = None
        # GF004: helper defs inlined although their name may be bound elsewhere -> why.
        self._rebound_inlined: Dict[int, str] = {}
        self.constants = ModuleConstants(get_metadata, self.qualified, self.unscoped_names)
        self._attributes: Optional[tuple] = None  # `may_bind_attribute`: (bound_attribute_names,)
        self._escaping: Optional[List[cst.CSTNode]] = None  # `handed_functions`
        self._unscoped: Optional[frozenset] = None  # `assigned_values`: exprs.unscoped_bindings

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
        # A first name bound once, by a top-level import the read follows: the import's name, with
        # no scope resolved for it (`imported_names`: most files that reach libcst ask only this).
        parsed = self.metadata_node(node)
        position = self.facts.nodes.positions.get(parsed)
        parent = self.facts.nodes.parents.get(parsed)
        # (Not the `b` of `a.b` nor the keyword of `f(b=...)`, nor a name of an import statement: no
        # reads, libcst's scopes skip them.)
        named = (isinstance(parent, cst.Attribute) and parent.attr is parsed) or (isinstance(parent, cst.Arg) and parent.keyword is parsed)
        while isinstance(parent, (cst.Attribute, cst.ImportAlias, cst.AsName)):
            parent = self.facts.nodes.parents.get(parent)
        named = named or isinstance(parent, (cst.Import, cst.ImportFrom))
        if position is not None and not named:
            sole = self.facts.sole_imports.qualified(get_full_name_for_node(node) or "", position.start.line)
            if sole is not None:
                return {sole}
        scope = self.meta(ScopeProvider, node, None)
        # What QualifiedNameProvider would give, asked of this node alone (the scope finds
        # the node's own accesses by identity: hence the parsed node, not an inlined copy).
        names: Collection[QualifiedName] = scope.get_qualified_names_for(self.metadata_node(node)) if scope is not None else set()
        return {q.name for q in names if q.source in (QualifiedNameSource.IMPORT, QualifiedNameSource.BUILTIN)}

    def rebinds(self, names: Collection[str]) -> bool:
        """Whether the file binds any of `names` anywhere, by any form (`def range(...)`, `zip = ...`,
        `:=`), or may rebind builtins through the `builtins` module or a star import
        (`FileFacts.changes_builtins`): builtins read by their text (`range`, `zip`, `list`) are then
        not proven the builtins."""
        counts = self.facts.binding_counts
        return any(name in counts for name in names) or (bool(names) and self.facts.changes_builtins)

    def unscoped_names(self) -> frozenset:
        """The names the file binds by forms libcst's scopes miss (`exprs.unscoped_bindings`; memoised)."""
        if self._unscoped is None:
            self._unscoped = unscoped_bindings(self.facts.module)
        return self._unscoped

    def assigned_values(self, name: cst.Name) -> Optional[list]:
        """The nodes bound to `name` in its scope: Assign values, defs, or None if unresolvable (also
        where the file binds the name by `:=` or a `match` capture, which libcst's scopes miss)."""
        scope = self.meta(ScopeProvider, name, None)
        if scope is None:
            return None
        if name.value in self.unscoped_names():
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
                unpacked = self._unpacked_value(node, parent)
                if unpacked is not None:
                    values.append(unpacked)
                    continue
            return None  # imports, parameters, loop targets, other unpacking ...
        return values

    def _unpacked_value(self, name: cst.Name, parent: Optional[cst.CSTNode]) -> Optional[cst.BaseExpression]:
        """The element bound to `name` by `a, b = x, y` (a flat tuple or list target, one target,
        a display of as many elements and no starred part on either side), else None."""
        if not isinstance(parent, cst.Element) or isinstance(parent, cst.StarredElement):
            return None
        target = self.meta(ParentNodeProvider, parent, None)
        holder = self.meta(ParentNodeProvider, target, None) if target is not None else None
        statement = self.meta(ParentNodeProvider, holder, None) if holder is not None else None
        if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(holder, cst.AssignTarget)):
            return None
        if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
            return None
        value = strip_parens(statement.value)
        if not isinstance(value, (cst.Tuple, cst.List)) or len(value.elements) != len(target.elements):
            return None
        if any(isinstance(e, cst.StarredElement) for e in (*value.elements, *target.elements)):
            return None
        index = next(i for i, e in enumerate(target.elements) if e is parent)
        return value.elements[index].value

    def harmless(self, func: cst.BaseExpression) -> bool:
        """A call that cannot step, zero or read gradients: a proven-pure or random
        function, building or running a torch.nn module of this file, or gradfix's op.

        (In-place calls, `step`, `zero_grad` and the like never get here: the
        scanner stops at them first.)"""
        names = self.qualified(func)
        if names & GRAD_MODE_CONTEXTS or any(is_nn_class(n) or n.startswith("gradfix.autograd.") for n in names):
            return True
        callee = self.classify(func)
        # A module with a forward hook of the file, or changed after it was built, runs code its
        # construction does not show (a pre-hook clamping its weight in place; review, stop 24).
        return callee.kind in (PURE, RANDOM, MODULE) and not callee.unproven

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
            values = self.assigned_values(func)
            if values is None or len(values) != 1:
                return Callee(UNKNOWN, reason=f"`{text}` is not bound once in this file to something gradfix can prove parameter-free and deterministic")
            return self._classify_value(text, values[0])
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            return self._classify_self_member(text, func)
        return Callee(UNKNOWN, reason=f"gradfix cannot resolve `{text}`")

    def _classify_self_member(self, text: str, func: cst.Attribute) -> Callee:
        """`self.name`: a value assigned once on `self` in the class, or a method defined once in it."""
        found = self.self_member(text, func)
        if isinstance(found, Callee):
            return found
        return self._classify_value(text, found)

    def self_member(self, text: str, func: cst.Attribute):
        """What `self.name` is bound to (an assigned value or a method's def), or why that is unknown."""
        cls = self.enclosing_class(func)
        if cls is None:
            return Callee(UNKNOWN, reason=f"gradfix cannot resolve `{text}` outside a class")
        values = self.self_attribute_values(func)
        members = class_members(cls, func.attr.value)
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
        member = self.self_member(text, func)
        if member is not defs[0]:
            reason = member.reason if isinstance(member, Callee) else f"`{text}` is also assigned on `self`"
            self._rebound_inlined[id(defs[0])] = f"it is inlined from `{text}`, but {reason}"
        return defs[0]

    def rebound_inlined(self, function: cst.FunctionDef) -> Optional[str]:
        """Why `inlined_method` could not prove `self.name` to be this def, or None."""
        return self._rebound_inlined.get(id(function))

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
            where they are read (`BodyChecker._self_read`).

        Subclasses and patches in other files are not seen: gradfix checks one file.
        """
        key = (id(cls), attr, own_def)
        if key not in self._bound_cache:
            self._bound_cache[key] = self._find_binding(cls, attr, own_def)
        return self._bound_cache[key]

    def _module_index(self, cls: cst.ClassDef) -> Optional[ModuleIndex]:
        module = self._module_of(cls)
        if module is None:
            return None
        if self._index is None or self._index[0] is not module:
            self._index = (module, index_module(module))
        return self._index[1]

    def _nearest(self, node: cst.CSTNode, kind: type) -> Optional[cst.CSTNode]:
        """`node` or its nearest ancestor that is a `kind`, through the parent links; None if none is."""
        found: Optional[cst.CSTNode] = node
        while found is not None and not isinstance(found, kind):
            found = self.meta(ParentNodeProvider, found, None)
        return found

    def _module_of(self, node: cst.CSTNode) -> Optional[cst.Module]:
        """The module (the file) holding `node`; None if not found."""
        return self._nearest(node, cst.Module)  # type: ignore[return-value]

    def where(self, node: cst.CSTNode) -> str:
        """`line N` for a node of the file, as messages cite it."""
        position = self.meta(PositionProvider, node, None)
        return f"line {position.start.line}" if position is not None else "another line"

    def _find_binding(self, cls: cst.ClassDef, attr: str, own_def: bool) -> Optional[str]:
        index = self._module_index(cls)
        if index is None:
            return f"gradfix cannot find the module of `{cls.name.value}`"
        machinery = class_machinery(index, cls, self.where, self._plain_class_maker)
        if machinery is not None:
            return machinery
        return find_binding(index, cls, attr, own_def, self.where)

    def _plain_class_maker(self, expr: cst.BaseExpression) -> bool:
        """A class decorator or metaclass known to keep the members a class body defines (`class_machinery`)."""
        return bool(self.qualified(expr) & PLAIN_CLASS_MAKERS)

    def _classify_qualified(self, text: str, names: Set[str]) -> Callee:
        if names & RANDOM_FUNCTIONS:
            return Callee(RANDOM, reason=f"`{text}` draws random numbers")
        if names & PURE_FUNCTIONS:
            return Callee(PURE, symmetric=bool(names & SYMMETRIC))
        return Callee(UNKNOWN, reason=f"`{text}` is not on gradfix's list of deterministic parameter-free functions")

    def _classify_value(self, text: str, value: cst.CSTNode) -> Callee:
        if isinstance(value, cst.Call):
            callee = self._classify_construction(text, value)
            if callee.kind in (PURE, MODULE) and self.qualified(value.func):
                why = self._used_unlike_built(text, value)
                if why:
                    return Callee(callee.kind, callee.symmetric, callee.reason, callee.deterministic, unproven=why)
            return callee
        return self._classify_definition(text, value)

    def _used_unlike_built(self, text: str, node: cst.CSTNode) -> str:
        """Why a module `text` proven from its construction at `node` may not compute, called once, what
        it computed called twice; empty when nothing in the file says so. First a forward hook
        registered anywhere in the file (on it, on another module, or on every module: it runs at
        every call, `FileFacts.forward_hooks`); then a use anywhere in the file that may change the module
        (`crit.append(nn.Dropout())`, `crit[1] = ...`, `crit.lin = ...`, `add_dropout(crit)`): any use
        but a call of it, a read, or an allowlisted method (`MODULE_READS`), matched by text, so a
        shadowing name counts too (`module_changes`)."""
        module = self._module_of(node)
        if module is None:
            return f"gradfix cannot find the file of `{text}` to look for forward hooks"
        hooks = self.facts.forward_hooks if module is self.facts.module else []
        if hooks:
            hook = hooks[0]
            return (
                f"`{text}` is an nn.Module and `{code_of(hook).strip()}()` ({self.where(hook)}) registers a forward hook, "
                f"which runs at every call of a module: twice in the original, once after the rewrite"
            )
        changes = module_changes(module, text)
        if changes:
            use = changes[0]
            return (
                f"`{text}` is changed after it was built: `{code_of(use).strip()}` ({self.where(use)}) may make it another "
                f"(random or stateful) module than its construction shows"
            )
        return ""

    def _classify_construction(self, text: str, value: cst.Call) -> Callee:
        names = self.qualified(value.func)
        if names & LOSS_MODULES:
            return Callee(PURE, symmetric=bool(names & SYMMETRIC))
        if any(n.startswith("torch.nn.") for n in names):
            # Before the dropout test: a random module is harmless between passes, one that
            # overwrites its input is not (review, stop 24).
            layer = self._layer_where(value, set(), _builds_inplace)
            if layer is not None:
                return Callee(UNKNOWN, reason=f"`{text}` is built with a layer that overwrites its input (`{layer}`)")
        if names & RANDOM_MODULES:
            return Callee(RANDOM, reason=f"`{text}` is a dropout module")
        if any(n.startswith("torch.nn.") for n in names):
            layer = self._random_layer(value, set())
            if layer is not None:
                return Callee(RANDOM, reason=f"`{text}` is built with a random layer (`{layer}`)")
            foreign = self._foreign_part(value, set())
            if foreign is not None:
                # A module of the file (or anything else) inside a torch.nn container runs code
                # gradfix has not read: it may keep or change what it is given.
                return Callee(UNKNOWN, reason=f"`{text}` is built with `{foreign}`, whose code gradfix does not follow")
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
            verdict = self.function_callee(value)
            if verdict.kind == PURE:
                return Callee(PURE, symmetric=symmetric_definition(value))
            return Callee(verdict.kind, reason=f"`{text}`: {verdict.reason}")
        return Callee(UNKNOWN, reason=f"`{text}` may own trainable parameters or be non-deterministic")

    def _random_layer(self, node: cst.CSTNode, seen: Set[int]) -> Optional[str]:
        """The dropout-like layer a torch.nn construction is built with, or None (`_layer_where`)."""
        return self._layer_where(node, seen, lambda call, names: bool(names & RANDOM_MODULES))

    def _layer_where(self, node: cst.CSTNode, seen: Set[int], test) -> Optional[str]:
        """The first construction `test(call, qualified names)` holds for, that a torch.nn construction is built with, or None.

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
            if test(node, names):
                return code_of(node).strip()
            if any(n.startswith("torch.nn.") for n in names) or names & LAYER_HOLDERS:
                for arg in node.args:
                    found = self._layer_where(arg.value, seen, test)
                    if found is not None:
                        return found
            return None
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            for element in node.elements:
                found = self._layer_where(element.value, seen, test)
                if found is not None:
                    return found
            return None
        if isinstance(node, cst.Dict):
            for element in node.elements:
                found = self._layer_where(element.value, seen, test)  # `key: value` or `**other`
                if found is not None:
                    return found
            return None
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self._layer_where(node.elt, seen, test)
        if isinstance(node, cst.DictComp):
            return self._layer_where(node.value, seen, test)
        if isinstance(node, cst.Name):
            values = self.assigned_values(node)
            for value in values or ():
                found = self._layer_where(value, seen, test)
                if found is not None:
                    return found
            return None
        return None

    def _foreign_part(self, node: cst.CSTNode, seen: Set[int]) -> Optional[str]:
        """The first part of a torch.nn construction that is not torch's own (`nn.Sequential(nn.Linear(4,
        8), Store())` -> `Store()`): a call inside the arguments of torch.nn containers and wrappers,
        through literals, comprehensions and names bound in this file, not resolved to `torch.*`."""
        if id(node) in seen:
            return None
        seen.add(id(node))
        if isinstance(node, cst.Call):
            names = self.qualified(node.func)
            # torch's own classes and functions, and Python's builtins and containers, are read
            # through: any of them may be handed a module (`nn.TransformerEncoder(layer, 2)`,
            # `nn.Sequential(OrderedDict(...))`). Anything else is code gradfix has not read.
            if any(n.startswith(("torch.", "builtins.")) for n in names) or names & LAYER_HOLDERS:
                for arg in node.args:
                    found = self._foreign_part(arg.value, seen)
                    if found is not None:
                        return found
                return None
            return code_of(node).strip()
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            return next((f for e in node.elements for f in [self._foreign_part(e.value, seen)] if f is not None), None)
        if isinstance(node, cst.Dict):
            return next((f for e in node.elements for f in [self._foreign_part(e.value, seen)] if f is not None), None)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self._foreign_part(node.elt, seen)
        if isinstance(node, cst.DictComp):
            return self._foreign_part(node.value, seen)
        if isinstance(node, cst.Name):
            for value in self.assigned_values(node) or ():
                found = self._foreign_part(value, seen)
                if found is not None:
                    return found
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
        return self._nearest(node, cst.ClassDef)  # type: ignore[return-value]

    def enclosing_function(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        """The innermost def holding `node` (`node` itself if one), or None at module level."""
        return self._nearest(node, cst.FunctionDef)  # type: ignore[return-value]

    def lightning_log(self, call: cst.Call) -> bool:
        """`self.log(name, value, ...)` or `self.log_dict(values, ...)` in a class whose every base is
        Lightning's `LightningModule`: Lightning logs a detached copy of a tensor, unless
        `enable_graph=True`. Proven only where the call says nothing else could be meant: the name
        and value (the values for `log_dict`) by position and every other argument by keyword
        (`enable_graph` is `log`'s eighth parameter), no `*args`/`**kwargs`, `enable_graph` absent
        or `False`; and the file binds no attribute `log`/`log_dict` (a method, a class attribute,
        a subclass's override, `self.log = ...`, `setattr`, a `__dict__` store: `may_bind_attribute`),
        so `self.log` is Lightning's."""
        func = call.func
        if not (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and func.attr.value in LIGHTNING_LOG_METHODS
        ):
            return False
        positional = 2 if func.attr.value == "log" else 1
        if sum(arg.keyword is None for arg in call.args) > positional:
            return False
        for arg in call.args:
            if arg.star or (arg.keyword is not None and arg.keyword.value == "enable_graph" and not _is_false(arg.value)):
                return False
        cls = self.enclosing_class(call)
        if cls is None or not cls.bases or cls.keywords:
            return False
        if not all(self.qualified(base.value) & LIGHTNING_MODULES for base in cls.bases):
            return False
        return not any(self.may_bind_attribute(name) for name in LIGHTNING_LOG_METHODS)

    def may_bind_attribute(self, name: str) -> bool:
        """Whether the file may bind an attribute `name` on some object, so that `obj.name(...)` may
        run code of the file (`introspection.bound_attribute_names`: methods of its classes,
        attribute stores, `setattr`; any name where it binds one by a computed string, or hands a
        function of its own not proven pure to code outside it: `_impure_escape`). The one answer
        for the file: harmless calls by name and the aliasing of `between` both ask it."""
        if self._attributes is None:
            names = self.facts.bound_attribute_names
            if names is not None and self._impure_escape() is not None:
                names = None
            self._attributes = (names,)
        names = self._attributes[0]
        return names is None or name in names

    def _only_calls(self, func: cst.BaseExpression) -> bool:
        """A callee known to call the functions it is handed and keep them under no method name:
        torch's (`torch.optim.lr_scheduler.LambdaLR(opt, f)`, `DataLoader(collate_fn=f)`), the
        builtins that map or sort, and by name the module, optimizer and hook methods that do
        (`net.apply(f)`, `opt.step(closure)`, `t.register_hook(f)`: a class of the file defining
        one of those is read through its own stores)."""
        qualified = self.qualified(func)
        if any(name.startswith("torch.") for name in qualified) or qualified & _CALLING_BUILTINS:
            return True
        return isinstance(func, cst.Attribute) and (func.attr.value in ("apply", "step") or func.attr.value.startswith("register_") and func.attr.value.endswith("hook"))

    def _impure_escape(self) -> Optional[cst.CSTNode]:
        """A function of the file handed on as a value (not called where it is named: an argument,
        a dict value, `self.cb` read, a lambda kept) that is not proven pure, or None. Code outside
        the file may bind such a value under any name (`SimpleNamespace(log=f)`, `Mock(**{"log.
        side_effect": f})`, a class made by `type(...)`): a method called by a trusted name may then
        run it. A pure one cannot step, backpropagate or change a tensor, whatever it is called."""
        for node in self._find_escaping():
            verdict = self.function_callee(node)
            if verdict.kind != PURE or verdict.unproven:
                return node
        return None

    def handed_functions(self) -> List[cst.CSTNode]:
        """The functions and lambdas of the file handed to code that may keep them and run them
        later, when it decides (review, round 11): `weakref.finalize(box, report)`,
        `sys.setprofile(prof)`, `DataLoader(ds, collate_fn=collate)`, `warnings.showwarning = show`.

        Proven from the uses known to hand nothing on (review, round 12: round 11 listed the ways
        of handing one on, an argument or a store, and missed `@sys.setprofile`, `hook = prof`,
        `setprofile(prof if on else None)`, `setprofile(*[prof])`): a def's name or a method's
        attribute name read anywhere but as the callee of a call is handed on, and so is a lambda
        not called where it stands, but for the arguments of the callees that run what they are
        handed only now or by a name the file calls (`_CALLS_NOW`, `net.apply(f)`, a function of
        the file that only calls its parameters); a def is handed to each of its decorators but
        those that only wrap it, called by its name (`_KEEPING_DECORATORS` is the complement:
        `staticmethod`, `classmethod`, a property's accessors, the grad-mode contexts, `_CALLS_NOW`).
        `_only_calls` is no proof here: torch's callees keep theirs. A method by its attribute
        name; a property's accessor is run by an attribute read, which gradfix follows."""
        if self._escaping is not None:
            return self._escaping
        shared = getattr(self.facts, "shared", None)
        if shared is not None and "handed functions" in shared:
            self._escaping = shared["handed functions"]  # (another rule's classifier found them)
            return self._escaping
        defs: Dict[str, List[cst.CSTNode]] = {}  # every def, by name: `obj.name` may be any
        for node in nodes_within(self.facts.module, cst.FunctionDef):
            defs.setdefault(node.name.value, []).append(node)
        named: Dict[str, List[cst.CSTNode]] = {}  # the defs a bare name may be: not methods
        methods: Set[int] = set()
        for cls in nodes_within(self.facts.module, cst.ClassDef):
            methods.update(id(s) for s in cls.body.body if isinstance(s, cst.FunctionDef))
        for name, nodes in defs.items():
            named[name] = [d for d in nodes if id(d) not in methods]
        # A lambda bound to a name (`sym = lambda a, b: ...`, a helper as a def would be) is handed on
        # where that name is read but as a callee, as a def is; any other lambda not called where it
        # stands (in a list, an argument, a default) is handed on where it stands.
        bound_lambdas: Set[int] = set()
        lambdas: Dict[str, List[cst.CSTNode]] = {}  # the bound lambdas, by name
        for assign in nodes_within(self.facts.module, cst.Assign):
            value = strip_parens(assign.value)
            if isinstance(value, cst.Lambda) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
                named.setdefault(assign.targets[0].target.value, []).append(value)
                bound_lambdas.add(id(value))
                # Review, round 13: and reached, as a def is, by an attribute (`Tracker().prof` for a
                # lambda bound in a class body, `__main__.hook`) and by its name as a string
                # (`globals()["hook"]`): those read `defs`' names only.
                lambdas.setdefault(assign.targets[0].target.value, []).append(value)
        found: List[cst.CSTNode] = []
        classifier = self

        def only_calls_parameters(func: cst.BaseExpression) -> bool:
            # A function of the file (one def of the name) that only calls its parameters: its
            # callers' arguments run there, by a call gradfix checks where it stands.
            if not isinstance(func, cst.Name) or len(defs.get(func.value, ())) != 1 or self.facts.binding_counts.get(func.value) != 1:
                return False
            callee = defs[func.value][0]
            params = function_parameters(callee)
            called = {id(c.func) for c in nodes_within(callee.body, cst.Call)}
            return all(id(n) in called for n in nodes_within(callee.body, cst.Name) if n.value in params)

        # Calls whose result is not handed anywhere: a decorator's expression (its result gets the
        # def), or the callee of a call (`lru_cache(f)(x)`, run there).
        consumed_calls = {id(d.decorator) for d in nodes_within(self.facts.module, cst.Decorator)}
        consumed_calls.update(id(strip_parens(c.func)) for c in nodes_within(self.facts.module, cst.Call))
        consumed_calls.update(id(e.value) for e in nodes_within(self.facts.module, cst.Expr))  # a statement's value: dropped

        def keeps_nothing(call: cst.Call, wrapped_def_kept: bool = False) -> bool:
            # A `_CALLS_NOW` callee keeps nothing of what it is handed where it returns nothing that
            # holds it (`_RUNS_NOW`), or where what it returns is not handed on (review, round 13).
            # But `@functools.wraps(f)`: the def it decorates keeps `f` as `__wrapped__`, reached
            # wherever that def is read (`sys.setprofile(quiet.__wrapped__)`), but in a wrapper
            # decorator of the file (`wrapped_def_kept`), whose returned def a read of the name it
            # decorates reaches with the decorated def.
            qualified = classifier.qualified(call.func)
            if qualified & _ATTACHING and not wrapped_def_kept:
                return False
            return bool(qualified & _RUNS_NOW) or bool(qualified & _CALLS_NOW) and id(call) in consumed_calls

        def runs_only(call: cst.Call, arg: cst.Arg) -> bool:
            # Review, round 14: of a `_RUNS_NOW` callee whose result is kept, only the `key=` it runs
            # is not kept: `min`/`max` return one of their positional arguments (or `default=`),
            # `sorted` a list of its iterable's items (`sys.setprofile(max(prof, quiet, key=...))`
            # hands `prof` on).
            if id(call) in consumed_calls or not classifier.qualified(call.func) & _RUNS_NOW:
                return True
            return arg.keyword is not None and arg.keyword.value == "key"

        def calls_now(call: cst.Call) -> bool:
            # `net.apply(f)`: torch's `Module.apply` runs `f` now; by its name, so only where no class
            # of the file may bind an `apply` of its own that keeps `f` (review, round 13:
            # `Hooks().apply(prof)` whose `apply` runs `sys.setprofile(fn)`).
            func = strip_parens(call.func)
            by_name = isinstance(func, cst.Attribute) and func.attr.value == "apply" and not classifier.may_bind_attribute("apply")
            return keeps_nothing(call) or by_name or only_calls_parameters(func)

        # Decorators of the file that only wrap (`def logged(fn): @functools.wraps(fn) def inner(*a):
        # return fn(*a); return inner`): a module-level def bound once, undecorated, named only as
        # a decorator (`@logged`), whose parameters are only called or handed to a callee of
        # `_CALLS_NOW`, and which returns only defs nested in it, by name. The decorated name is
        # bound to what it returns: a read of that name hands those on too, and the `return` by
        # itself hands nothing on.
        wrappers: Dict[str, List[cst.CSTNode]] = {}
        kept_returns: Set[int] = set()
        decorator_names = {id(d.decorator) for d in nodes_within(self.facts.module, cst.Decorator)}
        for top in self.facts.module.body:
            if not isinstance(top, cst.FunctionDef) or top.decorators or len(defs.get(top.name.value, ())) != 1:
                continue
            if self.facts.binding_counts.get(top.name.value) != 1:
                continue
            if any(n.value == top.name.value and n is not top.name and id(n) not in decorator_names for n in nodes_within(self.facts.module, cst.Name)):
                continue
            params = function_parameters(top)
            allowed = set()
            for c in nodes_within(top.body, cst.Call):
                allowed.add(id(c.func))
                if keeps_nothing(c, wrapped_def_kept=True):
                    allowed.update(id(a.value) for a in c.args if not a.star and runs_only(c, a))
            if not all(id(n) in allowed for n in nodes_within(top.body, cst.Name) if n.value in params):
                continue
            nested = {st.name.value: st for st in top.body.body if isinstance(st, cst.FunctionDef)}
            inner_returns = {id(r) for d in nodes_within(top.body, cst.FunctionDef) for r in nodes_within(d.body, cst.Return)}
            own = [r for r in nodes_within(top.body, cst.Return) if id(r) not in inner_returns]
            if not own or not all(isinstance(r.value, cst.Name) and r.value.value in nested for r in own):
                continue
            wrappers[top.name.value] = list(dict.fromkeys(nested[r.value.value] for r in own))
            kept_returns.update(id(r) for r in own)

        def wrapped(function: cst.CSTNode) -> List[cst.CSTNode]:
            # What a read of a def's name reaches: the def, and what a wrapper it is decorated by returns.
            extra: List[cst.CSTNode] = []
            if isinstance(function, cst.FunctionDef):
                for d in function.decorators:
                    if isinstance(d.decorator, cst.Name) and d.decorator.value in wrappers:
                        extra.extend(wrappers[d.decorator.value])
            return [function, *extra]

        def wraps_only(decorator: cst.BaseExpression) -> bool:
            if isinstance(decorator, cst.Call):
                decorator = decorator.func
            text = code_of(decorator).strip()
            if text in ("staticmethod", "classmethod", "property") and text not in self.facts.binding_counts and not self.facts.changes_builtins:
                return True
            if isinstance(decorator, cst.Attribute) and decorator.attr.value in ("setter", "getter", "deleter"):
                return True
            if isinstance(decorator, cst.Name) and decorator.value in wrappers:
                return True
            return bool(classifier.qualified(decorator) & _WRAPPING_DECORATORS)

        # Review, round 14: a lookup by a computed name reaches a module-level def where the file may
        # reach its module's namespace (`globals()`, `sys.modules`, `f.__globals__`: `exprs.dynamic_global`):
        # `name = "prof"; sys.setprofile(globals()[name])`.
        module_reached = dynamic_global(self.facts.module) is not None
        looked_up: Set[int] = set()  # string literals a lookup may get as a name: arguments, keys
        builtins_kept = not self.facts.changes_builtins
        for call in nodes_within(self.facts.module, cst.Call):
            func = strip_parens(call.func)
            if isinstance(func, cst.Name) and func.value in _INERT_BUILTINS and func.value not in self.facts.binding_counts and builtins_kept:
                continue
            if isinstance(func, cst.Attribute) and func.attr.value in _INERT_METHODS:
                continue
            if any(q.startswith("os.path.") or q in HARMLESS_QUALIFIED for q in classifier.qualified(func)):
                continue
            looked_up.update(id(strip_parens(a.value)) for a in call.args)
        subscript_keys: Set[int] = {
            id(strip_parens(e.slice.value)) for sub in nodes_within(self.facts.module, cst.Subscript) for e in sub.slice if isinstance(e.slice, cst.Index)
        }
        namespace_keys: Set[int] = set()  # keys of a namespace a call gives (`globals()[k]`) or a `__dict__`
        for subscript in nodes_within(self.facts.module, cst.Subscript):
            keys = [id(strip_parens(e.slice.value)) for e in subscript.slice if isinstance(e.slice, cst.Index)]
            looked_up.update(keys)
            holder = strip_parens(subscript.value)
            if isinstance(holder, cst.Call) or isinstance(holder, cst.Attribute) and holder.attr.value == "__dict__":
                namespace_keys.update(keys)
        called_lookups: Set[int] = set()  # `getattr(o, "m")(...)`, `vars(K)["m"](...)`: called where they stand

        def by_string(key: Optional[cst.BaseExpression]) -> None:
            # A function reached by its name as a string and not called where it stands is handed on
            # (review, round 12: `sys.setprofile(getattr(Tracker(), "prof"))`, `vars(K)["prof"]`):
            # the defs of that name, or every method where the string is not a literal (an object's
            # attribute; a module-level function reached through the module object by a computed
            # name is left to `dynamic_global`'s refusals of the file's own module).
            text = string_value(key) if key is not None else None
            for name, nodes in defs.items():
                if text is None or name == text:
                    found.extend(
                        w for d in nodes if not _accessor(d) and (text is not None or id(d) in methods or module_reached) for w in wrapped(d)
                    )
            if text is None and module_reached:
                found.extend(any_construction())  # (a class of the file by its computed name too)
            for name, bound in lambdas.items():
                if text is None or name == text:
                    found.extend(bound)
            if text is not None and text in classes and (key is None or id(key) not in subscript_keys or id(key) in namespace_keys):
                found.extend(handed_class(text))  # `globals()["Prof"]` (review, round 13)

        def namespace(holder: cst.BaseExpression) -> bool:
            # A namespace as a dict: `vars(o)`, `globals()`, `locals()`, `o.__dict__`, a function's
            # `__globals__`, a frame's `f_globals`/`f_locals`.
            holder = strip_parens(holder)
            if isinstance(holder, cst.Call) and isinstance(holder.func, cst.Name):
                return holder.func.value in ("vars", "globals", "locals")
            return isinstance(holder, cst.Attribute) and holder.attr.value in _NAMESPACE_DICTS

        def whole_namespace(node: cst.BaseExpression) -> bool:
            # A namespace holding defs of the file: the module's (`globals()`, `locals()`, `vars()`,
            # a function's `__globals__`, a frame's `f_globals`/`f_locals`) or a class's of the file
            # (`vars(K)`, `K.__dict__`). Not `vars(args)` of any object: an instance's holds no def
            # that was not handed on where it was stored.
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("globals", "locals", "vars"):
                if not node.args:
                    return True
                value = strip_parens(node.args[0].value)
                return node.func.value == "vars" and isinstance(value, cst.Name) and value.value in classes
            if isinstance(node, cst.Attribute) and node.attr.value in ("__globals__", "f_globals", "f_locals"):
                return True
            return isinstance(node, cst.Attribute) and node.attr.value == "__dict__" and isinstance(node.value, cst.Name) and node.value.value in classes

        # The namespaces read by a key (`globals()[k]`, `vars(K).get(k)`), which `string_lookup` follows.
        lookup_holders: Set[int] = {
            id(strip_parens(sub.value)) for sub in nodes_within(self.facts.module, cst.Subscript)
        } | {
            id(strip_parens(c.func.value)) for c in nodes_within(self.facts.module, cst.Call)
            if isinstance(c.func, cst.Attribute) and c.func.attr.value in ITEM_GETTERS
        }

        def string_lookup(node: cst.BaseExpression) -> Optional[Tuple[Optional[cst.BaseExpression]]]:
            # `getattr(o, key, ...)`, or `vars(o)[key]` / `o.__dict__[key]` / `globals()[key]`, or
            # `globals().get(key)` (review, round 14: round 13 read `globals()` by a literal key
            # only, `visit_SimpleString`): (key,), else None.
            node = strip_parens(node)
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "getattr":
                return (node.args[1].value if len(node.args) > 1 and not node.args[1].star else None,)
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ITEM_GETTERS:
                if namespace(node.func.value):
                    return (node.args[0].value if node.args and not node.args[0].star and not node.args[0].keyword else None,)
            if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                if namespace(node.value):
                    return (node.slice[0].slice.value,)
            return None

        # Review, round 13: a class of the file handed on (`sys.setprofile(Prof)`,
        # `logging.setLogRecordFactory(Record)`) is called where outside code decides, and its
        # construction (`__new__`, `__init__`, a dataclass's `__post_init__`, those of its bases of
        # the file too) runs with no call gradfix sees. A class's name read anywhere is handed on but
        # as a callee, an attribute's receiver (`C.x`: the attribute is judged), a base or keyword
        # of a class statement, in an annotation, checked against (`isinstance`, `issubclass`,
        # `super`, `except`, `is`/`==`).
        classes = self.facts.class_names  # (read only)
        module_names = module_classes(self.facts)  # those that may be `nn.Module`s with a `forward` of the file
        inert_class_reads: Set[int] = set()

        def inert(expression: Optional[cst.CSTNode]) -> None:
            if expression is not None:
                inert_class_reads.update(id(n) for n in nodes_within(expression, cst.Name))

        for attribute in nodes_within(self.facts.module, cst.Attribute):
            inert_class_reads.add(id(strip_parens(attribute.value)))
        for cls in classes_all(classes):
            for arg in (*cls.bases, *cls.keywords):
                inert(arg.value)
        for annotation in nodes_within(self.facts.module, cst.Annotation):
            inert(annotation)
        for call in nodes_within(self.facts.module, cst.Call):
            if isinstance(call.func, cst.Name) and call.func.value in ("isinstance", "issubclass", "super") and call.func.value not in self.facts.binding_counts:
                for arg in call.args:
                    inert(arg.value)
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "__new__" and call.args:
                inert(call.args[0].value)  # `super().__new__(cls)` makes an instance of it (review, round 14)
        for handler in nodes_within(self.facts.module, cst.ExceptHandler):
            inert(handler.type)
        for comparison in nodes_within(self.facts.module, cst.Comparison):
            inert_class_reads.update(id(strip_parens(e)) for e in (comparison.left, *(c.comparator for c in comparison.comparisons)))

        def construction(name: str, seen: Set[str]) -> List[cst.CSTNode]:
            # The methods a call of the class `name` runs: its own and its bases' of the file.
            if name in seen:
                return []
            seen.add(name)
            out: List[cst.CSTNode] = []
            for cls in classes.get(name, ()):
                out.extend(s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value in _CONSTRUCTION)
                for arg in cls.bases:
                    for base in nodes_within(arg.value, cst.Name):
                        out.extend(construction(base.value, seen))
            return out

        def handed_class(name: str) -> List[cst.CSTNode]:
            # A class handed on: its construction, and where it is a module class, the `forward` its
            # instances run at their calls, which outside code may make (review, round 16).
            out = construction(name, set())
            if name in module_names:
                out.extend(forwards_of(classifier.facts, name))
            return out

        def any_construction() -> List[cst.CSTNode]:
            return [m for name in classes for m in handed_class(name)]

        # Review, round 14: a class reached by no name of it, through a parameter Python binds to a
        # class: a classmethod's `cls` (`sys.setprofile(cls)` in `Prof.install()`), that of
        # `__init_subclass__`, `__class_getitem__`, `__new__`, `__set_name__`'s owner, and in a
        # metaclass of the file, which gets every class it makes, the first of each method
        # (`Installing.__init__(cls, ...)`) and what its `__new__` makes (`_class_parameter_reads`).
        # Read other than as the names of classes above are, it hands on any class's construction.
        class_parameter_reads = _class_parameter_reads(classes_all(classes))

        called_keys: Set[int] = set()  # the string of a lookup called where it stands

        class Uses(cst.CSTVisitor):
            def visit_SimpleString(self, node: cst.SimpleString) -> None:
                # Review, round 13: a function reached by its name as a string by any other means
                # (`operator.attrgetter("prof")(t)`, `methodcaller`, `object.__getattribute__(t,
                # "prof")`, `vars(K).get("prof")`, `globals()["prof"]`) is handed on: every string
                # literal naming a def of the file that is a call's argument or a subscript's key
                # (where a lookup gets its name), but the key of a lookup called where it stands and
                # the arguments of callees that only print, log or join paths (`_INERT_BUILTINS`,
                # `_INERT_METHODS`, `os.path`, logging's functions).
                if id(node) in looked_up and id(node) not in called_keys:
                    text = string_value(node)
                    # A class by its name: as an argument, or the key of a namespace (`globals()["Prof"]`),
                    # not of any mapping (`dims["Prof"]`: a class's name is a common key).
                    as_class = text in classes and (id(node) not in subscript_keys or id(node) in namespace_keys)
                    if text is not None and (text in defs or text in lambdas or as_class):
                        by_string(node)

            def visit_Subscript(self, node: cst.Subscript) -> None:
                lookup = string_lookup(node)
                if lookup is not None and id(node) not in called_lookups:
                    by_string(lookup[0])

            def visit_Call(self, node: cst.Call) -> Optional[bool]:
                func = strip_parens(node.func)
                called = string_lookup(func)
                if called is not None:
                    called_lookups.add(id(func))
                    if called[0] is not None:
                        called_keys.add(id(called[0]))
                lookup = string_lookup(node)
                if lookup is not None and id(node) not in called_lookups:
                    by_string(lookup[0])
                if whole_namespace(node) and id(node) not in lookup_holders:
                    # Review, round 14: a namespace read whole (`globals().values()`, iterated, handed
                    # on) gives every def it holds, as a lookup by a computed name does.
                    by_string(None)
                if isinstance(func, cst.Attribute):
                    walk_tree(func.value, self)  # the method itself is called, not handed on
                elif isinstance(func, cst.Lambda):
                    walk_tree(func.body, self)  # `(lambda: ...)()`: called where it stands
                elif not isinstance(func, cst.Name):
                    walk_tree(func, self)
                now = calls_now(node)
                if isinstance(func, cst.Attribute) and func.attr.value in _CLASS_GRAPH_METHODS and id(node) not in inert_class_reads:
                    # `sys.setprofile(Hook.__subclasses__()[0])`: classes by no name of theirs (review, round 14).
                    found.extend(any_construction())
                if isinstance(func, cst.Name) and func.value == "type" and len(node.args) == 1 and id(node) not in inert_class_reads:
                    # `sys.setprofile(type(prof))`: an object's class handed on, any class of the file.
                    found.extend(any_construction())
                for arg in node.args:
                    value = strip_parens(arg.value)
                    if now and not arg.star and isinstance(value, (cst.Name, cst.Attribute, cst.Lambda)) and runs_only(node, arg):
                        if isinstance(value, cst.Attribute):
                            walk_tree(value.value, self)
                        elif isinstance(value, cst.Lambda):
                            walk_tree(value.body, self)
                        continue  # `sorted(xs, key=rank)`: run there, or by a name the file calls
                    walk_tree(arg.value, self)
                return False

            def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
                if id(node) not in bound_lambdas:
                    found.append(node)
                walk_tree(node.body, self)
                return False

            def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
                for decorator in node.decorators:
                    if not (isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in wrappers):
                        walk_tree(decorator.decorator, self)  # (`@logged`: called with the def)
                    if not wraps_only(decorator.decorator):
                        found.append(node)  # the decorator gets it, and may keep it (`@sys.setprofile`)
                for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params, node.params.star_arg, node.params.star_kwarg):
                    if isinstance(param, cst.Param):
                        if param.default is not None:
                            walk_tree(param.default, self)
                        if param.annotation is not None:
                            walk_tree(param.annotation, self)
                if node.returns is not None:
                    walk_tree(node.returns, self)
                walk_tree(node.body, self)
                return False

            def visit_ClassDef(self, node: cst.ClassDef) -> Optional[bool]:
                for part in (*node.decorators, *node.bases, *node.keywords):
                    walk_tree(part, self)
                # A class decorator gets the class, and may keep it (a registry that builds it later):
                # but those that only add methods to it (review, round 13).
                if any(not (classifier.qualified(d.decorator) & _CLASS_KEEPING_NOTHING) for d in node.decorators):
                    found.extend(handed_class(node.name.value))
                # In the class body a bare name may be a method of it (`prop = property(get)`).
                own = {s.name.value: s for s in node.body.body if isinstance(s, cst.FunctionDef)}
                for statement in node.body.body:
                    if not isinstance(statement, cst.FunctionDef):
                        found.extend(own[n.value] for n in nodes_within(statement, cst.Name) if n.value in own)
                walk_tree(node.body, self)
                return False

            def visit_Arg(self, node: cst.Arg) -> Optional[bool]:
                walk_tree(node.value, self)  # not the keyword's name
                return False

            def visit_AssignTarget(self, node: cst.AssignTarget) -> Optional[bool]:
                target = strip_parens(node.target)
                if isinstance(target, cst.Name):
                    return False  # a name bound, not read
                if isinstance(target, cst.Attribute):
                    walk_tree(target.value, self)
                    return False
                return True

            def visit_Return(self, node: cst.Return) -> Optional[bool]:
                return id(node) not in kept_returns  # a wrapper's `return inner`: bound to the decorated name

            def visit_Name(self, node: cst.Name) -> None:
                for d in named.get(node.value, ()):  # `hook = prof`, `setprofile(*[prof])`: handed on
                    found.extend(wrapped(d))
                if node.value in classes and id(node) not in inert_class_reads:
                    found.extend(handed_class(node.value))  # `sys.setprofile(Prof)`
                if id(node) in class_parameter_reads and id(node) not in inert_class_reads:
                    found.extend(any_construction())  # `sys.setprofile(cls)` in a classmethod

            def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
                # `tracker.prof` read: a bound method handed on (a property's accessor runs at the read).
                # A module-level function only through what may be this file's module: not through a
                # path from an allowed module (`torch.nn.init.zeros_` reaches no `def init` of the file;
                # `torch.nn.init = init` reads `init` by its name, handed on there).
                root = _storage_root(node.value)  # (the name the path starts from, through calls)
                imported = classifier.facts.sole_imports.imported_as(root) if root is not None else None
                allowed = imported is not None and imported.split(".")[0] in TRUSTED_MODULES
                # Review, round 15: through attributes only: an item or a call's result on the way may
                # be any module, this file's too (`sys.modules[__name__].prof`).
                allowed = allowed and _attribute_chain(node.value)
                # Review, round 16: and no attribute on the way is one the file binds.
                allowed = allowed and not _chain_bound_by(node.value, classifier.facts)
                for d in defs.get(node.attr.value, ()):
                    if isinstance(d, cst.FunctionDef) and not _accessor(d) and (id(d) in methods or not allowed):
                        found.extend(wrapped(d))
                if not allowed:
                    found.extend(lambdas.get(node.attr.value, ()))
                if whole_namespace(node) and id(node) not in lookup_holders:
                    by_string(None)  # `f.__globals__.values()`, `K.__dict__.items()` (review, round 14)
                if node.attr.value in _CLASS_GRAPH_ATTRIBUTES and id(node) not in inert_class_reads:
                    # `sys.setprofile(prof.__class__)`, `Quiet.__mro__[1]` (review, round 14): any class of the file
                    found.extend(any_construction())
                if node.attr.value in _ACCESSOR_HOLDERS:
                    # Review, round 13: a property read on its class is the property object, whose
                    # `fget` hands its getter on (`sys.setprofile(Tracker.prof.fget)`) with no run at
                    # the read: every accessor of the file.
                    found.extend(d for nodes in defs.values() for d in nodes if _accessor(d))
                walk_tree(node.value, self)
                return False

            def visit_Import(self, node: cst.Import) -> bool:
                return False

            def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
                return False

        walk_tree(self.facts.module, Uses())
        # An instance of a class of the file handed on (`sys.setprofile(Prof())`) is called by its
        # `__call__`, whose call sites gradfix cannot place: every `__call__` is handed on
        # (review, round 12).
        found.extend(d for d in defs.get("__call__", ()) if id(d) in methods)
        # Review, round 16: and an instance of an `nn.Module` class of the file handed on runs its
        # `forward` there, by torch's `__call__` (`sys.setprofile(Prof())`): the `forward` of each
        # class whose instance reaches a use not proven harmless (`handed_modules`).
        found.extend(handed_module_forwards(self.facts, self))
        self._escaping = list(dict.fromkeys(found))
        if shared is not None:
            shared["handed functions"] = self._escaping
        return self._escaping

    def _find_escaping(self) -> List[cst.CSTNode]:
        module = self.facts.module
        defs: Dict[str, List[cst.CSTNode]] = {}  # functions, by name
        methods: Dict[str, List[cst.CSTNode]] = {}  # defined in a class body: reached as `obj.name`
        escaping: List[cst.CSTNode] = []

        class Defs(cst.CSTVisitor):
            def __init__(self) -> None:
                super().__init__()
                self.in_class = [False]

            def visit_ClassDef(self, node: cst.ClassDef) -> None:
                self.in_class.append(True)

            def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
                self.in_class.pop()

            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                (methods if self.in_class[-1] else defs).setdefault(node.name.value, []).append(node)
                self.in_class.append(False)

            def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
                self.in_class.pop()

        walk_tree(module, Defs())
        classifier = self

        class Uses(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> Optional[bool]:
                # The callee itself is called, not handed on: look at the rest only.
                func = node.func
                if isinstance(func, cst.Attribute):
                    walk_tree(func.value, self)
                elif not isinstance(func, cst.Name):
                    walk_tree(func, self)
                consumer = classifier._only_calls(func)
                for arg in node.args:
                    if consumer and isinstance(arg.value, (cst.Name, cst.Attribute)) and not arg.star:
                        if isinstance(arg.value, cst.Attribute):
                            walk_tree(arg.value.value, self)
                        continue  # `net.apply(init_weights)`: called there, never bound under a name
                    walk_tree(arg, self)
                return False

            def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
                for decorator in node.decorators:
                    applied = decorator.decorator
                    if isinstance(applied, cst.Call):
                        walk_tree(applied, self)  # its arguments
                        applied = applied.func
                    known = classifier.qualified(applied) & TRANSPARENT_DECORATORS or classifier._only_calls(applied)
                    if not known and code_of(applied).strip() not in ("staticmethod", "classmethod", "property"):
                        escaping.append(node)  # the decorator receives it
                walk_tree(node.body, self)
                return False

            def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
                escaping.append(node)
                return True

            def visit_Name(self, node: cst.Name) -> None:
                escaping.extend(defs.get(node.value, ()))

            def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
                escaping.extend(methods.get(node.attr.value, ()))  # `self.cb`, `tracker.cb` read: a bound method handed on
                walk_tree(node.value, self)
                return False

            def visit_Import(self, node: cst.Import) -> bool:
                return False

            def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
                return False

        walk_tree(module, Uses())
        return list(dict.fromkeys(escaping))

    def self_attribute_values(self, func: cst.Attribute) -> list:
        cls = self.enclosing_class(func)
        if cls is None:
            return []
        return self_attribute_values(cls, func.attr.value)

    def pure_function(self, node: cst.FunctionDef) -> bool:
        """A helper of this file that can be replaced by its returned expression (GF004's inlining).

        Its body is deterministic, changes nothing and reads no global that may
        be a trainable tensor. A method may read `self.name` freely here: the
        inlined expression reads the same attribute of the same object, and
        the rule then judges every call in it on its own (`classify`). Calls
        `self.m(...)` must be to such methods of the class (or loss modules).
        """
        return self.function_callee(node, inline=True).kind == PURE

    def function_callee(self, node: cst.CSTNode, inline: bool = False) -> Callee:
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
        checker = BodyChecker(self, node, self_name=self._self_parameter(node), inline=inline)
        walk_tree(node.body, checker)
        if checker.verdict is not None and checker.verdict.kind == RANDOM:
            return checker.verdict
        # Default values are evaluated once, where the function is defined, and
        # read by the body through their parameters: a trainable tensor there
        # is a global read like one in the body (docs/design.md §1, E2).
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is None:
                continue
            defaults = DefaultChecker(self, param)
            walk_tree(param.default, defaults)
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


def symmetric_definition(node: cst.CSTNode) -> bool:
    """A function or lambda of two positional parameters `(p, q)` that returns `g(p, q) + g(q, p)`:
    the same value and gradients with its arguments swapped (docs/design.md §1, E9), exactly,
    since two summands add alike in either order (`sym_kl(P.detach(), S)` against
    `sym_kl(S.detach(), P)`). Only one `return` (after an optional docstring), no defaults, no
    other parameters; the two summands are compared as written, with `p` and `q` exchanged."""
    params = node.params  # type: ignore[attr-defined]
    if params.posonly_params or params.kwonly_params or params.star_kwarg is not None or not isinstance(params.star_arg, cst.MaybeSentinel):
        return False
    if len(params.params) != 2 or any(p.default is not None for p in params.params):
        return False
    first, second = (p.name.value for p in params.params)
    returned = node.body if isinstance(node, cst.Lambda) else single_return(node)  # type: ignore[arg-type]
    if returned is None:
        return False
    returned = strip_parens(returned)
    if not (isinstance(returned, cst.BinaryOperation) and isinstance(returned.operator, cst.Add)):
        return False
    if _binds(returned):
        return False  # a comprehension or lambda may rebind `p` or `q`: renaming would not be exchanging
    left, right = returned.left, returned.right
    exchanged = left.visit(_Exchange(first, second))
    return same_expr(exchanged, right)  # type: ignore[arg-type]


def _binds(node: cst.CSTNode) -> bool:
    found: List[cst.CSTNode] = []

    class Find(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, (cst.CompFor, cst.Lambda, cst.NamedExpr)):
                found.append(n)
            return not found

    walk_tree(node, Find())
    return bool(found)


class _Exchange(cst.CSTTransformer):
    """Renames two names into each other (reads only: not attribute names nor keywords)."""

    def __init__(self, a: str, b: str) -> None:
        super().__init__()
        self.names = {a: b, b: a}

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        return False  # the receiver is renamed in leave_Attribute; the attribute name is not a read

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(value=original.value.visit(self))

    def visit_Arg(self, node: cst.Arg) -> Optional[bool]:
        return False

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(value=original.value.visit(self))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        if original.value in self.names:
            return updated.with_changes(value=self.names[original.value])
        return updated


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _builds_inplace(call: cst.Call, names) -> bool:
    """A torch.nn construction built to overwrite its input, or its own weight: an `inplace`
    argument that is not the literal `False`, by keyword or, for the classes of
    `INPLACE_PARAMETER_POSITION`, by position or possibly inside `*args`/`**kwargs`; an
    embedding's `max_norm` (its forward renormalises rows of the weight in place)."""
    position = next((INPLACE_PARAMETER_POSITION[n] for n in names if n in INPLACE_PARAMETER_POSITION), None)
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "inplace" and not _is_false(arg.value):
            return True
        if arg.keyword is not None and arg.keyword.value == "max_norm" and not _is_none(arg.value):
            return True
    return flag_argument(call, position) is not None


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


# -- what a pure callee returns ------------------------------------------------------------------

# Pure tensor methods whose result is not one tensor: a shape or a count (`.size()`, `.numel()`),
# a tuple of tensors (`.chunk()`, `.split()`); `.max()`/`.min()` with arguments may give a
# (values, indices) pair (`_TUPLE_WITH_ARGUMENTS`).
_NON_TENSOR_METHODS = frozenset({"size", "dim", "numel", "chunk", "split"})
_TUPLE_WITH_ARGUMENTS = frozenset({"max", "min", "torch.max", "torch.min"})


def _tensor_method(call: cst.Call) -> bool:
    """`<receiver>.m(...)`, `m` a pure tensor method that gives one tensor (`.mean()`, `.pow(2)`)."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    if method not in PURE_TENSOR_METHODS or method in _NON_TENSOR_METHODS:
        return False
    return not (method in _TUPLE_WITH_ARGUMENTS and call.args)


class _Returns(cst.CSTVisitor):
    """The values a def's own body returns (None for a bare `return`); nested scopes left out."""

    def __init__(self) -> None:
        self.values: List[Optional[cst.BaseExpression]] = []

    def visit_Return(self, node: cst.Return) -> None:
        self.values.append(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _tensor_result_of(classifier: "CalleeClassifier", call: cst.Call, seen: Set[int]) -> bool:
    """Whether `call` (of a callee proven pure or a deterministic module) gives one tensor: a torch
    function of gradfix's pure list (not `torch.max(t, dim)`, a pair), a loss module or an nn.Module
    built in the file from deterministic layers, a pure tensor method that gives one tensor, or a
    def or lambda of the file (a method of the class on `self`) every `return` of which gives one
    (`_tensor_expression`). A number (`float(...)`, `len(a)`, `a.numel()`) or a tuple is not."""
    func = call.func
    names = classifier.qualified(func)
    if names:
        if not names & PURE_FUNCTIONS and not names & LOSS_MODULES:
            return False
        return not (names & _TUPLE_WITH_ARGUMENTS and len(call.args) != 1)
    if _tensor_method(call):
        return True
    if isinstance(func, cst.Name):
        values = classifier.assigned_values(func)
        if not values or len(values) != 1:
            return False
        value = values[0]
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        value = classifier.self_member(code_of(func).strip(), func)
    else:
        return False
    if isinstance(value, cst.Call):
        callee = classifier.classify(func)
        built = classifier.qualified(value.func)
        return bool(built & LOSS_MODULES) or (callee.kind == MODULE and callee.deterministic)
    if id(value) in seen or not isinstance(value, (cst.FunctionDef, cst.Lambda)):
        return False
    seen.add(id(value))
    if isinstance(value, cst.Lambda):
        returned: List[Optional[cst.BaseExpression]] = [value.body]
    else:
        finder = _Returns()
        walk_tree(value.body, finder)
        returned = finder.values
    return bool(returned) and all(r is not None and _tensor_expression(classifier, r, seen) for r in returned)


def _tensor_expression(classifier: "CalleeClassifier", node: cst.BaseExpression, seen: Set[int]) -> bool:
    """An expression of a pure callee's body proven to give one tensor: a call that does
    (`_tensor_result_of`), arithmetic with such an operand, a negation of one, an item of one,
    a conditional both of whose values are, a local name every binding of which is."""
    node = strip_parens(node)
    if isinstance(node, cst.Call):
        return _tensor_result_of(classifier, node, seen)
    if isinstance(node, cst.BinaryOperation):
        return _tensor_expression(classifier, node.left, seen) or _tensor_expression(classifier, node.right, seen)
    if isinstance(node, cst.UnaryOperation):
        return not isinstance(node.operator, cst.Not) and _tensor_expression(classifier, node.expression, seen)
    if isinstance(node, cst.Subscript):
        return _tensor_expression(classifier, node.value, seen)
    if isinstance(node, cst.IfExp):
        return _tensor_expression(classifier, node.body, seen) and _tensor_expression(classifier, node.orelse, seen)
    if isinstance(node, cst.Name):
        if id(node) in seen:
            return False
        seen.add(id(node))
        values = classifier.assigned_values(node)
        return bool(values) and all(
            isinstance(v, cst.BaseExpression) and not isinstance(v, cst.Lambda) and _tensor_expression(classifier, v, seen) for v in values  # type: ignore[arg-type]
        )
    return False


def tensor_result(classifier: "CalleeClassifier", call: cst.Call, chain: Sequence[cst.Call] = ()) -> bool:
    """Whether the value of `call`, with the method calls `chain` on it (outermost first), is proven
    one tensor (`_tensor_result_of`): what a rewrite may call `.detach()` on."""
    if chain:
        return _tensor_method(chain[0])
    return _tensor_result_of(classifier, call, set())
