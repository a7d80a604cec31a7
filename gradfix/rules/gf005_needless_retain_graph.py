"""GF005 needless-retain-graph: `backward(retain_graph=True)` where nothing later in the function backpropagates again.

## What it does
Finds `loss.backward(retain_graph=True)` (also `scaler.scale(loss).backward(...)`,
`self.manual_backward(loss, ...)`, `torch.autograd.backward(loss, ...)`,
`accelerator.backward(loss, ...)` on a name bound only to `accelerate.Accelerator(...)` (its fix
unsafe: that nothing patches the receiver is not proven), and the
pre-0.4 `retain_variables=True` alone, the name `retain_graph` had before 0.4)
inside a function where no later statement of that function backpropagates
(`backward`, `torch.autograd.grad`, `manual_backward`, or code of the file
that may call them). Inside a loop of the function, the next iteration runs
the loop's backward calls again: reported only when the loop reads no value
built before it in the file, or carried from an earlier iteration, that is
not proven free of a graph (`h = cell(x, h)`, `outs.append(out)`, a
parameter read as a tensor keep it quiet). Parameters the loop only calls,
steps or iterates (`model(x)`, `optimizer.zero_grad()`, `for x in loader`)
are what the caller passes: reported, with an unsafe fix naming them.

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
this one (but a later `loss.backward()` on a loss built afresh after it, from
graph-free values through known modules and pure functions, cannot need this
graph: `analysis/fresh.py`), where GF001, GF003 or GF004 merge the call away
(their fix supersedes this one), when the call is inside a loop that reads a value built before it
(or carried from an earlier iteration, or a parameter read as a tensor) not
proven graph-free, in a class body, when `retain_graph` is not the literal `True` (nor
`retain_variables`, or when both are passed), and when the call passes
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
no nested function or lambda and does not use `locals()`/`eval`; no augmented
assignment updates in place a tensor that may come from outside the call
(`total += h` on a parameter or a view of one); in a loop, nothing comes in
from the caller (`def train(model, loader)`: a model keeping its hidden
state, a loader yielding tensors of one graph would need the graph). Otherwise
the fix is unsafe and the message names the call or statement and its line.
The function's own arguments are taken as data: a tensor argument carrying a
graph the caller backpropagates again later is not seen. `retain_variables=True`
raises TypeError on every supported torch, where the call without it runs: its
removal is always unsafe, so the user confirms the intent.

Module-level script code is checked as a function's body is: no later
backward in the module, in a loop nothing carried and every call of the loop
proven harmless (objects built before the loop that it only calls, steps or
iterates, `model = Net()`, are named in an unsafe fix, as parameters are). It runs once, so what it keeps matters only to code after it:
the fix is safe only under a top-level `if __name__ == "__main__":`, since code
outside the guard also runs for whoever imports the module (or, in a notebook,
before later cells), which may backpropagate through the graph again.
"""

from __future__ import annotations

import ast

from gradfix import prechecks
from gradfix.analysis.vocabulary import (
    BUILTIN_NAMES,
    BUILTINS_GRAPH_FREE,
    KEEPS_GRAPH_FREE,
    MODULE_LEAF_METHODS,
    PYTHON_VALUES,
    STEP_METHODS,
    VALUE_METHODS,
)

CODE = "GF005"
NAME = "needless-retain-graph"
SUMMARY = "`backward(retain_graph=True)` with no later backward in the function (or script): the graph is kept alive for nothing"
DEFAULT = True
FIXABLE = "sometimes"
REQUIRED_TOKENS = (b"backward(", prechecks.retain_keyword)
# Where a merge's fix (one forward, one backward) rewrites the retaining call, that fix is the
# better one: the retain goes with it. (The merge of `l1.backward(retain_graph=True)` and a later
# `l2.backward()` on a loss built afresh, the seed's shape, is GF001's or GF003's.)
SUPERSEDED_BY = ("GF001", "GF003", "GF004")
_CODE_METHODS = STEP_METHODS | MODULE_LEAF_METHODS

def might_match(data: bytes, text: bytes, state: dict) -> bool:
    """Precheck with CPython's parser: a function with a `.backward(retain_graph=True)` and no
    `backward`/`grad` call after it. (Files that use `retain_graph=True` are
    mostly the ones that backpropagate twice: without this, torch's own sources would all be
    parsed by libcst for nothing.)"""
    if prechecks.RETAIN_TRUE.search(text) is None:
        return False
    # One parse per file, shared by every precheck; the module and its functions are the scopes of
    # its statement lists (`prechecks.statement_blocks`, also GF004's: a walk of the statements
    # only, where `ast.walk` went through every expression, a third of a second on a big file).
    blocks = prechecks.statement_blocks(data, state)
    if blocks is None:
        return True  # left to the parser to report
    accelerate = prechecks.accelerate_possible(text)
    return any(_function_might_match(scope, accelerate) for scope in dict.fromkeys(scope for _, scope in blocks))


def _function_might_match(function, accelerate: bool) -> bool:
    """For a function or the module (its own statements: `_retaining_backwards` skips defs)."""
    retaining = list(_retaining_backwards(function.body, None, accelerate))
    if not retaining:
        return False  # most functions: no walk of their whole body
    calls = [n for n in ast.walk(function) if isinstance(n, ast.Call)]
    later = [
        (n, n.lineno) for n in calls
        if (isinstance(n.func, ast.Attribute) and n.func.attr in ("backward", "grad", "manual_backward"))
        or (isinstance(n.func, ast.Name) and n.func.id in ("backward", "grad", "manual_backward"))
    ]
    params = set()
    if not isinstance(function, ast.Module):
        params = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs} - {"self", "cls"}
        params |= {a.arg for a in (function.args.vararg, function.args.kwarg) if a is not None}
    assigned = [(n.lineno, t.id) for n in ast.walk(function) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    for call, loop in retaining:
        end = getattr(call, "end_lineno", call.lineno)
        needs = [c for c, at in later if at > end and not _maybe_fresh(c, end, assigned)]
        if not needs and (loop is None or _loop_might_match(loop, params)):
            return True
    return False


def _maybe_fresh(call, end: int, assigned) -> bool:
    """A later `name.backward(...)` (keywords only) whose `name` is assigned after line `end`:
    it may be a loss built afresh (`analysis.fresh`), which the rule does not count."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "backward" and isinstance(func.value, ast.Name) and not call.args):
        return False
    return any(end < line < call.lineno and name == func.value.id for line, name in assigned)


def _loop_might_match(loop, params) -> bool:
    """What `analysis.loops.loop_reasons(..., parameters=False)` lets through, necessarily: a `for`
    loop's iterable reads only parameters, `self` and builtins (`tqdm(loader)`), or calls only
    builtins, `torch.` functions and methods that keep or drop a graph (`range(n)`, `zip(xs, ys)`,
    `torch.randn(...)`, `x.detach()`; `graph_free`); and its body uses a parameter only as code
    (`model(x)`, `opt.step()`; `analysis.loops.loop_inputs`)."""
    if _reads_parameter_value(loop, params):
        return False
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        callees = {id(n.func) for n in ast.walk(loop.iter) if isinstance(n, ast.Call)}
        trusted = params | {"self", "cls"}
        values = [n.id for n in ast.walk(loop.iter) if isinstance(n, ast.Name) and id(n) not in callees]
        if any(name in trusted for name in values) and all(name in trusted or name in BUILTIN_NAMES for name in values):
            return True
        for node in ast.walk(loop.iter):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id not in BUILTINS_GRAPH_FREE and func.id not in PYTHON_VALUES:
                return False
            if isinstance(func, ast.Attribute) and func.attr not in KEEPS_GRAPH_FREE and func.attr not in VALUE_METHODS:
                if not ast.unparse(func).startswith(("torch.", "nn.", "optim.")):
                    return False
    return True


def _reads_parameter_value(loop, params) -> bool:
    """Whether the loop's body reads a parameter other than as a callee or the receiver of a
    stepping method (`loops._value_reads`)."""
    code = set()
    for node in ast.walk(loop):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                code.add(id(func))
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in _CODE_METHODS:
                code.add(id(func.value))
    iterable = {id(n) for n in ast.walk(loop.iter)} if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    return any(
        isinstance(n, ast.Name) and n.id in params and id(n) not in code and id(n) not in iterable for n in ast.walk(loop)
    )


def _retaining_backwards(body, loop, accelerate: bool):
    """(call, its innermost loop or None) for every retaining backward statement of `body`."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # a function of its own (the caller walks every function)
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            if (
                isinstance(call.func, ast.Attribute)
                and call.func.attr in ("backward", "manual_backward")
                # A tensor's positional argument is a `gradient`, not this rule's; the spellings
                # whose loss is an argument (`self.manual_backward(loss)`, `torch.autograd.backward(loss)`,
                # `accelerator.backward(loss)`) take one.
                and len(call.args) in prechecks.positional_losses(call.func, accelerate)
                and all(k.arg is not None and k.arg != "create_graph" for k in call.keywords)
                and any(k.arg in prechecks.RETAIN_KEYWORDS and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords)
            ):
                yield call, loop
        inner_loop = statement if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)) else loop
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from _retaining_backwards(inner, inner_loop if field == "body" else loop, accelerate)
        if isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _retaining_backwards(case.body, loop, accelerate)

# The visitor, named here and imported by the registry only for a file that passes the precheck:
# it needs libcst, which a run where no file is parsed never imports.
VISITOR = "gradfix.rules._gf005_needless_retain_graph_impl:Visitor"
