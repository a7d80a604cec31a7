"""Instances of the file's `nn.Module` classes handed to code outside the file (review, round 16).

torch's `Module.__call__` runs `forward`: an instance handed on (`sys.setprofile(Prof())`,
`weakref.finalize(box, Report())`, `log.addFilter(Keep())`) has its `forward` run where that code
decides, between two backward passes too, with no call gradfix sees. Handing on every `forward` of
the file would cost every module whose `forward` calls a submodule its merges (any `forward` may
change state as far as `facts.changes_state` can tell), so the instance is followed instead: from
each `C(...)` of a module class `C` of the file, and each read of `self` in its methods, through
names and attributes bound to it, the methods that return the module (`.to(d)`, `.train()`),
torch's wrappers and containers (whose result is a module the file calls), and the functions of
the file it is handed to. A use proven harmless ends the search: called (`net(x)`), a receiver of
an attribute or method of torch's `Module` (`net.parameters()`), a test, `print`/`isinstance`/
`len`. Any other use (an argument of a callee not proven to keep nothing, a store outside the
file's objects, a `yield`, a lambda's body, a return of a function whose every call is not
followed) hands the instance on, and the `forward` of its class (its bases' and subclasses' of the
file too; every method but the construction where torch's `forward` runs, which may call them) is
handed on: `CalleeClassifier.handed_functions`, whose `escaped_function_reasons` checks it.

What is a list of known cases, not a proof: torch's methods that return the module or hold
submodules (`_SELF_RETURNING`, `_HOLDING`, `_CONTAINER_GETTERS`), those whose result is no module
(`_OTHER_RESULTS`), the wrappers (`_WRAPPERS`), the resolvers of a name (`_NAME_RESOLVERS`).
Names are followed by their text over the whole file (a rebinding only adds reads).

Review, round 17: instances made with no `C(...)` the file shows are followed too (unpicklers and the
collector, `_INSTANCE_SOURCES`; `X.__new__(C)`; a class called by a lookup of its name); so are a
wrapper's or container's attributes that give the module (`_WRAPPED_ATTRIBUTES`, the file's
container keys), a builder's return reached by `getattr`, class-body lambdas as methods. Known
lists added: `_CALLBACK_TAKING` (torch calls what it is handed with the module), `_NEW_CONTAINERS`
(what `.append` may add to), `_PASSING_DECORATORS` (a decorated def's parameters are followed only
under these).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.helpers import get_full_name_for_node

from gradfix.analysis.exprs import bound_names, string_value
from gradfix.analysis.statements import is_method
from gradfix.analysis.vocabulary import LIGHTNING_MODULES, is_nn_class
from gradfix.analysis.walk import preorder

# torch's `Module` methods that return the module itself (torch 2.x: `_apply` and its users,
# `train`/`eval`, `requires_grad_`, `apply`, `share_memory`, `to_empty`): their result is followed
# as the instance is.
_SELF_RETURNING = frozenset({
    "to", "cuda", "cpu", "xpu", "ipu", "mtia", "float", "double", "half", "bfloat16", "type", "train", "eval",
    "requires_grad_", "apply", "share_memory", "to_empty",
})
# Review, round 17: torch's `Module` methods that call the function handed to them with the module
# or its submodules (`apply(fn)`: `fn(m)` for each; a hook: `hook(module, ...)`).
_CALLBACK_TAKING = frozenset({
    "apply", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_backward_hook", "register_state_dict_pre_hook",
    "register_state_dict_post_hook", "_register_state_dict_hook", "register_load_state_dict_pre_hook",
    "register_load_state_dict_post_hook", "_register_load_state_dict_pre_hook",
})
# torch's `Module` methods whose result holds the module or its submodules (`modules()` yields the
# module itself first): followed as a holder of instances.
_HOLDING = frozenset({"modules", "children", "named_modules", "named_children", "get_submodule"})
# torch's `Module` methods that store a module handed to them as a submodule of the receiver,
# under the name given first (`add_module("enc", Encoder())`): read back as that attribute.
_STORING = frozenset({"add_module", "register_module"})
# Callees whose result is a module (or modules) holding what they are handed, called only where the
# file calls it: torch's containers and parallel wrappers, `torch.compile`, TorchScript, copies.
_WRAPPERS = frozenset({
    "torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.modules.container.Sequential",
    "torch.nn.modules.container.ModuleList", "torch.nn.modules.container.ModuleDict",
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.compile", "torch.jit.script", "copy.deepcopy", "copy.copy",
    "collections.OrderedDict", "builtins.list", "builtins.tuple", "builtins.dict", "builtins.reversed",
    "builtins.enumerate", "builtins.zip",
})
# Review, round 17: constructors whose result is a new container (`_Search._fresh_container`).
_NEW_CONTAINERS = frozenset({
    "builtins.list", "builtins.dict", "builtins.set", "collections.deque", "collections.OrderedDict",
    "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.Sequential", "torch.nn.modules.container.ModuleList",
    "torch.nn.modules.container.ModuleDict", "torch.nn.modules.container.Sequential",
})
# Review, round 17: decorators of a function of the file that call it with the arguments it is
# called with and keep none (`_Search._passing`; `staticmethod`/`classmethod` by their names).
_PASSING_DECORATORS = frozenset({
    "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.autograd.no_grad",
    "torch.autograd.enable_grad", "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.enable_grad",
    "torch.autograd.grad_mode.inference_mode",
})
# Builtins that only read what they are handed and keep nothing (`print(net)` runs `Module.__repr__`,
# no `forward`).
_READING_BUILTINS = frozenset({
    "builtins.print", "builtins.isinstance", "builtins.len", "builtins.id", "builtins.repr", "builtins.str",
    "builtins.hasattr", "builtins.callable", "builtins.hash", "builtins.issubclass", "builtins.bool",
})
# torch functions that read a module's tensors or save it, keep nothing and call no `forward`.
_READING_TORCH = frozenset({"torch.save"})
# Methods of a list the file builds that put an instance in it (`layers.append(Block())`).
_ADDING = frozenset({"append", "extend", "insert", "add"})
# The attributes that give a module's submodules (`net._modules["enc"]`, `vars(net)`): what they
# give may be a module of any class of the file.
_SUBMODULE_HOLDERS = frozenset({"_modules", "__dict__"})
# torch's `Module` attributes that give a bound method running `forward` (`sys.setprofile(net.__call__)`).
_CALLING_ATTRIBUTES = frozenset({"__call__", "_call_impl", "_wrapped_call_impl", "forward"})
# torch's `Module` methods whose result is no module (tensors, handles, dicts of tensors, None):
# a call of any other method on an instance may give it back (`values()`, `pop()` of a container,
# a method of a base from another file) and is followed as the instance.
_OTHER_RESULTS = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "state_dict", "load_state_dict", "zero_grad",
    "register_buffer", "register_parameter", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "register_full_backward_pre_hook", "register_backward_hook",
    "register_state_dict_pre_hook", "register_load_state_dict_post_hook", "extra_repr", "get_parameter",
    "get_buffer", "get_extra_state", "set_extra_state", "add_module", "register_module", "forward", "__call__",
    "keys", "__len__", "__repr__",
})
# The methods of torch's containers that give their modules: followed even where the file stores
# an attribute by the name.
_CONTAINER_GETTERS = frozenset({"values", "items", "pop", "popitem", "get", "__getitem__", "__iter__", "copy"})
# Resolvers of an attribute by its name as a string, besides `getattr`.
_NAME_RESOLVERS = frozenset({"operator.attrgetter", "operator.methodcaller", "inspect.getattr_static"})
# Every module class of the file (a submodule reached through a holder may be of any).
ANY = "*"
# Review, round 17: calls that give objects made or found where the file shows no `C(...)`: an
# unpickler rebuilds an instance the file (or an earlier run of it) saved (`torch.save(Prof(), buf)`
# then `torch.load(buf)`), the collector finds any live one (`gc.get_objects()`). What they give is
# followed as instances of any module class of the file. (The modules whose every loader is named;
# `torch.load(..., weights_only=True)` builds no module and is left out.)
_UNPICKLING_MODULES = frozenset({"pickle", "_pickle", "dill", "cloudpickle", "joblib", "shelve", "jsonpickle", "pickletools"})
_INSTANCE_SOURCES = frozenset({
    "torch.load", "torch.serialization.load", "torch.hub.load", "torch.hub.load_state_dict_from_url",
    "torch.package.PackageImporter", "gc.get_objects", "gc.get_referrers", "gc.get_referents", "gc.garbage",
    "copyreg.__newobj__", "copyreg._reconstructor",
})
# Review, round 17: the attributes by which torch's wrappers give the module they wrap
# (`nn.DataParallel(net).module`, DDP's and FSDP's `.module`, `torch.compile(net)._orig_mod`); a
# container's submodules are read by the names the file gives them as strings (`ModuleDict({"a":
# net}).a`, `Sequential(OrderedDict([("enc", net)])).enc`), followed in `_Search.follow`.
_WRAPPED_ATTRIBUTES = frozenset({"module", "_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module"})


def module_classes(facts) -> Dict[str, List[cst.ClassDef]]:
    """The classes of the file that may be `nn.Module`s whose call runs code of the file: a class
    with a base other than `object` whose body, or that of a class of the file it is based on,
    defines `forward` (a base from another file may be a Module: no proof it is not); or based
    (itself or through classes of the file) on a class of `torch.nn` or Lightning, whose inherited
    `forward` may call methods of the file (`Conv1d.forward` calls `self._conv_forward`)."""
    out: Dict[str, List[cst.ClassDef]] = {}
    for name, group in facts.class_names.items():
        for cls in group:
            if not any(not (isinstance(b.value, cst.Name) and b.value.value == "object") for b in cls.bases):
                continue
            lineage = [cls, *facts._file_ancestors(cls, set())]
            if _forwards(facts, lineage) or any(_torch_module_base(facts, c) for c in lineage):
                out.setdefault(name, []).append(cls)
    return out


def _torch_module_base(facts, cls: cst.ClassDef) -> bool:
    """A base of `cls` is a class of `torch.nn` or Lightning's module (by import)."""
    for base in cls.bases:
        value = base.value.value if isinstance(base.value, cst.Subscript) else base.value
        dotted = get_full_name_for_node(value) if isinstance(value, (cst.Name, cst.Attribute)) else None
        qualified = facts.sole_imports.qualified(dotted, facts.line(cls)) if dotted else None
        if qualified and (is_nn_class(qualified) or qualified in LIGHTNING_MODULES):
            return True
    return False


def _forwards(facts, classes) -> List[cst.CSTNode]:
    """The `forward`s of `classes`: its defs, and a lambda bound to the name in a class body (review,
    round 17: `forward = lambda self, *a: ...` is run by torch's `Module.__call__` as a def is)."""
    return [m for c in classes for name, m in _class_methods(c) if name == "forward"]


def _class_methods(cls: cst.ClassDef) -> List[Tuple[str, cst.CSTNode]]:
    """The defs of a class body and the lambdas it binds to a name (`forward = lambda self, x: x`), by name."""
    out: List[Tuple[str, cst.CSTNode]] = []
    for statement in cls.body.body:
        if isinstance(statement, cst.FunctionDef):
            out.append((statement.name.value, statement))
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and isinstance(small.value, cst.Lambda):
                    out.extend((t.target.value, small.value) for t in small.targets if isinstance(t.target, cst.Name))
                elif isinstance(small, cst.AnnAssign) and isinstance(small.value, cst.Lambda) and isinstance(small.target, cst.Name):
                    out.append((small.target.value, small.value))
    return out


def _descendants(facts, name: str) -> List[cst.ClassDef]:
    out: List[cst.ClassDef] = []
    for group in facts.class_names.values():
        for cls in group:
            if any(a.name.value == name for a in facts._file_ancestors(cls, set())):
                out.append(cls)
    return out


def forwards_of(facts, name: str) -> List[cst.CSTNode]:
    """The `forward` defs an instance of the class `name` may run: its own, its bases' and its
    subclasses' of the file (`self` in a method may be an instance of a subclass). Where none of
    the file's is its `forward` (torch's runs), every method of those classes but the construction,
    which torch's `forward` may call (`_conv_forward`)."""
    classes: List[cst.ClassDef] = []
    for cls in facts.class_names.get(name, ()):
        classes.extend([cls, *facts._file_ancestors(cls, set())])
    own = _forwards(facts, classes)
    classes.extend(_descendants(facts, name))
    if not own:
        return list(dict.fromkeys(
            m for c in classes for name, m in _class_methods(c) if name not in ("__init__", "__new__")
        ))
    return list(dict.fromkeys(_forwards(facts, classes)))


def _store_target(node: cst.CSTNode, parents) -> bool:
    """`node` (a Name or an Attribute) is bound or named there, not read as a value."""
    parent = parents.get(node)
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        node, parent = parent, parents.get(parent)
    if isinstance(parent, (cst.AssignTarget, cst.CompFor, cst.For, cst.WithItem, cst.AnnAssign, cst.NamedExpr)):
        return getattr(parent, "target", None) is node or getattr(parent, "asname", None) is node
    if isinstance(parent, cst.AsName):
        return True
    return False


def _name_reads(scope: cst.CSTNode, name: str, parents, index: Optional[Dict[str, List[cst.Name]]] = None) -> List[cst.Name]:
    """The reads of `name` under `scope` (as a value: not bound, not an attribute's or keyword's name)."""
    out = []
    # (Into lambdas' bodies too, unlike `nodes_within`: a read there hands the value to the lambda.)
    for node in index.get(name, ()) if index is not None else [n for n in preorder(scope) if type(n) is cst.Name]:
        if node.value != name:
            continue
        parent = parents.get(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            continue
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.NameItem)):
            continue
        if isinstance(parent, cst.Param) and parent.name is node:
            continue  # (review, round 17: a parameter's default, `def f(m=prof)`, is a read)
        if _store_target(node, parents):
            continue
        out.append(node)
    return out


def _self_name(function: cst.FunctionDef) -> Optional[str]:
    for decorator in function.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in ("staticmethod", "classmethod"):
            return None
    params = (*function.params.posonly_params, *function.params.params)
    return params[0].name.value if params else None


_NAMESPACE_ATTRIBUTES = frozenset({"__dict__", "_modules", "f_globals", "f_locals", "__globals__"})


def _namespace_holder(node: cst.BaseExpression) -> bool:
    """A namespace as a dict (`globals()`, `locals()`, `vars(o)`, `o.__dict__`, `net._modules`)."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
        return node.func.value in ("globals", "locals", "vars")
    return isinstance(node, cst.Attribute) and node.attr.value in _NAMESPACE_ATTRIBUTES


def _lookup_by_key(string: cst.SimpleString, parents) -> Optional[cst.BaseExpression]:
    """The lookup that `string` is the name or key of, where it may find a class or a def of the
    file: `getattr(o, "Prof")`, `globals()["Prof"]`, `vars(m).get("Prof")` (a namespace's key).
    None for any other use of the string."""
    parent = parents.get(string)
    if isinstance(parent, cst.Arg):
        call = parents.get(parent)
        if not isinstance(call, cst.Call):
            return None
        func = call.func
        if isinstance(func, cst.Name) and func.value == "getattr" and len(call.args) > 1 and call.args[1] is parent:
            return call
        if isinstance(func, cst.Attribute) and func.attr.value in ("get", "pop", "setdefault", "__getitem__") and call.args[0] is parent and _namespace_holder(func.value):
            return call
        return None
    if isinstance(parent, cst.Index):
        subscript = parents.get(parents.get(parent))
        if isinstance(subscript, cst.Subscript) and _namespace_holder(subscript.value):
            return subscript
    return None


def _class_parameter(function: cst.FunctionDef) -> Optional[str]:
    """The parameter a classmethod or `__new__` binds to the class."""
    decorated = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod" for d in function.decorators)
    params = (*function.params.posonly_params, *function.params.params)
    return params[0].name.value if params and (decorated or function.name.value == "__new__") else None


class _Search:
    def __init__(self, facts, classifier) -> None:
        self.facts = facts
        self.classifier = classifier
        self.parents = facts.nodes.parents
        self.module = facts.module
        self.escaped: Set[str] = set()  # the classes whose instances are handed on
        self.seen: Set[Tuple[int, str]] = set()
        self.todo: List[Tuple[cst.CSTNode, str]] = []
        self.attributes: Dict[str, Set[str]] = {}
        self._namespace: Optional[bool] = None
        self._lookup_calls: Optional[Tuple[List[cst.Call], bool]] = None
        self._string_texts: Optional[Set[str]] = None
        self.params: Set[Tuple[int, str, str]] = set()
        self._defs: Dict[str, List[cst.FunctionDef]] = facts.functions_by_name
        self.method_names = frozenset(
            s.name.value for group in facts.class_names.values() for c in group
            for s in c.body.body if isinstance(s, cst.FunctionDef)
        )
        # Every node of the file, lambdas' bodies too (`nodes_within` leaves them out).
        self.nodes: Dict[type, List[cst.CSTNode]] = {}
        for node in preorder(self.module):
            self.nodes.setdefault(type(node), []).append(node)
        self.index: Dict[str, List[cst.Name]] = {}  # the file's names, by their text
        for node in self.nodes.get(cst.Name, ()):
            self.index.setdefault(node.value, []).append(node)

    def _defines(self, cls: str, attr: str) -> bool:
        """A class `cls` of the file (any, for `ANY`) or a base of it of the file defines a method `attr`."""
        if cls == ANY:
            return attr in self.method_names
        for node in self.facts.class_names.get(cls, ()):
            for c in (node, *self.facts._file_ancestors(node, set())):
                if any(isinstance(s, cst.FunctionDef) and s.name.value == attr for s in c.body.body):
                    return True
        return False

    def _stored(self, attr: str) -> bool:
        names = self.facts.attribute_store_names
        return names is not None and attr in names and attr not in _CONTAINER_GETTERS

    def push(self, node: cst.CSTNode, cls: str) -> None:
        key = (id(node), cls)
        if key not in self.seen:
            self.seen.add(key)
            self.todo.append((node, cls))

    def bind_name(self, name: str, cls: str, scope: Optional[cst.CSTNode] = None) -> None:
        key = (id(scope) if scope is not None else 0, name, cls)
        if key in self.params:
            return
        self.params.add(key)
        index = self.index if scope is None else None
        for read in _name_reads(scope if scope is not None else self.module, name, self.parents, index):
            self.push(read, cls)
        if scope is None:
            # A name bound outside a function may be a global or a class attribute, read as an
            # attribute of the module or the class (`sys.modules[__name__].prof`, `Holder.prof`,
            # `self.prof`), or by its name from a namespace (`globals()["prof"]`: `_namespaces`).
            self.bind_attribute(name, cls)
            if self._namespaces():
                self.escaped.add(cls)

    def _namespaces(self) -> bool:
        """The file reads a namespace as a dict (`globals()`, `locals()`, `vars()`), where a name
        bound to a module may be found by a computed key."""
        if self._namespace is None:
            found = False
            for call in self.nodes.get(cst.Call, ()):
                if isinstance(call.func, cst.Name) and call.func.value in ("globals", "locals", "vars") and not call.args:
                    found = True
            self._namespace = found
        return self._namespace

    def bind_attribute(self, attr: str, cls: str) -> None:
        if cls in self.attributes.setdefault(attr, set()):
            return
        self.attributes[attr].add(cls)
        for node in self.nodes.get(cst.Attribute, ()):
            if node.attr.value == attr and not _store_target(node, self.parents):
                self.push(node, cls)
        # `getattr(self, "enc")`: the attribute by its name.
        for node in self.nodes.get(cst.SimpleString, ()):
            if string_value(node) == attr:
                self.push(node, cls)
        # By a computed name (`key = "enc"; getattr(h, key)`), any lookup of an attribute may give it:
        # what `getattr` gives is followed; the other resolvers of a name (`operator.attrgetter`,
        # `__getattribute__`, `inspect.getattr_static`) hand it on.
        lookups, resolved = self._lookups()
        for call in lookups:
            self.push(call, cls)
        if resolved:
            self.escaped.add(cls)

    def _lookups(self) -> Tuple[List[cst.Call], bool]:
        """The file's `getattr` calls by a computed name, and whether it resolves a name otherwise."""
        if self._lookup_calls is None:
            calls: List[cst.Call] = []
            resolved = False
            for call in self.nodes.get(cst.Call, ()):
                qualified = self._qualified(call.func)
                if "builtins.getattr" in qualified and (len(call.args) < 2 or string_value(call.args[1].value) is None):
                    calls.append(call)
                if qualified & _NAME_RESOLVERS or isinstance(call.func, cst.Attribute) and call.func.attr.value in ("__getattribute__", "__getattr__"):
                    resolved = True
            self._lookup_calls = (calls, resolved)
        return self._lookup_calls

    def run(self) -> Set[str]:
        classes = module_classes(self.facts)
        for call in self.nodes.get(cst.Call, ()):
            if isinstance(call.func, cst.Name) and call.func.value in classes:
                self.push(call, call.func.value)
        for name, group in classes.items():
            for cls in group:
                for statement in cls.body.body:
                    if isinstance(statement, cst.FunctionDef):
                        own = _self_name(statement)
                        if own is not None:
                            self.bind_name(own, name, statement)
        # An instance made by no name of its class: `cls()` in a classmethod or `__new__` of a module
        # class (of it or a subclass), `type(self)()`, `self.__class__()` (of any class).
        for name, group in classes.items():
            for cls in group:
                for statement in cls.body.body:
                    if isinstance(statement, cst.FunctionDef) and _class_parameter(statement) is not None:
                        own = _class_parameter(statement)
                        for read in _name_reads(statement, own, self.parents):
                            outer = self.parents.get(read)
                            if isinstance(outer, cst.Call) and outer.func is read:
                                self.push(outer, name)
                            # Review, round 17: `object.__new__(cls)` / `super().__new__(cls)` makes one too.
                            call = self.parents.get(outer) if isinstance(outer, cst.Arg) and outer.value is read else None
                            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "__new__" and call.args[0] is outer:
                                self.push(call, name)
        for call in self.nodes.get(cst.Call, ()):
            func = call.func
            if isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "type" or isinstance(func, cst.Attribute) and func.attr.value == "__class__":
                self.push(call, ANY)
            made = self._made_by_no_call(call, classes)
            if made is not None:
                self.push(call, made)
        for string in self.nodes.get(cst.SimpleString, ()):
            # Review, round 17: a module class looked up by its name and called where it stands
            # (`globals()["Prof"]()`, `getattr(sys.modules[__name__], "Prof")()`): the instance it
            # makes is followed (handed on uncalled, `callees.handed_functions` hands its class on).
            name = string_value(string)
            if name in classes:
                lookup = _lookup_by_key(string, self.parents)
                outer = self.parents.get(lookup) if lookup is not None else None
                if isinstance(outer, cst.Call) and outer.func is lookup:
                    self.push(outer, name)
        while self.todo:
            node, cls = self.todo.pop()
            if cls in self.escaped or ANY in self.escaped:
                continue
            if not self.follow(node, cls):
                self.escaped.add(cls)
        return set(classes) if ANY in self.escaped else self.escaped

    def _qualified(self, func: cst.BaseExpression) -> Set[str]:
        return set(self.classifier.qualified(func))

    def _fresh_container(self, name: str, attribute: bool) -> bool:
        """Every binding of the name `name` in the file (or, with `attribute`, every store of an
        attribute by the name) is an assignment of a new container: a display, a comprehension, or
        a call of a constructor of one (`_NEW_CONTAINERS`: `list(...)`, `nn.ModuleList()`; not
        `callbacks = gc.callbacks`, a parameter, a loop's target, an import)."""
        if attribute:
            targets = [n for n in self.nodes.get(cst.Attribute, ()) if n.attr.value == name and _store_target(n, self.parents)]
            if any(isinstance(self.parents.get(n), cst.Arg) for n in self.nodes.get(cst.SimpleString, ()) if string_value(n) == name):
                return False  # `setattr(self, "blocks", outside)`
        else:
            targets = [
                n for n in self.index.get(name, ())
                if _store_target(n, self.parents) or isinstance(self.parents.get(n), (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.NameItem))
            ]
        if not targets:
            return False
        for target in targets:
            parent = self.parents.get(target)
            if not (isinstance(parent, cst.AssignTarget) and parent.target is target or isinstance(parent, cst.AnnAssign) and parent.target is target):
                return False
            statement = self.parents.get(parent) if isinstance(parent, cst.AssignTarget) else parent
            value = getattr(statement, "value", None)
            if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
                continue
            if not (isinstance(value, cst.Call) and self._qualified(value.func) & _NEW_CONTAINERS):
                return False
        return True

    def _file_callable(self, value: cst.BaseExpression) -> bool:
        """`value` is a def or lambda of the file, or a constant (`apply(fn)`, `register_forward_hook(hook, prepend=True)`)."""
        if isinstance(value, cst.Lambda) or isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)):
            return True
        return isinstance(value, cst.Name) and (value.value in self._defs or value.value in ("True", "False", "None"))

    def _strings(self) -> Set[str]:
        """The names a container's submodules may have by the file: its strings written as a key (of
        a dict display, `ModuleDict({"a": net})`; first of a pair, `OrderedDict([("enc", net)])`)
        and keywords of `dict(...)` (`ModuleDict(dict(a=net))`). (Not every string: a buffer's name,
        `register_buffer("distances", t)`, reads a tensor.)"""
        if self._string_texts is None:
            texts: Set[str] = set()
            for string in self.nodes.get(cst.SimpleString, ()):
                parent = self.parents.get(string)
                pair = self.parents.get(parent) if isinstance(parent, cst.Element) else None
                if (
                    isinstance(parent, cst.DictElement) and parent.key is string
                    or isinstance(pair, cst.Tuple) and len(pair.elements) == 2 and pair.elements[0] is parent
                ):
                    text = string_value(string)
                    if text is not None:
                        texts.add(text)
            for call in self.nodes.get(cst.Call, ()):
                if isinstance(call.func, cst.Name) and call.func.value == "dict":
                    texts.update(a.keyword.value for a in call.args if a.keyword is not None)
            self._string_texts = texts
        return self._string_texts

    def _made_by_no_call(self, call: cst.Call, classes) -> Optional[str]:
        """Review, round 17: the module class (or `ANY`) whose instance `call` gives with no call of
        the class the file shows: `X.__new__(Prof)` (an instance not yet built: `nn.Module.__init__`
        then makes it a module), an unpickler's or the collector's result (`_INSTANCE_SOURCES`)."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "__new__" and call.args and not call.args[0].star:
            first = call.args[0].value
            if isinstance(first, cst.Name) and first.value in classes:
                return first.value
            return None  # a class parameter's (`cls.__new__(cls)`): `run` follows those
        qualified = self._qualified(func)
        if qualified & _INSTANCE_SOURCES or any(q.split(".")[0] in _UNPICKLING_MODULES for q in qualified):
            if any(a.keyword is not None and a.keyword.value == "weights_only" and isinstance(a.value, cst.Name) and a.value.value == "True" for a in call.args):
                return None  # `torch.load(f, weights_only=True)` builds tensors and containers only
            return ANY
        return None

    def follow(self, node: cst.CSTNode, cls: str) -> bool:
        """Whether the use of the value `node` (an instance of `cls`) is proven harmless, after
        pushing what it flows into."""
        parent = self.parents.get(node)
        if isinstance(node, cst.SimpleString):
            # An attribute's name as a string: only as `getattr(x, "name")` called where it stands.
            call = self.parents.get(parent) if isinstance(parent, cst.Arg) else None
            if isinstance(call, cst.Call):
                qualified = self._qualified(call.func)
                if "builtins.getattr" in qualified:
                    self.push(call, cls)
                    return True
                storing = isinstance(call.func, cst.Attribute) and call.func.attr.value in _STORING
                return storing or bool(qualified & (_READING_BUILTINS | {"builtins.setattr", "builtins.delattr"}))
            if isinstance(parent, cst.Index):
                # A key: of a namespace it finds the attribute (`globals()["prof"]`, `vars(net)["enc"]`).
                subscript = self.parents.get(self.parents.get(parent))
                return not (isinstance(subscript, cst.Subscript) and _namespace_holder(subscript.value))
            return True  # a dict's key, a comparison, a docstring: no lookup
        if isinstance(parent, cst.Call):
            return parent.func is node  # called (`net(x)`): torch runs `forward` there, a call gradfix judges
        if isinstance(parent, cst.Attribute) and parent.value is node:
            attr = parent.attr.value
            outer = self.parents.get(parent)
            called = isinstance(outer, cst.Call) and outer.func is parent
            if called and attr in _CALLBACK_TAKING and not all(self._file_callable(a.value) for a in outer.args):
                # Review, round 17: torch calls the function handed to `apply` with every submodule
                # (of any class of the file), a hook with the module: one not of the file
                # (`net.apply(found.append)`) keeps them where the file does not follow them. (A def
                # or lambda of the file is handed on itself, its body judged as such.)
                self.escaped.add(ANY)
                return False
            if called and attr in _HOLDING:
                self.push(outer, ANY)  # what holds its submodules too (`.modules()`), of any class
                return True
            if called and attr in _SELF_RETURNING:
                self.push(outer, cls)  # the module again (`.to(d)`)
                return True
            if called and attr not in _OTHER_RESULTS and not self._defines(cls, attr) and not self._stored(attr):
                # A method of torch's or of a base from another file, which may give it back
                # (`.values()`, `.pop()` of a container). Not an attribute the file stores (a
                # submodule called, `self.head(x)`: its result is its `forward`'s, followed there).
                self.push(outer, cls)
                return True
            if not called and (attr in _HOLDING or attr in _SUBMODULE_HOLDERS):
                self.push(parent, ANY)  # `net._modules`, `net.modules` (a bound method giving them)
                return True
            if not called and attr in _CALLING_ATTRIBUTES:
                return False  # `net.__call__` handed as a bound method: it runs `forward` where it is called
            if not called and (attr in _WRAPPED_ATTRIBUTES or attr in self._strings()):
                # Review, round 17: `net` may be torch's wrapper or container holding the instance
                # (followed from `nn.DataParallel(Prof())` as it), whose attribute of that name gives
                # it (`.module`, `._orig_mod`, a `ModuleDict`'s key): followed as the instance.
                self.push(parent, cls)
                return True
            # Another attribute or method: torch's `Module`'s (`net.parameters()`, `net.weight`), or
            # the file's, whose body follows `self` (a `return self` there is followed at its calls).
            # (A submodule of the file read as an attribute, `net.enc`, is followed from its store,
            # `self.enc = Encoder()`: `bind_attribute`.)
            return True
        if isinstance(parent, cst.Arg) and parent.value is node:
            return self.argument(parent, node, cls)
        if isinstance(parent, (cst.Element, cst.StarredElement)):
            display = self.parents.get(parent)
            self.push(display, cls)
            return True
        if isinstance(parent, cst.DictElement):
            self.push(self.parents.get(parent), cls)  # (a key too: `d.keys()` gives it)
            return True
        if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp)) and parent.elt is node:
            self.push(parent, cls)
            return True
        if isinstance(parent, cst.DictComp) and parent.value is node:
            self.push(parent, cls)
            return True
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return all(self.store(t, cls) for t in targets)
        if isinstance(parent, cst.NamedExpr) and parent.value is node:
            self.push(parent, cls)
            return self.store(parent.target, cls)
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
            return self.store(parent.target, cls, item=True)
        if isinstance(parent, cst.Subscript) and parent.value is node:
            if not _store_target(parent, self.parents):
                self.push(parent, cls)  # an item of a container of modules
            return True
        if isinstance(parent, (cst.IfExp, cst.BooleanOperation)):
            if getattr(parent, "test", None) is not node:
                self.push(parent, cls)
            return True
        if isinstance(parent, cst.Return):
            return self.returned(parent, cls)
        if isinstance(parent, cst.Param) and parent.default is node:
            # Review, round 17: a parameter's default (`def install(m=prof)`): the parameter in the
            # body of that def or lambda.
            owner = self.parents.get(self.parents.get(parent))
            if isinstance(owner, (cst.FunctionDef, cst.Lambda)):
                self.bind_name(parent.name.value, cls, owner)
                return True
            return False
        if isinstance(parent, (cst.Expr, cst.Comparison, cst.ComparisonTarget, cst.If, cst.While, cst.Assert, cst.Del,
                               cst.FormattedStringExpression, cst.UnaryOperation)):
            return True
        return False  # anything else: a yield, a lambda's body, an operator, a `with`, a decorator

    def store(self, target: cst.BaseExpression, cls: str, item: bool = False) -> bool:
        if isinstance(target, cst.Name):
            self.bind_name(target.value, cls)
            return True
        if isinstance(target, (cst.Tuple, cst.List)):
            for name in bound_names(target):
                self.bind_name(name, cls)
            return all(isinstance(e.value, (cst.Name, cst.Tuple, cst.List)) for e in target.elements)
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and self._own_object(target.value):
            self.bind_attribute(target.attr.value, cls)
            return True
        return False  # a store into an object not of the file (`ns.prof = Prof()`), an item

    def _own_object(self, name: cst.Name) -> bool:
        """`name` is `self` in a method of a class of the file."""
        node: Optional[cst.CSTNode] = name
        while node is not None and not isinstance(node, cst.FunctionDef):
            node = self.parents.get(node)
        return node is not None and is_method(node, self.parents) and _self_name(node) == name.value

    def argument(self, arg: cst.Arg, node: cst.CSTNode, cls: str) -> bool:
        call = self.parents.get(arg)
        if not isinstance(call, cst.Call):
            return False
        qualified = self._qualified(call.func)
        if qualified & _WRAPPERS:
            self.push(call, cls)
            return True
        if qualified & (_READING_BUILTINS | _READING_TORCH):
            return True
        first = bool(call.args) and arg is call.args[0] and arg.keyword is None and not arg.star
        if first and qualified & {"builtins.hasattr", "builtins.setattr", "builtins.delattr"}:
            return True
        if first and isinstance(call.func, cst.Attribute) and call.func.attr.value == "load_state_dict" and "load_state_dict" not in self.method_names:
            # Review, round 17: what an unpickler gives (`_INSTANCE_SOURCES`), loaded by torch's
            # `Module`/`Optimizer.load_state_dict`, which copies its tensors and keeps nothing (not
            # where a class of the file defines one).
            return True
        if first and len(call.args) == 1 and "builtins.vars" in qualified:
            # `vars(net)` is `net.__dict__`: what holds its attributes, followed as that holder (stop 35:
            # `print(sorted(vars(lit).keys()))` handed every method of a LightningModule on).
            self.push(call, ANY)
            return True
        if first and "builtins.getattr" in qualified:
            # An attribute by a literal name: followed from the string where it names one bound to
            # a module (`getattr(self, "enc")`); by a computed name it may be any submodule.
            # Review, round 17: by a literal name that no store of the file binds, a container's
            # submodule too (`getattr(nn.Sequential(Prof()), "0")`): what it gives is followed as the instance.
            key = call.args[1].value if len(call.args) > 1 else None
            self.push(call, ANY if key is None or string_value(key) is None else cls)
            return True
        if first and "builtins.type" in qualified and isinstance(self.parents.get(call), (cst.Attribute, cst.Comparison, cst.ComparisonTarget)):
            return True  # `type(net).__name__`, `type(net) is Net`: the class read, not handed on
        func = call.func
        if isinstance(func, cst.Name) and func.value == "super":
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in _ADDING:
            # `layers.append(Block())`, `self.blocks.append(Block())`: the list holds it.
            # Review, round 17: only a container the file builds (`callbacks = gc.callbacks` then
            # `callbacks.append(Watch())` hands it to the collector, which calls it): every binding of
            # the name, or store of the attribute, a new display or an empty builtin container.
            receiver = func.value
            if isinstance(receiver, cst.Name) and self._fresh_container(receiver.value, False):
                self.bind_name(receiver.value, cls)
                return True
            if (
                isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and self._own_object(receiver.value)
                and self._fresh_container(receiver.attr.value, True)
            ):
                self.bind_attribute(receiver.attr.value, cls)
                return True
            return False
        if isinstance(func, cst.Attribute) and func.attr.value in _STORING:
            name = string_value(call.args[0].value) if call.args else None
            own = isinstance(func.value, cst.Name) and self._own_object(func.value)
            if name is not None and own and len(call.args) >= 2 and arg is call.args[1]:
                self.bind_attribute(name, cls)  # `self.add_module("enc", Encoder())`: read as `.enc`
                return True
            return False
        if first and isinstance(func, cst.Attribute) and any(q.startswith("torch.nn.") and q.endswith(".__init__") for q in qualified):
            return True  # `nn.Module.__init__(self)`
        if first and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in self.facts.class_names:
            # `Base.method(self, ...)`: the first parameter of that method of the file.
            functions = [
                f for c in self.facts.class_names[func.value.value] for f in c.body.body
                if isinstance(f, cst.FunctionDef) and f.name.value == func.attr.value
            ]
            if not functions or any(_self_name(f) is None for f in functions):
                return False
            # (Stop 36, Y_21: a decorated method's call runs the decorator's wrapper first, as
            # `_bind_parameters` says.)
            if not all(self._passing(d.decorator) for f in functions for d in f.decorators):
                return False
            for function in functions:
                self.bind_name(_self_name(function), cls, function)
            return True
        if arg.star:
            return False
        position = call.args.index(arg)
        if isinstance(func, cst.Name) and func.value in self.facts.class_names and func.value not in self._defs:
            # `Net(Encoder())`: a parameter of the `__init__`s of that class of the file (and its bases').
            classes = [k for c in self.facts.class_names[func.value] for k in (c, *self.facts._file_ancestors(c, set()))]
            if any(c.decorators for c in classes):
                return False  # (review, round 17) a class decorator may replace `__init__`
            functions = [
                f for k in classes for f in k.body.body if isinstance(f, cst.FunctionDef) and f.name.value == "__init__"
            ]
            return bool(functions) and self._bind_parameters(functions, call, position, True, cls)
        if isinstance(func, cst.Name) and func.value in self._defs:
            # A function of the file bound once by its def: the parameter it binds, in its body.
            functions = self._defs[func.value]
            if self.facts.binding_counts.get(func.value) != len(functions):
                return False
            return self._bind_parameters(functions, call, position, False, cls)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and self._own_object(func.value):
            # `self.fit(model)`: a method of the class of the file (or a base of it of the file), or an
            # override in a subclass of the file: every method of the file by the name.
            owner = self._enclosing_class(func.value)
            if owner is None or not self._defines(owner, func.attr.value):
                return False
            functions = [f for f in self._defs.get(func.attr.value, ()) if self._is_method(f)]
            return self._bind_parameters(functions, call, position, True, cls)
        return False

    def _bind_parameters(self, functions, call: cst.Call, position: int, method: bool, cls: str) -> bool:
        # Review, round 17: a decorated function's call runs the decorator's wrapper, which gets the
        # argument first (`@traced` whose `inner(*args)` hands `args[0]` on): only decorators that
        # hand the arguments on to the function unchanged and keep nothing (`_PASSING_DECORATORS`).
        if not all(self._passing(d.decorator) for function in functions for d in function.decorators):
            return False
        for function in functions:
            bound = self._parameter(function, call, position, method)
            if bound is None:
                return False
            self.bind_name(bound, cls, function)
        return True

    def _passing(self, decorator: cst.BaseExpression) -> bool:
        """A decorator whose wrapper calls the function with its arguments and keeps none of them."""
        if isinstance(decorator, cst.Name) and decorator.value in ("staticmethod", "classmethod") and decorator.value not in self.facts.binding_counts:
            return True
        func = decorator.func if isinstance(decorator, cst.Call) else decorator
        return bool(self._qualified(func) & _PASSING_DECORATORS)

    def _is_method(self, function: cst.FunctionDef) -> bool:
        return is_method(function, self.parents)

    def _enclosing_class(self, name: cst.Name) -> Optional[str]:
        node: Optional[cst.CSTNode] = name
        while node is not None and not isinstance(node, cst.ClassDef):
            node = self.parents.get(node)
        return node.name.value if isinstance(node, cst.ClassDef) else None

    def _parameter(self, function: cst.FunctionDef, call: cst.Call, position: int, method: bool) -> Optional[str]:
        arg = call.args[position]
        params = [*function.params.posonly_params, *function.params.params]
        if arg.keyword is not None:
            names = {p.name.value for p in (*params, *function.params.kwonly_params)}
            return arg.keyword.value if arg.keyword.value in names else None
        if any(a.star for a in call.args[:position]) or any(a.keyword is not None for a in call.args[:position]):
            return None
        in_class = self._is_method(function)
        if method != in_class:
            return None
        static = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in function.decorators)
        offset = 1 if in_class and not static else 0
        index = position + offset
        return params[index].name.value if index < len(params) else None

    def returned(self, statement: cst.Return, cls: str) -> bool:
        # `return Net()` in a builder of the file: followed at each call of it, where every read of
        # its name is a call (`model = build()`); in a method, at each call of a method by the name.
        node: Optional[cst.CSTNode] = statement
        while node is not None and not isinstance(node, (cst.FunctionDef, cst.Lambda)):
            node = self.parents.get(node)
        if not isinstance(node, cst.FunctionDef) or node.name.value.startswith("__") or node.name.value == "forward":
            return False
        decorators = {d.decorator.value if isinstance(d.decorator, cst.Name) else None for d in node.decorators}
        if not decorators <= {"staticmethod", "classmethod", "property"}:
            return False  # a decorator may keep the function, or what it returns
        name = node.name.value
        # Review, round 17: the function reached by its name as a string (`getattr(f, "build")()`,
        # `vars(K)["build"](f)`, a property by `getattr(f, "made")`) or by a computed name called
        # where it stands (`getattr(f, key)()`): what that gives is the return value too (a lookup
        # not called there hands the function on: `callees.handed_functions` judges it, and the
        # value it returns is not followed, so not proven).
        for string in self.nodes.get(cst.SimpleString, ()):
            lookup = _lookup_by_key(string, self.parents) if string_value(string) == name else None
            if lookup is None:
                continue
            outer = self.parents.get(lookup)
            if "property" in decorators:
                self.push(lookup, cls)
            elif isinstance(outer, cst.Call) and outer.func is lookup:
                self.push(outer, cls)
            else:
                return False
        for lookup in self._lookups()[0]:
            outer = self.parents.get(lookup)
            if "property" in decorators:
                self.push(lookup, cls)
            elif isinstance(outer, cst.Call) and outer.func is lookup:
                self.push(outer, cls)
        if "property" in decorators and self._lookups()[1]:
            return False  # (review, round 17) `operator.attrgetter("made")(f)` gives its value unseen
        if "property" in decorators:
            # A property's getter runs at each read of the attribute: the read is the value.
            for read in self.nodes.get(cst.Attribute, ()):
                if read.attr.value == name and not _store_target(read, self.parents):
                    self.push(read, cls)
            return True
        for read in self.index.get(name, ()):
            parent = self.parents.get(read)
            if isinstance(parent, (cst.FunctionDef, cst.ImportAlias, cst.NameItem)) or isinstance(parent, cst.Arg) and parent.keyword is read:
                continue
            if isinstance(parent, cst.Param) and parent.name is read:
                continue  # (review, round 17: not a default, `lambda f=build: f()`, which hands it on)
            target = parent if isinstance(parent, cst.Attribute) and parent.attr is read else read
            outer = self.parents.get(target)
            if not (isinstance(outer, cst.Call) and outer.func is target):
                return False  # the function itself handed on: its calls are not all the file's
            self.push(outer, cls)
        return True


def handed_module_forwards(facts, classifier) -> List[cst.CSTNode]:
    """The `forward` defs of the module classes of the file whose instances are handed to code
    outside it (`_Search`)."""
    out: List[cst.CSTNode] = []
    for name in sorted(_Search(facts, classifier).run()):
        out.extend(forwards_of(facts, name))
    return list(dict.fromkeys(out))
