"""A name a function binds is its own variable throughout its body (Python's scoping rule), never
the builtin of that name: `vars = []` in a method is a list, not `vars()`, and reaches no method by
its name as a string (`introspection._function_locals`, stop 33, from a held-out training file: a
sampler's local list of variables made GF005's fix on another class's `update` unsafe).

Each program is executed: the safe fix drops `retain_graph=True` and prints the same numbers; where
the name may still be the builtin (a read in a default, a comprehension's own target, a nested
function declaring it `global`, a read in a class body), the fix stays unsafe for that reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from gradfix.rules import select
from tests.test_review_reproducers import check_case

ALL = tuple(rule.CODE for rule in select(["ALL"]))

_PROGRAM = '''\
import torch

torch.manual_seed(0)


class Sampler:
    def __init__(self, n):
        self.n = n

{sample}

class Trainer:
    def __init__(self):
        self.w = torch.randn(2, requires_grad=True)
        self.opt = torch.optim.SGD([self.w], lr=0.1)

    def update(self, x):
        self.opt.zero_grad()
        loss = ((self.w * x) ** 2).sum()
        loss.backward(retain_graph=True)
        self.opt.step()
        return loss.item()


if __name__ == "__main__":
    s, t = Sampler(3), Trainer()
    for _ in s.sample():
        print(round(t.update(torch.rand(2)), 6))
    print(t.w)
'''

_LOCAL = {
    "list": '''\
    def sample(self):
        vars = []
        for _ in range(self.n):
            vars.append(torch.rand(2))
        return vars
''',
    "read_before_bound_and_in_comprehension": '''\
    def sample(self):
        if self.n < 0:
            return vars
        vars = [torch.rand(2) for _ in range(self.n)]
        return [v for v in vars]
''',
    "annotation_and_walrus": '''\
    def sample(self):
        vars: list
        if (vars := [torch.rand(2)] * self.n):
            return vars
        return []
''',
    "parameter": '''\
    def sample(self, vars=None):
        vars = vars or [torch.rand(2)] * self.n
        return vars
''',
}

_BUILTIN = {
    "default": '''\
    def sample(self, got=vars):
        vars = [torch.rand(2)] * self.n
        return vars
''',
    "comprehension_target": '''\
    def sample(self):
        got = [vars for vars in range(self.n)]
        return got
''',
    "global_in_nested": '''\
    def sample(self):
        vars = [torch.rand(2)] * self.n

        def inner():
            global vars
            return vars

        return vars
''',
    "class_body": '''\
    class Inner:
        vars = vars

    def sample(self):
        return [torch.rand(2)] * self.n
''',
}


def _write(tmp_path: Path, sample: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(_PROGRAM.format(sample=sample))
    return path


@pytest.mark.parametrize("name", sorted(_LOCAL))
def test_a_local_of_the_builtins_name_is_no_lookup(tmp_path, name):
    check_case(_write(tmp_path, _LOCAL[name]), ("GF005", None))


@pytest.mark.parametrize("name", sorted(_BUILTIN))
def test_where_the_name_may_be_the_builtin_the_fix_stays_unsafe(tmp_path, name):
    source = _PROGRAM.format(sample=_BUILTIN[name])
    findings = lint_bytes(source.encode(), "train.py", LintOptions(ALL)).findings
    assert [(f.code, f.fixable) for f in findings] == [("GF005", False)]
    assert "may be reached by its name as a string (`vars` at line" in findings[0].fix.unsafe_reason
