"""Review round 13 (reviewer U): merges of backward passes, holes left after round 12 in
`CalleeClassifier.handed_functions`.

Causes:
- Only functions were handed on, never a class: a class of the file handed to outside code is
  called there, and its construction runs with no call gradfix sees: `sys.setprofile(Prof)` (U_01),
  `logging.setLogRecordFactory(Record)` with a `logging.warning` between the passes (U_02),
  `@sys.setprofile` on a class (U_03). Now a class's name read but as a callee, an attribute's
  receiver, a base, an annotation or a class checked against (`isinstance`, `except`, `is`), and a
  class given to a decorator other than those that keep nothing (`callees._CLASS_KEEPING_NOTHING`),
  hands on its `__new__`/`__init__`/`__post_init__` and its bases' of the file (`_CONSTRUCTION`);
  an object's class handed on (`type(p)`, `p.__class__`, U_14) hands on every class's; a class
  reached by its name as a string (`globals()["Prof"]`, U_15) hands on its own.
- `_CALLS_NOW` counted every callee there as keeping nothing, but most return the function or an
  object that runs it: `sys.setprofile(functools.lru_cache(prof))` (U_04),
  `sys.setprofile(atexit.register(prof))` (U_05), and `@functools.wraps(prof)` keeps `prof` as the
  decorated def's `__wrapped__` (U_09). Now only `sorted`/`min`/`max` (`_RUNS_NOW`) keep nothing
  wherever they stand; the others only as a decorator, called where they stand or a statement's
  dropped value (`atexit.register(f)`), and `wraps`
  (`_ATTACHING`) only in a wrapper decorator of the file (`keeps_nothing`).
- `.apply(f)` on any receiver was taken for torch's `Module.apply`: a class of the file whose
  `apply` hands `f` to `sys.setprofile` (U_06). Now only where the file may bind no `apply`
  (`may_bind_attribute`).
- A method reached by its name as a string was followed through `getattr` and `vars`/`__dict__`
  only: `operator.attrgetter("prof")(t)` (U_07). Now any string literal naming a def of the file
  that is a call's argument or a subscript's key hands it on, but for callees that print, log or
  join paths (`_INERT_BUILTINS`, `_INERT_METHODS`, `os.path`, logging's functions).
- Round 12 followed a lambda bound to a name by its bare name only, where a def is reached by an
  attribute and by its name as a string too: a lambda bound in a class body is a method,
  `sys.setprofile(Tracker().prof)` (U_10); `sys.setprofile(globals()["hook"])` (U_11). Now
  bound lambdas are reached by attribute and by string as defs are (`lambdas`).
- A property's accessors were never handed on (run at an attribute read, which gradfix follows),
  but the property object read on its class gives them as `fget`/`fset`/`fdel` (`func` for a
  `cached_property`): `sys.setprofile(Tracker.prof.fget)` (U_12). Now a read of one of those
  attributes (`_ACCESSOR_HOLDERS`) hands on every accessor of the file.
- `between.harmless_call` took `append`/`extend` on a receiver that is no operand for a list's,
  without asking whether a class of the file defines one, as it asks for the other harmless
  methods: `class History(list)` whose `append` reads `w.grad` (U_13). Now it asks
  (`between._file_method`, `CalleeClassifier.may_bind_attribute`).

Near miss that stays safe and exact: a class called, subclassed, annotated and checked with
`isinstance`; an `lru_cache` decorator and `lru_cache(f)(x)`; `atexit.register(f)` as a statement; `net.apply(init)`; method names
printed and compared (U_08).
"""
from pathlib import Path

import pytest

from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round13").glob("U_*.py"))

_HANDED = "is handed to code outside the file, which may run it between the passes"
EXPECTED = {
    "U_01_gf003_class_as_profile_function_init_reads_grad": ("GF003", f"`__init__` (line 11) {_HANDED}"),
    "U_02_gf003_log_record_factory_class_reads_grad": ("GF003", f"`__init__` (line 12) {_HANDED}"),
    "U_03_gf003_class_decorator_sets_profile_reads_grad": ("GF003", f"`__init__` (line 13) {_HANDED}"),
    "U_04_gf003_lru_cache_wrapper_as_profile_reads_grad": ("GF003", f"`prof` (line 11) {_HANDED}"),
    "U_05_gf003_atexit_register_returns_profile_function": ("GF003", f"`prof` (line 11) {_HANDED}"),
    "U_06_gf003_apply_method_of_file_keeps_function": ("GF003", f"`prof` (line 10) {_HANDED}"),
    "U_07_gf003_method_by_attrgetter_as_profile_reads_grad": ("GF003", f"`prof` (line 12) {_HANDED}"),
    "U_09_gf003_wraps_keeps_function_as_wrapped": ("GF003", f"`prof` (line 12) {_HANDED}"),
    "U_10_gf003_class_body_lambda_method_as_profile": ("GF003", f"`a lambda` (line 12) {_HANDED}"),
    "U_11_gf003_bound_lambda_by_string_as_profile": ("GF003", f"`a lambda` (line 11) {_HANDED}"),
    "U_12_gf003_property_fget_as_profile_reads_grad": ("GF003", f"`prof` (line 13) {_HANDED}"),
    "U_13_gf003_list_subclass_append_reads_grad": ("GF003", "`history.append()` between the backward calls may step, zero or read gradients"),
    "U_14_gf003_class_of_object_as_profile_reads_grad": ("GF003", f"`__init__` (line 11) {_HANDED}"),
    "U_15_gf003_class_by_string_as_profile_reads_grad": ("GF003", f"`__init__` (line 11) {_HANDED}"),
    # Near misses: a safe fix, executed exact.
    "U_08_gf003_classes_wrappers_strings_near_miss": ("GF003", None),
}

# Programs that leave process state behind (a profile function, a log record factory): run in a
# process of their own.
APART = {
    "U_01_gf003_class_as_profile_function_init_reads_grad",
    "U_02_gf003_log_record_factory_class_reads_grad",
    "U_03_gf003_class_decorator_sets_profile_reads_grad",
    "U_04_gf003_lru_cache_wrapper_as_profile_reads_grad",
    "U_05_gf003_atexit_register_returns_profile_function",
    "U_06_gf003_apply_method_of_file_keeps_function",
    "U_07_gf003_method_by_attrgetter_as_profile_reads_grad",
    "U_09_gf003_wraps_keeps_function_as_wrapped",
    "U_10_gf003_class_body_lambda_method_as_profile",
    "U_11_gf003_bound_lambda_by_string_as_profile",
    "U_12_gf003_property_fget_as_profile_reads_grad",
    "U_14_gf003_class_of_object_as_profile_reads_grad",
    "U_15_gf003_class_by_string_as_profile_reads_grad",
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem], apart=path.stem in APART)
