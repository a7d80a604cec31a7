"""Review round 9 (reviewer V): merges of backward passes and GF005, holes in round 8's proofs.

Causes:
- `facts._changes_state` (a special method run between the passes: `__format__`, `__rmod__`, ...)
  followed the calls a special method makes, not the attribute reads that run code: a `@property`
  of the file read by attribute (`format(self.gnorm, ".4f")`) or by a literal name
  (`getattr(self, "gnorm")`) whose getter reads `w.grad` printed the first pass's gradient before
  the merge and none after (V_01, V_02). Now a read of a name the file computes follows the getter
  where it is a plain `@property` def, and counts otherwise (`facts._reads_computed`).
- `print`, a progress bar's `set_postfix` and loggers' methods were harmless between the passes
  (`between.harmless_call`) and `print` in a special method (`facts._changes_nothing`), but they run
  methods of the objects they write to by protocol: `print(..., file=sink)` and a `sys.stdout`
  the file replaced run `write` (V_03, V_04, V_06); `log.info(...)` runs a handler's `emit` (V_05).
  Now they are harmless only where the file may bind none of the names the protocol calls
  (`between._writes_through_file`, `between.prints_through_file`; a plain `print` counts only
  where the file may replace `sys.stdout`).
- `backward.computed_method_calls` saw code text run only by `eval`/`exec` called by those names:
  the builtins reached as a module (`getattr(builtins, "exec")`, `builtins.__dict__["eval"]`,
  `B.eval` for `import builtins as B`, `vars(builtins)["eval"]`, `from builtins import exec as
  run`), `compile`, and the standard library's runners of code text or files (`runpy.run_path`)
  registered a clamping gradient hook unseen (V_07 to V_11). Now each counts
  (`backward._runs_text_elsewhere`).
- `backward._reads_graph` took a `grad_fn` inside `and`/`or` as tested, but the operation gives
  one of its operands: `node = loss.grad_fn or None` holds the node, whose saved tensor a later
  read needs (V_12, V_13). The operation now stands where the `grad_fn` would. And a `grad_fn`
  handed to `format` was shown even where `format` is a function of the file (V_14): the shown
  builtins count only where the file does not bind their names.

Near misses that stay safe and exact: a special method reading a pure `@property` (V_15), a
`grad_fn` only tested inside `and`/`or` (V_16), `print` and `log.info` in a file that defines no
method a print or a logger calls by protocol (V_17).
"""
from pathlib import Path

import libcst as cst
import pytest

from gradfix.analysis.backward import computed_method_calls
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round9").glob("V_*.py"))

_DUNDER = "runs without a call by name"
_COMPUTED = "calls a method by a computed name"
_BETWEEN = "between the backward calls may step, zero or read gradients"
EXPECTED = {
    "V_01_gf003_property_read_in_dunder": ("GF003", f"`__format__` (line 13) {_DUNDER}"),
    "V_02_gf003_property_by_getattr_literal_in_dunder": ("GF003", f"`__format__` (line 13) {_DUNDER}"),
    "V_03_gf003_print_to_file_object_reads_grad": ("GF003", f"`print()` {_BETWEEN}"),
    "V_04_gf003_stdout_replaced_write_reads_grad": ("GF003", f"`print()` {_BETWEEN}"),
    "V_05_gf003_logging_handler_reads_grad": ("GF003", f"`log.info()` {_BETWEEN}"),
    "V_06_gf003_dunder_prints_to_file_sink": ("GF003", f"`__format__` (line 21) {_DUNDER}"),
    "V_07_gf003_hook_by_getattr_builtins_exec": ("GF003", f"`builtins` (line 7) {_COMPUTED}"),
    "V_08_gf003_hook_by_builtins_dict_eval": ("GF003", f'`builtins.__dict__["eval"]` (line 7) {_COMPUTED}'),
    "V_09_gf003_hook_by_builtins_alias_eval": ("GF003", f"`B` (line 7) {_COMPUTED}"),
    "V_10_gf003_hook_by_vars_builtins": ("GF003", f'`vars(builtins)["eval"]` (line 7) {_COMPUTED}'),
    "V_11_gf003_hook_by_runpy": ("GF003", f"`import runpy, tempfile, os` (line 6) {_COMPUTED}"),
    # GF005: `retain_graph=True` is needed: no finding.
    "V_12_gf005_grad_fn_through_or": None,
    "V_13_gf005_grad_fn_through_and": None,
    "V_14_gf005_grad_fn_given_to_file_format": None,
    # Near misses: a safe fix, executed exact.
    "V_15_gf003_dunder_reads_pure_property_near_miss": ("GF003", None),
    "V_16_gf005_grad_fn_tested_by_or_near_miss": ("GF005", None),
    "V_17_gf003_print_and_log_without_file_writers_near_miss": ("GF003", None),
}

# Programs that leave process state behind: run in a process of their own.
APART = {
    "V_04_gf003_stdout_replaced_write_reads_grad",  # `sys.stdout` replaced
    "V_05_gf003_logging_handler_reads_grad",  # a handler added to a named logger
    "V_07_gf003_hook_by_getattr_builtins_exec",  # hooks on module-level tensors
    "V_08_gf003_hook_by_builtins_dict_eval",
    "V_09_gf003_hook_by_builtins_alias_eval",
    "V_10_gf003_hook_by_vars_builtins",
    "V_11_gf003_hook_by_runpy",
    "V_17_gf003_print_and_log_without_file_writers_near_miss",  # a named logger
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


# -- focused checks ------------------------------------------------------------------------------


def test_code_text_runners():
    source = """import builtins
import builtins as B
from builtins import exec as run
import runpy
getattr(builtins, "exec")
builtins.__dict__["eval"]
B.eval
vars(builtins)
compile(src, "<s>", "exec")
print(builtins.len([]))
net.eval()
re.compile("x")
mode = "eval"
"""
    module = cst.parse_module(source)
    # (not `builtins.len`, `net.eval()`, `re.compile`, nor "eval" as a plain string)
    assert [module.code_for_node(c) for c in computed_method_calls(module)] == [
        "from builtins import exec as run", "builtins", "exec", "import runpy", "builtins", '"exec"',
        'builtins.__dict__["eval"]', "builtins", "B", "vars(builtins)", "builtins", "compile",
    ]


def _dunders(source):
    from gradfix.analysis.facts import FileFacts
    from gradfix.analysis.positions import node_maps

    module = cst.parse_module(source)
    facts = FileFacts(module, node_maps(module))
    return [n.name.value if isinstance(n, cst.FunctionDef) else module.code_for_node(n) for n in facts.implicit_dunders]


@pytest.mark.parametrize("getter, changes", [
    ("    @property\n    def p(self):\n        return self._p * 2\n", False),
    ("    @property\n    def p(self):\n        return w.grad\n", True),
    ("    @property\n    def p(self):\n        opt.zero_grad()\n        return 1\n", True),
    ("    @functools.cached_property\n    def p(self):\n        return 1\n", True),
    ("    p = property(lambda self: 1)\n", True),
])
def test_dunder_property_reads(getter, changes):
    source = f"class A:\n{getter}\n    def __format__(self, spec):\n        return format(self.p, spec)\n"
    assert (_dunders(source) == ["__format__"]) is changes
    by_name = source.replace("self.p,", 'getattr(self, "p"),')
    assert (_dunders(by_name) == ["__format__"]) is changes


def test_grad_fn_inside_and_or():
    from gradfix.analysis.backward import Backpropagators

    source = """def f():
    a = l.grad_fn or None
    if l.grad_fn or x:
        pass
    b = not (x and l.grad_fn)
    c = x and l.grad_fn
"""
    module = cst.parse_module(source)
    shown = [module.code_for_node(n) for n in Backpropagators(module).uses(module.body[0])]
    assert shown == ["l.grad_fn", "l.grad_fn"], shown
