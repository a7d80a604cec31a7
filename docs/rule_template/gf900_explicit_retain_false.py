"""GF900 explicit-retain-false: `backward(retain_graph=False)` spells out the default.

(This is the template for a new rule: copy this module and `_gf900_explicit_retain_false_impl.py`
into `gradfix/rules/`, rename both to your code and slug, and replace every part. Its sections —
what it does, why, example and rewrite, fix safety — are what `gradfix rule GF900` prints.)

## What it does
Finds a `loss.backward(retain_graph=False)` statement without `create_graph`.

## Why it is costly
It is not: the argument is noise, and readers look for a reason it is there. (A real rule says
here what the pattern costs, measured.)

## Example and rewrite
    loss.backward(retain_graph=False)

becomes

    loss.backward()

## Fix safety
`retain_graph` defaults to the value of `create_graph`, so dropping `retain_graph=False` is exact
only where `create_graph` is not passed: the rule does not report a call with `create_graph`,
nor one with `**kwargs` (it may hold it). Safe otherwise: the call is the same call.
"""

from __future__ import annotations

from gradfix import prechecks

CODE = "GF900"
NAME = "explicit-retain-false"
SUMMARY = "`retain_graph=False` spells out the default"
DEFAULT = False  # a new rule starts opt-in; the default selection is a separate decision
FIXABLE = "always"  # "always", "sometimes" (some fixes unsafe) or "never"
# Every token must occur in a file's text for the rule to possibly match (the cheap first stage).
REQUIRED_TOKENS = (b"retain_graph",)


def might_match(data: bytes, text: bytes, state: dict) -> bool:
    """Precheck, before any libcst parse: False only where the rule provably cannot match.
    Build it from `gradfix.prechecks` (shared regular expressions, one CPython tree per file)."""
    tree = prechecks.tree(data, state)
    if tree is None:
        return True  # does not parse: let the parser report it
    return b"False" in text


# The visitor is named, not imported: it needs libcst, which a run where no file passes the
# prefilter never imports (`gradfix.rules.visitor`).
VISITOR = "gradfix.rules._gf900_explicit_retain_false_impl:Visitor"
