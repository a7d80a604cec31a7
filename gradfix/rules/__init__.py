"""The rule registry.

A rule is a module here, `gfNNN_slug.py`, holding everything about it that
is cheap to import: its documentation (the module docstring: what, why,
example, fix safety; `gradfix rule CODE` prints it), its metadata (CODE,
NAME, SUMMARY, DEFAULT: in the default selection, FIXABLE:
"always"/"sometimes"/"never", optionally SUPERSEDED_BY: codes of rules whose
findings replace its own where their fixes touch the same statements), its
prefilter (REQUIRED_TOKENS: byte strings that must all occur in a file for
the rule to possibly match; an entry may instead be a cheap test of the
text, a function of the bytes such as `prechecks.two_stop_gradients`; and optionally `might_match(data, text, state)`,
a precheck built from `gradfix.prechecks` that returns False only where the
rule provably cannot match), and VISITOR, the `"module:Class"` name of its
libcst visitor. The visitor lives in its own module because it needs libcst,
which a run where no file passes the prefilter never imports; `visitor()`
imports it on first use. Adding a rule is those two modules, one line in
ALL_RULES below and fixtures: CONTRIBUTING.md has the template.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import Callable, Iterable, List, Mapping, Optional, Sequence, Tuple

from gradfix.options import DEFAULT_GRAD_SCALE_IMPORT
from gradfix.rules import (
    gf001_detached_double_backward,
    gf002_detached_sum,
    gf003_mergeable_backward,
    gf004_detached_terms_across_losses,
    gf005_needless_retain_graph,
)

ALL_RULES: Sequence[ModuleType] = (
    gf001_detached_double_backward,
    gf002_detached_sum,
    gf003_mergeable_backward,
    gf004_detached_terms_across_losses,
    gf005_needless_retain_graph,
)


@dataclass(frozen=True)
class RuleContext:
    path: str
    # The names the rewritten code calls gradfix's runtime ops by (`grad_scale`,
    # `scaled_params_call`), chosen per file so they never clash with a name
    # the file already uses; and where they come from (a module, or "inline").
    op_names: Mapping[str, str]
    grad_scale_module: str = DEFAULT_GRAD_SCALE_IMPORT
    # What every rule asks about the whole file, computed once (gradfix.analysis.facts.FileFacts).
    facts: object = None
    # The file's scopes (libcst's ScopeProvider mapping), resolved on the first call and then kept.
    scopes: Callable[[], Mapping] = lambda: {}

    @property
    def grad_scale_name(self) -> str:
        return self.op_names["grad_scale"]

    def imports_for(self, *ops: str) -> Tuple[Tuple[str, str, str], ...]:
        """What a fix using these ops must import: (module, op, local name)."""
        return tuple((self.grad_scale_module, op, self.op_names[op]) for op in ops)


def visitor(rule: ModuleType) -> type:
    """The rule's visitor class (a `gradfix.rules._blocks.BlockVisitor`, constructed with a
    `RuleContext`, that collects `findings`), imported from the module its VISITOR names."""
    return _load(rule.VISITOR)


@lru_cache(maxsize=None)
def _load(name: str) -> type:
    import importlib

    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


class SelectionError(ValueError):
    pass


def by_code(code: str) -> Optional[ModuleType]:
    for rule in ALL_RULES:
        if rule.CODE == code.upper():
            return rule
    return None


def select(select: Optional[Iterable[str]] = None, ignore: Iterable[str] = ()) -> List[ModuleType]:
    """Rules chosen by ruff's semantics: exact codes, prefixes (`GF`, `GF0`) and `ALL`.

    With no `select`, the rules marked DEFAULT are chosen.
    """

    def matching(selector: str) -> List[ModuleType]:
        selector = selector.strip().upper()
        if selector == "ALL":
            return list(ALL_RULES)
        found = [r for r in ALL_RULES if r.CODE.startswith(selector)]
        if not found:
            raise SelectionError(f"unknown rule selector `{selector}`")
        return found

    if select is None:
        chosen = [r for r in ALL_RULES if r.DEFAULT]
    else:
        chosen = []
        for selector in select:
            for rule in matching(selector):
                if rule not in chosen:
                    chosen.append(rule)
    ignored = {r.CODE for selector in ignore for r in matching(selector)}
    return [r for r in chosen if r.CODE not in ignored]
