"""The rule template of CONTRIBUTING.md works as documented: copied into `gradfix.rules` under its
own names, registered, it reports with exact positions and its fix rewrites exactly (and its
rewrite runs the same)."""

from __future__ import annotations

from pathlib import Path

import pytest

import gradfix.rules as registry
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from gradfix.rules import RuleContext, visitor

TEMPLATE = Path(__file__).resolve().parents[1] / "docs" / "rule_template"

SOURCE = b"""import torch

w = torch.ones(3, requires_grad=True)


def step():
    loss = (w * 2.0).sum()
    loss.backward(retain_graph=False)
    second = (w * 3.0).sum()
    second.backward(retain_graph=False, create_graph=True)  # retain_graph matters here: kept
"""

FIXED = b"""import torch

w = torch.ones(3, requires_grad=True)


def step():
    loss = (w * 2.0).sum()
    loss.backward()
    second = (w * 3.0).sum()
    second.backward(retain_graph=False, create_graph=True)  # retain_graph matters here: kept
"""


pytestmark = pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")


@pytest.fixture
def template_rule(monkeypatch, tmp_path):
    """The template's two modules installed as a rule, as a contributor would (in a package of
    the test's own, so the installed gradfix is not written to), and registered."""
    import importlib
    import sys

    package = tmp_path / "contrib_rules"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for path in TEMPLATE.glob("*.py"):
        text = path.read_text().replace("gradfix.rules.gf900_", "contrib_rules.gf900_").replace("gradfix.rules._gf900_", "contrib_rules._gf900_")
        (package / path.name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        rule = importlib.import_module("contrib_rules.gf900_explicit_retain_false")
        monkeypatch.setattr(registry, "ALL_RULES", tuple(registry.ALL_RULES) + (rule,))
        yield rule
    finally:
        for name in [m for m in sys.modules if m.startswith("contrib_rules")]:
            del sys.modules[name]


def test_template_rule_reports_and_fixes_exactly(template_rule):
    assert registry.select(["GF900"]) == [template_rule]
    assert issubclass(visitor(template_rule), registry.visitor(registry.by_code("GF001")).__mro__[1])
    result = lint_bytes(SOURCE, "t.py", LintOptions(codes=("GF900",), fix=True))
    assert [(f.code, f.line, f.col, f.fixable) for f in result.findings] == [("GF900", 8, 19, True)]
    assert result.fixed == FIXED
    assert lint_bytes(FIXED, "t.py", LintOptions(codes=("GF900",))).findings == []


def test_template_rule_precheck_skips_files_without_the_pattern(template_rule):
    from gradfix.engine import prefilter

    assert prefilter(SOURCE, [template_rule]) == [template_rule]
    assert prefilter(SOURCE.replace(b"False", b"True"), [template_rule]) == []


def test_template_rewrite_computes_the_same_gradients(template_rule):
    harness = pytest.importorskip("gradfix.harness")
    report = harness.verify_pair(SOURCE.decode(), FIXED.decode(), filename="t.py", device="cpu", repeat=0)
    assert report.error is None and report.rows and all(r.ok for r in report.rows)


def test_rule_context_is_what_the_template_documents():
    # The template's visitor relies on these; a change here must update CONTRIBUTING.md.
    assert {"path", "op_names", "grad_scale_module"} <= set(RuleContext.__dataclass_fields__)
