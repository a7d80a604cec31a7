"""GF005 needless-retain-graph: `backward(retain_graph=True)` where nothing later in the function backpropagates again.

## What it does
Finds `loss.backward(retain_graph=True)` (also `scaler.scale(loss).backward(...)`)
inside a function where no later statement of that function calls
`backward`, `torch.autograd.grad` or `torch.autograd.backward`, and the call
is not inside a loop of the function (a loop would run it again):

    def train_step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(net(x), y)
        loss.backward(retain_graph=True)
        opt.step()

## Why it is costly
`retain_graph=True` keeps every tensor the graph saved for backward (the
activations of the whole forward) alive after the backward, until the loss
tensor and the graph are freed — typically only when `loss` is rebound by the
next call's forward, so the next step's forward runs with the previous step's
activations still in memory (about double the peak for a model whose
activations dominate; `benchmarks/retain_graph_memory.py` measures it). It is
often left over from code that once had a second backward, or added to
silence "Trying to backward through the graph a second time".

## Example and rewrite
    loss.backward()

The argument is removed; the other arguments are kept. Gradients are
unchanged (retaining the graph does not change what one backward computes).

## Not reported
When a later `backward`/`grad` call stands anywhere in the function after
this one, when the call is inside a loop of the function, at module level,
when `retain_graph` is not the literal `True`, and when the call passes
`create_graph=True` (higher-order gradients keep the graph on purpose).

## Fix safety
A wrong fix is loud — a backward through the freed graph raises — but it is
still offered as safe only when gradfix proves that nothing can backpropagate
through this graph again: every call in the function is proven harmless
(allowlisted torch functions, modules and functions of the file proven pure,
value and logging calls) or an optimizer or scaler call (`step()`,
`zero_grad()`, `scaler.step(opt)`, `scaler.update()`), so no object can keep a
tensor of the graph for a later call (an RNN's hidden state carried to the
next step is the classic case that needs the graph); no tensor leaves the
function (returned, yielded, stored into an attribute, a subscript, a global
or a container; values such as `.item()` are fine); and the function defines
no nested function or lambda and does not use `locals()`/`eval`. Otherwise the
fix is unsafe and the message names the call or statement and its line.
The function's own arguments are taken as data: a tensor argument carrying a
graph the caller backpropagates again later is not seen.
"""

from __future__ import annotations

import re

CODE = "GF005"
NAME = "needless-retain-graph"
SUMMARY = "`backward(retain_graph=True)` with no later backward in the function: the graph is kept alive for nothing"
DEFAULT = True
FIXABLE = "sometimes"
REQUIRED_TOKENS = (b".backward(", b"retain_graph")

_RETAIN_TRUE = re.compile(rb"retain_graph\s*=\s*True")


def might_match(data: bytes, text: bytes, state: dict) -> bool:
    """Cheap precheck: a literal `retain_graph=True` must be written somewhere."""
    return _RETAIN_TRUE.search(text) is not None


# The rule's metadata and documentation live here; its libcst-based code in the
# `_impl` module, imported on first use (PEP 562), so that a run where no file
# needs parsing never imports libcst.
def __getattr__(name):
    import importlib

    return getattr(importlib.import_module("gradfix.rules._gf005_needless_retain_graph_impl"), name)
