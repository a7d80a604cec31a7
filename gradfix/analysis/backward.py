"""`backward` calls in a straight-line block: what they backpropagate, and how.

Shared by the rules that look at backward passes (GF001, GF003).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from gradfix.analysis.between import stores_into
from gradfix.analysis.exprs import strip_parens


@dataclass
class BackwardCall:
    """One `loss.backward(...)` or `scaler.scale(loss).backward(...)` statement."""

    index: int  # position of the statement in its block
    statement: cst.SimpleStatementLine
    call: cst.Call  # the `.backward(...)` call itself
    receiver: cst.BaseExpression  # the loss (inside `scaler.scale(...)` when scaled); a node of the tree
    scaler: Optional[cst.BaseExpression]
    keywords: Dict[str, cst.BaseExpression] = field(default_factory=dict)
    # Positional arguments or `**kwargs`: a `gradient` we cannot see through.
    opaque_args: bool = False

    @property
    def retains_graph(self) -> bool:
        value = self.keywords.get("retain_graph")
        return isinstance(value, cst.Name) and value.value == "True"

    @property
    def plain(self) -> bool:
        """First order, whole-graph, unit gradient (DESIGN §1, E7)."""
        return not self.opaque_args and not set(self.keywords) - {"retain_graph"}

    @property
    def loss_name(self) -> Optional[str]:
        loss = strip_parens(self.receiver)
        return loss.value if isinstance(loss, cst.Name) else None


def backward_call(block: Sequence[cst.BaseStatement], index: int) -> Optional[BackwardCall]:
    statement = block[index]
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return None
    call = small.value
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"):
        return None
    keywords: Dict[str, cst.BaseExpression] = {}
    opaque = False
    for arg in call.args:
        if arg.keyword is None or arg.star:
            opaque = True
        else:
            keywords[arg.keyword.value] = arg.value
    receiver = call.func.value
    scaler = None
    loss = strip_parens(receiver)  # for type checks only: children keep their identity
    if (
        isinstance(loss, cst.Call)
        and isinstance(loss.func, cst.Attribute)
        and loss.func.attr.value == "scale"
        and len(loss.args) == 1
        and loss.args[0].keyword is None
        and not loss.args[0].star
    ):
        scaler = loss.func.value
        receiver = loss.args[0].value
    return BackwardCall(index, statement, call, receiver, scaler, keywords, opaque)


def backward_calls(block: Sequence[cst.BaseStatement]) -> List[BackwardCall]:
    return [c for c in (backward_call(block, i) for i in range(len(block))) if c is not None]


def single_assign(statement: cst.BaseStatement) -> Optional[cst.Assign]:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            return small
    return None


def definition(block: Sequence[cst.BaseStatement], index: int, name: str) -> Optional[Tuple[int, cst.Assign]]:
    """The nearest `name = ...` above `index` in the block, if nothing else binds `name` between."""
    for j in range(index - 1, -1, -1):
        assign = single_assign(block[j])
        if assign is not None and isinstance(assign.targets[0].target, cst.Name):
            if assign.targets[0].target.value == name:
                return j, assign
        if stores_into(block[j], [(name,)]) is not None:
            return None
    return None
