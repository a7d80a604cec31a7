"""GF005 steps: a helper whose `backward(retain_graph=True)` may or may not be needed later.

The helper backpropagates its loss with the graph retained, then may hand a tensor of that graph
out of the call (`ESCAPES`: returned, stored in a parameter, a global, a container, updated into
a parameter in place, captured by a closure) or keep it across loop iterations (`LOOPS`: a
parameter carried through a recurrent cell, a value built before the loop), or read a graph that
outlives the call (a module-level tensor, an attribute of a module-level object, a closure's). `step()` then
backpropagates through what came out where there is something. A GF005 fix offered as safe must
leave that later backward working: the check executes both versions.
"""

from __future__ import annotations

from typing import Dict, Tuple

SETUP = """
enc = nn.Linear(3, 3)
cell = nn.GRUCell(3, 3)
xin = torch.randn(2, 3)
G = None
# Graphs built once, outliving every call (`retain_loop=module_graph`, `attribute_graph`).
HG = enc(xin)
box.hg = enc(xin)
"""

# (what the helper does after its backward, what `step()` does with the call's result);
# `{call}` is the helper's call.
ESCAPES: Dict[str, Tuple[str, str]] = {
    "none": ("", "{call}"),
    "log_value": ("log.append(loss.item())", "{call}"),
    "return": ("return h", "out = {call}\nout.sum().backward()"),
    "return_value": ("return float(h.sum())", "{call}"),
    "param_aug": ("total += h", "{call}\ntotal.sum().backward()"),
    "param_alias_aug": ("t = total\nt += h", "{call}\ntotal.sum().backward()"),
    "param_view_aug": ("t = total.view(-1)\nt += h.view(-1)", "{call}\ntotal.sum().backward()"),
    "param_add_": ("total.add_(h)", "{call}\ntotal.sum().backward()"),
    "param_copy_": ("total.copy_(h)", "{call}\ntotal.sum().backward()"),
    "param_setitem": ("total[:] = h", "{call}\ntotal.sum().backward()"),
    "param_append": ("outs.append(h)", "{call}\nouts[-1].sum().backward()"),
    "param_dict": ('store["h"] = h', '{call}\nstore["h"].sum().backward()'),
    "global_attr": ("box.h = h", "{call}\nbox.h.sum().backward()"),
    "global_stmt": ("global G\nG = h", "{call}\nG.sum().backward()"),
    "closure": ("return lambda: h.sum().backward()", "fn = {call}\nfn()"),
    "local_aug": ("t = h * 1.0\nt += h\nlog.append(float(t.sum()))", "{call}"),
    # A later backward in the helper: on a loss built afresh (no need for the graph), or through it.
    "fresh_later": ("z2 = torch.randn(2, 3)\nh2 = enc(z2)\nloss2 = h2.pow(2).sum()\nloss2.backward()", "{call}"),
    "stale_later": ("loss2 = h.pow(3).sum()\nloss2.backward()", "{call}"),
}

# The helper's forward and backward; `{backward}` is the backward statement.
LOOPS: Dict[str, str] = {
    "straight": "h = enc(xin)\nloss = h.pow(2).sum()\n{backward}",
    "loop_fresh": "for it in range(2):\n    h = enc(xin)\n    loss = h.pow(2).sum()\n    {backward}",
    "loop_carried_param": "for it in range(2):\n    state = cell(xin, state)\n    h = state\n    loss = h.pow(2).sum()\n    {backward}",
    "loop_built_before": "h = enc(xin)\nfor it in range(2):\n    loss = (h * (it + 1.0)).pow(2).sum()\n    {backward}",
    "earlier_backward": "h0 = enc(xin)\nh0.pow(2).sum().backward()\nh = enc(xin)\nloss = h.pow(2).sum()\n{backward}",
    "loop_carried_local": "s = torch.zeros(2, 3)\nfor it in range(2):\n    s = cell(xin, s)\n    h = s\n    loss = h.pow(2).sum()\n    {backward}",
    # A graph that outlives one call (stop 21's review): backpropagated again by the next call
    # (`calls=twice`) or, for the closure, by its second call within this one.
    "module_graph": "h = HG * 1.0\nloss = h.pow(2).sum()\n{backward}",
    "attribute_graph": "h = box.hg * 1.0\nloss = h.pow(2).sum()\n{backward}",
    "closure_twice": "h = enc(xin)\ndef inner():\n    loss = h.pow(2).sum()\n    {backward}\ninner()\ninner()\nloss = h.pow(2).sum()",
}

SPELLINGS = {
    "method": "loss.backward(retain_graph=True)",
    "autograd": "torch.autograd.backward(loss, retain_graph=True)",
}


# Script code (module level, under `if __name__ == "__main__":`, which `check.run` opens to execute
# it): what follows the backward there, at the guard's level.
SCRIPT_SETUP = """
total = torch.zeros(2, 3)
outs = []
state = torch.zeros(2, 3)


def finish():
    box.h.sum().backward()
"""
SCRIPT_AFTER: Dict[str, str] = {
    "none": "",
    "log_value": "log.append(loss.item())",
    "later_backward": "h.sum().backward()",
    "fresh_later": ESCAPES["fresh_later"][0],
    "stale_later": ESCAPES["stale_later"][0],
    "stored_then_function": "box.h = h\nfinish()",
    "param_add_": "total.add_(h)\ntotal.sum().backward()",
    "append_then_backward": "outs.append(h)\nouts[-1].sum().backward()",
}


def retain_step(pick, head: str) -> str:
    """The source of one GF005 step; `pick(key, options)` records the choice."""
    if pick("where", ["function", "script"], prefer=["function"]) == "script":
        return _script_step(pick, head)
    escape = pick("escape", list(ESCAPES), prefer=["none", "log_value", "return_value", "local_aug"])
    loop = pick("retain_loop", list(LOOPS), prefer=["straight", "loop_fresh"])
    spelling = pick("spelling", list(SPELLINGS))
    calls = pick("calls", ["once", "twice"])
    inside, after = ESCAPES[escape]
    body = LOOPS[loop].replace("{backward}", SPELLINGS[spelling])
    if inside:
        if not body.startswith("for "):
            body += "\n" + inside
        else:  # inside the loop, after the backward: every iteration hands its graph out
            body += "\n" + "\n".join("    " + line for line in inside.splitlines())
    helper = ["def helper(total, outs, store, state):"] + ["    " + line for line in body.splitlines()]
    call = "helper(total, outs, store, torch.zeros(2, 3))"
    step = ["def step():", "    total = torch.zeros(2, 3)", "    outs = []", "    store = {}"]
    for _ in range(2 if calls == "twice" else 1):
        step += ["    " + line for line in after.replace("{call}", call).splitlines()]
    source = "\n".join([head, SETUP, "", *helper, "", "", *step]) + "\n"
    return source


def _script_step(pick, head: str) -> str:
    """Module-level code: the backward and what follows it, under the main guard or not."""
    after = pick("script_after", list(SCRIPT_AFTER), prefer=["none", "log_value", "fresh_later"])
    loop = pick("retain_loop", list(LOOPS), prefer=["straight", "loop_fresh"])
    spelling = pick("spelling", list(SPELLINGS))
    guard = pick("guard", ["main", "none"], prefer=["main"])
    body = LOOPS[loop].replace("{backward}", SPELLINGS[spelling]) + ("\n" + SCRIPT_AFTER[after] if SCRIPT_AFTER[after] else "")
    if guard == "main":
        body = 'if __name__ == "__main__":\n' + "\n".join("    " + line for line in body.splitlines())
    return "\n".join([head, SETUP, SCRIPT_SETUP, "", body]) + "\n"
