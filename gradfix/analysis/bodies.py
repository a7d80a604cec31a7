"""What a lambda's or function's body may do to be proven pure (docs/design.md §1, E1 and E2).

`CalleeClassifier._judge` (callees.py) walks a callee's body with `BodyChecker`
and each default argument value with `DefaultChecker`; the first impurity found
is the verdict (random wins over unknown). What is allowed is an allowlist:
the parameters and locals, numbers, `torch`/`math` names, the pure functions
and tensor methods of `vocabulary.py`, the builtins of `CALLEE_BUILTINS`,
proven-pure functions of the file and, in a method, proven members of
`self`; `d -= v` only on a name every binding of which is a fresh value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Set

import libcst as cst

from gradfix.analysis.bindings_index import class_members, mentions, target_names
from gradfix.analysis.callee_kinds import PURE, RANDOM, UNKNOWN, Callee
from gradfix.analysis.exprs import code_of, inplace_keyword, may_write, strip_parens
from gradfix.analysis.vocabulary import AUTOGRAD_STATE_ATTRIBUTES, CALLEE_BUILTINS, PURE_FUNCTIONS, PURE_TENSOR_METHODS, RANDOM_FUNCTIONS, has_inplace_suffix
from gradfix.analysis.walk import walk_tree

if TYPE_CHECKING:
    from gradfix.analysis.callees import CalleeClassifier


# Builtins that read an argument's type: a detached Parameter is a plain tensor (`isinstance(b, nn.Parameter)`).
_TYPE_TESTS = frozenset({"isinstance", "issubclass", "type"})


class BodyChecker(cst.CSTVisitor):
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
        if self.self_name is not None and self.self_name in target_names(target):  # type: ignore[arg-type]
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
            shown = "" if binding is node else f": `{code_of(binding).strip()}` ({self.c.where(binding)}) may make it another name for an argument"
            self._fail(
                UNKNOWN,
                f"modifies `{target.value}` in place ({self.c.where(node)}){shown or ', which gradfix cannot prove a fresh value'}",
            )

    def visit_For(self, node: cst.For) -> None:
        self._rebinds_self(node.target)
        if isinstance(node.target, cst.Name):
            self.locals.add(node.target.value)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._rebinds_self(node.target)
        self.locals.update(target_names(node.target))

    def _comprehension(self, node: cst.CSTNode) -> None:
        # The element is visited before its `for` clauses: bind their targets first.
        clause = getattr(node, "for_in", None)
        while clause is not None:
            self.locals.update(target_names(clause.target))
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
        walk_tree(node.value, self)  # the keyword is a parameter name, not a read
        return False

    def visit_Param(self, node: cst.Param) -> Optional[bool]:
        if node.default is not None:
            walk_tree(node.default, self)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        # The attribute name is not a read; only what it is taken from is.
        # (`torch.nn.functional.x` ends in the Name `torch`, checked by import.)
        if node.attr.value in ("grad", "_grad"):
            # A gradient slot, which each backward pass adds into: a helper reading it between two
            # passes reads what a merge moves (`def grad_norm(t): return t.grad.norm()`, like
            # `W.grad` written inline; review, round 3).
            self._fail(UNKNOWN, f"reads `{code_of(node).strip()}`, a gradient that a backward pass changes")
            return False
        if self._is_self(node.value):
            if not self.inline:
                self._self_read(node)
            return False
        self._random_value(node)
        if node.attr.value in AUTOGRAD_STATE_ATTRIBUTES or node.attr.value == "__class__":
            self._reads_state(node)
        walk_tree(node.value, self)
        return False

    def _reads_state(self, node: cst.CSTNode, text: str = "") -> None:
        """`node` reads what a detached argument and the rewrite's `grad_scale(...)` do not share: its
        autograd state (`b.requires_grad`), its type (`isinstance(b, nn.Parameter)`, `b.__class__`,
        a `match` class pattern: `.detach()` turns a Parameter into a plain tensor) or its text
        (`f"{b!r}"`, `"%r" % (b,)`: `grad_fn=` and `Parameter containing:` appear in it)."""
        self._fail(
            UNKNOWN,
            f"reads `{text or code_of(node).strip()}` ({self.c.where(node)}), which differs between a detached argument "
            f"and the `grad_scale(...)` the rewrite passes instead",
        )

    def visit_MatchClass(self, node: cst.MatchClass) -> None:
        self._reads_state(node, f"case {code_of(node).strip()}")

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        self._reads_state(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        # `"%r" % (b,)`: a string formatted with its operands (a number's `%` has no string there).
        if isinstance(node.operator, cst.Modulo) and isinstance(strip_parens(node.left), (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            self._reads_state(node)

    def _random_value(self, node: cst.BaseExpression) -> None:
        """A random torch function taken as a value (`noise=torch.randn_like`, `drop = F.dropout`):
        whatever calls it draws random numbers at each evaluation. (Called where it is named, it is
        judged as a call first: `visit_Call`.)"""
        if self.c.qualified(node) & RANDOM_FUNCTIONS:
            self._fail(UNKNOWN, f"takes `{code_of(node).strip()}`, which draws random numbers, as a value")

    def _is_self(self, node: cst.CSTNode) -> bool:
        # (Rebinding `self` in the body makes the function unknown: `_rebinds_self`.)
        return self.self_name is not None and isinstance(node, cst.Name) and node.value == self.self_name

    def _self_read(self, node: cst.Attribute) -> None:
        """`self.name` read as a value: only a number assigned once on `self` in the class."""
        text = code_of(node).strip()
        cls = self.c.enclosing_class(node)
        values = self.c.self_attribute_values(node) if cls is not None else []
        if cls is not None and len(values) == 1 and is_number(values[0]) and not class_members(cls, node.attr.value):
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
        self._random_value(node)
        if any(q == "torch" or q.startswith("torch.") or q == "math" or q.startswith("math.") for q in qualified):
            return
        values = self.c.assigned_values(node)
        if values and len(values) == 1:
            value = values[0]
            if is_number(value):
                return
            if isinstance(value, (cst.FunctionDef, cst.Lambda)):
                verdict = self.c.function_callee(value, self.inline)
                if verdict.kind != PURE:
                    self._fail(verdict.kind, f"calls `{name}`, which {verdict.reason}")
                return
        if self.c.constants.is_constant(node):
            return  # a module-level tensor no code of the file can make trainable (`constants.py`)
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
            if may_write(node):
                # `F.relu(v, inplace=True)` on an operand: each evaluation writes into it (the
                # second through `v.detach()`, which shares its storage), the one evaluation once.
                how = inplace_keyword(node) or next(code_of(a).strip().rstrip(",") for a in node.args if a.star == "**")
                self._fail(UNKNOWN, f"modifies a tensor in place (`{code_of(func).strip()}(..., {how})`)")
                return True
            for arg in node.args:
                walk_tree(arg, self)
            return False
        if isinstance(func, cst.Attribute) and self._is_self(func.value):
            # `self.kl(...)`: a method of the class, or a module assigned on `self`.
            callee = self.c.classify(func)
            if self.inline and callee.kind != PURE:
                member = self.c.self_member(code_of(func).strip(), func)
                if isinstance(member, cst.FunctionDef):
                    verdict = self.c.function_callee(member, inline=True)
                    callee = Callee(PURE) if verdict.kind == PURE else Callee(verdict.kind, reason=f"`{code_of(func).strip()}`: {verdict.reason}")
            if callee.kind == PURE and callee.unproven:
                self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`: {callee.unproven}")
            elif callee.kind == PURE:
                for arg in node.args:
                    walk_tree(arg, self)
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
            if isinstance(func, cst.Name) and func.value in _TYPE_TESTS:
                self._reads_state(node)
                return False
            if isinstance(func, cst.Name) and func.value in CALLEE_BUILTINS:
                key = next((arg for arg in node.args if arg.keyword is not None and arg.keyword.value == "key"), None)
                if key is not None:
                    # `max(xs, key=f)` calls `f`: a call through a value gradfix does not follow.
                    self._fail(UNKNOWN, f"calls `{code_of(func).strip()}` with `key={code_of(key.value).strip()}`, a function gradfix does not follow")
                    return False
                for arg in node.args:
                    walk_tree(arg, self)
                return False
            self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`")
            return True
        if names:
            self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`, which is not on gradfix's list of deterministic parameter-free functions")
            return True
        if isinstance(func, cst.Name) and (func.value in self.params or func.value in self.locals):
            return self._local_call(node, func)
        if not isinstance(func, (cst.Name, cst.Attribute)):
            # `(F.dropout if c else F.relu)(a)`, `[F.dropout][0](a)`, `make()(a)`: the function
            # called is computed; its parts read as values prove nothing about what runs.
            self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`, a function computed where it is called, which gradfix does not follow")
            return False
        return True  # a call of a name bound outside: `_check_name` resolves it

    def _local_call(self, node: cst.Call, func: cst.Name) -> bool:
        """`f(...)` where `f` is a parameter or a local: pure only when every binding of `f` in the
        body is a function proven pure (`f = F.mse_loss`, a pure lambda). A parameter may be bound
        to any function by the caller or its default (`noise=torch.randn_like`)."""
        name = func.value
        if name in self.params:
            self._fail(UNKNOWN, f"calls its parameter `{name}`, which may be any function (a random one draws anew at each evaluation)")
            return False
        values = self.c.assigned_values(func)
        for value in values or ():
            names = self.c.qualified(value)
            if names & PURE_FUNCTIONS and not names & RANDOM_FUNCTIONS:
                continue
            if isinstance(value, cst.Lambda) and self.c.function_callee(value, self.inline).kind == PURE:
                continue
            shown = f"`{name} = {code_of(value).strip()}`" if isinstance(value, cst.BaseExpression) else f"`{name}`"
            self._fail(UNKNOWN, f"calls `{name}`, bound by {shown} ({self.c.where(value)}) to something gradfix cannot prove parameter-free and deterministic")
            return False
        if not values:
            self._fail(UNKNOWN, f"calls `{name}`, a local name gradfix cannot resolve to one function")
            return False
        for arg in node.args:
            walk_tree(arg, self)
        return False


class DefaultChecker(BodyChecker):
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


def is_number(value: cst.CSTNode) -> bool:
    """A numeric literal, possibly signed: `2`, `0.5`, `-1e-4`."""
    while isinstance(value, cst.UnaryOperation) and isinstance(value.operator, (cst.Minus, cst.Plus)):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.Float))


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
                    elif mentions(target.target, name):
                        found.append(node)  # `d, e = u, v`, `x[d] = ...`: not followed
            elif isinstance(node, cst.AnnAssign):
                if isinstance(node.target, cst.Name) and node.target.value == name and node.value is not None:
                    bound.append(node)
                    if not _fresh_value(node.value):
                        found.append(node)
            elif isinstance(node, (cst.For, cst.CompFor)):
                if mentions(node.target, name):
                    found.append(node.target)
            elif isinstance(node, cst.WithItem):
                if node.asname is not None and mentions(node.asname, name):
                    found.append(node)
            elif isinstance(node, cst.NamedExpr):
                if mentions(node.target, name):
                    found.append(node)
            elif isinstance(node, cst.ExceptHandler):
                if node.name is not None and mentions(node.name, name):
                    found.append(node.name)
            elif isinstance(node, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.Del, cst.MatchAs, cst.MatchStar)):
                if mentions(node, name):
                    found.append(node)
            return True

    walk_tree(owner.body, Find())  # type: ignore[attr-defined]
    if found:
        return found[0]
    return None if bound else owner
