"""Property-based tests of GF001 (Hypothesis): generated instances of the pattern and its near misses.

Each generated snippet follows the `gradfix verify` protocol (module-level
leaf tensors as setup, a `step()`), with random names, coefficients
(integers, negative numbers, 0.5, `/ 2`), operand forms (names, attributes,
subscripts), keyword arguments, comments, blank lines, layout inside calls
(`x.detach ()`, `retain_graph = (True)`), nesting (module, function, method
of a class, `for` body, `if` body) and a callee drawn from parameter-free
functions the rule proves pure (`F.mse_loss`, `F.l1_loss`,
`F.smooth_l1_loss`, a module-level helper made of `torch.mean`/`abs`/`pow`).

For an instance: GF001 reports exactly it, at the second call, with a safe
fix; the prefilter keeps the file; after one fix the file is a fixed point
(check finds nothing, fix changes nothing); and executing the original and
the rewrite gives the same gradients and state (`verify_pair`, no timing).
For a near miss (an optimizer `step()`/`zero_grad()` or an in-place update
of an operand between the passes, no `retain_graph`, a different operand),
GF001 reports nothing.

Derandomized, with bounded examples, so the file runs in CI's budget.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gradfix import engine  # noqa: E402
from gradfix.options import LintOptions  # noqa: E402
from gradfix.rules import by_code  # noqa: E402

GF001 = by_code("GF001")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

SETTINGS = dict(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --------------------------------------------------------------------------- building blocks

RESERVED = set(keyword.kwlist) | {
    "torch", "F", "step", "self", "print", "range", "len", "True", "False", "None", "grad_scale",
    "abs", "sum", "min", "max", "list", "dict", "type", "object", "id", "input", "float", "int",
}

names = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(lambda s: s not in RESERVED)

WORDS = ["loss", "pull", "push", "codebook", "commit", "align", "the", "second", "pass", "note", "both", "heads"]
comment_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(lambda ws: "# " + " ".join(ws))

# (coefficient form, literal): how a loss is scaled; `none` means the bare call.
COEF_LITERALS = ["2", "3", "0.5", "2.5", "-1", "-2", "-0.5", "1e-1"]
DIVISORS = ["2", "4", "0.5", "-2"]
coefficients = st.one_of(
    st.just(("none", "")),
    st.just(("neg", "")),
    st.tuples(st.just("mul_left"), st.sampled_from(COEF_LITERALS)),
    st.tuples(st.just("mul_right"), st.sampled_from(COEF_LITERALS)),
    st.tuples(st.just("div"), st.sampled_from(DIVISORS)),
)

HELPER_BODIES = [
    "torch.mean((u - v) ** 2)",
    "torch.mean(torch.abs(u - v))",
    "torch.mean(torch.pow(u - v, 2))",
    "torch.abs(u - v).mean()",
]
CALLEES = ["F.mse_loss", "F.l1_loss", "F.smooth_l1_loss", "helper"]
NESTINGS = ["module", "function", "method", "for", "if"]
OPERANDS = ["name", "attribute", "subscript"]
NEAR_MISSES = ["step_between", "zero_grad_between", "inplace_between", "no_retain_graph", "different_operand"]


@dataclass
class Layout:
    detach: str = ".detach()"  # how `.detach()` is written
    retain: str = "retain_graph=True"
    blank_lines: List[int] = field(default_factory=list)  # statement indexes preceded by a blank line
    comments: List[Tuple[int, str]] = field(default_factory=list)  # (statement index, comment line)
    trailing: Optional[Tuple[int, str]] = None  # a trailing comment on one statement


@dataclass
class Case:
    source: str
    line: int  # where GF001 must report: the second call's start
    col: int
    description: str


def _scaled(form: Tuple[str, str], call: str) -> Tuple[str, int]:
    """The loss expression, and the offset of the call inside it."""
    kind, literal = form
    if kind == "none":
        return call, 0
    if kind == "neg":
        return "-" + call, 1
    if kind == "mul_left":
        prefix = f"{literal} * " if not literal.startswith("-") else f"({literal}) * "
        return prefix + call, len(prefix)
    if kind == "mul_right":
        return f"{call} * {literal}" if not literal.startswith("-") else f"{call} * ({literal})", 0
    return (f"{call} / {literal}" if not literal.startswith("-") else f"{call} / ({literal})"), 0


@st.composite
def layouts(draw, statements: int = 4) -> Layout:
    detach = draw(st.sampled_from([".detach()", ".detach()", ".detach( )", ".detach ()"]))
    retain = draw(st.sampled_from(["retain_graph=True", "retain_graph=True", "retain_graph = True", "retain_graph=(True)"]))
    blank = draw(st.lists(st.integers(0, statements - 1), max_size=2, unique=True))
    comments = draw(st.lists(st.tuples(st.integers(0, statements - 1), comment_text), max_size=2))
    trailing = draw(st.one_of(st.none(), st.tuples(st.integers(0, statements - 1), comment_text)))
    return Layout(detach, retain, blank, comments, trailing)


@st.composite
def snippets(draw, near_miss: Optional[str] = None) -> Case:
    """A protocol snippet holding one GF001 instance, or (with `near_miss`) one of its near misses."""
    taken = set()

    def fresh() -> str:
        name = draw(names.filter(lambda s: s not in taken))
        taken.add(name)
        return name

    callee_kind = draw(st.sampled_from(CALLEES))
    nesting = draw(st.sampled_from(NESTINGS))
    operand_form = draw(st.sampled_from(OPERANDS))
    keywords = draw(st.sampled_from(["positional", "keywords", "mixed"]))
    reduction = draw(st.sampled_from([None, '"mean"', '"sum"'])) if callee_kind != "helper" else None
    first_detaches_x = draw(st.booleans())
    inline = draw(st.sampled_from([False, False, True]))  # `f(...).backward(...)` without a name
    coef1, coef2 = draw(coefficients), draw(coefficients)
    layout = draw(layouts())
    second_retains = draw(st.booleans())
    same_name = not inline and draw(st.booleans())  # `loss = ...; loss.backward(...); loss = ...`
    read_later = draw(st.sampled_from([None, None, "first", "second"])) if not inline else None

    x, y, z = fresh(), fresh(), fresh()
    loss1, loss2 = fresh(), fresh()
    if same_name:
        loss2 = loss1
    history = fresh()
    helper = fresh()
    box, cls, obj, meth, opt = fresh(), fresh().capitalize(), fresh(), fresh(), fresh()

    head = ["import torch", "import torch.nn.functional as F", "", f"{history} = []"]
    # The operands: leaves created at module level (or in __init__ for self.attr).
    if operand_form == "name":
        head += [f"{v} = torch.randn(4, 3, requires_grad=True)" for v in (x, y, z)]
        ox, oy, oz = x, y, z
    elif operand_form == "subscript":
        head += [f"{v} = [torch.randn(4, 3, requires_grad=True) for _ in range(2)]" for v in (x, y, z)]
        ox, oy, oz = f"{x}[0]", f"{y}[1]", f"{z}[0]"
    else:
        if nesting == "method":
            ox, oy, oz = f"self.{x}", f"self.{y}", f"self.{z}"
        else:
            head += [f"class {cls}Box:", "    pass", "", "", f"{box} = {cls}Box()"]
            head += [f"{box}.{v} = torch.randn(4, 3, requires_grad=True)" for v in (x, y, z)]
            ox, oy, oz = f"{box}.{x}", f"{box}.{y}", f"{box}.{z}"
    if near_miss in ("step_between", "zero_grad_between"):
        leaves = [ox, oy] if not ox.startswith("self.") else []
        head.append(f"{opt} = torch.optim.SGD([{', '.join(leaves)}], lr=0.1)" if leaves else f"{opt} = None")
    if callee_kind == "helper":
        head += ["", "", f"def {helper}(u, v):", f"    return {draw(st.sampled_from(HELPER_BODIES))}", ""]
        callee = helper
    else:
        callee = callee_kind

    def call(a: str, b: str) -> str:
        first, second = ("input", "target") if callee_kind != "helper" else ("u", "v")
        if keywords == "keywords":
            args = f"{first}={a}, {second}={b}"
        elif keywords == "mixed":
            args = f"{a}, {second}={b}"
        else:
            args = f"{a}, {b}"
        if reduction:
            args += f", reduction={reduction}"
        return f"{callee}({args})"

    d = layout.detach
    if first_detaches_x:
        call1, call2 = call(ox + d, oy), call(ox, oy + d)
    else:
        call1, call2 = call(ox, oy + d), call(ox + d, oy)
    if near_miss == "different_operand":
        call2 = call(oz, oy + d) if first_detaches_x else call(oz + d, oy)
    expr1, _ = _scaled(coef1, call1)
    expr2, call2_offset = _scaled(coef2, call2)
    retain1 = "" if near_miss == "no_retain_graph" else layout.retain
    retain2 = "retain_graph=True" if second_retains else ""

    # The statements of the pattern: (text, offset of the second call in it or None).
    body: List[Tuple[str, Optional[int]]] = []
    if inline:
        body.append((f"({expr1}).backward({retain1})", None))
    else:
        body.append((f"{loss1} = {expr1}", None))
        body.append((f"{loss1}.backward({retain1})", None))
    if near_miss == "step_between":
        body.append((f"{opt}.step()", None))
    elif near_miss == "zero_grad_between":
        body.append((f"{opt}.zero_grad()", None))
    elif near_miss == "inplace_between":
        body.append((f"{ox}.add_(0.0)", None))
    if inline:
        body.append((f"({expr2}).backward({retain2})", 1 + call2_offset))
    else:
        body.append((f"{loss2} = {expr2}", len(f"{loss2} = ") + call2_offset))
        body.append((f"{loss2}.backward({retain2})", None))
    if read_later:
        # The loss value is read after the passes: the rewrite must rebuild it.
        body.append((f"{history}.append({loss1 if read_later == 'first' and not same_name else loss2}.item())", None))

    # Comments and blank lines, anywhere between the pattern's statements.
    lines: List[Tuple[str, Optional[int]]] = []
    for index, (text, offset) in enumerate(body):
        if index in layout.blank_lines:
            lines.append(("", None))
        lines.extend((c, None) for i, c in layout.comments if i == index)
        if layout.trailing is not None and layout.trailing[0] == index:
            text = f"{text}  {layout.trailing[1]}"
        lines.append((text, offset))

    out = list(head) + ["", ""]
    indent = ""
    if nesting == "module":
        pass
    elif nesting == "method":
        out += [f"class {cls}:", "    def __init__(self):"]
        if operand_form == "attribute":
            out += [f"        self.{v} = torch.randn(4, 3, requires_grad=True)" for v in (x, y, z)]
        else:
            out += ["        pass"]
        out += ["", f"    def {meth}(self):"]
        indent = "        "
    else:
        out.append("def step():")
        indent = "    "
        if nesting == "for":
            out.append(f"{indent}for _ in range({draw(st.integers(1, 2))}):")
            indent += "    "
        elif nesting == "if":
            out.append(f"{indent}if {draw(st.sampled_from(['True', 'len([1]) == 1', 'not False']))}:")
            indent += "    "
    expected = None
    for text, offset in lines:
        out.append(indent + text if text else "")
        if offset is not None:
            expected = (len(out), len(indent) + offset + 1)
    if nesting == "module":
        out += ["", "", "def step():", "    pass"]
    elif nesting == "method":
        out += ["", "", f"{obj} = {cls}()", "", "", "def step():", f"    {obj}.{meth}()"]
    source = "\n".join(out) + "\n"
    assert expected is not None
    description = (
        f"callee={callee_kind} nesting={nesting} operands={operand_form} keywords={keywords} "
        f"reduction={reduction} inline={inline} coefs={coef1},{coef2} same_name={same_name} "
        f"read_later={read_later} near_miss={near_miss}"
    )
    return Case(source, expected[0], expected[1], description)


def gf001(source: str, **kwargs):
    return engine.lint_bytes(source.encode("utf-8"), "snippet.py", LintOptions(("GF001",), **kwargs))


def explain(case: Case, extra: str = "") -> str:
    numbered = "\n".join(f"{i:3}| {line}" for i, line in enumerate(case.source.splitlines(), 1))
    return f"{case.description}\n{extra}\n{numbered}"


# --------------------------------------------------------------------------- properties


@settings(max_examples=60, **SETTINGS)
@given(snippets())
def test_instance_is_found_exactly_once_at_the_second_call(case):
    compile(case.source, "snippet.py", "exec")  # the generator writes valid Python
    assert engine.prefilter(case.source.encode(), [GF001]), explain(case, "the prefilter skipped a real instance")
    result = gf001(case.source)
    assert result.error is None, explain(case, result.error)
    got = [(f.line, f.col) for f in result.findings]
    assert got == [(case.line, case.col)], explain(case, f"expected {[(case.line, case.col)]}, got {got}")
    if " nesting=for operands=attribute " in case.description and not result.findings[0].fixable:
        # The known reach gap `test_one_fix_reaches_a_fixed_point_with_equal_gradients` names: a
        # module-level object of the file's class whose attributes are leaves, read in a loop (drawn
        # only in some runs: the fresh-clone CI of stop 32 drew it here).
        assert "is built before the loop and read in it" in result.findings[0].message, explain(case, result.findings[0].message)
        return
    assert result.findings[0].fixable, explain(case, "unsafe fix: " + result.findings[0].message)


@settings(max_examples=40, **SETTINGS)
@given(snippets())
def test_one_fix_reaches_a_fixed_point_with_equal_gradients(case):
    pytest.importorskip("torch")
    from gradfix.harness import verify_pair

    fixed = gf001(case.source, fix=True)
    if " nesting=for operands=attribute " in case.description and fixed.fixed is None:
        # A known reach gap (README, "known gaps after round 9"): an object of the file's class built
        # at module level, its attributes leaves, read in a loop, is not proven graph-free. The fix
        # must then be offered as unsafe for that reason, naming the object; a safe one is checked
        # for exactness below like any other.
        [finding] = fixed.findings
        assert finding.fix is not None and not finding.fix.safe, explain(case, repr(fixed))
        assert "is built before the loop and read in it" in finding.fix.unsafe_reason, explain(case, repr(fixed))
        return
    assert fixed.error is None and fixed.fixed is not None and fixed.remaining == [], explain(case, repr(fixed))
    rewritten = fixed.fixed.decode("utf-8")
    compile(rewritten, "rewritten.py", "exec")
    again = gf001(rewritten)
    assert again.error is None and again.findings == [], explain(case, f"check after fix: {again.findings}\n{rewritten}")
    refix = gf001(rewritten, fix=True)
    assert refix.fixed is None, explain(case, f"a second fix changed the file:\n{rewritten}")
    report = verify_pair(case.source, rewritten, filename="snippet.py", device="cpu", repeat=0)
    assert report.error is None and report.ok, explain(
        case, f"verify: {report.error}\n" + "\n".join(map(str, report.rows)) + f"\nrewritten:\n{rewritten}"
    )


@settings(max_examples=60, **SETTINGS)
@given(st.sampled_from(NEAR_MISSES).flatmap(lambda kind: snippets(near_miss=kind)))
def test_near_misses_are_not_reported(case):
    compile(case.source, "snippet.py", "exec")
    result = gf001(case.source)
    assert result.error is None, explain(case, result.error)
    assert result.findings == [], explain(case, f"got {[(f.line, f.col, f.message) for f in result.findings]}")


# --------------------------------------------------------------------------- prefilter soundness

_EXPECT = re.compile(r"^#\s*expect:\s*(.*)$", re.MULTILINE)
_CODE = re.compile(r"\bGF\d{3}\b")


def _fixture_expectations():
    for path in sorted(FIXTURES.rglob("*.py")):
        if path.name.endswith(".fixed.py"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        codes = {c for m in _EXPECT.finditer(text) for c in _CODE.findall(m.group(1))}
        for code in sorted(codes):
            yield pytest.param(path, code, id=f"{path.parent.parent.name}/{path.parent.name}/{path.stem}-{code}")


@pytest.mark.parametrize("path,code", list(_fixture_expectations()))
def test_prefilter_keeps_every_fixture_a_rule_reports(path, code):
    rule = by_code(code)
    if rule is None:
        pytest.skip(f"{code} is not a registered rule")
    assert engine.prefilter(path.read_bytes(), [rule]), f"the prefilter skips {path}, where {code} is expected"


LAYOUTS = [
    # Whatever Python allows between tokens must not hide an instance from the prefilter.
    ("{v}.detach ()", "{l}.backward ({kw})"),
    ("{v} .detach( )", "{l} . backward({kw})"),
    ("{v}.\\\n        detach()", "{l}.backward(\n        {kw}\n    )"),
    ("({v}  # a comment\n         .detach())", "({l}  # another\n     .backward({kw}))"),
]


@pytest.mark.parametrize("detach,backward", LAYOUTS)
def test_prefilter_keeps_instances_in_any_token_layout(detach, backward):
    source = (
        "import torch\nimport torch.nn.functional as F\n\n"
        "x = torch.randn(3, requires_grad=True)\ny = torch.randn(3, requires_grad=True)\n\n\n"
        "def step():\n"
        f"    l1 = F.mse_loss({detach.format(v='x')}, y)\n"
        f"    {backward.format(l='l1', kw='retain_graph = (True)')}\n"
        f"    l2 = -F.mse_loss(x, {detach.format(v='y')})\n"
        f"    {backward.format(l='l2', kw='')}\n"
    )
    compile(source, "layout.py", "exec")
    data = source.encode()
    assert b".detach(" not in data or b".backward(" not in data or "comment" in source
    assert engine.prefilter(data, [GF001]) == [GF001]
    direct = engine._run(engine._parse(data), "snippet.py", [GF001])[0]
    assert len(direct) == 1 and gf001(source).findings == direct


def test_prefilter_reads_files_in_their_declared_encoding():
    pattern = (
        "l1 = F.mse_loss(x.detach(), y)\nl1.backward(retain_graph=True)\n"
        "l2 = -F.mse_loss(x, y.detach())\nl2.backward()\n"
    )
    source = "# -*- coding: latin-1 -*-\n# caf\xe9\nimport torch.nn.functional as F\n" + pattern
    assert engine.prefilter(source.encode("latin-1"), [GF001]) == [GF001]
    assert len(gf001(source).findings) == 1


GF004 = by_code("GF004")

SUM_BACKWARDS = [
    # Every spelling of one backward of a sum that GF004 reads: the prefilter's text test
    # (`).backward(`) and its statement walk must let each through.
    "(loss1 + loss2).backward()",
    "(loss1 +\n        loss2  # both\n    ).backward()",
    "(loss1 + loss2) \\\n        .backward()",
    "scaler.scale(loss1 - -loss2).backward()",
]


@pytest.mark.parametrize("backward", SUM_BACKWARDS)
@pytest.mark.parametrize("where", ["function", "method", "loop"])
def test_prefilter_keeps_gf004_backward_of_sum(backward, where):
    body = (
        "s = F.mse_loss(x, y.detach())\n"
        "p = F.mse_loss(x.detach(), y)\n"
        "loss1 = rec + s\n"
        "loss2 = rec + p\n"
        f"{backward}\n"
    )
    if where == "function":
        source = "def step(x, y, rec, scaler):\n" + _indent(body, 1)
    elif where == "method":
        source = "class T:\n    def step(self, x, y, rec, scaler):\n" + _indent(body, 2)
    else:
        source = "def step(batches, rec, scaler):\n    for x, y in batches:\n" + _indent(body, 2)
    source = "import torch.nn.functional as F\n\n\n" + source
    compile(source, "sum.py", "exec")
    data = source.encode()
    direct = engine._run(engine._parse(data), "sum.py", [GF004])[0]
    assert len(direct) == 1, source
    assert engine.prefilter(data, [GF004]) == [GF004]


def test_prefilter_skips_a_backward_of_sum_whose_function_has_no_detach():
    # The two `.detach()` calls are in another function: GF004 cannot match, and the file is not parsed by libcst.
    source = (
        "import torch.nn.functional as F\n\n\n"
        "def terms(x, y):\n    return F.mse_loss(x, y.detach()), F.mse_loss(x.detach(), y)\n\n\n"
        "def step(loss1, loss2):\n    (loss1 + loss2).backward()\n"
    )
    assert engine.prefilter(source.encode(), [GF004]) == []


def _indent(text: str, levels: int) -> str:
    pad = "    " * levels
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


ONE_LOSS_LOOPS = {
    # GF004's one-loss form: the pair comes through a loop before one plain backward.
    "detach_in_loop": (
        "",
        "        s += kl(series[u], prior[u].detach())\n        p += kl(series[u].detach(), prior[u])\n",
    ),
    "detach_in_helper": (
        "def assoc(a, b):\n    return kl(a, b.detach()) + kl(b.detach(), a)\n\n\n",
        "        s += assoc(series[u], prior[u])\n        p += assoc(prior[u], series[u])\n",
    ),
}


@pytest.mark.parametrize("name", sorted(ONE_LOSS_LOOPS))
@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "in_with"])
def test_prefilter_keeps_gf004_one_loss_through_a_loop(name, wrapped):
    helper, body = ONE_LOSS_LOOPS[name]
    loop = "    for u in range(len(prior)):\n" + body
    if wrapped:
        loop = "    with torch.autocast('cpu', enabled=False):\n" + _indent(loop, 1)
    source = (
        "import torch\n\n\n"
        "def kl(p, q):\n    return torch.mean(p * (torch.log(p) - torch.log(q)))\n\n\n"
        + helper
        + "def step(series, prior):\n    s, p = 0.0, 0.0\n"
        + loop
        + "    loss = p - s\n    loss.backward()\n"
    )
    compile(source, "loop.py", "exec")
    data = source.encode()
    direct = engine._run(engine._parse(data), "loop.py", [GF004])[0]
    assert len(direct) == (2 if name == "detach_in_helper" else 1), source
    assert engine.prefilter(data, [GF004]) == [GF004]
