"""`exprs.may_change_builtins`: the forms that may rebind a builtin without binding its name in the
file (review round 3, I_03: GF004 reads `sum(...)` by its text)."""

from __future__ import annotations

import libcst as cst
import pytest

from gradfix.analysis.exprs import may_change_builtins


@pytest.mark.parametrize(
    "src",
    [
        "import builtins\nbuiltins.sum = lambda xs: 0\n",
        "import builtins as b\nb.len = len\n",
        "import builtins\nsetattr(builtins, 'sum', f)\n",
        "import builtins\ndel builtins.sum\n",
        "import builtins\nm = builtins\n",
        "import builtins\nvars(builtins)['sum'] = f\n",
        "def f():\n    import builtins\n    g = lambda: setattr(builtins, 'len', h)\n",
        "__builtins__.sum = f\n",
        "from numpy import *\n",
        "import sys\nsys.modules['builtins'].sum = f\n",
        "import importlib\nimportlib.import_module('builtins').len = f\n",
        # review round 4 (O_13-O_16): a global of the file bound without a binding statement
        "globals()['sum'] = f\n",
        "globals().update(sum=f)\n",
        "g = globals\ng()['sum'] = f\n",
        "vars()['sum'] = f\n",
        "import sys\nsetattr(sys.modules[__name__], 'sum', f)\n",
        "import sys\nvars(sys.modules[__name__])['sum'] = f\n",
        "import inspect\ninspect.currentframe().f_globals['sum'] = f\n",
        "f.__globals__['sum'] = g\n",
        "from builtins import __dict__ as d\nd['sum'] = f\n",
        "import __main__\n__main__.sum = f\n",
        "import train\nsetattr(train, 'sum', f)\n",
        "exec('sum = f')\n",
        "eval('(sum := f)')\n",
        "import importlib\nm = importlib.import_module(__name__)\nm.sum = f\n",
    ],
)
def test_may_change_builtins(src):
    assert may_change_builtins(cst.parse_module(src))


@pytest.mark.parametrize(
    "src",
    [
        "import builtins\n\ndef sum(xs):\n    return builtins.sum(xs) * 2\n",
        "from builtins import sum as total\nx = total([1])\n",
        "import torch\nx = torch.zeros(())\nbuiltins = 3\n",
        "x = sum([1, 2])\n",
        "model.eval()\nsetattr(self.model, 'w', w)\nprint(vars(args))\n",
        "def f(self):\n    setattr(self, 'w', 1)\n    return self.__dict__\n",
    ],
)
def test_reads_leave_builtins(src):
    assert not may_change_builtins(cst.parse_module(src))
