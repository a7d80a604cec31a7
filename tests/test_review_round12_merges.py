"""Review round 12 (reviewer S): merges of backward passes, holes left after round 11.

Causes:
- `CalleeClassifier.handed_functions` listed the ways of handing a function of the file on (a bare
  call argument, a value stored on an attribute or item) and missed the others: `@sys.setprofile`
  on the def (S_01), `hook = prof` then `sys.setprofile(hook)` (S_02), `setprofile(prof if on else
  None)` (S_03), a wrapper a decorator of the file returns, bound to the decorated name (S_04). The
  profile function then ran at each call between the passes and read `w.grad`. Now it is proven
  from the uses that hand nothing on: a def's name read anywhere but as a callee, or a method's
  attribute name, is handed on, but for the arguments of `_CALLS_NOW` callees; a def is handed to
  its decorators but those that only wrap it (`callees._WRAPPING_DECORATORS`, and decorators of the
  file that only wrap, whose returned defs a read of the decorated name reaches).
- An instance of a class of the file handed on (`sys.setprofile(Prof())`) runs its `__call__`
  where outside code decides (S_11): every `__call__` of a class of the file counts as handed on
  (`CalleeClassifier.handed_functions`).

- A generator expression is a generator too (round 11 checked generator functions only):
  `seen = (look() for _ in range(1))` before the passes runs `look()`, or a property `b.g`, at
  `list(seen)` between them (S_05, S_06). Now a generator expression not exhausted where it stands
  (`backward._exhausted_now`: an argument of `list`, `sum`, `any`, ..., of `"".join`, a `for`'s
  iterable) whose code may change state or read a gradient makes merges unsafe
  (`backward.generator_reasons`).
- torch's `Module.__repr__` calls `_get_name` too, not only `extra_repr` (S_08); `net.eval()` runs
  `train`, `state_dict()` `_save_to_state_dict`, `zero_grad()` `parameters`. Now every method
  torch's `Module` calls on itself or its children (`facts._MODULE_SELF_CALLS`, read from its
  source) counts as run without a call by name in a class of the file with a base.
- A class decorator (`@dataclass`) generates `__repr__`/`__eq__` reading each field: a field that
  is a property of the class ran its getter at `print(s)` (S_09). Now the accessors named by an
  annotated field of a decorated class count too (`facts.FileFacts.implicit_dunders`).

Near misses that stay safe and exact: a `_get_name` and a dataclass property field that read no
gradient (S_10); a generator expression exhausted where it stands and a kept
one that only computes (S_07); the round-10 near miss S_07 (`@logged` with
`functools.wraps`) keeps its safe fix.
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round12").glob("S_*.py"))

_DUNDER = "runs without a call by name"
_GENEXP = "runs its code where it is advanced"
_HANDED = "is handed to code outside the file, which may run it between the passes"
EXPECTED = {
    "S_01_gf003_decorator_sets_profile_reads_grad": ("GF003", f"`prof` (line 12) {_HANDED}"),
    "S_02_gf003_aliased_profile_function_reads_grad": ("GF003", f"`prof` (line 11) {_HANDED}"),
    "S_03_gf003_profile_function_in_conditional_reads_grad": ("GF003", f"`prof` (line 11) {_HANDED}"),
    "S_04_gf003_wrapper_returned_by_decorator_reads_grad": ("GF003", f"`inner` (line 14) {_HANDED}"),
    "S_05_gf003_generator_expression_calls_grad_reader": ("GF003", f"line 12 {_GENEXP}"),
    "S_06_gf003_generator_expression_reads_grad_property": ("GF003", f"line 15 {_GENEXP}"),
    "S_08_gf003_module_repr_calls_get_name": ("GF003", f"`_get_name` (line 10) {_DUNDER}"),
    "S_09_gf003_dataclass_repr_reads_property_field": ("GF003", f"`name` (line 15) {_DUNDER}"),
    "S_11_gf003_callable_instance_as_profile_reads_grad": ("GF003", f"`__call__` (line 12) {_HANDED}"),
    # A method reached by its name as a string and not called where it stands (the lead's fix after
    # the merge: `callees.handed_functions`'s `string_lookup`).
    "S_12_gf003_method_by_getattr_as_profile_reads_grad": ("GF003", f"`prof` (line 12) {_HANDED}"),
    "S_13_gf003_method_by_vars_as_profile_reads_grad": ("GF003", f"`prof` (line 12) {_HANDED}"),
    # Near misses: a safe fix, executed exact.
    "S_07_gf003_generator_expression_near_miss": ("GF003", None),
    "S_10_gf003_module_repr_and_dataclass_near_miss": ("GF003", None),
    "S_14_gf003_method_by_string_called_near_miss": ("GF003", None),
}

# Programs that leave process state behind (a profile function): run in a process of their own.
APART = {
    "S_01_gf003_decorator_sets_profile_reads_grad",
    "S_02_gf003_aliased_profile_function_reads_grad",
    "S_03_gf003_profile_function_in_conditional_reads_grad",
    "S_04_gf003_wrapper_returned_by_decorator_reads_grad",
    "S_11_gf003_callable_instance_as_profile_reads_grad",
    "S_12_gf003_method_by_getattr_as_profile_reads_grad",
    "S_13_gf003_method_by_vars_as_profile_reads_grad",
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)
