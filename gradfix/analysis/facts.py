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

from functools import cached_property
from typing import Dict, FrozenSet, List, Mapping, Optional, Tuple

import libcst as cst

from gradfix.analysis.backward import Backpropagators, accelerator_receivers
from gradfix.analysis.exprs import binding_counts, code_of, name_references, scope_bindings
from gradfix.analysis.functions import function_reasons
from gradfix.analysis.introspection import bound_attribute_names
from gradfix.analysis.merge import module_constants
from gradfix.analysis.positions import NodeMaps
from gradfix.analysis.statements import class_defs
from gradfix.analysis.vocabulary import GRADIENT_HOOKS, names_forward_hook


class FileFacts:
    def __init__(self, module: cst.Module, nodes: NodeMaps) -> None:
        """`nodes`: the positions, statement spans and parents of the module's nodes
        (`analysis.positions.node_maps`)."""
        self.module = module
        self.nodes = nodes

    def line(self, node: cst.CSTNode, end: bool = False) -> int:
        """The line a node of the file starts (or, with `end`, ends) on."""
        position = self.nodes.positions[node]
        return (position.end if end else position.start).line  # type: ignore[attr-defined]

    @cached_property
    def code(self) -> str:
        """The file's text, as libcst writes the module."""
        return self.module.code

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
        name as a string (`getattr(w, "register_hook")(fn)`; review, stop 24)."""
        return name_references(self.module, GRADIENT_HOOKS.__contains__, strings=True)

    @cached_property
    def forward_hooks(self) -> List[cst.CSTNode]:
        """Every reference to a forward-hook registration in the file, in order (imports skipped;
        `getattr(D, "register_forward_hook")` too)."""
        return name_references(self.module, names_forward_hook, strings=True)

    @cached_property
    def torch_function_overrides(self) -> List[cst.CSTNode]:
        """Every mention of `__torch_function__` / `__torch_dispatch__` (strings too): a class of the
        file may then pass for a tensor in torch's functions without being one."""
        return name_references(self.module, ("__torch_function__", "__torch_dispatch__").__contains__, strings=True)

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
        """The attribute names a class of the file may compute on each read (a def decorated as a
        property, `name = property(...)`), and whether one may compute any (it defines
        `__getattr__`, `__getattribute__` or `__get__`): two reads of `self.S` may then be two
        values (a dropout mask drawn anew)."""
        names = set()
        anything = False
        for node in class_defs(self.module):
            # `class C: S = property(...)`: a one-line body is one line of small statements.
            body = [node.body] if isinstance(node.body, cst.SimpleStatementSuite) else node.body.body
            for statement in body:
                if isinstance(statement, cst.FunctionDef):
                    if statement.name.value in ("__getattr__", "__getattribute__", "__get__"):
                        anything = True
                    texts = [code_of(d.decorator).strip() for d in statement.decorators]
                    if any(t.split("(")[0].endswith(("property", ".getter", ".setter")) for t in texts):
                        names.add(statement.name.value)
                elif isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                    for small in statement.body:
                        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                            if code_of(small.value.func).strip().endswith("property"):
                                names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
        return frozenset(names), anything

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
                func = node.func
                name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
                if name not in ("checkpoint", "checkpoint_sequential"):
                    return
                for arg in node.args:
                    if arg.star == "**" or (
                        arg.keyword is not None and arg.keyword.value == "preserve_rng_state"
                        and not (isinstance(arg.value, cst.Name) and arg.value.value == "True")
                    ):
                        found.append(node)
                        return

        self.module.visit(Find())
        return found

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


def _binds(body: cst.CSTNode, names: frozenset) -> bool:
    """Whether a class body binds one of `names` in its own scope (`exprs.scope_bindings`)."""
    return any(name in names for name in scope_bindings(body))
