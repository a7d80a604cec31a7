"""Review round 15 (reviewer X, loops and GF005): what round 14's proofs still missed.

Causes:
- GF005's reach of a method by a string knew `_STRING_RESOLVERS` (eval, exec, `resolve_name`,
  `locate`, `get_field`, `getattr_static`) and `_CODE_RUNNER_MODULES` (timeit and its kin), but the
  standard library has more: a code object made from a string and run by `types.FunctionType`
  without `eval`/`exec` (`FunctionType(compile("t.upd" + "ate(h)", ...), ns)`: X_01); a dotted
  attribute resolved from a computed string by `xmlrpc.server.resolve_dotted_attribute` (X_02) and by
  `logging.config`'s configurators (`BaseConfigurator({}).resolve("__main__.t.upd" + "ate")`: X_03);
  `pickle.loads` of bytes built of parts, whose protocol-4 GLOBAL resolves `t.update` (X_04); and
  with no string at all, `gc.get_referents(type(t))`, which hands back the class's namespace dict
  (X_05). Now `introspection._STRING_RESOLVERS` holds those names (with `CodeType`, `__code__`,
  `dictConfig`, `get_objects`, `get_referrers`), `_BUILTIN_RESOLVERS` the builtin `compile` as a name
  (not `re.compile`/`torch.compile`), and `_CODE_RUNNER_MODULES` the modules that resolve dotted
  globals named in their data (`pickle`, `copyreg`, `shelve`, `marshal`, `dill`, `cloudpickle`,
  `xmlrpc`, `logging.config`), matched by `_imports_module` also under a dotted name
  (`import logging.config`, `from logging import config`).
X_06 keeps the reach: strings built of parts given to `logging`, `re.compile` and `str.format`, and
`torch.compile` mentioned.
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.introspection import _CODE_RUNNER_MODULES, _imports_module, names_reached_by_string
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round15").glob("X_*.py"))
REACHED = "`update` may be reached by its name as a string ("

EXPECTED = {
    "X_01_gf005_compile_function_type_runs_method_from_string": ("GF005", REACHED + "`types.FunctionType` at line 22)"),
    "X_02_gf005_xmlrpc_resolve_dotted_attribute_reaches_method": ("GF005", REACHED + "`from xmlrpc.server import resolve_dot"),
    "X_03_gf005_logging_config_resolve_reaches_method": ("GF005", REACHED + "`import logging.config` at line 21)"),
    "X_04_gf005_pickle_global_reaches_method": ("GF005", REACHED + "`import pickle` at line 21)"),
    "X_05_gf005_gc_referents_reach_method": ("GF005", REACHED + "`gc.get_referents` at line 22)"),
    "X_06_gf005_logging_regex_format_strings_near_miss": ("GF005", None),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


def _import(text):
    return cst.parse_module(text).body[0].body[0]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("import logging.config", True),
        ("from logging import config", True),
        ("from logging.config import dictConfig", True),
        ("import pickle as pk", True),
        ("from xmlrpc.server import resolve_dotted_attribute", True),
        ("import logging", False),
        ("from logging import getLogger", False),
        ("from . import pickle", False),
        ("import pickletools", False),
    ],
)
def test_imports_module(text, expected):
    assert _imports_module(_import(text), _CODE_RUNNER_MODULES) is expected


def test_builtin_compile_only_as_a_name():
    head = "class T:\n    def update(self):\n        pass\n"
    for text, reached in [
        ("c = compile(s, 'f', 'eval')\n", True),
        ("import builtins\nc = builtins.compile(s, 'f', 'eval')\n", True),
        ("import re\nc = re.compile(s)\n", False),
        ("import torch\nc = torch.compile(f)\n", False),
    ]:
        node = names_reached_by_string(cst.parse_module(head + text), "update", True)
        assert (node is not None) is reached, text
