"""Calls that read a scope's names by their strings: `locals()`, `vars()`, `dir()`, `eval`, `exec`, `globals()`.

A rewrite that removes a name (a loss definition nothing else reads), binds a
new one (`kl_shared`) or rebuilds one as a detached value is exact only for
the reads that scope analysis sees. `locals()` sees every local name
(`{k: v.item() for k, v in locals().items() if k.endswith("_latent")}`, a
common metrics idiom), and so do `vars()` and `dir()` without arguments,
`eval(...)`, `exec(...)`; `globals()` sees every module-level name. Any of
them in the function a rewrite changes makes the fix unsafe (docs/design.md §1: what
is not proven goes into the reason).
"""

from __future__ import annotations

import re
from typing import Callable, List, Optional

import libcst as cst

from gradfix.reasons import INTROSPECTION, Reason
from gradfix.analysis.exprs import bound_names, last_name, literal_key, nodes_within, scope_bindings, string_value
from gradfix.analysis.vocabulary import GLOBAL_READERS, LOCAL_READERS, NO_ARGUMENT_READERS
from gradfix.analysis.walk import children, per_file, walk_tree


def introspection_calls(scope: cst.CSTNode) -> List[cst.Call]:
    """The calls in `scope` (a function, nested functions and comprehensions included; or a module)
    that may read names of `scope` by their strings.

    For a module, `locals()`, `vars()`, `dir()`, `eval` and `exec` count only
    outside functions and classes (inside one they read its own names), and
    `globals()` anywhere. A builtin shadowed by a definition of the module
    (`def eval(...)`) is still counted: gradfix does not prove it is not.
    """
    found: List[cst.Call] = []
    module_level = isinstance(scope, cst.Module)

    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.depth = 0  # functions, lambdas and classes entered (module scope only)

        def on_visit(self, node: cst.CSTNode) -> bool:
            if module_level and isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                self.depth += 1
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
                name = node.func.value
                if name in GLOBAL_READERS:
                    found.append(node)
                elif self.depth == 0 and (name in LOCAL_READERS or (name in NO_ARGUMENT_READERS and not node.args)):
                    found.append(node)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if module_level and isinstance(original_node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                self.depth -= 1

    walk_tree(scope, Collect())
    return found


def introspection_reasons(scope: cst.CSTNode, line: Callable[[cst.CSTNode], int]) -> List[Reason]:
    """The unsafe-fix reason for the first such call in `scope` (see `introspection_calls`), or none."""
    calls = introspection_calls(scope)
    if not calls:
        return []
    first = calls[0]
    text = f"`{first.func.value}()` (line {line(first)}) may read the names the rewrite removes or changes"  # type: ignore[attr-defined]
    return [Reason(text, INTROSPECTION)]


# Builtins that bind or read names by their strings (`globals()["w"] = ...`, `exec("w = 2")`,
# `eval("(w := 2)", globals())`), mentioned in any way: a mention may alias them (`g = globals`).
_STRING_BINDERS = frozenset({"globals", "vars", "eval", "exec", "__import__"})
# Ways to a module's namespace through frames and functions (`sys._getframe().f_globals`,
# `inspect.currentframe()`, `step.__globals__`): any mention, as a name or an attribute.
_NAMESPACE_DOORS = frozenset({"_getframe", "currentframe", "f_globals", "f_locals", "__globals__", "__builtins__"})


# Calls that give a module object, this file's included (`importlib.import_module(__name__).W = t`).
_MODULE_LOADERS = frozenset({"import_module", "reload"})


def names_by_string(module: cst.Module, *, star_imports: bool = True) -> bool:
    """Whether the file may bind or read its module-level names without a binding form or a plain
    read: a star import; any mention of `globals`, `eval`, `exec`, `__import__`, of `vars` other
    than a call with an argument (`vars(net)` is that object's namespace); the same builtins as
    attributes of `builtins` (`builtins.globals()`), or `.globals`/`.exec`/`.__import__` of
    anything; frames and function globals (`sys._getframe()`, `inspect.currentframe()`,
    `f_globals`, `__globals__`, also as strings: `getattr(f, "__globals__")`); `sys.modules`,
    through any name `sys` is imported as, or imported from `sys`; `importlib.import_module` or
    `reload` (the file's own module object); `star_imports=False` leaves star imports out (they
    bind names but reach none by a string). Then no module-level name is proven to hold what its one assignment says (module
    constants: coefficients, constant tensors). An attribute `net.eval()` is none of them."""
    found = []
    sys_names = {"sys"}
    builtins_names = {"builtins", "__builtins__"}

    class Imports(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            for alias in node.names:
                target = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else None
                module_name = _dotted(alias.name)
                if module_name == "sys":
                    sys_names.add(target or "sys")
                elif module_name == "builtins":
                    builtins_names.add(target or "builtins")

    class Find(cst.CSTVisitor):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
            if isinstance(node.names, cst.ImportStar):
                if star_imports:
                    found.append(node)
            elif node.module is not None and _dotted(node.module) in ("sys", "builtins", "inspect"):
                names = {alias.name.value for alias in node.names if isinstance(alias.name, cst.Name)}
                if names & (_STRING_BINDERS | _NAMESPACE_DOORS | {"modules", "stack", "getouterframes"}):
                    found.append(node)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value in _STRING_BINDERS or node.value in _NAMESPACE_DOORS or node.value in _MODULE_LOADERS:
                found.append(node)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            # `getattr(f, "__globals__")`
            text = string_value(node)
            if text in _NAMESPACE_DOORS or text in _STRING_BINDERS:
                found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            attr = node.attr.value
            base = node.value.value if isinstance(node.value, cst.Name) else None
            if attr == "modules" and base in sys_names:
                found.append(node)
            elif attr in _NAMESPACE_DOORS or attr in ("globals", "exec", "__import__") or attr in _MODULE_LOADERS:
                found.append(node)
            elif attr in _STRING_BINDERS and base in builtins_names:
                found.append(node)
            walk_tree(node.value, self)
            return False  # `node.attr` names an attribute, not a builtin

        def visit_Call(self, node: cst.Call) -> Optional[bool]:
            func = node.func
            if isinstance(func, cst.Name) and func.value == "vars" and node.args:
                for arg in node.args:
                    walk_tree(arg, self)
                return False
            return True

    walk_tree(module, Imports())
    walk_tree(module, Find())
    return bool(found)


# Ways to an object's attributes by a name given as a value (`getattr(t, name)`,
# `methodcaller(name)`, `attrgetter(name)`), and to a class's namespace as a whole.
ATTRIBUTE_GETTERS = frozenset({"getattr", "methodcaller", "attrgetter"})
# Review, round 14: `inspect` lists a class's namespace statically too (`getmembers_static(t)`,
# `classify_class_attrs(type(t))`, whose items' `.object` is the function).
# Review, round 15: and `pydoc.allmethods(cls)`, a dict of its methods by name (X_11).
_CLASS_NAMESPACES = frozenset({"__dict__", "__getattribute__", "getmembers", "vars", "getmembers_static", "classify_class_attrs", "allmethods"})
# Review, round 14: what reaches an object's attribute from a string of any form, whatever the
# name it is given: code run from a string (`eval("t.upd" + "ate")`, `exec`), a dotted path
# resolved (`pkgutil.resolve_name("__main__:Trainer.update")`, `pydoc.locate`), a format field
# (`string.Formatter().get_field("0.update", (t,), {})`) and `inspect.getattr_static(t, name)`.
# Any mention of them, as a name or an attribute, reaches a method unseen.
_STRING_RESOLVERS = frozenset({
    "eval", "exec", "resolve_name", "locate", "get_field", "getattr_static",
    # Review, round 15: more of the standard library's resolvers of a dotted path from a string:
    # `xmlrpc.server.resolve_dotted_attribute(t, "upd" + "ate")` (X_02) and `logging.config`'s
    # configurators (`BaseConfigurator({}).resolve("__main__.t.upd" + "ate")`: X_03; `dictConfig`
    # with a `"()"` factory path). Code made from parts without `eval`/`exec`: a function built on
    # a code object (`types.FunctionType(compile(...), ns)`: X_01; `f.__code__.replace(co_names=...)`).
    # And no string at all: the collector hands back a class's or a function's namespace dict
    # (`gc.get_referents(type(t))`: X_05; `get_objects`, `get_referrers`).
    "resolve_dotted_attribute", "BaseConfigurator", "DictConfigurator", "dictConfig", "fileConfig",
    "FunctionType", "CodeType", "LambdaType", "__code__", "get_referents", "get_objects", "get_referrers",
    # Review, round 16: an annotation string is evaluated as code by whatever reads annotations
    # back evaluated, and one may be built of parts (`f.__annotations__ = {"x": "t.upd" + "ate(h)"}`,
    # `make_dataclass("P", [("x", s)])`): `typing.get_type_hints` (X_05), `inspect.get_annotations`
    # and `inspect.signature` given `eval_str=True` (the keyword is the mention), a `ForwardRef`'s
    # evaluation.
    "get_type_hints", "get_annotations", "eval_str", "ForwardRef", "evaluate_forward_ref", "_eval_type",
    # Review, round 16: PyYAML's unsafe loaders build any object a document names and call any
    # callable (`!!python/object/apply:builtins.eval ["...t.upd" + "ate(h)"]`, X_10): `yaml.Loader`
    # and `UnsafeLoader` (the C ones too), `unsafe_load`. Not `safe_load`, `SafeLoader`, `FullLoader`
    # (which apply no callable since PyYAML 5.4). (`Loader` only as an attribute or an import of it:
    # `_ATTRIBUTE_RESOLVERS`; the keyword `Loader=` names no loader.)
    "unsafe_load", "unsafe_load_all", "UnsafeLoader", "CUnsafeLoader",
})
_ATTRIBUTE_RESOLVERS = frozenset({"Loader", "CLoader"})
# Review, round 16: `string.Formatter` resolves a format field's dotted path by `getattr` and hands
# the object to methods a subclass may define (`format_field(value, spec)` calling it:
# `Calling().format("{0.upd" + "ate}", t)`, X_04): any mention of that class, as an attribute of a
# name bound to the `string` module or imported from it (not `logging.Formatter`, which only
# formats a record's fields into a string).
_STRING_MODULE_CLASSES = frozenset({"Formatter"})
# Review, round 16: `unittest`'s resolvers of a dotted name given as an argument: `mock.patch(target)`
# and `patch.object(obj, attribute)` look the attribute up by its name and hand the original back
# (`patch.object(t, "upd" + "ate").get_original()[0]`, X_06); `TestLoader().loadTestsFromName(name)`
# resolves and calls it. The argument at the position given (its keyword beside it), if it is no
# literal string, reaches any attribute; `patch.multiple` by its `**` keywords. (A literal is a
# string the literal check reads.) Matched by the callee's last names, so that a test file that
# imports `unittest` keeps its reach where every name it patches is spelled out.
_NAME_ARGUMENTS = {
    ("patch",): (0, "target"), ("patch", "object"): (1, "attribute"),
    ("loadTestsFromName",): (0, "name"), ("loadTestsFromNames",): (0, "names"),
}
# Review, round 15: the builtin `compile` makes a code object from a string (X_01); as a name only
# (or `builtins.compile`): `re.compile` and `torch.compile` are attributes of other modules.
_BUILTIN_RESOLVERS = frozenset({"compile"})
# Review, round 14: modules whose functions run code given as a string, in a namespace handed to
# them (`timeit.timeit("t.upd" + "ate(h)", globals=dict(t=t, h=h))`, `code.InteractiveInterpreter`,
# `cProfile.run`, `pdb.run`, `runpy`, `doctest`): any import of one reaches a method unseen.
_CODE_RUNNER_MODULES = frozenset({
    "timeit", "code", "codeop", "pdb", "bdb", "cProfile", "profile", "runpy", "doctest", "trace",
    # Review, round 15: modules that resolve a dotted global named in their data, which may be
    # built of parts (`pickle.loads(proto4 + b"c__main__\nt.up" + b"date\n.")` is `t.update`: X_04),
    # or load code objects (`marshal`), and those of X_02/X_03 by any name they are imported as.
    "pickle", "_pickle", "copyreg", "shelve", "marshal", "dill", "cloudpickle", "xmlrpc", "logging.config",
    # (`pydoc` lists and resolves: `allmethods`, `resolve`, `locate`; `cmd.Cmd.onecmd` calls
    # `getattr(self, "do_" + line)`.)
    "pydoc", "cmd",
})


def _imports_module(node, modules: frozenset) -> bool:
    """Whether the import `node` imports one of `modules` (a top-level module, or a dotted one such
    as `logging.config`) or something under it: `import logging.config`, `from logging import
    config`, `from logging.config import dictConfig`, `import pickle as pk`."""

    def under(dotted: str) -> bool:
        parts = dotted.split(".")
        return any(".".join(parts[: k + 1]) in modules for k in range(len(parts)))

    if isinstance(node, cst.Import):
        return any(under(_dotted(alias.name)) for alias in node.names)
    if node.module is None or node.relative:
        return False
    base = _dotted(node.module)
    if under(base):
        return True
    if isinstance(node.names, cst.ImportStar):
        return False
    return any(isinstance(alias.name, cst.Name) and under(base + "." + alias.name.value) for alias in node.names)


# A literal string that is a dotted path (`"t.update"`, `"__main__:Trainer.update"`, `"0.update"`):
# each of its parts is a name it may reach (`operator.attrgetter("me.update")`).
_DOTTED = re.compile(r"[\w.:\[\]]+")


def _string_names(text: Optional[str]) -> List[str]:
    """The names a literal string may reach: itself, and the parts of a dotted path."""
    if text is None:
        return []
    if _DOTTED.fullmatch(text) is None:
        return [text]
    return [text, *re.split(r"[.:\[\]]", text)]


def names_reached_by_string(module: cst.Module, name: str, method: bool) -> Optional[cst.CSTNode]:
    """The first node (in walk order) through which the file may reach its function or method
    `name` without naming it in code, or None: the name as a string literal (`getattr(t, "step")`,
    `globals()["inner"]`); `getattr`/`methodcaller`/`attrgetter` given a name that is not a
    literal, or mentioned other than as a call (`g = getattr`); for a method, a class's namespace
    (`__dict__`, `vars`, `inspect.getmembers`, `__getattribute__`); for a function, the module's
    namespace (`names_by_string` less star imports, which bind names but call nothing).

    What may reach `name` this way may call it with any argument: gradfix's proof that every call
    of a function is in sight (GF005's callers) holds only without such a node."""
    found: List[cst.CSTNode] = []
    attributes: set = set()  # ids of the `attr` names of attributes seen

    def literal(node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.SimpleString)

    class Find(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            if name in _string_names(string_value(node)):
                found.append(node)

        def visit_Call(self, node: cst.Call) -> None:
            word = last_name(node.func)
            if word in ATTRIBUTE_GETTERS:
                names = node.args[1:2] if word == "getattr" else node.args
                if not names or any(arg.star or arg.keyword is not None or not literal(arg.value) for arg in names):
                    found.append(node)
            elif _name_argument_computed(node):
                found.append(node)

        def visit_Name(self, node: cst.Name) -> None:
            if method and node.value in _CLASS_NAMESPACES and id(node) not in local:
                found.append(node)
            elif node.value in _STRING_RESOLVERS or (node.value in _BUILTIN_RESOLVERS and id(node) not in attributes):
                found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            attributes.add(id(node.attr))  # `re.compile`: its `compile` is no builtin (visited next)
            if (method and node.attr.value in _CLASS_NAMESPACES) or node.attr.value in _STRING_RESOLVERS:
                found.append(node)
            elif node.attr.value in _STRING_MODULE_CLASSES and isinstance(node.value, cst.Name) and node.value.value in string_modules:
                found.append(node)
            elif node.attr.value in _ATTRIBUTE_RESOLVERS:
                found.append(node)  # (`yaml.Loader`)
            elif node.attr.value in _BUILTIN_RESOLVERS and isinstance(node.value, cst.Name) and node.value.value in ("builtins", "__builtins__"):
                found.append(node)

        def visit_Import(self, node: cst.Import) -> None:
            if _imports_module(node, _CODE_RUNNER_MODULES):
                found.append(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if _imports_module(node, _CODE_RUNNER_MODULES | _STRING_MODULE_PATHS):
                found.append(node)

    # The names the `string` module is imported as (`import string`, `import string as s`).
    string_modules = {
        (alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else "string")
        for node in nodes_within(module, cst.Import) for alias in node.names if _dotted(alias.name) == "string"
    }
    # `vars = []` in a method: that function's own variable wherever its body reads the name, never
    # the builtin (held-out corpus, stop 33: a sampler's local list of variables).
    local = per_file("function locals", module, _namespace_locals) if method else frozenset()
    walk_tree(module, Find())
    if not method and names_by_string(module, star_imports=False):
        found.append(module)
    getters = _mentions_outside_calls(module, ATTRIBUTE_GETTERS)
    found.extend(getters)
    return found[0] if found else None


_STRING_MODULE_PATHS = frozenset({*(f"string.{name}" for name in _STRING_MODULE_CLASSES), *(f"yaml.{name}" for name in _ATTRIBUTE_RESOLVERS)})


def _name_argument_computed(call: cst.Call) -> bool:
    """A `_NAME_ARGUMENTS` call (`patch.object(t, name)`) whose name argument is not a literal
    string, or given by `*`/`**` (`patch.multiple(t, **names)` included)."""
    func = call.func
    # (The callee's last two names, through calls: `unittest.TestLoader().loadTestsFromName`.)
    parts = (last_name(func.value) or "", func.attr.value) if isinstance(func, cst.Attribute) else (last_name(func) or "",)
    if parts[-2:] == ("patch", "multiple"):
        return any(arg.star for arg in call.args)
    spec = _NAME_ARGUMENTS.get(parts[-2:]) if parts[-2:] == ("patch", "object") else _NAME_ARGUMENTS.get(parts[-1:])
    if spec is None:
        return False
    if any(arg.star for arg in call.args):
        return True
    index, keyword = spec
    positional = [arg for arg in call.args if arg.keyword is None]
    named = [arg for arg in call.args if arg.keyword is not None and arg.keyword.value == keyword]
    given = positional[index:index + 1] or named
    return not given or not isinstance(given[0].value, cst.SimpleString)


def _namespace_locals(module: cst.Module) -> frozenset:
    """`_function_locals` of the class-namespace readers, made once per file (`walk.per_file`): GF005
    asks `names_reached_by_string` of every method it reports on, and the merges of every def."""
    return _function_locals(module, _CLASS_NAMESPACES)


def _function_locals(module: cst.Module, words: frozenset) -> frozenset:
    """The ids of the `Name` nodes of `words` that are a function's own variable, by Python's rule:
    a name bound anywhere in a function's own scope, and declared neither `global` nor `nonlocal`
    there, is local throughout its body. Proven from an allowlist of binding forms in the body's own
    statements (a nested def's or class's name counts, their bodies and lambdas are not entered,
    a comprehension's target binds in its own scope, not here); only the reads in that body's own scope and its
    comprehensions are taken (a nested function may declare the name `global`). Decorators, defaults
    and annotations run outside the function and are never taken.

    Review, round 14: a local's value may still be the reader itself. An import binds the module's
    object (`from inspect import getmembers`, `from builtins import vars` in the function), and a
    string names it to `getattr` (`vars = getattr(builtins, "vars")`), or to a caller that hands it
    in as an argument: a name an import in the function binds is never taken, nor any word the file
    spells as a string."""
    taken: set = set()
    spelled = {string_value(node) for node in nodes_within(module, cst.SimpleString)} & set(words)
    for function in nodes_within(module, cst.FunctionDef):
        params = function.params
        named = [p for p in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        bound = {p.name.value for p in named}
        declared: set = set()
        imported: set = set()  # (may be the reader itself: `from inspect import getmembers`)
        reads: List[cst.Name] = [p.name for p in named if p.name.value in words]  # (the parameter itself)
        for node in _own_scope(function.body):
            kind = type(node)
            if kind is cst.Name:
                if node.value in words:
                    reads.append(node)
            elif kind in (cst.Global, cst.Nonlocal):
                declared.update(item.name.value for item in node.names)
            elif kind in (cst.FunctionDef, cst.ClassDef):
                bound.add(node.name.value)
            elif kind is cst.AssignTarget:
                bound.update(bound_names(node.target))
            elif kind in (cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.Del):
                bound.update(bound_names(node.target))
            elif kind is cst.WithItem and node.asname is not None:
                bound.update(bound_names(node.asname.name))
            elif kind is cst.ExceptHandler and node.name is not None:
                bound.update(bound_names(node.name.name))
            elif kind in (cst.Import, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    if alias.asname is not None:
                        imported.update(bound_names(alias.asname.name))
                    else:
                        head = alias.name
                        while isinstance(head, cst.Attribute):
                            head = head.value
                        if isinstance(head, cst.Name):
                            imported.add(head.value)
        local = (bound - declared - imported - spelled) & words
        taken.update(id(n) for n in reads if n.value in local)
    return frozenset(taken)


def _own_scope(body: cst.CSTNode) -> List[cst.CSTNode]:
    """The nodes of a function body in its own scope and its comprehensions': a nested def or class
    is listed (its name binds here), not entered, nor is a lambda. (A comprehension's `for` target,
    `cst.CompFor`, is no binding form of `_function_locals`: it binds in the comprehension's scope.)"""
    found: List[cst.CSTNode] = []
    todo: List[cst.CSTNode] = [body]
    while todo:
        node = todo.pop()
        found.append(node)
        if type(node) not in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            todo.extend(reversed(children(node)))
    return found


def _mentions_outside_calls(module: cst.Module, words: frozenset) -> List[cst.CSTNode]:
    """Names or attributes in `words` that are not the callee of a call (`g = getattr`)."""
    found: List[cst.CSTNode] = []

    class Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            # The callee itself is a use as a call; what it is an attribute of is still visited.
            if isinstance(node.func, cst.Attribute):
                walk_tree(node.func.value, self)
            elif not isinstance(node.func, cst.Name):
                walk_tree(node.func, self)
            for arg in node.args:
                walk_tree(arg, self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value in words:
                found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value in words:
                found.append(node)

    walk_tree(module, Find())
    return found


def _dotted(node: cst.BaseExpression) -> str:
    """`a.b.c` as text (`import a.b.c`), or "" for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    return ""


# Builtins that read the names of the scope they run in (with `_STRING_BINDERS`).
_SCOPE_READERS = frozenset({"locals", "dir"})


def reads_scope_by_string(scope: cst.CSTNode) -> bool:
    """Whether `scope` may reach its names (or a caller's) without naming them, in any spelling:
    `locals`, `vars`, `dir`, `eval`, `exec`, `globals`, `__import__` or a frame or function
    namespace (`sys._getframe().f_locals`, `__globals__`), as a name, an attribute
    (`builtins.locals()`) or a string (`getattr(f, "f_locals")`). Stricter than
    `introspection_calls`: for a proof that rests on every use of a name being seen."""
    words = _STRING_BINDERS | _NAMESPACE_DOORS | _SCOPE_READERS
    found = []

    class Find(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in words:
                found.append(node)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            if string_value(node) in words:
                found.append(node)

    walk_tree(scope, Find())
    return bool(found)


# Attribute names through which an object's attributes are bound or looked up by their strings.
_ATTRIBUTE_DOORS = frozenset({"__dict__", "__getattr__", "__getattribute__", "__setattr__", "setattr"})
# Read-only uses of a namespace dict (`vars(args)`, `obj.__dict__`): its methods that read, and
# builtins that read their argument.
_DICT_READ_METHODS = frozenset({"items", "keys", "values", "get", "copy"})
_DICT_READ_FUNCTIONS = frozenset({"print", "dict", "len", "sorted", "list", "str", "repr", "iter"})


def bound_attribute_names(module: cst.Module, *, scopes: bool = True) -> Optional[frozenset]:
    """The attribute names the file may bind on an object, so that `obj.name(...)` may run code of
    the file whatever `name` means elsewhere (`tracker.log(...)` where the file has `self.log = f`);
    None when it may bind any name.

    Counted: module-level names and every binding in a class body (`exprs.scope_bindings`:
    methods, `if ...: log = f`); attribute store targets
    (`x.log = f`, `for x.log in ...`, `x.log += ...`); `setattr(x, "log", f)` and
    `object.__setattr__(x, "log", f)` with the name as a literal. Any name (None): such a call with
    a computed name, or the words themselves handed around (`f = setattr`, `getattr(x,
    "__dict__")`); a class defining `__getattr__`/`__getattribute__`; `type(name, bases, ns)`; and
    a namespace dict (`vars(x)`, `x.__dict__`) anywhere but a read: a subscript store into it
    names its key when a literal, any other use may store anything (`.update(...)`, handed to a
    function of the file). Reads: `.items()`/`.keys()`/`.values()`/`.get()`/`.copy()`, a
    subscript load, iteration, `**` unpacking, `print`/`dict`/`len`/..., and an argument of an
    imported function (`wandb.init(config=vars(args))`: code outside the file is not handed this
    file's functions by it). `scopes=False` leaves out the module-level and class-scope names: what
    the file may store into another object's attributes (`torch.mean = f`, `setattr(F, "mse_loss", f)`;
    `loops._shadowed_builtins`)."""
    names: set = set()
    any_name: List[cst.CSTNode] = []
    imported: set = set()

    class Imports(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            for alias in node.names:
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    imported.add(alias.asname.name.value)
                else:
                    imported.add(_dotted(alias.name).split(".")[0])

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    bound = alias.asname.name if alias.asname is not None else alias.name
                    if isinstance(bound, cst.Name):
                        imported.add(bound.value)

    def store_targets(target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                store_targets(element.value)
        elif isinstance(target, cst.StarredElement):
            store_targets(target.value)
        elif isinstance(target, cst.Attribute):
            names.add(target.attr.value)
        elif isinstance(target, cst.Subscript) and _namespace_dict(target.value):
            key = literal_key(target)
            if key is None:
                any_name.append(target)
            else:
                names.add(key)

    class Find(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.parents: List[cst.CSTNode] = []
            self.stores: set = set()  # ids of namespace dicts written by a subscript store (handled)

        def on_visit(self, node: cst.CSTNode) -> bool:
            # (`def __getattr__` is caught as its name, one of `_ATTRIBUTE_DOORS`)
            for target in _targets(node):
                store_targets(target)
                if isinstance(target, cst.Subscript) and _namespace_dict(target.value):
                    self.stores.add(id(target.value))
            if isinstance(node, cst.Call):
                self._call(node)
            if isinstance(node, cst.Name) and node.value in _ATTRIBUTE_DOORS and not self._is_callee(node) and not self._dict_attr(node):
                any_name.append(node)
            if isinstance(node, cst.SimpleString) and string_value(node) in _ATTRIBUTE_DOORS:
                any_name.append(node)
            if _namespace_dict(node) and id(node) not in self.stores and not self._read(node):
                any_name.append(node)
            self.parents.append(node)
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            self.parents.pop()

        def _is_callee(self, node: cst.Name) -> bool:
            """`setattr(...)` or `x.__setattr__(...)`: handled as a call by `_call`."""
            parent = self.parents[-1] if self.parents else None
            if isinstance(parent, cst.Call) and parent.func is node:
                return node.value in ("setattr", "__setattr__")
            if isinstance(parent, cst.Attribute) and parent.attr is node and node.value == "__setattr__":
                grand = self.parents[-2] if len(self.parents) > 1 else None
                return isinstance(grand, cst.Call) and grand.func is parent
            return False

        def _dict_attr(self, node: cst.Name) -> bool:
            """The `__dict__` of `x.__dict__`: judged as a namespace dict."""
            parent = self.parents[-1] if self.parents else None
            return node.value == "__dict__" and isinstance(parent, cst.Attribute) and parent.attr is node

        def _call(self, node: cst.Call) -> None:
            func = node.func
            name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
            if name in ("setattr", "__setattr__"):
                positional = [arg for arg in node.args if arg.keyword is None and not arg.star][:2]
                literal = next((a.value for a in positional if isinstance(a.value, cst.SimpleString)), None)
                text = string_value(literal) if literal is not None else None
                if text is None or any(arg.star for arg in node.args):
                    any_name.append(node)
                else:
                    names.add(text)
            elif name == "type" and isinstance(func, cst.Name) and len(node.args) != 1:
                any_name.append(node)
            elif name in _PARSE_METHODS and (len(node.args) > 1 or any(arg.star or (arg.keyword is not None and arg.keyword.value != "args") for arg in node.args)):
                # argparse stores each option's value on the namespace it is given, as the attribute
                # its `dest` names (`parser.parse_args(["--mean", "1"], namespace=torch)` with
                # `type=lambda s: f` sets `torch.mean`): only the plain form is proven (review, round 10).
                any_name.append(node)
            elif name == "update_wrapper" or (name == "wraps" and not (self.parents and isinstance(self.parents[-1], cst.Decorator))):
                # `update_wrapper(torch, ns)`, `wraps(ns)(torch)` copy `ns.__dict__` onto it; `@wraps(f)`
                # on a `def` only onto the new function (review, round 10).
                any_name.append(node)
            elif name == "__init__" and isinstance(func, cst.Attribute) and not _self_init(node):
                # Review, round 14: an initializer called unbound sets the keywords' names as
                # attributes of what it is given (`argparse.Namespace.__init__(Keeper, **{"__s" +
                # "ub__": f})` sets a special method on a class of the file; `dict(__sub__=f)` too).
                for arg in node.args:
                    if arg.star == "**":
                        any_name.append(node)
                    elif arg.keyword is not None:
                        names.add(arg.keyword.value)

        def _read(self, node: cst.CSTNode) -> bool:
            """Whether the namespace dict `node` is only read where it stands."""
            parent = self.parents[-1] if self.parents else None
            grand = self.parents[-2] if len(self.parents) > 1 else None
            if isinstance(parent, cst.Attribute) and parent.value is node:
                return parent.attr.value in _DICT_READ_METHODS and isinstance(grand, cst.Call) and grand.func is parent
            if isinstance(parent, cst.Subscript) and parent.value is node:
                return True  # a load: stores are `stores_targets`'
            if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
                return True
            if isinstance(parent, cst.ComparisonTarget) or isinstance(parent, cst.Comparison):
                return True
            if isinstance(parent, cst.Arg) and parent.value is node and isinstance(grand, cst.Call):
                if parent.star == "**":
                    return True
                callee = grand.func
                if isinstance(callee, cst.Name) and callee.value in _DICT_READ_FUNCTIONS:
                    return True
                root = callee
                while isinstance(root, cst.Attribute):
                    root = root.value
                return isinstance(root, cst.Name) and root.value in imported and root is not callee
            return False

    walk_tree(module, Imports())
    walk_tree(module, Find())
    # Module-level names are attributes of the module object (`sys.modules[__name__].log`), and
    # class-scope names (at any depth of the body: `if ...: log = f`) of the class and its instances.
    if scopes:
        names.update(scope_bindings(module))
    return None if any_name else frozenset(names)


# argparse's parsing methods, which store attributes named by strings on a namespace they are given.
_PARSE_METHODS = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args"})


def _targets(node: cst.CSTNode) -> List[cst.BaseExpression]:
    """The binding targets of a statement or clause (`a = b = v`, `a += v`, `for a in`, `as a`)."""
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return [node.target]
    if isinstance(node, (cst.For, cst.CompFor)):
        return [node.target]
    if isinstance(node, cst.WithItem) and node.asname is not None:
        return [node.asname.name]
    return []


def _namespace_dict(node: cst.CSTNode) -> bool:
    """`x.__dict__` or `vars(x)`: an object's attributes as a dict."""
    if isinstance(node, cst.Attribute) and node.attr.value == "__dict__":
        return True
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "vars" and bool(node.args)


def _self_init(call: cst.Call) -> bool:
    """`super().__init__(...)` or `Base.__init__(self, ...)`: an initializer run on the object being
    made, whose attributes are an instance's (none is a special method Python looks up on a class)."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super":
        return True
    first = call.args[0] if call.args else None
    return first is not None and first.keyword is None and not first.star and isinstance(first.value, cst.Name) and first.value.value == "self"
