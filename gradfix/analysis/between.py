"""What may stand between two statements of one straight-line block.

docs/design.md §1 E3: nothing between the two forwards/backwards may step an
optimizer, zero or read `.grad`, mutate an operand or the callee in place, or
rebind their names; control flow must not be able to skip the second loss.

`scan_between` sorts each intervening statement into one of three answers:
a *barrier* (the pattern is not there: report nothing), *unknown* (the
pattern is there but a fix cannot be proven: the fix becomes unsafe), or
harmless.

The policy is an allowlist, at two levels:

- **syntax:** only the node types in `_ALLOWED_NODES` (assignments, plain
  expressions, `if`/`for`/`while`/`try`, definitions without decorators, ...)
  can be harmless; any other statement or expression (`match`, `import`,
  `await`, `async`, `type` aliases, whatever a later Python adds) is unknown.
  Statements that run code the file does not show are unknown too: a
  decorator (`@wipe def hook(): ...` calls `wipe`), a `with` whose context
  manager is not a known one (its `__enter__`/`__exit__`), a class with bases
  or keywords (metaclass, `__init_subclass__`) — and a class body runs when
  the class is defined, so it is scanned like any other statements.
- **calls:** `harmless_call` is the one answer, for every rule, to "can this
  call change what the passes compute?" (built-in value functions, logging
  and value methods, container methods on a receiver that is no operand, and
  what `CalleeClassifier.harmless` proves).

Python's dunder protocol on objects the file does not define (attribute
reads, `x[i]`, operators, iteration, f-strings) is taken as harmless, as it
is for the callee's own arguments; README "What a safe fix assumes".
"""

from __future__ import annotations

import functools
import weakref

from dataclasses import dataclass, field
from typing import AbstractSet, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import PositionProvider, ScopeProvider

from gradfix.analysis.exprs import access_path, binding_counts, code_of, imported_names, inplace_keyword, is_inplace_call, last_name, nodes_within, paths_overlap, read_paths, strip_parens
from gradfix.analysis.vocabulary import (
    APPENDING_METHODS,
    FRESH_FUNCTIONS,
    FRESH_TENSOR_FACTORIES,
    GRAPH_FREE_FACTORIES,
    FRESH_METHODS,
    GRADIENT_METHODS,
    HARMLESS_CONTEXTS,
    HARMLESS_DECORATORS,
    HARMLESS_FUNCTIONS,
    HARMLESS_METHODS,
    HARMLESS_QUALIFIED,
    INPLACE_KEYWORDS,
    MODULE_MUTATORS,
    MUTATING_METHODS,
    PURE_FUNCTIONS,
    PURE_TENSOR_METHODS,
    VALUE_FUNCTIONS,
    VALUE_METHODS,
    VIEW_METHODS,
    is_inplace_name,
)
from gradfix.analysis.walk import node_types, walk_tree


# The builtins that call a metaclass hook of the class they are given.
_CHECK_HOOKS = {"isinstance": "__instancecheck__", "issubclass": "__subclasscheck__"}


def harmless_call(call: cst.Call, classifier=None, watched: Sequence[Tuple[str, ...]] = ()) -> bool:
    """Whether `call` is proven unable to change what the two passes compute: the one policy.

    Used between the passes (after the scanner's barriers: `step`, `zero_grad`,
    in-place ops, `.grad`) and for the calls that share a statement with a
    moved evaluation (GF002, GF004). A container method (`append`, `update`,
    ...) is harmless only on a receiver no watched path overlaps;
    `classifier` (a `CalleeClassifier`) vouches for proven-pure, random and
    module callees of the file, torch.nn constructors and gradfix's ops.
    """
    func = call.func
    qualified = classifier.qualified(func) if classifier is not None else set()
    if isinstance(func, cst.Attribute) and not qualified:
        name = func.attr.value
        if name in MUTATING_METHODS:
            # Only the list-building pair, and only on a receiver that is no operand: `update`,
            # `pop`, ... on an object the file does not show may be anything (`ema.update(model)`
            # writes parameters).
            # Review, round 13: and, as for the harmless methods below, not where a class of the file
            # may define a method of that name (`class History(list)` whose `append` reads `w.grad`).
            path = access_path(func.value)
            return name in APPENDING_METHODS and path is not None and not any(paths_overlap(path, w) for w in watched) and not _file_method(name, classifier)
        if name in MODULE_MUTATORS:
            # `x.to(...)`, `x.half()` give a new tensor, but on a module they convert its
            # parameters in place: harmless only on a receiver that is no operand or callee.
            path = access_path(func.value)
            return path is not None and not any(paths_overlap(path, w) for w in watched)
        if name == "format" and _formats_computed(func.value, classifier):
            # (`"{0.gnorm}".format(m)` reads the property `gnorm` by its template: review, round 10)
            return False
        if (name in HARMLESS_METHODS or name in VALUE_METHODS) and not (classifier is not None and classifier.may_bind_attribute(name)):
            # (not where a class of the file defines a method of that name: `tracker.log(...)` may run it)
            return not _writes_through_file(name, classifier)
    if isinstance(func, cst.Name) and qualified <= {f"builtins.{func.value}"} and func.value in HARMLESS_FUNCTIONS | VALUE_FUNCTIONS:
        if func.value == "print" and _prints_through_file(call, classifier):
            return False
        if func.value in _KEYED and not all(_inert_key(arg, classifier) for arg in call.args):
            return False
        # `isinstance(loss, C)` runs `__instancecheck__` of C's metaclass: code of the file where it
        # defines one (that may keep `loss`).
        hook = _CHECK_HOOKS.get(func.value)
        if hook is not None and _checks_computed(call, classifier):
            return False
        return hook is None or classifier is None or not classifier.may_bind_attribute(hook)
    if qualified & (HARMLESS_QUALIFIED | HARMLESS_CONTEXTS):
        return not (qualified & HARMLESS_QUALIFIED and _writes_through_file(last_name(func), classifier))
    if qualified & FRESH_TENSOR_FACTORIES:
        # `torch.zeros(n, out=x)` writes into `x`; `**kwargs` may hold `out`.
        return not any(arg.star or (arg.keyword is not None and arg.keyword.value in INPLACE_KEYWORDS) for arg in call.args)
    return classifier is not None and classifier.harmless(func)


def _file_method(name: str, classifier) -> bool:
    """A class of the file may define a method `name` that `obj.name(...)` runs (review, round 13)."""
    return classifier is not None and classifier.may_bind_attribute(name)


# Review, round 9: calls that log or print run methods of the objects they write to by protocol, not
# by a call the file shows: `print(..., file=sink)` (and `print` to a `sys.stdout` the file
# replaced) runs `sink.write`/`flush`; a progress bar's `set_postfix` writes to its `file=`; a
# logger's `info(...)` runs its handlers' `handle`/`emit`, filters' `filter`, formatters' `format`.
# A class of the file defining one (a `logging.Handler` whose `emit` reads `w.grad`, a sink whose
# `write` does) runs between the passes, before the merged pass has written any gradient. Harmless
# only where the file may bind none of those names (`CalleeClassifier.may_bind_attribute`).
_WRITERS = frozenset({"set_postfix", "set_description"})
_LOGGERS = frozenset({"log", "info", "debug", "warning", "error", "critical", "exception"})
_STREAM_PROTOCOL = frozenset({"write", "flush", "writelines"})
_LOGGING_PROTOCOL = _STREAM_PROTOCOL | frozenset({
    "handle", "emit", "filter", "format", "formatMessage", "formatTime", "formatException", "formatStack", "usesTime",
    "getMessage", "makeRecord", "callHandlers", "_log", "findCaller", "handleError", "acquire", "release", "process",
    "isEnabledFor", "getEffectiveLevel",
})


def _writes_through_file(name: str, classifier) -> bool:
    """`name` (a harmless writer or logger, by its last name) may run a method of the file by protocol
    (`_WRITERS`, `_LOGGERS`): the file may bind an attribute the protocol calls, or gradfix has no
    classifier to ask."""
    protocol = _STREAM_PROTOCOL if name in _WRITERS else _LOGGING_PROTOCOL if name in _LOGGERS else frozenset()
    if not protocol:
        return False
    return classifier is None or any(classifier.may_bind_attribute(p) for p in protocol)


# Review, round 10: the harmless builtins that call a function they are handed (`key=`), where the
# scanner does not look (a lambda's body, a function of the file): `sorted(xs, key=lambda v: ...
# w.grad ...)` between the passes reads the first pass's gradient. Harmless with no such argument,
# or one that runs no code of the file and reads no attribute: a builtin the file does not rebind
# (`key=len`), or a lambda of names, subscripts, operators and literals (`key=lambda kv: -kv[1]`;
# a file's special methods those run are checked on their own: `FileFacts.implicit_dunders`).
_KEYED = frozenset({"sorted", "min", "max"})
_INERT_KEYS = frozenset({"len", "abs", "str", "repr", "int", "float", "round", "id", "bool"})
_INERT_LAMBDA_NODES = (
    cst.Name, cst.Subscript, cst.SubscriptElement, cst.Index, cst.Slice, cst.Integer, cst.Float, cst.SimpleString,
    cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation,
    cst.Tuple, cst.Element, cst.IfExp, cst.Parameters, cst.Param, cst.Lambda,
    cst.BaseBinaryOp, cst.BaseUnaryOp, cst.BaseCompOp, cst.BaseBooleanOp,
    cst.LeftParen, cst.RightParen, cst.Comma, cst.Colon, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.BaseParenthesizableWhitespace, cst.Newline, cst.EmptyLine, cst.Comment, cst.MaybeSentinel,
)


def _inert_key(arg: cst.Arg, classifier) -> bool:
    """`arg` of `sorted`/`min`/`max` calls no code gradfix has not seen (`_KEYED`)."""
    if arg.star:
        return False  # (`**options` may hold `key`; `*xs` is values, but may hold it too for `min(*xs, key=...)`)
    if arg.keyword is None or arg.keyword.value != "key":
        return True
    value = strip_parens(arg.value)
    if isinstance(value, cst.Name) and value.value == "None":
        return True
    if isinstance(value, cst.Name) and value.value in _INERT_KEYS:
        return classifier is not None and classifier.qualified(value) <= {f"builtins.{value.value}"}
    if isinstance(value, cst.Lambda):
        stack: List[cst.CSTNode] = [value]
        while stack:
            node = stack.pop()
            if not isinstance(node, _INERT_LAMBDA_NODES):
                return False
            stack.extend(node.children)
        return True
    return False


def _checks_computed(call: cst.Call, classifier) -> bool:
    """`isinstance(m, P)` may read an attribute a class of the file computes (review, round 11): a
    class not of builtins or torch may have a metaclass whose `__instancecheck__` reads attributes of
    `m` (a `typing.Protocol` with `@runtime_checkable` runs `hasattr(m, "gnorm")`, a property of the
    file reading `w.grad`). Proven only for classes gradfix names as builtins or torch's, or where the
    file computes no attribute."""
    facts = getattr(classifier, "facts", None)
    if facts is None:
        return True
    names, anything = facts.computed_attributes
    if not names and not anything:
        return False
    if len(call.args) != 2 or any(arg.star or arg.keyword is not None for arg in call.args):
        return True
    kind = strip_parens(call.args[1].value)
    classes = [e.value for e in kind.elements] if isinstance(kind, cst.Tuple) else [kind]
    for cls in classes:
        qualified = classifier.qualified(cls)
        if not qualified or not all(q.startswith(("builtins.", "torch.")) for q in qualified):
            return True
    return False


def _formats_computed(template: cst.BaseExpression, classifier) -> bool:
    """`template.format(...)` may read an attribute a class of the file computes (`facts.formats_computed`);
    with no facts to ask, it may."""
    from gradfix.analysis.facts import formats_computed

    facts = getattr(classifier, "facts", None)
    return facts is None or formats_computed(template, facts)


def _prints_through_file(call: cst.Call, classifier) -> bool:
    """`print(...)` may write through a method of the file: to a `file=` (or `**kwargs`) object, or
    to a `sys.stdout`/`sys.stderr` the file may replace (a store of `stdout`, `redirect_stdout`),
    where the file may bind `write`/`flush` (review, round 9; `_WRITERS`)."""
    facts = getattr(classifier, "facts", None)
    if classifier is None or facts is None:
        return True
    return prints_through_file(call, facts, classifier.may_bind_attribute)


def prints_through_file(call: cst.Call, facts, may_bind: Callable[[str], bool]) -> bool:
    """`_prints_through_file` with the file's `facts` and its answer to "may the file bind this
    attribute name" (`may_bind`; a special method's `print`, `facts._changes_nothing`)."""
    if not any(may_bind(p) for p in _STREAM_PROTOCOL):
        return False
    if any(arg.star == "**" or (arg.keyword is not None and arg.keyword.value == "file") for arg in call.args):
        return True
    stored = facts.attribute_store_names
    return stored is None or bool(stored & {"stdout", "stderr", "__stdout__", "__stderr__"}) or "redirect_std" in facts.code


class HarmlessCalls:
    """The policy bound to a file's classifier, as the rules hand it to `scan_between`:
    calls (`harmless_call`), `with` items (`context`) and decorators (`decorator`)."""

    def __init__(self, classifier, proven: AbstractSet[int] = frozenset()) -> None:
        self.classifier = classifier
        # Calls a rule proved pure itself, by id (GF004's inlined helpers: `self.min_loss(x)`).
        self.proven = proven

    def line(self, node: cst.CSTNode) -> Optional[int]:
        position = self.classifier.meta(PositionProvider, node, None)
        return None if position is None else position.start.line

    def tensor(self, node: cst.BaseExpression) -> bool:
        """Whether `node` is a name the file binds once, at module level, to a torch factory's tensor."""
        facts = getattr(self.classifier, "facts", None)
        if facts is None or not isinstance(node, cst.Name) or facts.binding_counts.get(node.value) != 1:
            return False
        return node.value in _module_names(facts.module)[1]

    def computed(self, node: cst.Attribute) -> bool:
        """Whether reading (or storing) `node` may run code of the file: a property, or any
        attribute where a class of the file defines `__getattr__`/`__getattribute__`/`__get__`."""
        facts = getattr(self.classifier, "facts", None)
        if facts is None:
            return False
        names, anything = facts.computed_attributes
        return anything or node.attr.value in names

    def context(self, item: cst.BaseExpression) -> bool:
        return isinstance(item, cst.Call) and bool(self.classifier.qualified(item.func) & HARMLESS_CONTEXTS)

    def decorator(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value in HARMLESS_DECORATORS and not self.classifier.qualified(expr) - {f"builtins.{expr.value}", expr.value}


@dataclass
class Verdict:
    barrier: Optional[str] = None  # why the pattern does not hold
    # Everything not proven harmless, each as its reason's text: "`f()`", "`with lock:`", "`import m`".
    unknown: List[str] = field(default_factory=list)

    def unknown_text(self) -> str:
        return ", ".join(dict.fromkeys(self.unknown))


# Syntax that is harmless in itself (its parts are still checked: calls, stores, barriers).
# Anything else between the passes is unknown: the allowlist, not a list of dangers.
_ALLOWED_NODES = (
    # statements
    cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.IndentedBlock, cst.Expr, cst.Assign, cst.AssignTarget,
    cst.AnnAssign, cst.Annotation, cst.AugAssign, cst.Pass, cst.Del, cst.If, cst.Else, cst.For, cst.While,
    cst.Try, cst.ExceptHandler, cst.Finally, cst.With, cst.WithItem, cst.AsName, cst.FunctionDef, cst.ClassDef,
    cst.Decorator, cst.Parameters, cst.Param, cst.ParamStar, cst.ParamSlash,
    # reached only to report them: barriers
    cst.Return, cst.Raise, cst.Break, cst.Continue, cst.Global, cst.Nonlocal, cst.Yield,
    # expressions
    cst.Name, cst.Attribute, cst.Subscript, cst.SubscriptElement, cst.Index, cst.Slice, cst.Call, cst.Arg,
    cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
    cst.FormattedStringText, cst.FormattedStringExpression, cst.BinaryOperation, cst.UnaryOperation,
    cst.BooleanOperation, cst.Comparison, cst.ComparisonTarget, cst.IfExp, cst.Tuple, cst.List, cst.Dict,
    cst.Set, cst.Element, cst.StarredElement, cst.DictElement, cst.StarredDictElement, cst.ListComp,
    cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.CompFor, cst.CompIf, cst.Lambda, cst.Ellipsis,
    cst.NamedExpr,
)
# Punctuation, operators and whitespace: no behaviour of their own.
_SYNTAX_ONLY = (
    cst.BaseParenthesizableWhitespace, cst.Comment, cst.Newline, cst.EmptyLine, cst.TrailingWhitespace,
    cst.BaseBinaryOp, cst.BaseUnaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseAugOp, cst.AssignEqual,
    cst.Colon, cst.Comma, cst.Dot, cst.Semicolon, cst.LeftParen, cst.RightParen, cst.LeftSquareBracket,
    cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.ImportStar,
)
# Both, as a set of exact types (`walk.node_types`: `isinstance` on libcst's classes is slow).
_KNOWN = node_types(*_ALLOWED_NODES, *_SYNTAX_ONLY)


def _kind_of(node: cst.CSTNode) -> str:
    """A short name for a statement or expression gradfix does not vouch for, for the unsafe reason."""
    if isinstance(node, (cst.Import, cst.ImportFrom)):
        return f"`{cst.Module([]).code_for_node(node).strip()}`"
    if isinstance(node, cst.Match):
        return "a `match` statement"
    keyword = {cst.Await: "await", cst.Asynchronous: "async", cst.Assert: "assert"}.get(type(node))
    if keyword is not None:
        return f"`{keyword}`"
    return f"a `{type(node).__name__}` node"


class _Scanner(cst.CSTVisitor):
    def __init__(
        self,
        watched: Sequence[Tuple[str, ...]],
        verdict: Verdict,
        stores_only: bool = False,
        policy: Optional[HarmlessCalls] = None,
        gradients_only: bool = False,
    ) -> None:
        self.watched = watched
        self.verdict = verdict
        self.stores_only = stores_only
        self.policy = policy
        self.gradients_only = gradients_only  # only the `.grad` barriers (`reads_gradients`)
        self._callees: set = set()  # ids of the callees of the calls visited
        self._quiet = 0  # > 0 inside a node already reported as unknown
        self.rebindable: AbstractSet[str] = frozenset()  # (`scan_between`)

    # -- helpers --------------------------------------------------------------
    def _barrier(self, reason: str, store: bool = False, gradients: bool = False) -> None:
        if (self.stores_only and not store) or (self.gradients_only and not gradients):
            return
        if self.verdict.barrier is None:
            self.verdict.barrier = reason

    def _unknown(self, text: str, node: Optional[cst.CSTNode] = None) -> None:
        """Record what is not proven harmless; statements and decorators name their line."""
        if self.stores_only:
            return
        line = self.policy.line(node) if node is not None and self.policy is not None else None
        self.verdict.unknown.append(text if line is None else f"{text} (line {line})")

    def _unknown_call(self, func: cst.BaseExpression) -> None:
        if not self.stores_only:
            self.verdict.unknown.append(f"`{code_of(func).strip()}()`")

    def _store(self, target: cst.CSTNode, what: str) -> None:
        if isinstance(target, cst.Attribute) and target.attr.value in _TENSOR_STATE:
            # Of any tensor: `p.requires_grad = False` (a GAN freezing its discriminator) drops
            # the merged pass's gradient of `p`; `p.data = v` swaps what a saved tensor holds
            # without a version bump (review, stop 24).
            self._barrier(f"`{code_of(target).strip()}` is set between the two passes", store=True)
            return
        for path in _target_paths(target):
            if len(path) == 1 and path[0] in self.rebindable:
                continue
            for watched in self.watched:
                if paths_overlap(path, watched):
                    self._barrier(f"`{'.'.join(watched)}` is {what} between the two passes", store=True)
                    return

    # -- the allowlist ------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) not in _KNOWN:
            # Reported once, at the outermost node gradfix does not know; its parts are still
            # scanned for barriers and stores (a `match` capture rebinding an operand).
            if self._quiet == 0:
                self._unknown(_kind_of(node), node)
            self._quiet += 1
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if type(original_node) not in _KNOWN:
            self._quiet -= 1

    # -- definitions bind a name; their decorators and defaults run now -------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        self._store(node.name, "redefined")
        for decorator in node.decorators:
            walk_tree(decorator, self)
        walk_tree(node.params, self)  # default values (and annotations) are evaluated at definition
        if node.returns is not None:
            walk_tree(node.returns, self)
        return False  # the body runs only when called, and a call is checked where it is made

    def visit_Decorator(self, node: cst.Decorator) -> Optional[bool]:
        expr = node.decorator
        if self.policy is None or not self.policy.decorator(expr):
            self._unknown(f"the decorator `@{code_of(expr).strip()}`", node)
        return True  # a decorator call's own arguments are checked as calls

    def visit_ClassDef(self, node: cst.ClassDef) -> Optional[bool]:
        self._store(node.name, "redefined")
        if node.bases or node.keywords:
            # A base's metaclass and `__init_subclass__` run when the class is created.
            self._unknown(f"`class {node.name.value}(...)`", node)
        return True  # the body runs now, as any statements would

    def visit_Lambda(self, node: cst.Lambda) -> Optional[bool]:
        walk_tree(node.params, self)
        return False

    # -- stores ---------------------------------------------------------------
    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._store(node.target, "rebound")

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target, "rebound")

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target, "modified in place")

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._store(node.target, "rebound")

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target, "rebound")

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            if self.policy is None or not self.policy.context(item.item):
                self._unknown(f"`with {code_of(item.item).strip()}:` (its `__enter__`/`__exit__`)", node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._store(node.asname.name, "rebound")

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._store(node.name.name, "rebound")

    def visit_Del(self, node: cst.Del) -> None:
        self._store(node.target, "deleted")

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        name = node.asname.name if node.asname else node.name
        if isinstance(name, (cst.Name, cst.Attribute)):
            self._store(cst.Name(code_of(name).split(".")[0]), "rebound by an import")

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._store(node.name, "rebound by a `match` capture")

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self._store(node.name, "rebound by a `match` capture")

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self._store(node.rest, "rebound by a `match` capture")

    def visit_Global(self, node: cst.Global) -> None:
        self._barrier("a `global` statement stands between the two passes")

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._barrier("a `nonlocal` statement stands between the two passes")

    # -- control flow that can skip the second loss -------------------------------
    def visit_Return(self, node: cst.Return) -> None:
        self._barrier("a `return` can skip the second loss")

    def visit_Raise(self, node: cst.Raise) -> None:
        self._barrier("a `raise` can skip the second loss")

    def visit_Break(self, node: cst.Break) -> None:
        self._barrier("a `break` can skip the second loss")

    def visit_Continue(self, node: cst.Continue) -> None:
        self._barrier("a `continue` can skip the second loss")

    def visit_Yield(self, node: cst.Yield) -> None:
        self._barrier("a `yield` stands between the two passes")

    # -- gradients --------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.policy is not None and id(node) not in self._callees and self.policy.computed(node):
            # A property of the file runs its code on a read (or store): it may rebind an
            # operand (`self.z = self.z * 2` in a getter; review, stop 24).
            self._unknown(f"`{code_of(node).strip()}` (a property of the file)", node)
        if node.attr.value in ("grad", "_grad"):  # `_grad`: the same slot (`zero_grad` sets it)
            self._barrier(f"`{code_of(node)}` reads or writes gradients between the two passes", gradients=True)
        elif node.attr.value == "data":
            path = access_path(node.value)
            if path is not None and any(paths_overlap(path, w) for w in self.watched):
                self._barrier(f"`{code_of(node)}` touches an operand's data between the two passes")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        self._callees.add(id(func))  # judged as the call's callee, not again as a read
        last = last_name(func)
        if is_inplace_call(node) and not last.endswith("_"):
            # `F.relu(x, inplace=True)`, `torch.clamp(x, 0, 1, out=x)`: pure functions, but not
            # called this way (the underscore spellings are caught below by name).
            self._barrier(f"`{code_of(func).strip()}(..., {inplace_keyword(node)})` modifies a tensor in place between the two passes")
            return
        if "clip_grad" in last:
            # clip_grad_norm (deprecated, no underscore) clips gradients too.
            self._barrier(f"`{code_of(func)}()` clips gradients between the two passes")
            return
        if last == "grad" and not self.stores_only:
            # `torch.autograd.grad(...)`, `grad(...)` imported from it, `torch.func.grad`.
            self._barrier(f"`{code_of(func)}()` computes gradients between the two passes", gradients=True)
            return
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name in GRADIENT_METHODS:
                self._barrier(f"`{code_of(func)}()` runs between the two passes")
                return
            if name == "update" and not node.args:
                self._barrier(f"`{code_of(func)}()` (a GradScaler update) runs between the two passes")
                return
            if is_inplace_name(name):
                self._barrier(f"`{code_of(func)}()` modifies a tensor in place between the two passes")
                return
            if name in MUTATING_METHODS:
                path = access_path(func.value)
                if path is not None and any(paths_overlap(path, w) for w in self.watched):
                    self._barrier(f"`{code_of(func).strip()}()` modifies an operand between the two passes", store=True)
                    return
        elif isinstance(func, cst.Name):
            name = func.value
            if is_inplace_name(name):
                self._barrier(f"`{name}()` modifies a tensor in place between the two passes")
                return
            if name in ("set_grad_enabled",):
                self._barrier("the grad mode changes between the two passes")
                return
        if self.stores_only:
            return
        if code_of(func).strip().endswith("set_grad_enabled"):
            self._barrier("the grad mode changes between the two passes")
            return
        if isinstance(func, cst.Attribute) and func.attr.value in MODULE_MUTATORS and not (self.policy is not None and self.policy.tensor(func.value)):
            # `model.half()` converts a module's parameters and their `.grad` in place, whatever
            # is watched: between backward passes the first pass's gradient is cast with them, the
            # merged pass's not (review, stop 24). On a tensor it gives a new one: harmless where
            # the receiver is proven a tensor (`b = torch.randn(...)`, bound once in the file).
            self._unknown_call(func)
            return
        if harmless_call(node, self.policy.classifier if self.policy else None, self.watched):
            return
        if self.policy is not None and id(node) in self.policy.proven:
            return
        self._unknown_call(func)


# Attributes of a tensor whose store changes what a backward pass computes or where it writes.
_TENSOR_STATE = frozenset({"requires_grad", "data", "grad", "_grad", "_version", "grad_fn"})


def _target_paths(target: cst.CSTNode) -> Iterable[Tuple[str, ...]]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_paths(element.value)
        return
    if isinstance(target, cst.StarredElement):
        yield from _target_paths(target.value)
        return
    if isinstance(target, cst.Subscript):
        # A store into `x[...]` mutates `x` itself.
        path = access_path(target)
        if path is not None:
            yield path
        else:
            # Into what a call or an operation returned (`z.view(-1)[0] = v`): a view, maybe,
            # of anything that expression reads.
            yield from read_paths(target.value)
        return
    if isinstance(target, cst.BaseExpression):
        path = access_path(target)
        if path is not None:
            yield path
        elif isinstance(target, cst.Attribute):
            yield from read_paths(target.value)  # `f(z).data = v`: as above


def reads_gradients(node: cst.CSTNode) -> bool:
    """Whether `node` reads or writes a `.grad` (or `._grad`) slot, in any spelling the scanner sees."""
    verdict = Verdict()
    walk_tree(node, _Scanner((), verdict, stores_only=False, policy=None, gradients_only=True))
    return verdict.barrier is not None


def names_bound_to_gradients(node: cst.CSTNode, classifier) -> bool:
    """Whether `node` reads a name bound (anywhere in its scope, as `classifier` resolves it) to a
    value that reads a `.grad` (`reads_gradients`): `g = y.grad` holds the tensor a backward adds
    into (review, stop 24). A parameter counts where a call of the file may bind it to one
    (`_gradient_parameter`: `step([p.grad for p in ps])`; review, round 3)."""
    return any(_bound_to_gradients(name, classifier) or _gradient_parameter(name, classifier) for name in nodes_within(node, cst.Name))


def _bound_to_gradients(name: cst.Name, classifier) -> bool:
    values = classifier.assigned_values(name)
    if values is None:
        # Not resolved to assignments (`:=`, a `match` capture, a loop or `with` target): every
        # such binding of the name in the file, by name (review, round 6: `if (g := w.grad) is
        # None`, `match w.grad: case g:` read between the passes).
        values = _other_bindings(classifier).get(name.value, [])
    return any(reads_gradients(value) for value in values)


_OTHER_BINDINGS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _other_bindings(classifier) -> Dict[str, List[cst.BaseExpression]]:
    """The values the file (`classifier`'s) binds to names by forms other than an assignment: `(n := value)`,
    `match value: case n:`, `for n in value`, `with value as n` (each name of the target or
    pattern bound to the whole value), once per classifier."""
    found = _OTHER_BINDINGS.get(classifier)
    facts = getattr(classifier, "facts", None)
    if found is None and facts is None:
        return {}
    if found is None:
        module = facts.module
        found = {}
        pairs: List[Tuple[cst.CSTNode, cst.BaseExpression]] = []
        pairs += [(node.target, node.value) for node in nodes_within(module, cst.NamedExpr)]
        pairs += [(case.pattern, node.subject) for node in nodes_within(module, cst.Match) for case in node.cases]
        pairs += [(node.target, node.iter) for node in nodes_within(module, (cst.For, cst.CompFor))]
        pairs += [(node.asname, node.item) for node in nodes_within(module, cst.WithItem) if node.asname is not None]
        for target, value in pairs:
            for bound in nodes_within(target, cst.Name):
                found.setdefault(bound.value, []).append(value)
        _OTHER_BINDINGS[classifier] = found
    return found


def _gradient_parameter(name: cst.Name, classifier) -> bool:
    """Whether `name` is a parameter of a function that a call of the file may hand a gradient:
    a call named as the function (`step(...)`, `self.step(...)`), or one that hands it on
    (`partial(step, ...)`), with an argument that reads a `.grad` or a name bound to one. A
    lambda's parameter: any call of the file with such an argument. Callers in other files are not
    seen."""
    scope = classifier.meta(ScopeProvider, name, None)
    if scope is None or not any(isinstance(a.node, cst.Param) for a in scope.assignments[name.value]):
        return False
    function = getattr(scope, "node", None)
    callees = _gradient_callees(classifier)
    if isinstance(function, cst.FunctionDef):
        return function.name.value in callees
    return bool(callees)


_GRADIENT_CALLEES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _gradient_callees(classifier) -> frozenset:
    """The names called with, or handed on together with, an argument that reads a gradient
    (`_gradient_parameter`), once per classifier."""
    found = _GRADIENT_CALLEES.get(classifier)
    if found is None:
        names = set()
        facts = getattr(classifier, "facts", None)
        for call in nodes_within(facts.module, cst.Call) if facts is not None else ():
            arguments = [arg.value for arg in call.args]
            if any(reads_gradients(a) or any(_bound_to_gradients(n, classifier) for n in nodes_within(a, cst.Name)) for a in arguments):
                names.add(last_name(call.func))
                names.update(n.value for a in arguments for n in nodes_within(a, cst.Name))
        found = _GRADIENT_CALLEES[classifier] = frozenset(names)
    return found


# Attributes of a tensor that are the tensor or a view of it (`p.grad.data`, `p.grad.T`).
_SAME_STORAGE_ATTRIBUTES = frozenset({"data", "T", "mT", "H", "mH", "real", "imag"})
# Calls that keep none of their arguments: builtins giving a new value, `torch` functions
# computing a new tensor, tensor methods reading their arguments (`x.add(p.grad)`; not `add`,
# which on a set keeps its argument), in-place arithmetic copying values in.
_KEEPS_NO_ARGUMENT = FRESH_FUNCTIONS | VALUE_FUNCTIONS
_NO_ARGUMENT_KEPT_METHODS = (PURE_TENSOR_METHODS - {"add"}) | {"copy_", "add_", "sub_", "mul_", "div_", "lerp_", "addcmul_", "addcdiv_"}


def gradient_stores(module: cst.Module) -> List[cst.CSTNode]:
    """Where the file keeps a `.grad` tensor itself (`holds_gradient`) anywhere but in a plain local
    name: into a subscript or an attribute (`G["w"] = w.grad`, `box.g = w.grad`), a name declared
    `global`/`nonlocal`, a tuple of targets, a `return`/`yield`, or as an argument of a call not
    known to keep none (`G.update(w=w.grad)`, `keep(w.grad)`). Code between two backward passes
    may read it there and see what the first pass added, which a merge moves (review, round 4);
    `names_bound_to_gradients` sees plain names only. In the file's order; an overestimate."""
    bound: set = set()
    shared = {n.name.value for node in nodes_within(module, (cst.Global, cst.Nonlocal)) for n in node.names}
    bindings = [  # (targets, value) of assignments and loops, the names a value binds
        (tuple(t.target for t in node.targets), node.value) for node in nodes_within(module, cst.Assign)
    ] + [
        ((node.target,), node.value) for node in nodes_within(module, cst.AnnAssign) if node.value is not None
    ]
    loops = [((node.target,), node.iter) for node in nodes_within(module, (cst.For, cst.CompFor))]
    bindings += loops
    # `(g := w.grad)`, `match w.grad: case g:` bind a name too (review, round 6): followed as
    # names, stored where a call keeps them (`G.append(g)`).
    bindings += [((node.target,), node.value) for node in nodes_within(module, cst.NamedExpr)]
    bindings += [
        (tuple(nodes_within(case.pattern, cst.Name)), node.subject) for node in nodes_within(module, cst.Match) for case in node.cases
    ]
    # `G += [w.grad]` adds in place to what `G` holds, a list or a tensor another name may hold
    # (review, round 5): never a plain binding.
    augmented = [((node.target,), node.value) for node in nodes_within(module, cst.AugAssign)]
    bindings += augmented
    iterated = {id(value) for _, value in loops + augmented}
    changed = True
    while changed:  # names bound to a gradient, by name, to a fixed point
        changed = False
        for targets, value in bindings:
            if holds_gradient(value, bound):
                for name in (n.value for t in targets for n in nodes_within(t, cst.Name)):
                    if name not in bound:
                        bound.add(name)
                        changed = True
    found: List[cst.CSTNode] = []
    for targets, value in bindings:
        # Only `g = w.grad` into a local name is `names_bound_to_gradients`' to follow; a loop's
        # or an unpacking's targets are kept here too (a loop target is not proven followed).
        plain = all(isinstance(t, cst.Name) and t.value not in shared for t in targets) and id(value) not in iterated
        if not plain and holds_gradient(value, bound):
            found.append(value)
    for node in nodes_within(module, (cst.Return, cst.Yield)):
        if node.value is not None and holds_gradient(node.value, bound):
            found.append(node)
    for call in nodes_within(module, cst.Call):
        func = call.func
        kept = not (
            last_name(func) in _KEEPS_NO_ARGUMENT and isinstance(func, cst.Name)
            or code_of(func).strip().replace("F.", "torch.nn.functional.") in PURE_FUNCTIONS
            or isinstance(func, cst.Attribute) and func.attr.value in _NO_ARGUMENT_KEPT_METHODS
        )
        if kept and any(holds_gradient(arg.value, bound) for arg in call.args):
            found.append(call)
    return found


# Receivers of a torch function called by its module (`torch.narrow(t, ...)`): the tensor is an argument.
_FUNCTION_NAMESPACES = frozenset({"torch", "Tensor", "functional", "F", "linalg", "fft", "special"})


def _names_grad(call: cst.Call) -> bool:
    """`getattr(x, "grad")`, `attrgetter("grad")`, `x.__getattribute__("grad")`, `methodcaller("grad")`."""
    name = last_name(call.func)
    if name not in ("getattr", "attrgetter", "methodcaller", "__getattribute__"):
        return False
    return any(isinstance(a.value, cst.SimpleString) and a.value.evaluated_value in ("grad", "_grad") for a in call.args)


def holds_gradient(expr: cst.BaseExpression, bound: AbstractSet[str] = frozenset()) -> bool:
    """Whether `expr`'s value may be a `.grad` tensor, a view of one or a container holding one:
    `w.grad`, `w.grad.data`, `w.grad.detach()`, `w.grad[0]`, `[p.grad for p in ps]`, a name in
    `bound`. A value computed from one (`p.grad.norm()`, `p.grad.clone()`, `p.grad * 2`) is a new
    tensor: no."""
    if isinstance(expr, cst.Attribute):
        if expr.attr.value in ("grad", "_grad"):
            return last_name(expr.value) not in ("autograd", "func")  # not `torch.autograd.grad`
        return expr.attr.value in _SAME_STORAGE_ATTRIBUTES and holds_gradient(expr.value, bound)
    if isinstance(expr, cst.Name):
        return expr.value in bound
    if isinstance(expr, cst.Subscript):
        return holds_gradient(expr.value, bound)
    if isinstance(expr, cst.Call):
        func = expr.func
        if _names_grad(expr) or (isinstance(func, cst.Call) and _names_grad(func)):
            # `getattr(w, "grad")`, `operator.attrgetter("grad")(w)`: `.grad` by its name as a string
            # (review, round 5).
            return True
        if isinstance(func, cst.Attribute):
            if func.attr.value in FRESH_METHODS:
                return False
            # A method that may return its receiver or a view of it (`to`, `detach`, `view`), or
            # one of its arguments (`d.get(k, p.grad)`); a torch function's view of an argument
            # (`torch.narrow(w.grad, 0, 0, 2)`, `torch.Tensor.view(w.grad, -1)`; review, round 5).
            function_form = last_name(func.value) in _FUNCTION_NAMESPACES
            return holds_gradient(func.value, bound) or (
                (function_form or func.attr.value not in PURE_TENSOR_METHODS) and any(holds_gradient(a.value, bound) for a in expr.args)
            )
        if isinstance(func, cst.Name) and func.value in FRESH_FUNCTIONS:
            return False
        return any(holds_gradient(a.value, bound) for a in expr.args)
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return any(holds_gradient(e.value, bound) for e in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(holds_gradient(e.value, bound) for e in expr.elements if isinstance(e, cst.DictElement)) or any(
            isinstance(e, cst.StarredDictElement) and holds_gradient(e.value, bound) for e in expr.elements
        )
    if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return holds_gradient(expr.elt, bound)
    if isinstance(expr, cst.DictComp):
        return holds_gradient(expr.value, bound)
    if isinstance(expr, cst.IfExp):
        return holds_gradient(expr.body, bound) or holds_gradient(expr.orelse, bound)
    if isinstance(expr, cst.BooleanOperation):
        return holds_gradient(expr.left, bound) or holds_gradient(expr.right, bound)
    if isinstance(expr, cst.NamedExpr):
        return holds_gradient(expr.value, bound)
    if isinstance(expr, cst.BinaryOperation):
        # `[w.grad] * 2`, `[w.grad] + G`: a sequence's repetition or concatenation holds its items
        # (review, round 6); arithmetic on a tensor (`w.grad * 2`) is a new tensor.
        return any(
            isinstance(side, (cst.Tuple, cst.List, cst.ListComp, cst.Name, cst.BinaryOperation)) and holds_gradient(side, bound)
            for side in (expr.left, expr.right)
        )
    return False


def scan_between(
    statements: Iterable[cst.BaseStatement],
    watched: Sequence[Tuple[str, ...]],
    policy: Optional[HarmlessCalls] = None,
    rebindable: AbstractSet[str] = frozenset(),
) -> Verdict:
    """`policy` (the file's `HarmlessCalls`) vouches for what the built-in lists do not know: proven-pure
    callees, known context managers and decorators; without it, those are unknown. `rebindable`:
    watched names whose rebinding (`name = ...`, not a store into it) changes no watched object
    (the other names `with_aliases` found: binding one anew leaves the object it held as it was)."""
    verdict = Verdict()
    scanner = _Scanner(watched, verdict, policy=policy)
    scanner.rebindable = rebindable
    for statement in statements:
        walk_tree(statement, scanner)
        if verdict.barrier is not None:
            break
    return verdict


def with_aliases(watched: Sequence[Tuple[str, ...]], scope: cst.CSTNode, classifier=None) -> List[Tuple[str, ...]]:
    """`watched` plus the paths in `scope` (a function or module) that may refer to what a watched path
    holds, share its storage, or hold it inside: `cache = feats`, `z = feats["x"]`, `yv = y.view(-1)`,
    `a, b = x.chunk(2)`, `for t in xs:`, `d = {"src": fs}`, `self.last = fs`, `box.append(fs)`,
    `lst += [fs]`, `with ctx(fs) as h:`. A store through one (`yv[:] = 0`, `d["tgt"][m] = 0`,
    `self.last[...] = 0`) changes the operand as a store into it would.

    Allowlist thinking: a value may alias unless proven fresh (`_may_alias`), and a method call
    that is not a known non-storing one may keep its arguments in its receiver. Followed to a
    fixed point (an alias of an alias); nested functions are not looked into (their calls are).
    With the file's `classifier` (`callees.CalleeClassifier`), a call of a function defined once in
    the file whose every `return` is proven fresh from its parameters (`def kl(p, q): return
    (...).mean()`) does not alias its arguments; without it, any call of a function of the file may.
    """
    return _aliases(watched, scope, _FreshFunctions(classifier) if classifier is not None else None)


def _aliases(watched, scope: cst.CSTNode, fresh: Optional["_FreshFunctions"]) -> List[Tuple[str, ...]]:
    paths: List[Tuple[str, ...]] = list(watched)
    # (paths a binding makes refer to its values, the values)
    bindings: List[Tuple[List[Tuple[str, ...]], List[cst.BaseExpression]]] = []
    # The bindings a method call makes (`box.append(fs)`: the receiver may keep its arguments), by id.
    kept_by_receiver: set = set()

    numeric = _numeric_names(scope)
    # Names that hold a number or a tensor, never a list (`a * 2` then repeats no items).
    tensors = numeric | ((fresh.tensors - _bound_names(scope)) if fresh is not None else set())

    class Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                bindings.append((_alias_targets(target.target), [node.value]))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if node.value is not None:
                bindings.append((_alias_targets(node.target), [node.value]))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name) and node.target.value in numeric:
                return  # `s += v` on a number or a tensor makes a new value or adds into `s`: no alias
            bindings.append((_alias_targets(node.target), [node.value]))  # `lst += [fs]`

        def visit_For(self, node: cst.For) -> None:
            bindings.append((_alias_targets(node.target), [node.iter]))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            bindings.append((_alias_targets(node.target), [node.value]))

        def visit_WithItem(self, node: cst.WithItem) -> None:
            if node.asname is not None:
                bindings.append((_alias_targets(node.asname.name), [node.item]))

        def visit_Match(self, node: cst.Match) -> None:
            # `case [_, m, _]:`, `case {"k": m, **rest}:`, `case Box(x=m):`: a name a pattern binds
            # may be (a part of) the subject.
            bound: List[Tuple[str, ...]] = []

            class Captures(cst.CSTVisitor):
                def visit_MatchAs(self, pattern: cst.MatchAs) -> None:
                    if pattern.name is not None:
                        bound.append((pattern.name.value,))

                def visit_MatchStar(self, pattern: cst.MatchStar) -> None:
                    if pattern.name is not None:
                        bound.append((pattern.name.value,))

                def visit_MatchMapping(self, pattern: cst.MatchMapping) -> None:
                    if pattern.rest is not None:
                        bound.append((pattern.rest.value,))

            for case in node.cases:
                walk_tree(case.pattern, Captures())
            if bound:
                bindings.append((bound, [node.subject]))

        def visit_Call(self, node: cst.Call) -> None:
            # `box.append(fs)`, `d.update(src=fs)`, `obj.register(fs)`: the receiver may keep them.
            func = node.func
            if isinstance(func, cst.Attribute) and (
                not _keeps_no_arguments(func.attr.value) or (fresh is not None and fresh.binds_attribute(func.attr.value))
            ):
                receiver = access_path(func.value)
                if receiver is not None:
                    bindings.append(([receiver], [arg.value for arg in node.args]))
                    kept_by_receiver.add(len(bindings) - 1)
            elif isinstance(func, cst.Name) and fresh is not None and node.args:
                # `keep(P[1])` where `def keep(v): Z.append(v)`: a function of the file may keep its
                # arguments in a global it reads.
                held = [(name,) for name in fresh.globals_read(func.value)]
                if held:
                    bindings.append((held, [arg.value for arg in node.args]))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is scope

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    walk_tree(scope, Collect())
    changed = True
    while changed:
        changed = False
        for position, (targets, values) in enumerate(bindings):
            if any(_may_alias(value, paths, fresh) for value in values):
                for target in targets:
                    if target not in paths:
                        paths.append(target)
                        changed = True
            # The other way: what a watched path was bound to may share its storage with what the
            # value read (`prior = [P[i] for i in ...]`, `p = P[1]`): a store into `P` changes it.
            # (A module's function keeps no argument in the module: `torch.stack(xs)`.)
            if any(paths_overlap(target, path) for target in targets for path in paths):
                if position in kept_by_receiver and fresh is not None and all(target[0] in fresh.imported for target in targets):
                    continue
                for value in values:
                    for source in _view_sources(value, fresh, tensors):
                        if not any(source[: len(path)] == path for path in paths):  # not watched yet
                            paths.append(source)
                            changed = True
    return paths


def _numeric_names(scope: cst.CSTNode, factories: AbstractSet[str] = FRESH_TENSOR_FACTORIES) -> set:
    """Names of `scope` that only ever hold a number or a tensor: bound (outside augmented
    assignments) only by `name = <number>` or `name = torch.zeros(...)`-like factories, by no other
    binding form, and declared `global`/`nonlocal` nowhere in it. `s += v` on such a name never
    makes `s` refer to `v` or its items (it would on a list: `lst += [fs]`)."""
    plain: Dict[str, List[cst.BaseExpression]] = {}
    other: set = set()

    class Collect(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    plain.setdefault(target.target.value, []).append(node.value)
                else:
                    other.update(_name_values(target.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if isinstance(node.target, cst.Name) and node.value is not None:
                plain.setdefault(node.target.value, []).append(node.value)
            else:
                other.update(_name_values(node.target))

        def visit_For(self, node: cst.For) -> None:
            other.update(_name_values(node.target))

        def visit_CompFor(self, node: cst.CompFor) -> None:
            other.update(_name_values(node.target))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            other.update(_name_values(node.target))

        def visit_AsName(self, node: cst.AsName) -> None:
            other.update(_name_values(node.name))

        def visit_Global(self, node: cst.Global) -> None:
            other.update(n.name.value for n in node.names)

        def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
            other.update(n.name.value for n in node.names)

        def visit_Param(self, node: cst.Param) -> None:
            other.add(node.name.value)

        def visit_MatchAs(self, node: cst.MatchAs) -> None:
            if node.name is not None:
                other.add(node.name.value)

        def visit_MatchStar(self, node: cst.MatchStar) -> None:
            if node.name is not None:
                other.add(node.name.value)

        def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
            if node.rest is not None:
                other.add(node.rest.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            # `n += v`, `n -= v`, `n /= v`... on a number or a tensor give a number or a tensor (or
            # raise); `n *= v` gives a list where `n` is an int and `v` a list (`1 * [x]`): only by
            # a number or such a name; any other operator makes no promise.
            if isinstance(node.target, cst.Name):
                if isinstance(node.operator, cst.MultiplyAssign):
                    scaled.append((node.target.value, node.value))
                elif not isinstance(node.operator, _NUMERIC_AUGMENTED):
                    other.add(node.target.value)
            else:
                other.update(_name_values(node.target))

    scaled: List[Tuple[str, cst.BaseExpression]] = []
    walk_tree(scope, Collect())
    # To a fixed point: `s = s / len(xs)` keeps `s` a number or tensor if `s` is one.
    names = {name for name in plain if name not in other}
    changed = True
    while changed:
        kept = {
            name
            for name in names
            if all(_numeric(v, names, factories) for v in plain[name])
            and all(_numeric(v, names, factories) for n, v in scaled if n == name)
        }
        changed = kept != names
        names = kept
    return names


@functools.lru_cache(maxsize=8)
def _module_names(module: cst.Module) -> Tuple[frozenset, frozenset]:
    """(names bound by top-level imports, module-level names that hold only numbers or factory
    tensors), once per parsed file (libcst nodes hash by identity; a rule asks once per pair)."""
    imported = frozenset(name for statement in module.body for name in imported_names(statement))
    return imported, frozenset(_numeric_names(module, factories=_ANY_FACTORY))


def _name_values(node: cst.CSTNode) -> List[str]:
    """The text of every `Name` under `node` (a binding target: `a, (b, c)`, `x[i]`)."""
    return [name.value for name in _all_names(node)]


def _all_names(node: cst.CSTNode, attributes: bool = True) -> List[cst.Name]:
    """Every `Name` node under `node`; without `attributes`, not the names of attributes (`x.mean`)."""
    found: List[cst.Name] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

        def visit_Attribute(self, attribute: cst.Attribute) -> Optional[bool]:
            if attributes:
                return True
            walk_tree(attribute.value, self)
            return False

    walk_tree(node, Names())
    return found


def _bound_names(scope: cst.CSTNode) -> set:
    """Every name bound in `scope` by any form (its own: a function's locals, or module globals)."""
    return set(binding_counts(scope))


def _numeric(value: cst.BaseExpression, names: set, factories: AbstractSet[str] = FRESH_TENSOR_FACTORIES) -> bool:
    """A number or a tensor, never a container: `0.0`, `-1`, `torch.zeros(())`, a name of `names`,
    or arithmetic whose left operand is one of those (a float, a name or a factory: `2 * [x]` is a
    list) and whose right operand is one too or `len(...)`."""
    value = strip_parens(value)
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Name):
        return value.value in names
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, (cst.Minus, cst.Plus)):
        return _numeric(value.expression, names, factories)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, _ARITHMETIC):
        left, right = strip_parens(value.left), strip_parens(value.right)
        if isinstance(left, cst.Integer) or not _numeric(left, names, factories):
            return False
        return _numeric(right, names, factories) or (isinstance(right, cst.Call) and isinstance(right.func, cst.Name) and right.func.value == "len")
    return isinstance(value, cst.Call) and code_of(value.func).strip() in factories


# Every torch factory, random ones included: what only makes a tensor (not what is harmless to call).
_ANY_FACTORY = frozenset(f"torch.{n}" for n in GRAPH_FREE_FACTORIES if n not in ("manual_seed", "device", "Generator", "from_numpy", "as_tensor"))

_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power, cst.Modulo)
# Augmented operators that keep a number a number and a tensor a tensor whatever the value (or raise).
_NUMERIC_AUGMENTED = (cst.AddAssign, cst.SubtractAssign, cst.DivideAssign, cst.FloorDivideAssign, cst.PowerAssign, cst.ModuloAssign)


def _alias_targets(target: cst.CSTNode) -> List[Tuple[str, ...]]:
    """The paths a binding target makes refer to the bound value: names, attributes, subscripts."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [p for element in target.elements for p in _alias_targets(element.value)]
    if isinstance(target, cst.StarredElement):
        return _alias_targets(target.value)
    if isinstance(target, cst.BaseExpression):
        path = access_path(target)
        return [path] if path is not None else []
    return []


def _keeps_no_arguments(method: str) -> bool:
    """Methods known not to store their arguments in their receiver (value reads, logging,
    tensor ops returning new tensors); any other method may (`append`, `update`, user methods)."""
    return method in HARMLESS_METHODS or method in VALUE_METHODS


def _may_alias(value: cst.BaseExpression, paths: Sequence[Tuple[str, ...]], fresh: Optional["_FreshFunctions"] = None) -> bool:
    """Whether `value` may be (a part of, a view of) what a path in `paths` refers to, or hold it."""
    value = strip_parens(value)
    if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
        return any(_may_alias(e.value, paths, fresh) for e in value.elements)
    if isinstance(value, cst.Dict):
        return any(_may_alias(e.value, paths, fresh) for e in value.elements)
    if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return _may_alias(value.elt, paths, fresh) or _reads_any(value.for_in, paths)
    if isinstance(value, cst.DictComp):
        return _may_alias(value.value, paths, fresh) or _reads_any(value.for_in, paths)
    if isinstance(value, cst.StarredElement):
        return _may_alias(value.value, paths, fresh)
    if isinstance(value, cst.IfExp):
        return _may_alias(value.body, paths, fresh) or _may_alias(value.orelse, paths, fresh)
    if isinstance(value, cst.NamedExpr):
        return _may_alias(value.value, paths, fresh)
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
        path = access_path(value)
        return path is not None and any(paths_overlap(path, p) for p in paths)
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.BooleanOperation)):
        # Tensor arithmetic gives a new tensor; list and tuple arithmetic (`xs + []`, `[fs] * 2`)
        # a new container of the same tensors: an operand that holds a watched path as an item
        # (`xs` for `xs[-1]`) or a container literal keeps the alias.
        # `a or b` is one of its operands.
        parts = (
            [value.left, value.right] if isinstance(value, (cst.BinaryOperation, cst.BooleanOperation)) else [value.expression]
        )
        for part in parts:
            part = strip_parens(part)
            if isinstance(value, cst.BooleanOperation) and _may_alias(part, paths, fresh):
                return True
            if isinstance(part, (cst.Tuple, cst.List, cst.Set, cst.Dict, cst.ListComp)) and _may_alias(part, paths, fresh):
                return True
            path = access_path(part)
            if path is not None and any(len(path) < len(p) and p[: len(path)] == path and p[len(path)] == "[]" for p in paths):
                return True
            if not isinstance(part, (cst.Name, cst.Attribute, cst.Subscript)) and _may_alias(part, paths, fresh):
                return True
        return False
    if isinstance(value, cst.Call):
        func = value.func
        if is_inplace_call(value):
            return True  # `F.relu(x, inplace=True)` returns `x`
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            module = code_of(func.value).strip()
            if module in ("torch", "F", "torch.nn.functional", "nn.functional"):
                if name in VIEW_METHODS or name not in FRESH_METHODS | {"cat", "stack", "mse_loss", "l1_loss"}:
                    return any(_may_alias(arg.value, paths, fresh) for arg in value.args)
                return False
            if name in FRESH_METHODS:
                return False  # `y * 2`-like tensor method: a new tensor (`y.sum()`, `y.clone()`)
            # A view of the receiver, or of an argument where the method is called through its class
            # or a module under another name (`torch.Tensor.view(p, -1)`, `T.flatten(p)`); anything
            # else may return its receiver or an argument (`d.get("k")`, `make(fs)`).
            return _may_alias(func.value, paths, fresh) or any(_may_alias(arg.value, paths, fresh) for arg in value.args)
        if isinstance(func, cst.Name) and func.value in FRESH_FUNCTIONS:
            return False
        if isinstance(func, cst.Name) and fresh is not None and fresh.returns_fresh(func.value):
            return False
        # A callable computed on the spot (`getattr(p, "view")(-1)`) may be a bound method of a watched value.
        bound = not isinstance(func, (cst.Name, cst.Attribute)) and _may_alias(func, paths, fresh)
        # A function of the file may return (a view of) a global it reads (`return cache["P"][1]`).
        globals_read = fresh.globals_read(func.value) if isinstance(func, cst.Name) and fresh is not None else ()
        if any(paths_overlap((name,), path) for name in globals_read for path in paths):
            return True
        return bound or any(_may_alias(arg.value, paths, fresh) for arg in value.args)
    return False  # literals, lambdas, f-strings: no tensor inside


def view_sources(value: cst.BaseExpression) -> List[Tuple[str, ...]]:
    """The paths `value` may share storage with or hold; empty: a new object (`_view_sources`,
    without the file's fresh functions)."""
    return _view_sources(value)


def _view_sources(value: cst.BaseExpression, fresh: Optional["_FreshFunctions"] = None, tensors: AbstractSet[str] = frozenset()) -> List[Tuple[str, ...]]:
    """The paths `value` may share storage with or hold (`_may_alias` read the other way): what a
    binding's target refers to, besides a new tensor. A comprehension's own names are its own."""
    value = strip_parens(value)
    if isinstance(value, (cst.Tuple, cst.List, cst.Set)):
        return [p for e in value.elements for p in _view_sources(e.value, fresh, tensors)]
    if isinstance(value, cst.Dict):
        return [p for e in value.elements for p in _view_sources(e.value, fresh, tensors)]
    if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
        own = set()
        iters: List[Tuple[str, ...]] = []
        clause: Optional[cst.CompFor] = value.for_in
        while clause is not None:
            own.update(_name_values(clause.target))
            iters += _view_sources(clause.iter, fresh, tensors)  # its items may be the elements
            clause = clause.inner_for_in
        element = value.value if isinstance(value, cst.DictComp) else value.elt
        return iters + [p for p in _view_sources(element, fresh, tensors) if p[0] not in own]
    if isinstance(value, (cst.StarredElement, cst.NamedExpr)):
        return _view_sources(value.value, fresh, tensors)
    if isinstance(value, cst.IfExp):
        return _view_sources(value.body, fresh, tensors) + _view_sources(value.orelse, fresh, tensors)
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
        path = access_path(value)
        if path is not None:
            return [path]
        # Taken from what a call returned (`codebook.view(6, 4)[:5]`, `codebook.t().T`): a view,
        # maybe, of what that call's value shares.
        return _view_sources(value.value, fresh, tensors) if not isinstance(value, cst.Name) else []
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.BooleanOperation)):
        # `a or b` is one of its operands; list arithmetic (`xs + ys`, `[fs] * 2`) holds the same
        # items; tensor arithmetic gives a new tensor (its plain operands are kept anyway: they may
        # be lists).
        parts = [value.left, value.right] if isinstance(value, (cst.BinaryOperation, cst.BooleanOperation)) else [value.expression]
        found: List[Tuple[str, ...]] = []
        for part in parts:
            part = strip_parens(part)
            if isinstance(value, cst.BooleanOperation) or isinstance(
                part, (cst.Tuple, cst.List, cst.Set, cst.Dict, cst.ListComp, cst.Name, cst.Attribute, cst.Subscript,
                       cst.BinaryOperation, cst.UnaryOperation, cst.BooleanOperation)
            ) and not (isinstance(part, cst.Name) and part.value in tensors and not isinstance(value, cst.BooleanOperation)):
                found += _view_sources(part, fresh, tensors)
        return found
    if isinstance(value, cst.Call):
        func = value.func
        arguments = [p for arg in value.args for p in _view_sources(arg.value, fresh, tensors)]
        if is_inplace_call(value):
            receiver = _view_sources(func.value, fresh, tensors) if isinstance(func, cst.Attribute) else []
            return receiver + arguments
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            module = code_of(func.value).strip()
            if module in ("torch", "F", "torch.nn.functional", "nn.functional"):
                if name in VIEW_METHODS or name not in FRESH_METHODS | {"cat", "stack", "mse_loss", "l1_loss"}:
                    return arguments
                return []
            if name in FRESH_METHODS:
                return []
            return _view_sources(func.value, fresh, tensors) + arguments
        if isinstance(func, cst.Name) and func.value in FRESH_FUNCTIONS:
            return []
        if isinstance(func, cst.Name) and fresh is not None and fresh.returns_fresh(func.value):
            return []
        bound = _view_sources(func, fresh, tensors) if not isinstance(func, (cst.Name, cst.Attribute)) else []
        globals_read = [(name,) for name in fresh.globals_read(func.value)] if isinstance(func, cst.Name) and fresh is not None else []
        return bound + arguments + globals_read
    return []


def fresh_calls(classifier) -> "Callable[[cst.Call], bool]":
    """Whether a call by name of a function of the file returns a new object (`_FreshFunctions`)."""
    fresh = _FreshFunctions(classifier)
    return lambda call: isinstance(call.func, cst.Name) and fresh.returns_fresh(call.func.value)


class _FreshFunctions:
    """Functions of the file whose result never aliases their arguments (memoised per name)."""

    def __init__(self, classifier) -> None:
        self.classifier = classifier
        module = classifier.facts.module
        counts = classifier.facts.binding_counts
        self.defs = {
            statement.name.value: statement
            for statement in module.body
            if isinstance(statement, cst.FunctionDef) and counts.get(statement.name.value) == 1
        }
        self.known: dict = {}
        # Names the file binds by `import` (modules: `torch.stack(xs)` keeps nothing in `torch`), and
        # module-level names that only ever hold a number or a tensor of a torch factory.
        self.imported, self.tensors = _module_names(module)

    def binds_attribute(self, name: str) -> bool:
        """Whether the file may bind an attribute `name` (a method of its classes, `x.name = f`,
        `setattr`, a function of the file handed to code outside it): `obj.name(...)` may then run
        its code, whatever `name` means elsewhere (the classifier's answer, one for the file)."""
        return self.classifier.may_bind_attribute(name)

    def globals_read(self, name: str) -> Tuple[str, ...]:
        """The names a function of the file (defined once at module level) reads that it does not bind
        itself: the globals (and builtins) whose values it may return. Empty for other names."""
        function = self.defs.get(name)
        if function is None:
            return ()
        local = set(binding_counts(function))
        read = {n.value for n in _all_names(function.body, attributes=False)}
        return tuple(sorted(read - local - self.imported))

    def returns_fresh(self, name: str) -> bool:
        if name in self.known:
            return self.known[name]
        function = self.defs.get(name)
        self.known[name] = False  # while it is being proven (recursion): not fresh
        if function is None or function.decorators or function.asynchronous is not None:
            return False
        params = function.params
        names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
        names += [p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        # Its parameters, and whatever else it reads (a global `cache`, a closure variable): a result
        # that may alias any of them is not fresh (`return cache["P"][1]` is a view of a global).
        read = sorted({node.value for node in _all_names(function)} - set(names))
        aliases = _aliases([(n,) for n in names + read], function, self)
        results: List[Optional[cst.BaseExpression]] = []

        class Returns(cst.CSTVisitor):
            def visit_Return(self, node: cst.Return) -> None:
                results.append(node.value)

            def visit_Yield(self, node: cst.Yield) -> None:
                results.append(cst.Name("__generator__"))  # a generator: not proven

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is function

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

        walk_tree(function, Returns())
        ok = all(
            value is None or (not _may_alias(value, aliases, self) and not (isinstance(value, cst.Name) and value.value == "__generator__"))
            for value in results
        )
        self.known[name] = ok
        return ok


def _reads_any(node: cst.CSTNode, paths: Sequence[Tuple[str, ...]]) -> bool:
    return any(paths_overlap(read, p) for read in read_paths(node) for p in paths)


def stores_into(statement: cst.BaseStatement, watched: Sequence[Tuple[str, ...]]) -> Optional[str]:
    """Why `statement` (nested statements included) rebinds or mutates a watched path, or None."""
    verdict = Verdict()
    walk_tree(statement, _Scanner(watched, verdict, stores_only=True))
    return verdict.barrier
