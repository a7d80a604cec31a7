"""`CalleeClassifier.qualified` without libcst's scopes (`gradfix.analysis.imported_names`).

A name bound once in the file, by a top-level import the read follows, is qualified from the
import alone; everything else asks libcst's ScopeProvider as before. The two answers must agree
on every read: `test_same_answer_as_the_scopes` compares them on every dotted read of real files.
"""
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, ScopeProvider

from gradfix.analysis.callees import CalleeClassifier
from gradfix.analysis.facts import FileFacts
from gradfix.analysis.positions import node_maps

ROOT = Path(__file__).resolve().parent.parent


class _NoImports:
    def qualified(self, dotted, line):
        return None


def _classifiers(source: str):
    """(the classifier as the rules build it, one that always asks the scopes), and the module."""
    module = cst.parse_module(source)
    scopes = MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    made = []
    for sole in (None, _NoImports()):
        facts = FileFacts(module, node_maps(module))
        if sole is not None:
            facts.__dict__["sole_imports"] = sole  # (a cached_property: this replaces it)

        def meta(key, node, *default, facts=facts):
            found = {ScopeProvider: scopes, PositionProvider: facts.nodes.positions, ParentNodeProvider: facts.nodes.parents}[key]
            return found.get(node, *default) if default else found[node]

        made.append(CalleeClassifier(meta, facts))
    return made, module


def _reads(module: cst.Module):
    """Every Name and every dotted chain of the module (attribute names and keywords included)."""
    found = []

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node):
            found.append(node)

        def visit_Attribute(self, node):
            found.append(node)

    module.visit(Collect())
    return found


def _qualified(source: str, text: str, occurrence: int = -1):
    (fast, slow), module = _classifiers(source)
    nodes = [n for n in _reads(module) if cst.Module([]).code_for_node(n) == text]
    node = nodes[occurrence]
    return fast.qualified(node), slow.qualified(node), fast.facts.sole_imports.qualified(text, fast.facts.line(node))


@pytest.mark.parametrize(
    "source, text, expected",
    [
        ("import torch\n\ndef f(x):\n    return torch.mean(x)\n", "torch.mean", "torch.mean"),
        ("import torch.nn.functional as F\n\ndef f(x, y):\n    return F.mse_loss(x, y)\n", "F.mse_loss", "torch.nn.functional.mse_loss"),
        ("from torch import nn\n\nm = nn.Linear(2, 2)\n", "nn.Linear", "torch.nn.Linear"),
        ("from torch.nn import functional as G\n\ny = G.relu\n", "G.relu", "torch.nn.functional.relu"),
        ("from . import losses\n\ny = losses.kl\n", "losses.kl", ".losses.kl"),
        ("from ..utils import kl as K\n\ny = K\n", "K", "..utils.kl"),
    ],
)
def test_a_sole_import_qualifies_its_reads(source, text, expected):
    fast, slow, sole = _qualified(source, text)
    assert sole == expected
    assert fast == slow == {expected}


@pytest.mark.parametrize(
    "source, text",
    [
        # Bound again, by any form: the scopes decide.
        ("import torch\n\ndef f(torch):\n    return torch.mean\n", "torch.mean"),
        ("import torch\nfor torch in []:\n    pass\ny = torch.mean\n", "torch.mean"),
        ("import torch\n\ndef f():\n    global torch\n    return torch.mean\n", "torch.mean"),
        ("import torch\ntry:\n    pass\nexcept E as torch:\n    pass\ny = torch.mean\n", "torch.mean"),
        ("import torch\nif (torch := 1):\n    pass\ny = torch.mean\n", "torch.mean"),
        ("import torch\ndel torch\ny = torch.mean\n", "torch.mean"),
        ("import torch\n\nclass A:\n    torch = 1\n    y = torch.mean\n", "torch.mean"),
        ("import torch\nmatch 1:\n    case torch:\n        pass\ny = torch.mean\n", "torch.mean"),
        ("import torch\nimport torch.nn\ny = torch.mean\n", "torch.mean"),
        ("import torch\ny = [torch for torch in ()]\nz = torch.mean\n", "torch.mean"),
        # Not a top-level import, a dotted one, a star import, or a read before the import.
        ("if True:\n    import torch\ny = torch.mean\n", "torch.mean"),
        ("import torch.nn\ny = torch.nn.Linear\n", "torch.nn.Linear"),
        ("from torch import *\ny = mean\n", "mean"),
        ("y = torch.mean\nimport torch\n", "torch.mean"),
        ("import torch; y = torch.mean\n", "torch.mean"),
    ],
)
def test_anything_else_asks_the_scopes(source, text):
    fast, slow, sole = _qualified(source, text)
    assert sole is None
    assert fast == slow


def test_names_that_are_no_reads_ask_the_scopes():
    # `b` of `a.b` and the keyword of `f(b=...)` have no scope: libcst names them nothing.
    source = "import torch\nimport nn\ny = torch.nn\nf(nn=1)\n"
    (fast, slow), module = _classifiers(source)
    attribute_name = [n for n in _reads(module) if isinstance(n, cst.Name) and n.value == "nn"]
    assert len(attribute_name) == 3  # the import's, the attribute's, the keyword's
    for node in attribute_name[1:]:
        assert fast.qualified(node) == slow.qualified(node) == set()


@pytest.mark.parametrize("source", ["import torch\ntype torch = int\ny = torch.mean\n", "import torch\ndef f[torch](): pass\ny = torch.mean\n"])
def test_a_type_alias_or_parameter_binds_its_name(source):
    # (Python 3.12 syntax, which libcst reads on any Python.)
    fast, slow, sole = _qualified(source, "torch.mean")
    assert sole is None
    assert fast == slow


def _files():
    """The fixtures' originals (the positive and unsafe ones: imports of every kind, every rule's
    shapes), the example and the stop-26 reproducers of merges (names bound by odd forms)."""
    found = sorted(p for p in (ROOT / "fixtures").glob("GF00*/*/*.py") if ".fixed" not in p.name and p.parent.name != "negative")
    found += sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "tests" / "review_round5").glob("Q_*.py"))
    return found[::4]  # (a quarter of them, every rule's: each file costs its scopes and every read asked twice)


def test_same_answer_as_the_scopes():
    """Every read of every fixture, example and reproducer: the same qualified names both ways,
    and the scope-free answer taken often (it is what spares the scopes)."""
    files = _files()
    assert len(files) > 40
    taken = compared = 0
    for path in files:
        (fast, slow), module = _classifiers(path.read_text())
        for node in _reads(module):
            answer = fast.qualified(node)
            assert answer == slow.qualified(node), (path, fast.facts.line(node), cst.Module([]).code_for_node(node))
            compared += 1
            line = fast.facts.line(node)
            taken += fast.facts.sole_imports.qualified(cst.Module([]).code_for_node(node), line) is not None
    assert compared > 5_000 and taken > compared // 10
