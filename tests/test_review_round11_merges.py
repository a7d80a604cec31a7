"""Review round 11 (reviewer Q): merges of backward passes, holes left after round 10.

Causes:
- A `str.format` template's fields name the attributes it reads by `getattr`, and round 10 counted
  only the attributes a class of the file computes: `"{0.grad}".format(w)` between the passes, or in
  a special method (`__str__` run by `print(m)`), reads `w.grad`, with no attribute node (Q_01,
  Q_02). Now a field naming `grad`/`_grad` counts too, in any file, and a template gradfix does not
  read may name one (`facts.formats_computed`, `facts._names_gradient_field` in `_changes_state`).
- Python calls `keys` (then `__getitem__`) by the mapping protocol, with no call by name: `dict(m)`,
  `{**m}`, `f(**m)` between the passes ran a `keys` of the file reading `w.grad` (Q_03, Q_04). Now
  a protocol method is checked like a special method (`facts._PROTOCOL_METHODS`, `_implicit`).
- A function of the file handed to code outside it runs when that code decides: a `weakref.finalize`
  or `weakref.ref` callback when a rebinding or `del` between the passes drops the last reference,
  a `sys.setprofile` function at each call (Q_05 to Q_07). Now a merge is unsafe where such a
  function (`CalleeClassifier.handed_functions`) may change state or read a gradient
  (`backward.escaped_function_reasons`, in `file_merge_reasons`).
- A generator function's body runs where the generator is advanced, not where it is called:
  `seen = watch()` before the passes, `list(seen)` between them (Q_08, GF001: Q_10). Now a
  generator function of the file that may change state or read a gradient makes merges unsafe
  (`backward.generator_reasons`).

- torch's `Module.__repr__` calls `extra_repr` of the file (`print(net)`, Q_11): a protocol method
  too (`facts._PROTOCOL_METHODS`).
- `DataLoader(ds, collate_fn=collate)` keeps `collate` and runs it at each iteration (`for batch in
  loader` between the passes, Q_12): a function handed to any callee but those that run it only now
  (`callees._CALLS_NOW`) counts (`CalleeClassifier.handed_functions`).
- `isinstance(m, P)` with a `runtime_checkable` Protocol runs `hasattr(m, "gnorm")`, a property of
  the file (Q_13): now harmless only with builtin or torch classes, or where the file computes no
  attribute (`between._checks_computed`).
- A generator's reason needs something between the passes (only code there advances it):
  `backward.generator_reasons`, `_adjacent` (a corpus file's adjacent passes keep their safe fix).

Near misses that stay safe and exact: a template naming no gradient, a `keys` that changes nothing,
a generator function that reads no gradient (Q_09); `isinstance` with builtin and torch classes in
a file with a property (Q_14).
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round11").glob("Q_*.py"))

_DUNDER = "runs without a call by name"
_BETWEEN = "between the backward calls may step, zero or read gradients"
_HANDED = "is handed to code outside the file, which may run it between the passes"
_GENERATOR = "is a generator function: its body runs where the generator is advanced"
EXPECTED = {
    "Q_01_gf003_format_template_field_reads_grad": ("GF003", f'`"{{0.grad}}".format()` {_BETWEEN}'),
    "Q_02_gf003_dunder_format_template_reads_grad": ("GF003", f"`__str__` (line 7) {_DUNDER}"),
    "Q_03_gf003_dict_of_mapping_calls_keys": ("GF003", f"`keys` (line 7) {_DUNDER}"),
    "Q_04_gf003_mapping_unpacking_calls_keys": ("GF003", f"`keys` (line 7) {_DUNDER}"),
    "Q_05_gf003_finalizer_run_by_rebinding_reads_grad": ("GF003", f"`report` (line 13) {_HANDED}"),
    "Q_06_gf003_weakref_callback_run_by_del_reads_grad": ("GF003", f"`report` (line 13) {_HANDED}"),
    "Q_07_gf003_profile_function_reads_grad": ("GF003", f"`prof` (line 11) {_HANDED}"),
    "Q_08_gf003_generator_body_runs_between_reads_grad": ("GF003", f"`watch` (line 8) {_GENERATOR}"),
    "Q_10_gf001_generator_body_runs_between_reads_grad": ("GF001", f"`watch` (line 13) {_GENERATOR}"),
    "Q_11_gf003_module_repr_calls_extra_repr": ("GF003", f"`extra_repr` (line 10) {_DUNDER}"),
    "Q_12_gf003_dataloader_collate_reads_grad": ("GF003", f"`collate` (line 9) {_HANDED}"),
    "Q_13_gf003_protocol_isinstance_reads_property": ("GF003", f"`isinstance()` {_BETWEEN}"),
    # Near misses: a safe fix, executed exact.
    "Q_09_gf003_protocol_and_generator_near_miss": ("GF003", None),
    "Q_14_gf003_isinstance_builtin_classes_near_miss": ("GF003", None),
}

# Programs that leave process state behind (a profile function): run in a process of their own.
APART = {"Q_07_gf003_profile_function_reads_grad"}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)


# -- focused checks ------------------------------------------------------------------------------


@pytest.mark.parametrize("template, reads", [
    ('"{0.grad}"', True),
    ('"{0._grad:.3}"', True),
    ('"{m.grad!r}"', True),
    ('"{0:{1.grad}}"', True),
    ("FMT", True),  # (not read: may name one)
    ('"{0.shape}"', False),
    ('"{grad}"', False),  # (a keyword argument's name, no attribute)
])
def test_format_template_reading_gradients(template, reads):
    import libcst as cst

    from gradfix.analysis.facts import formats_computed

    class Facts:  # a file that computes no attribute (`FileFacts.computed_attributes`)
        computed_attributes = (frozenset(), False)

    facts = Facts()
    assert formats_computed(cst.parse_expression(template), facts) is reads


GENERATOR = """import contextlib
import torch

w = torch.randn(3, requires_grad=True)
seen = []

{decorator}
def watch():
    torch.manual_seed(1)
    yield

{use}

def step():
    h = w * 2
    l1 = (h.detach() * h).sum()
    l1.backward(retain_graph=True)
    print(l1.item())
    l2 = (h * h.detach()).sum()
    l2.backward()
"""


@pytest.mark.parametrize(
    "decorator,use,safe",
    [
        ("@contextlib.contextmanager", "", True),  # never named: no generator of it exists
        ("@contextlib.contextmanager", "quiet = watch", False),  # handed on: may be entered between the passes
        ("@register", "", False),  # a decorator that may call it
        ("", "names = [n for n in globals()]", False),  # reached by a string
    ],
)
def test_generator_functions_the_file_never_names_run_nowhere(decorator, use, safe):
    """A generator function's body runs where a generator of it is advanced: one the file never names
    (and hands to no decorator but `contextlib.contextmanager`) makes none (`backward._may_be_advanced`)."""
    from tests.test_field_cases import _lint

    source = GENERATOR.format(decorator=decorator, use=use)
    if decorator == "@register":
        source = source.replace("seen = []\n", "seen = []\nregister = lambda f: f\n")
    (finding,) = _lint(source, ["GF001"]).findings
    assert finding.fixable is safe, finding.message
    if not safe:
        assert "is a generator function" in finding.message or "reads names" in finding.message or "by a string" in finding.message, finding.message
