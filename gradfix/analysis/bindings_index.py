"""Where a file binds the members of its classes, and what it does to a module callee.

The class and attribute binding index behind `CalleeClassifier` (callees.py):
`self.name` is proven to be the one def or value its class shows only if
nothing else in the file may bind `name` on the instance (`find_binding`,
over `ModuleIndex`: the file's classes, how they derive from each other, and
every store into an attribute); `self_attribute_values` lists what a class
assigns on `self`. A module callee proven from its construction must also not
be changed after it (`module_changes`) nor run a forward hook registered in
the file (`facts.FileFacts.forward_hooks`). Syntax helpers shared with bodies.py:
`target_names`, `mentions`, `class_members`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Set

import libcst as cst

from gradfix.analysis.exprs import code_of, dynamic_global, literal_key, strip_parens
from gradfix.analysis.vocabulary import MODULE_PASS_THROUGH, MODULE_READS, WHOLE_OBJECT_ATTRIBUTES
from gradfix.analysis.walk import walk_tree


def target_names(target: cst.BaseExpression) -> Set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in target_names(element.value)}
    return set()


def mentions(node: cst.CSTNode, name: str) -> bool:
    seen: list = []

    class Find(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                seen.append(n)

    walk_tree(node, Find())
    return bool(seen)


def class_members(cls: cst.ClassDef, attr: str) -> list:
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
                if any(attr in target_names(t) for t in targets):
                    found.append(small)
        elif isinstance(statement, cst.BaseCompoundStatement) and mentions(statement, attr):
            found.append(statement)  # `if`/`try`/`for` in a class body: anything may be bound there
    return found


def describe_member(member: cst.CSTNode, attr: str) -> str:
    """How a class body binds `attr`, for a message: `def dist`, `dist = ...`."""
    if isinstance(member, cst.FunctionDef):
        return f"`def {attr}`"
    if isinstance(member, cst.ClassDef):
        return f"`class {attr}`"
    if isinstance(member, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        return f"`{attr} = ...`"
    return f"a statement binding `{attr}`"


@dataclass(frozen=True)
class Binding:
    """A store into an attribute somewhere in the file (`CalleeClassifier.bound_elsewhere`)."""

    attr: Optional[str]  # None: any attribute (`setattr(x, name, v)`, `x.__dict__.update(...)`)
    node: cst.CSTNode
    text: str  # as written, shortened: `Trainer.dist = ...`
    # `self.attr = ...` (or `setattr(self, ...)`) in a method of this class: `self` is its instance.
    owner: Optional[cst.ClassDef]
    # Not seen by `_self_attribute_values` (`setattr`, `del`, `__dict__`).
    dynamic: bool


class Bindings(cst.CSTVisitor):
    """Every class of a module, and every store into an attribute in it."""

    def __init__(self) -> None:
        self.classes: list = []
        self.bindings: list = []
        # Calls that build a class at run time (`type("A", (Base,), ns)`, `types.new_class`).
        self.class_makers: list = []
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
        self.bindings.append(Binding(attr, node, text, self._owner(obj), dynamic))

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
                key = literal_key(target)
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
        if (isinstance(func, cst.Name) and func.value == "type" and len(node.args) != 1) or (
            isinstance(func, cst.Attribute) and func.attr.value == "new_class"
        ):
            self.class_makers.append(node)
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


class ModuleIndex:
    """The classes of a module, how they derive from each other (by name), and its attribute stores."""

    def __init__(self, classes: list, bindings: list, class_makers: Optional[list] = None, dynamic_global: Optional[cst.CSTNode] = None) -> None:
        self.classes = classes
        self.bindings = bindings
        self.class_makers = class_makers or []
        self.dynamic_global = dynamic_global  # `exprs.dynamic_global`
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


def index_module(module: cst.Module) -> ModuleIndex:
    """The classes and attribute stores of `module` (`ModuleIndex`)."""
    collector = Bindings()
    walk_tree(module, collector)
    return ModuleIndex(collector.classes, collector.bindings, collector.class_makers, dynamic_global(module))


def class_machinery(index: ModuleIndex, cls: cst.ClassDef, line: Callable[[cst.CSTNode], str], known: Callable[[cst.BaseExpression], bool]) -> Optional[str]:
    """Why code run when `cls` or a class sharing its MRO is created may replace its members, or None.

    A class decorator receives the class and returns whatever it likes (a subclass overriding a
    method, the class with a method wrapped); a metaclass's `__new__` sees the class namespace
    before the class exists (`ns[name] = wrap(ns[name])`); `__init_subclass__` gets every
    subclass; a base computed by a call (`with_metaclass(M)`, `make_base()`) brings its own
    metaclass; a descriptor's `__set_name__` (any class of the file defining one) gets the class
    its instance is assigned in. None of it shows as a binding of the member, so any of them on a related class
    (`ModuleIndex.related`) makes every member of `cls` unproven, unless `known(expr)` proves the
    decorator or metaclass harmless (`dataclass`, `ABCMeta`: callees.py). Class keywords other
    than `metaclass` go to some `__init_subclass__`, so they count too.

    A class the file builds at run time (`type("A", (Base,), ns)`) is no `class` statement the index
    sees: it may derive from `cls` and override a member, and a global rebound by a form that is no
    binding (`globals()["A"] = ...`, `exprs.dynamic_global`) may put it in the place of `cls`: either makes
    every class's members unproven."""
    if index.class_makers:
        maker = index.class_makers[0]
        return (
            f"may be overridden by a class built at run time: `{code_of(maker.func).strip()}(...)` ({line(maker)}) "
            f"may derive from `{cls.name.value}` and override it, and gradfix does not follow it"
        )
    if index.dynamic_global is not None:
        shown = code_of(index.dynamic_global).strip().splitlines()[0]
        return (
            f"may be rebound by `{shown}` ({line(index.dynamic_global)}), which may bind a global of the file "
            f"without a binding gradfix sees"
        )
    related = index.related(cls.name.value)
    for other in index.classes:
        other_name = other.name.value
        hook = class_members(other, "__set_name__")
        if hook:
            # An instance of it assigned in a class body gets the owner class: it may rebind any member.
            return f"may be replaced by `{other_name}.__set_name__` (defined at {line(hook[0])}), which runs for every class body that holds one"
        if other_name not in related:
            continue
        for decorator in other.decorators:
            applied = decorator.decorator
            if not known(applied.func if isinstance(applied, cst.Call) else applied):
                return (
                    f"may be replaced by the class decorator `@{code_of(applied).strip()}` of `{other_name}` "
                    f"({line(decorator)}), which receives the class and may return another one"
                )
        for keyword in other.keywords:
            if keyword.keyword is not None and keyword.keyword.value == "metaclass" and known(keyword.value):
                continue
            return (
                f"may be replaced when `{other_name}` is created: `{code_of(keyword).strip().rstrip(',')}` "
                f"({line(other)}) runs code that may rewrite the class namespace"
            )
        for base in other.bases:
            if not isinstance(strip_parens(base.value), (cst.Name, cst.Attribute, cst.Subscript)):
                return f"may be replaced when `{other_name}` is created: its base `{code_of(base.value).strip()}` ({line(other)}) is computed and may bring a metaclass"
        hook = class_members(other, "__init_subclass__")
        if hook:
            return f"may be replaced by `{other_name}.__init_subclass__` (defined at {line(hook[0])}), which runs when a subclass is created"
    return None


def find_binding(index: ModuleIndex, cls: cst.ClassDef, attr: str, own_def: bool, line: Callable[[cst.CSTNode], str]) -> Optional[str]:
    """Why `self.attr`, as `cls` binds it, may be something else at run time, from the file's `index`;
    None if nothing in the file can. The rule: `CalleeClassifier.bound_elsewhere` (callees.py).
    `line` names a node's line for the message."""
    name = cls.name.value
    derived = index.derived(name)
    related = index.related(name)
    bases = index.ancestors(name) - {name}
    hooks = ("__setattr__", "__getattribute__")
    for other in index.classes:
        other_name = other.name.value
        if other_name not in related:
            continue
        hook = next((h for h in hooks if class_members(other, h)), None)
        if hook is not None:
            return f"may be changed by `{other_name}.{hook}` (defined at {line(class_members(other, hook)[0])})"
        if other is cls:
            continue
        members = class_members(other, attr)
        if members and not (own_def and other_name in bases and other_name != name):
            what = describe_member(members[0], attr)
            if other_name in derived:
                where = f"in `{other_name}`, a subclass of `{name}`"
                return f"is overridden in a subclass of this file: bound at {line(members[0])} ({what} {where})"
            where = f"in `{other_name}`, {index.relation(name, other_name)}"
            return f"is also bound at {line(members[0])} ({what} {where})"
        if other_name not in bases or other_name == name:
            for base in other.bases:
                base_name = code_of(base.value).strip()
                if base_name != "object" and base_name not in index.names:
                    return (
                        f"may be inherited from `{base_name}`, a base of `{other_name}` (defined at "
                        f"{line(other)}) that is not a class of this file"
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
        return f"is also bound at {line(binding.node)} (`{binding.text}`{where})"
    return None

def self_attribute_values(cls: cst.ClassDef, attr: str) -> list:
    """The values assigned to `self.attr` in `cls`'s methods (`self.attr = v`, `self.attr: T = v`);
    `[None, None]` when one of its bindings is not resolved (an unpacking, `+=`, a loop target)."""
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

    walk_tree(cls, Collect())
    # `setattr(self, ...)`, `del self.x` and stores from elsewhere: `bound_elsewhere`.
    return [v for v in values if v is not None] if None not in values else [None, None]


def module_changes(module: cst.Module, text: str) -> list:
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

    walk_tree(module, Find())
    return found
