"""Review round 17 (reviewer X, loops and GF005): what round 16's proofs still missed.

Causes:
- GF005 took a loss that gathers the caller's tensors into one and reduces it for the function's own
  (`torch.stack(list(losses.values())).sum()`: X_01; `torch.cat([...]).mean() * self.scale` bound to a
  name: X_02): round 16's `_combined_from_caller` follows only elementwise forms (`+`, `sum(losses)`,
  `0.5 * loss`), so a reduction on top made the loss the function's, with the README's assumption
  that a handed-in tensor is data. A loss gathered of several handed-in tensors backpropagates into
  each of them, freeing the graph the caller may backpropagate through again (the programs hand the
  losses in through `UserDict.__init__`, which calls `self.update(initial)`: a caller gradfix does not
  see, as one in another file). Now `_gathered_from_caller`: a call of a gathering form
  (`_GATHERING`: torch's joining functions `stack`, `cat`, `concat`, `hstack`..., `functools.reduce`,
  `itertools.accumulate`, `math.fsum`, the builtin `sum`) with an argument that reads a parameter,
  anywhere in the loss or in what the body binds its names to, makes the loss the caller's (the fix
  unsafe), whatever else it is made of; allowlisted as the function's own: what a module is called
  on (`net(torch.stack(...))` of a module-level value, `self.model(...)`, `model(...)` of a
  parameter), the module's input, which the README takes as data. Also two items of handed-in
  holders added and reduced after (`(losses[0] + losses[1]).mean()`), which round 16 followed only
  without the reduction. A single handed-in tensor reduced (`(x * 2).sum()`, `torch.sum(x)`) and
  two added (`(x + y).sum()`) stay data.
- GF005's `_unseen_callers` took a method's calls by name, its special methods and `forward` for all
  its callers, but a library base calls the methods of a subclass by their plain names with what the
  file hands it elsewhere: `UserDict.__init__(initial)` calls `self.update(initial)`, so `Bank({"h":
  h})` twice gives `update` one graph twice (X_04), as `Counter.__init__`, `MutableSequence.extend`
  (`append`), `logging.Handler.handle` (`emit`) do. Now `FileFacts.base_may_call`, from the
  allowlist of bases that `facts._base_self_calls` already reads for the merges (`object`, the
  file's classes, the builtin exceptions, `abc.ABC`, `typing.Generic`, torch's `nn.Module` with the
  methods it calls, `Dataset`, autograd `Function`, `Optimizer`): any other base, or a name such a
  base calls, makes the callers unseen (the fix unsafe).
X_03 (near miss) keeps the reach: a batch stacked as a module's input. X_05: an `nn.Module`
subclass's `update`, which torch never calls by name, called by the file with graph-free values.
"""
from pathlib import Path

import libcst as cst
import pytest

from tests.test_gf005_caller_loss import _PROGRAM
from tests.test_review_reproducers import check_case

CASES = sorted((Path(__file__).parent / "review_round17").glob("X_*.py"))
CALLERS = "is the caller's (the parameter `{}`)"

EXPECTED = {
    "X_01_gf005_stacked_caller_losses": ("GF005", CALLERS.format("losses")),
    "X_02_gf005_concatenated_caller_losses_mean": ("GF005", CALLERS.format("losses")),
    "X_03_gf005_module_input_stacked_near_miss": ("GF005", None),
    "X_04_gf005_userdict_init_calls_update": ("GF005", "a base of `Bank` may call `update` by its name"),
    "X_05_gf005_module_base_update_near_miss": ("GF005", None),
}


def test_every_case_has_an_expectation():
    assert sorted(p.stem for p in CASES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_case(path):
    check_case(path, EXPECTED[path.stem])


# The forms of a gathered loss, each in a method whose caller is in another file (the class alone
# linted): the fix was safe; the caller's program run on the fixed class raises.
_L = ".backward(retain_graph=True)"
_GATHERED = {
    "stack_sum": "        torch.stack(losses).sum()" + _L,
    "cat_mean": "        torch.cat([l.reshape(1) for l in losses]).mean()" + _L,
    "stack_bound": "        stacked = torch.stack(losses)\n        loss = stacked.mean() * 2\n        loss" + _L,
    "reduce": "        functools.reduce(lambda a, b: a + b, losses)" + _L,
    "sum_of_list": "        sum([l * 2 for l in losses]).mean()" + _L,
    "items_added_reduced": "        (losses[0] + losses[1]).mean()" + _L,
    "scaled_by_attribute": "        (torch.stack(losses).sum() * self.w.detach().sum())" + _L,
}


@pytest.mark.parametrize("name", sorted(_GATHERED))
def test_a_loss_gathered_from_the_callers_unseen_caller(name):
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions
    from tests.test_review_reproducers import ALL, _run

    program = "import functools\n" + _PROGRAM.format(header="def update(self, losses):", backward=_GATHERED[name], argument="[d, d * 2]")
    library, caller = program.split('if __name__ == "__main__":\n')
    findings = lint_bytes(library.encode(), "trainer.py", LintOptions(ALL)).findings
    assert [(f.code, f.fixable) for f in findings] == [("GF005", False)]
    assert CALLERS.format("losses") in findings[0].fix.unsafe_reason
    pytest.importorskip("torch")
    unsafe = lint_bytes(library.encode(), "trainer.py", LintOptions(ALL, fix=True, unsafe_fixes=True)).fixed
    script = "\n".join(line[4:] for line in caller.splitlines())
    assert not _run(library + script).startswith("raised")
    assert _run(unsafe.decode() + script).startswith("raised")


@pytest.mark.parametrize(
    "loss, caller",
    [
        ("torch.stack(losses).sum()", "losses"),
        ("torch.cat(parts).mean()", "parts"),
        ("reduce(operator.add, losses)", "losses"),
        ("th.hstack([a, b]).sum()", "a"),
        ("sum(l.mean() for l in losses) * self.scale", "losses"),
        ("(losses[0] + losses[1]).mean()", "losses"),
        ("(parts['a'] + losses['b']).sum() * 2", "parts"),
        ("(x + a).sum()", None),  # two handed-in tensors: data
        # Data, as the README takes a handed-in tensor: one tensor reduced, a module's input.
        ("(x * 2).sum()", None),
        ("torch.sum(x * 2)", None),
        ("F.mse_loss(self.model(torch.cat(parts)), x)", None),
        ("net(torch.stack(losses)).mean()", None),
        ("model(torch.stack(losses)).mean()", None),
        ("F.cross_entropy(torch.cat([model(t) for t in losses]), x)", None),  # the module's outputs gathered
        ("torch.cat([model(t) for t in losses] + [a]).mean()", "a"),
        ("(self.w * x).pow(2).sum()", None),
    ],
)
def test_gathered_from_caller(loss, caller):
    from gradfix.analysis.exprs import binding_counts
    from gradfix.rules._gf005_needless_retain_graph_impl import _gathered_from_caller, _module_values

    text = f"import torch\nnet = torch.nn.Linear(3, 1)\n\n\ndef step(self, losses, parts, a, b, x, model):\n    loss = {loss}\n"
    module = cst.parse_module(text)
    function = module.body[2]
    value = function.body.body[0].body[0].value
    params = {"losses", "parts", "a", "b", "x", "model"}
    own = {"self"} | _module_values(module)
    assert _gathered_from_caller(value, params, own, binding_counts(function.body), function.body) == caller


def test_module_values():
    from gradfix.rules._gf005_needless_retain_graph_impl import _module_values

    text = "import torch\nfrom torch import nn\nnet = nn.Linear(3, 1)\nk = 3\nf = lambda t: t\ndef g():\n    pass\nclass C:\n    pass\n"
    assert _module_values(cst.parse_module(text)) == {"net"}


@pytest.mark.parametrize(
    "bases, name, called",
    [
        ("(UserDict)", "update", True),
        ("(collections.Counter)", "update", True),
        ("(logging.Handler)", "emit", True),
        ("(Base)", "update", True),  # a class of the file based on `UserDict`
        ("(torch.nn.Module)", "train", True),
        ("(torch.nn.Module)", "update", False),
        ("(torch.optim.Optimizer)", "update", False),
        ("(object)", "update", False),
        ("", "update", False),
    ],
)
def test_base_may_call(bases, name, called):
    from gradfix.analysis.facts import FileFacts
    from gradfix.analysis.positions import node_maps

    text = (
        "import collections\nimport logging\nimport torch\nfrom collections import UserDict\n\n\n"
        f"class Base(UserDict):\n    pass\n\n\nclass C{bases}:\n    def {name}(self, x):\n        pass\n"
    )
    module = cst.parse_module(text)
    facts = FileFacts(module, node_maps(module))
    assert facts.base_may_call(module.body[-1], name) is called


# Stop 36 (this round's suspicion, reproduced): a helper of the file that gathers or combines its
# parameters gathers what the call passes it.
_HELPERS = "import torch\n\n\ndef total(ls):\n    return torch.stack(ls).sum()\n\n\ndef same(l):\n    return l\n\n\ndef fit(model, x):\n    return (model * x).sum()\n\n\n"
_THROUGH_HELPERS = {
    "module_helper_stack": ("        total(losses)" + _L, "losses"),
    "module_helper_identity": ("        same(losses[0])" + _L, "losses"),
    "method_helper": ("        self.gather(losses).mean()" + _L, "losses"),
    "own_loss_helper": ("        fit(self.w, 2.0)" + _L, None),
}


@pytest.mark.parametrize("name", sorted(_THROUGH_HELPERS))
def test_a_loss_gathered_by_a_helper_of_the_file(name):
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions
    from tests.test_review_reproducers import ALL, _run

    backward, caller_param = _THROUGH_HELPERS[name]
    method = "    def gather(self, ls):\n        return torch.stack(ls).sum()\n\n"
    program = _HELPERS + _PROGRAM.format(header="def update(self, losses):", backward=backward, argument="[d, d * 2]")
    program = program.replace("    def update(self, losses):", method + "    def update(self, losses):")
    library, caller = program.split('if __name__ == "__main__":\n')
    findings = lint_bytes(library.encode(), "trainer.py", LintOptions(ALL)).findings
    assert [f.code for f in findings] == ["GF005"]
    if caller_param is None:
        assert findings[0].fix.safe
        return
    assert [f.fix.safe for f in findings] == [False]
    assert CALLERS.format(caller_param) in findings[0].fix.unsafe_reason
    pytest.importorskip("torch")
    unsafe = lint_bytes(library.encode(), "trainer.py", LintOptions(ALL, fix=True, unsafe_fixes=True)).fixed
    script = "\n".join(line[4:] for line in caller.splitlines())
    assert not _run(library + script).startswith("raised")
    assert _run(unsafe.decode() + script).startswith("raised")
