"""GF005 and calls of a function that do not name it (review, stop 24).

GF005's fix is safe only when every call of the function in the file passes values proven free
of a graph (`_caller_passing_graph`): two calls given one graph backpropagate through it twice,
which only the retained graph allows. Each file in `tests/gf005_callers/` calls its function
twice with one graph (`h = w.exp()`) in a way that does not name it: a dunder (`t(h)` runs
`__call__`, `Step(h)` `__init__`, `p[h]` `__getitem__`), an `nn.Module`'s `forward` (`m(h)`), a
class-body alias (`run = step`), or the name as a string (`getattr`, `methodcaller`, a class's
`__dict__`, `globals()`). Each used to get a safe fix; the fixed program raised in its second call.
Now: found, unsafe, the reason names how; the original runs as `__main__`; the unsafe rewrite
(applied with `--unsafe-fixes`) raises in the second call, the executed proof that it had to be
unsafe.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

HERE = Path(__file__).resolve().parent / "gf005_callers"
CASES = sorted(HERE.glob("*.py"))
# What each file's reason must say (a word of it): how the calls escape the search.
REASONS = {
    "02_dunder_call": "`__call__` is called without being named",
    "03_module_forward": "`forward` is called without being named",
    "04_dunder_getitem": "`__getitem__` is called without being named",
    "06_method_alias_in_class_body": "`step` is handed on as a value at line 13",
    "07_dunder_init": "`__init__` is called without being named",
    "10_getattr_literal": '`"step"` at line 18',
    "11_getattr_computed": "`getattr(t, action)` at line 18",
    "12_methodcaller": '`operator.methodcaller("step", h)` at line 18',
    "13_class_dict": "`Trainer.__dict__` at line 17",
    "14_globals_function": "`globals()`, `vars()`, `eval`, `exec` or `sys.modules` in the file",
    "15_getattr_alias": "`getattr` at line 14",
}


def _run_main(source: str) -> None:
    exec(compile(source, "train.py", "exec"), {"__name__": "__main__"})


def test_every_case_has_its_reason():
    assert sorted(p.stem for p in CASES) == sorted(REASONS)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_call_that_does_not_name_the_function_keeps_the_fix_unsafe(path: Path):
    source = path.read_text()
    findings = lint_bytes(source.encode(), "train.py", LintOptions(("GF005",))).findings
    assert [f.code for f in findings] == ["GF005"]
    assert not findings[0].fixable
    assert REASONS[path.stem] in findings[0].fix.unsafe_reason
    pytest.importorskip("torch")
    _run_main(source)  # the original runs: the graph is retained for the second call
    fixed = lint_bytes(source.encode(), "train.py", LintOptions(("GF005",), fix=True, unsafe_fixes=True)).fixed
    assert fixed is not None and fixed != source.encode()
    with pytest.raises(RuntimeError, match="second time"):
        _run_main(fixed.decode())


def _finding(source: str):
    (finding,) = lint_bytes(source.encode(), "train.py", LintOptions(("GF005",))).findings
    return finding


_METHOD = """\
import torch


class Trainer:
    def step(self, x):
        loss = (x * 2).sum()
        loss.backward(retain_graph=True)
{tail}
"""


@pytest.mark.parametrize(
    "tail,unsafe",
    [
        ("", None),  # no caller in the file
        ('\nt = Trainer()\nt.step(torch.ones(3))\nname = getattr(t, "training")\n', None),  # another literal name
        ("\nfrom config import *\n", None),  # a star import binds names, reaches none by a string
        # `vars(...)` may be any class's namespace, this one's included: a method's callers are unseen.
        ("\nimport wandb\nwandb.init(config=vars(object()))\n", "`vars` at line 10"),
    ],
    ids=["no_caller", "other_literal", "star_import", "vars_call"],
)
def test_a_method_is_unseen_only_where_a_namespace_or_its_name_is_reached(tail, unsafe):
    finding = _finding(_METHOD.format(tail=tail))
    assert (finding.fix.unsafe_reason if unsafe else None) == (finding.fix.unsafe_reason if not finding.fixable else None)
    assert finding.fixable is (unsafe is None)
    if unsafe is not None:
        assert unsafe in finding.fix.unsafe_reason


_FUNCTION = """\
import torch


def inner(x):
    loss = (x * 2).sum()
    loss.backward(retain_graph=True)
{tail}
"""


@pytest.mark.parametrize(
    "tail,safe",
    [
        ("\ninner(torch.ones(3))\n", True),
        ("\nfrom config import *\ninner(torch.ones(3))\n", True),
        ('\nimport wandb\nwandb.init(config=vars(args))\n', True),  # another object's namespace
        ("\nf = getattr(torch, 'ones')\n", True),  # a literal name that is not `inner`
        ('\nf = getattr(torch, "inner")\n', False),  # the function's name as a string
        ("\nvars()['inner'](torch.ones(3))\n", False),
    ],
    ids=["call", "star_import", "vars_of_args", "other_literal", "own_literal", "vars_no_args"],
)
def test_a_function_is_unseen_only_where_the_module_namespace_or_its_name_is_reached(tail, safe):
    finding = _finding(_FUNCTION.format(tail=tail))
    assert finding.fixable is safe, finding.fix.unsafe_reason
