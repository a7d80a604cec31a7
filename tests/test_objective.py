"""gradfix.analysis.objective (the expansion of a backward run's losses) and GF004 on inline sources.

The expansion tests parse a `step()` body and check the exact coefficient of
every term (identified by its source text) in every loss; the rule tests
check positions, messages and exact rewrites; the executed tests run original
and rewrite through gradfix.harness and compare every parameter gradient.
"""

from __future__ import annotations

import textwrap
from fractions import Fraction

import libcst as cst
import pytest

from gradfix.analysis.backward import backward_calls
from gradfix.analysis.linear import ONE, Coef, LoopCount
from gradfix.analysis.objective import Lin, expand
from gradfix.engine import lint_bytes
from gradfix.options import LintOptions
from gradfix.rules import select

# ---------------------------------------------------------------- expansion helpers


class Expanded:
    """A `step()` body expanded: coefficients and taints by the terms' source text."""

    def __init__(self, src: str) -> None:
        self.module = cst.parse_module(textwrap.dedent(src))
        fn = next(s for s in self.module.body if isinstance(s, cst.FunctionDef) and s.name.value == "step")
        self.block = fn.body.body
        self.calls = backward_calls(self.block)
        self.expansion = expand(self.block, {c.index for c in self.calls})

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node).strip()

    def term_texts(self) -> list[str]:
        return [self.code(t.call) for t in self.expansion.terms.values()]

    def term(self, text: str):
        found = [t for t in self.expansion.terms.values() if self.code(t.call) == text]
        assert len(found) == 1, (text, self.term_texts())
        return found[0]

    def parts(self, n: int) -> list[tuple[str, Lin]]:
        """The summands of the n-th backward call's loss."""
        return [(self.code(node), lin) for node, lin in self.expansion.losses[self.calls[n].index]]

    def lin(self, n: int, part: int = 0) -> Lin:
        return self.parts(n)[part][1]

    def coefs(self, n: int, part: int = 0) -> dict[str, Coef]:
        terms = self.expansion.terms
        found = {self.code(terms[k].call): c for k, c in self.lin(n, part).terms}
        assert len(found) == len(self.lin(n, part).terms), "two terms with one source text"
        return found

    def rendered(self, n: int, part: int = 0) -> dict[str, str]:
        return {text: c.render() for text, c in self.coefs(n, part).items()}

    def tainted(self, n: int, part: int = 0) -> set[str]:
        """Source text of the tainted calls (terms, or calls an unfollowed statement read)."""
        nodes: dict[int, cst.CSTNode] = {}

        class Collect(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                nodes[id(node)] = node

        self.module.visit(Collect())
        return {self.code(nodes[k]) if k in nodes else f"<unknown {k}>" for k in self.lin(n, part).tainted}


def c(value, num=(), den=()) -> Coef:
    return Coef.of(Fraction(value), tuple(num), tuple(den))


CANONICAL = """
def step():
    rec = criterion(out, inp)
    s_loss, p_loss = 0.0, 0.0
    for i in range(len(series)):
        s_loss += torch.mean(kl(series[i], prior[i].detach()))
        p_loss += torch.mean(kl(series[i].detach(), prior[i]))
    s_loss = s_loss / len(series)
    p_loss /= len(series)
    loss1 = rec - k * s_loss
    loss2 = rec + self.k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
"""

T1 = "torch.mean(kl(series[i], prior[i].detach()))"
T2 = "torch.mean(kl(series[i].detach(), prior[i]))"


# ---------------------------------------------------------------- 1. expansion


def test_plain_assignment_with_number_coefficients():
    e = Expanded(
        """
        def step():
            loss1 = rec + 2 * f(a, b.detach())
            loss2 = rec - f(a.detach(), b) / 4
            loss1.backward(retain_graph=True)
            loss2.backward()
        """
    )
    assert e.rendered(0) == {"f(a, b.detach())": "2.0"}
    assert e.rendered(1) == {"f(a.detach(), b)": "-0.25"}
    assert e.coefs(1) == {"f(a.detach(), b)": c(Fraction(-1, 4))}
    assert e.lin(0).tainted == frozenset() and e.lin(1).tainted == frozenset()


def test_augmented_add_and_subtract():
    e = Expanded(
        """
        def step():
            l1 = rec
            l1 += f(a, b.detach())
            l1 -= 3 * g(c.detach())
            l1 += -0.5 * h(c, d.detach())
            l1.backward()
        """
    )
    assert e.rendered(0) == {"f(a, b.detach())": "1.0", "g(c.detach())": "-3.0", "h(c, d.detach())": "-0.5"}
    assert e.coefs(0)["f(a, b.detach())"] == ONE


def test_acc_equals_acc_plus_a_minus_b_top_level_and_in_loop():
    e = Expanded(
        """
        def step():
            acc = 0.0
            acc = acc + h(u, v.detach()) - 2 * h(u.detach(), v)
            tot = 0.0
            for x in xs:
                tot = tot + f(x, y.detach()) - 0.5 * f(x.detach(), y)
            acc.backward(retain_graph=True)
            tot.backward()
        """
    )
    assert e.rendered(0) == {"h(u, v.detach())": "1.0", "h(u.detach(), v)": "-2.0"}
    assert e.rendered(1) == {"f(x, y.detach())": "1.0", "f(x.detach(), y)": "-0.5"}
    assert e.lin(1).tainted == frozenset()


def test_tuple_assignment_is_simultaneous():
    e = Expanded(
        """
        def step():
            s, p = f(a, b.detach()), 0.5 * f(a.detach(), b)
            s, p = p, s
            s *= lam
            p /= 4
            q = rec
            q -= s
            q = -(-q)
            q.backward(retain_graph=True)
            (p - 2 * q).backward()
        """
    )
    assert e.rendered(0) == {"f(a.detach(), b)": "-0.5 * lam"}
    assert e.parts(1)[0][0] == "p" and e.parts(1)[1][0] == "2 * q"
    assert e.rendered(1, 0) == {"f(a, b.detach())": "0.25"}
    # the second summand enters with a minus sign: -(2 * (-0.5 * lam)) = lam
    assert e.rendered(1, 1) == {"f(a.detach(), b)": "lam"}


def test_canonical_loop_len_divisor_name_and_attribute():
    e = Expanded(CANONICAL)
    assert e.rendered(0) == {T1: "-k / len(series)"}
    assert e.rendered(1) == {T2: "self.k / len(series)"}
    assert e.coefs(0)[T1] == c(-1, ("k",), ("len(series)",))
    assert e.coefs(1)[T2] == c(1, ("self.k",), ("len(series)",))
    assert set(e.expansion.carriers) == {"s_loss", "p_loss", "loss1", "loss2"}


def test_mul_and_div_augassign_by_coefficients():
    e = Expanded(
        """
        def step():
            s = f(a, b.detach())
            s *= 0.5
            s *= lam
            s /= n_items
            s = s / 3
            s.backward()
        """
    )
    assert e.rendered(0) == {"f(a, b.detach())": "1 / 6 * lam / n_items"}
    assert e.coefs(0)["f(a, b.detach())"] == c(Fraction(1, 6), ("lam",), ("n_items",))


def test_unary_minus():
    e = Expanded(
        """
        def step():
            s = f(a, b.detach())
            p = g(a.detach(), b)
            loss1 = -(k * s) + rec
            loss2 = -(-p) - -s
            loss1.backward(retain_graph=True)
            loss2.backward()
        """
    )
    assert e.rendered(0) == {"f(a, b.detach())": "-k"}
    assert e.rendered(1) == {"g(a.detach(), b)": "1.0", "f(a, b.detach())": "1.0"}


LIST_FORMS = """
def step():
    lst = []
    for s, p in zip(series, prior):
        lst.append(kl(s, p.detach()) - 2 * kl(s.detach(), p))
    a = torch.stack(lst).mean()
    b = torch.mean(torch.stack(lst))
    c = sum(lst) / len(lst)
    d = sum(lst)
    a.backward(retain_graph=True)
    b.backward(retain_graph=True)
    c.backward(retain_graph=True)
    d.backward(retain_graph=True)
    (torch.stack(lst).mean() - sum(lst) / len(lst)).backward()
"""


def test_list_append_reductions():
    e = Expanded(LIST_FORMS)
    mean = e.coefs(0)
    assert set(mean) == {"kl(s, p.detach())", "kl(s.detach(), p)"}
    (count,) = mean["kl(s, p.detach())"].symbols()
    assert isinstance(count, LoopCount)  # the loop's number of iterations
    assert mean["kl(s, p.detach())"] == c(1, (), (count,))
    assert mean["kl(s.detach(), p)"] == c(-2, (), (count,))
    # torch.mean(torch.stack(lst)) and sum(lst) / len(lst) are the same mean
    assert e.coefs(1) == mean
    assert e.coefs(2) == mean
    # times the loop count, the symbol cancels: back to the per-iteration sum
    assert {t: k * c(1, (count,)) for t, k in e.coefs(2).items()} == e.coefs(3)
    assert e.rendered(3) == {"kl(s, p.detach())": "1.0", "kl(s.detach(), p)": "-2.0"}
    # the ratio of the two terms within one mean has no loop-count symbol left
    ratio = mean["kl(s.detach(), p)"] * mean["kl(s, p.detach())"].inverse()
    assert ratio == c(-2) and not any(s.startswith("#") for s in ratio.symbols())


def test_stack_mean_minus_sum_over_len_is_exactly_zero():
    e = Expanded(LIST_FORMS)
    assert [text for text, _ in e.parts(4)] == ["torch.stack(lst).mean()", "sum(lst) / len(lst)"]
    total = e.lin(4, 0) + e.lin(4, 1)
    assert total.terms == () and total.tainted == frozenset()


def test_with_body_terms_carry_the_with_context():
    e = Expanded(
        """
        def step():
            s = 0.0
            with torch.autocast("cpu"):
                for x in xs:
                    s += f(x, b.detach())
                t = f(a, b.detach())
            u = f(a.detach(), b)
            loss = s + t + u
            loss.backward()
        """
    )
    with_node = e.block[1]
    loop = with_node.body.body[0]
    assert isinstance(with_node, cst.With) and isinstance(loop, cst.For)
    assert e.term("f(x, b.detach())").context == (with_node, loop)
    assert e.term("f(a, b.detach())").context == (with_node,)
    assert e.term("f(a.detach(), b)").context == ()
    assert e.term("f(x, b.detach())").top == 1 and e.term("f(a.detach(), b)").top == 2
    assert e.rendered(0) == {"f(x, b.detach())": "1.0", "f(a, b.detach())": "1.0", "f(a.detach(), b)": "1.0"}


def test_summed_backward_gives_one_entry_per_summand():
    e = Expanded(
        """
        def step():
            loss1 = rec - k * f(a, b.detach())
            loss2 = rec + k * f(a.detach(), b)
            (loss1 - (loss2 + 0.5 * g(c.detach()))).backward()
        """
    )
    assert [text for text, _ in e.parts(0)] == ["loss1", "loss2", "0.5 * g(c.detach())"]
    assert e.rendered(0, 0) == {"f(a, b.detach())": "-k"}
    assert e.rendered(0, 1) == {"f(a.detach(), b)": "-k"}
    assert e.rendered(0, 2) == {"g(c.detach())": "-0.5"}


def test_value_reads_contribute_nothing():
    e = Expanded(
        """
        def step():
            s = f(a, b.detach())
            p = f(a.detach(), b)
            logged = s.item()
            frozen = s.detach()
            loss2 = p + frozen * 3 + float(s) + logged + s.detach()
            loss2.backward()
        """
    )
    assert e.rendered(0) == {"f(a.detach(), b)": "1.0"}
    assert e.lin(0).tainted == frozenset()
    assert "logged" not in e.expansion.carriers and "frozen" not in e.expansion.carriers
    # every read of `s` was followed (value-only), so the rule sees no tensor use
    reads = [n for n in _names(e.block[4]) + _names(e.block[3]) + _names(e.block[2]) if n.value == "s"]
    assert len(reads) == 4 and all(id(n) in e.expansion.consumed for n in reads)


def _names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Collect(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(Collect())
    return found


# ---------------------------------------------------------------- 2. taint


def _two_losses(body: str) -> Expanded:
    return Expanded(
        "def step():\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
        + "    loss1.backward(retain_graph=True)\n    loss2.backward()\n"
    )


def test_power_of_a_carrier_taints():
    e = _two_losses(
        """
        s_loss = f(a, b.detach())
        p_loss = f(a.detach(), b)
        loss1 = rec - k * s_loss ** 2
        loss2 = rec + k * p_loss
        """
    )
    assert e.rendered(0) == {}
    assert e.tainted(0) == {"f(a, b.detach())"}
    assert e.rendered(1) == {"f(a.detach(), b)": "k"}


def test_product_of_two_carriers_taints_both():
    e = _two_losses(
        """
        s_loss = f(a, b.detach())
        p_loss = f(a.detach(), b)
        loss1 = rec - s_loss * p_loss
        loss2 = rec + k * p_loss
        """
    )
    assert e.rendered(0) == {}
    assert e.tainted(0) == {"f(a, b.detach())", "f(a.detach(), b)"}


def test_inplace_method_on_a_carrier_taints():
    e = _two_losses(
        """
        s_loss = f(a, b.detach())
        p_loss = f(a.detach(), b)
        s_loss.mul_(2)
        loss1 = rec - k * s_loss
        loss2 = rec + k * p_loss
        """
    )
    assert e.rendered(0) == {}
    assert e.tainted(0) == {"f(a, b.detach())"}


def test_list_appended_outside_a_loop():
    e = Expanded(
        """
        def step():
            lst = []
            lst.append(f(a, b.detach()))
            other = []
            for x in xs:
                other.append(f(x, b.detach()))
            other.append(f(a.detach(), b))
            loss1 = sum(lst)
            loss2 = sum(other)
            loss1.backward(retain_graph=True)
            loss2.backward()
        """
    )
    # the appended terms outside a loop are never terms with a coefficient
    assert e.term_texts() == ["f(x, b.detach())"]
    assert e.rendered(0) == {} and e.tainted(0) == set()
    # and the loop's list, appended to once more after the loop, is tainted
    assert e.rendered(1) == {} and e.tainted(1) == {"f(x, b.detach())"}


def test_loop_with_if_inside_taints():
    e = _two_losses(
        """
        s_loss, p_loss = 0.0, 0.0
        for i in range(n):
            s_loss += f(a[i], b[i].detach())
            if i > 2:
                p_loss += f(a[i].detach(), b[i])
        loss1 = rec - k * s_loss
        loss2 = rec + k * p_loss
        """
    )
    assert e.rendered(0) == {} and e.rendered(1) == {}
    assert "f(a[i], b[i].detach())" in e.tainted(0)
    assert "f(a[i].detach(), b[i])" in e.tainted(1)


def test_loop_reading_its_accumulator_elsewhere_taints():
    e = _two_losses(
        """
        s_loss, p_loss = 0.0, 0.0
        for i in range(n):
            s_loss += f(a[i], b[i].detach())
            t = s_loss * 2
            p_loss += f(a[i].detach(), b[i])
        loss1 = rec - k * s_loss
        loss2 = rec + k * p_loss
        """
    )
    assert e.rendered(0) == {} and e.rendered(1) == {}
    assert "f(a[i], b[i].detach())" in e.tainted(0)
    assert "f(a[i].detach(), b[i])" in e.tainted(1)


def test_accumulator_reset_inside_the_loop_taints():
    e = _two_losses(
        """
        s, p = 0.0, 0.0
        for i in range(3):
            s = 0.0
            s += f(a[i], b[i].detach())
            p += f(a[i].detach(), b[i])
        loss1 = rec - k * s
        loss2 = rec + k * p
        """
    )
    assert e.rendered(0) == {}
    # The loop is not followed at all: every term it evaluates is tainted.
    assert "f(a[i], b[i].detach())" in e.tainted(0)


def test_term_outside_the_loop_accumulated_per_iteration():
    e = _two_losses(
        """
        x = f(a, b.detach())
        y = f(a.detach(), b)
        s = 0.0
        for i in range(3):
            s += x
        loss1 = rec - k * s
        loss2 = rec + k * y
        """
    )
    # either tainted or scaled by the loop count: never the bare `-k`
    assert e.rendered(0) != {"f(a, b.detach())": "-k"}


# ---------------------------------------------------------------- 3. symbol_invariant


def test_symbol_rebound_between_its_uses_is_not_invariant():
    e = _two_losses(
        """
        loss1 = rec - k * f(a, b.detach())
        k = 2.0
        loss2 = rec + k * f(a.detach(), b)
        """
    )
    assert e.expansion.symbol_uses["k"] and len(e.expansion.symbol_uses["k"]) == 2
    assert e.expansion.symbol_invariant("k") is False


def test_symbol_rebound_before_both_uses_is_invariant():
    e = _two_losses(
        """
        k = 2.0
        loss1 = rec - k * f(a, b.detach())
        loss2 = rec + k * f(a.detach(), b)
        """
    )
    assert len(e.expansion.symbol_uses["k"]) == 2
    assert e.expansion.symbol_invariant("k") is True
    assert e.expansion.symbol_invariant("never_used") is True


def test_symbol_assigned_in_the_loop_body_is_not_invariant():
    e = _two_losses(
        """
        s, p = 0.0, 0.0
        for i in range(n):
            w = ws[i]
            s += w * f(a[i], b[i].detach())
            p += w * f(a[i].detach(), b[i])
        loss1 = rec - s
        loss2 = rec + p
        """
    )
    assert e.rendered(0) == {"f(a[i], b[i].detach())": "-w"}
    assert e.expansion.symbol_invariant("w") is False


def test_loop_target_as_symbol_is_not_invariant():
    e = _two_losses(
        """
        s, p = 0.0, 0.0
        for w in ws:
            s += w * f(a, b.detach())
            p += w * f(a.detach(), b)
        loss1 = rec - s
        loss2 = rec + p
        """
    )
    assert e.expansion.symbol_invariant("w") is False


def test_symbol_rebound_by_a_with_header_is_not_invariant():
    e = _two_losses(
        """
        lam = 0.5
        loss1 = rec + lam * f(a, b.detach())
        with Ctx() as lam:
            pass
        loss2 = rec - lam * f(a.detach(), b)
        """
    )
    assert e.expansion.symbol_invariant("lam") is False


def test_len_symbol_with_append_between_is_not_invariant():
    e = _two_losses(
        """
        s = f(a, b.detach()) / len(hist)
        hist.append(3.0)
        p = f(a.detach(), b) / len(hist)
        loss1 = rec - s
        loss2 = rec + p
        """
    )
    assert e.expansion.symbol_invariant("len(hist)") is False


# ---------------------------------------------------------------- 4. the rule

# Helpers with more than one statement: the rule pairs the calls as written.
KL = '''import torch


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.sum(res, dim=-1)


'''


def _lint(src: str, codes=("GF004",), fix: bool = True):
    codes = codes if codes is not None else tuple(r.CODE for r in select(None))
    return lint_bytes(src.encode(), "t.py", LintOptions(codes, fix=fix))


TWO_STATEMENTS = KL + '''def step():
    za = enc_a(xa)
    zb = enc_b(xb)
    l_a = rec + lam * kl(za, zb.detach())
    l_b = cls - lam * kl(za.detach(), zb)
    l_a.backward(retain_graph=True)
    l_b.backward()
'''

TWO_STATEMENTS_FIXED = '''import torch
from gradfix.autograd import grad_scale


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.sum(res, dim=-1)


def step():
    za = enc_a(xa)
    zb = enc_b(xb)
    kl_shared = kl(za, grad_scale(zb, -1.0))
    l_a = rec + lam * kl_shared
    l_b = cls - lam * kl_shared.detach()
    (l_a + l_b).backward()
'''


def test_rule_two_statements_finding_and_rewrite():
    result = _lint(TWO_STATEMENTS)
    assert result.error is None
    assert [(f.code, f.line, f.col) for f in result.findings] == [("GF004", 13, 23)]
    finding = result.findings[0]
    assert finding.fixable
    assert finding.message.startswith("`kl` evaluated twice with complementary `.detach()`")
    assert "(line 12, in `l_a`, and here, in `l_b`)" in finding.message
    assert finding.message.endswith("with one backward")
    assert result.applied == 1 and result.remaining == []
    assert result.fixed.decode() == TWO_STATEMENTS_FIXED


LOOP = KL + '''def step():
    out, series, prior = model(inp)
    rec = criterion(out, inp)
    s_loss, p_loss = 0.0, 0.0
    for i in range(len(series)):
        s_loss += torch.mean(kl(series[i], prior[i].detach()))
        p_loss += torch.mean(kl(series[i].detach(), prior[i]))
    s_loss = s_loss / len(series)
    p_loss = p_loss / len(series)
    loss1 = rec - k * s_loss
    loss2 = rec + 0.5 * k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
'''

LOOP_FIXED_BODY = '''    for i in range(len(series)):
        kl_shared = torch.mean(kl(series[i], grad_scale(prior[i], -0.5)))
        s_loss += kl_shared
        p_loss += kl_shared.detach()
    s_loss = s_loss / len(series)
    p_loss = p_loss / len(series)
    loss1 = rec - k * s_loss
    loss2 = rec + 0.5 * k * p_loss
    (loss1 + loss2).backward()
'''


def test_rule_loop_finding_and_rewrite():
    result = _lint(LOOP)
    assert [(f.code, f.line, f.col) for f in result.findings] == [("GF004", 15, 19)]
    assert "(line 14, in `loss1`, and here, in `loss2`)" in result.findings[0].message
    assert result.findings[0].fixable
    fixed = result.fixed.decode()
    assert fixed.startswith("import torch\nfrom gradfix.autograd import grad_scale\n")
    assert fixed.endswith(LOOP_FIXED_BODY)
    assert fixed.count(".backward(") == 1


TWO_PAIRS = KL + '''def step():
    out, series, prior = model(inp)
    rec = criterion(out, inp)
    s_loss, p_loss = 0.0, 0.0
    for i in range(len(series)):
        s_loss += torch.mean(kl(series[i], prior[i].detach())) + torch.mean(kl(prior[i].detach(), series[i]))
        p_loss += torch.mean(kl(series[i].detach(), prior[i])) + torch.mean(kl(prior[i], series[i].detach()))
    s_loss = s_loss / len(series)
    p_loss = p_loss / len(series)
    loss1 = rec - k * s_loss
    loss2 = rec + k * p_loss
    loss1.backward(retain_graph=True)
    loss2.backward()
'''


def test_default_selection_reports_gf004_and_not_gf003():
    alone = _lint(TWO_PAIRS, codes=["GF003"], fix=False)
    assert [f.code for f in alone.findings] == ["GF003"]  # GF003 alone does see the run
    result = _lint(TWO_PAIRS, codes=None, fix=False)
    assert [(f.code, f.line, f.col) for f in result.findings] == [("GF004", 15, 19), ("GF004", 15, 66)]
    assert not any(f.code == "GF003" for f in result.findings)


def test_default_fix_merges_the_run_and_shares_both_pairs():
    result = _lint(TWO_PAIRS, codes=None, fix=True)
    assert result.error is None
    assert result.applied == 2 and result.remaining == []
    fixed = result.fixed.decode()
    assert fixed.count(".backward(") == 1
    assert "    (loss1 + loss2).backward()\n" in fixed
    assert (
        "        kl_shared = torch.mean(kl(series[i], grad_scale(prior[i], -1.0)))\n"
        "        kl_shared_2 = torch.mean(kl(grad_scale(prior[i], -1.0), series[i]))\n"
        "        s_loss += kl_shared + kl_shared_2\n"
        "        p_loss += kl_shared.detach() + kl_shared_2.detach()\n"
    ) in fixed
    assert "retain_graph" not in fixed
    # a fixed point: nothing left to report
    again = _lint(fixed, codes=None, fix=False)
    assert again.findings == []


NEAR_MISSES = {
    "one_loss_only": '''    l_a = rec + lam * kl(za, zb.detach()) - lam * kl(za.detach(), zb)
    l_b = cls
    l_a.backward(retain_graph=True)
    l_b.backward()
''',
    # (two loops over one `range(n)` are fused: tests/test_gf004_loop_fusion.py)
    "separate_loops_other_ranges": '''    s, p = 0.0, 0.0
    for i in range(n):
        s += kl(za[i], zb[i].detach())
    for i in range(n - 1):
        p += kl(za[i].detach(), zb[i])
    l_a = rec - k * s
    l_b = rec + k * p
    l_a.backward(retain_graph=True)
    l_b.backward()
''',
    "different_with_contexts": '''    with torch.autocast("cpu"):
        l_a = rec + lam * kl(za, zb.detach())
    l_b = cls - lam * kl(za.detach(), zb)
    l_a.backward(retain_graph=True)
    l_b.backward()
''',
    "coefficient_rebound_between_uses": '''    l_a = rec + lam * kl(za, zb.detach())
    lam = 2.0
    l_b = cls - lam * kl(za.detach(), zb)
    l_a.backward(retain_graph=True)
    l_b.backward()
''',
}


@pytest.mark.parametrize("name", list(NEAR_MISSES))
def test_rule_near_misses(name):
    src = KL + "def step():\n    za = enc_a(xa)\n    zb = enc_b(xb)\n" + NEAR_MISSES[name]
    result = _lint(src, fix=False)
    assert result.error is None
    assert result.findings == []


def test_rule_same_with_context_is_reported():
    # The control for `different_with_contexts`: both terms under one `with`.
    src = KL + '''def step():
    za = enc_a(xa)
    zb = enc_b(xb)
    with torch.autocast("cpu"):
        l_a = rec + lam * kl(za, zb.detach())
        l_b = cls - lam * kl(za.detach(), zb)
    l_a.backward(retain_graph=True)
    l_b.backward()
'''
    result = _lint(src, fix=False)
    assert [(f.code, f.line, f.col) for f in result.findings] == [("GF004", 14, 27)]


# ---------------------------------------------------------------- 5. executed exactness

SNIPPET_HEAD = '''import torch
import torch.nn as nn

torch.manual_seed(0)


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.sum(res, dim=-1).mean()


net_s = nn.Linear(4, 5)
net_p = nn.Linear(4, 5)
enc_a = nn.Linear(4, 3)
enc_b = nn.Linear(4, 3)
head = nn.Linear(3, 2)
x = torch.randn(3, 6, 4)
xa = torch.randn(5, 4)
xb = torch.randn(5, 4)
k = 0.7
lam = 0.3
history = []
'''

LIST_SNIPPET = SNIPPET_HEAD + '''

def step():
    series = [torch.softmax(net_s(x[j]), dim=-1) for j in range(3)]
    prior = [torch.softmax(net_p(x[j]), dim=-1) for j in range(3)]
    rec = (net_s(x[0]) ** 2).mean()
    s_terms = []
    p_terms = []
    for s, p in zip(series, prior):
        s_terms.append(kl(s, p.detach()))
        p_terms.append(kl(s.detach(), p))
    s_loss = sum(s_terms) / len(s_terms)
    p_loss = torch.stack(p_terms).mean()
    loss1 = rec - k * s_loss
    loss2 = rec + 2.0 * k * p_loss
    history.append(loss1.item())
    loss1.backward(retain_graph=True)
    loss2.backward()
'''

SYMBOLIC_SNIPPET = SNIPPET_HEAD + '''

def dist(a, b):
    d = (a - b) ** 2
    return d.sum(dim=1).mean()


def step():
    za = torch.tanh(enc_a(xa))
    zb = torch.tanh(enc_b(xb))
    rec = (head(za) ** 2).mean()
    cls = (head(zb) - 1.0).abs().mean()
    d1 = dist(za, zb.detach())
    d2 = dist(za.detach(), zb)
    l_a = rec - lam * d1
    l_b = cls + lam * d2
    history.append(l_b.item())
    l_a.backward(retain_graph=True)
    l_b.backward()
'''


def _verify(src: str, name: str, expect_shared: str):
    harness = pytest.importorskip("gradfix.harness")
    result = _lint(src)
    assert result.error is None
    assert [f.fixable for f in result.findings] == [True]
    fixed = result.fixed.decode()
    assert expect_shared in fixed and fixed.count(".backward(") == 1
    report = harness.verify_pair(src, fixed, filename=name, device="cpu", repeat=0)
    assert report.error is None
    grads = [r for r in report.rows if r.what == "grad"]
    assert grads, "no gradient compared"
    assert [r.key for r in report.rows if not r.ok] == []
    assert report.ok
    return report


def test_executed_list_sum_over_len_and_stack_mean():
    report = _verify(LIST_SNIPPET, "list_snippet.py", "kl_shared = kl(s, grad_scale(p, -2.0))")
    keys = {r.key for r in report.rows}
    assert {"net_s.weight.grad", "net_p.weight.grad", "history[0]"} <= keys


def test_executed_symbolic_coefficient_cancels():
    report = _verify(SYMBOLIC_SNIPPET, "symbolic_snippet.py", "dist_shared = dist(za, grad_scale(zb, -1.0))")
    keys = {r.key for r in report.rows}
    assert {"enc_a.weight.grad", "enc_b.weight.grad", "head.weight.grad"} <= keys


# Shapes where a safe rewrite would change gradients: the rule must not offer one.
WRONG_GRADIENTS = {
    "accumulator_reset_in_loop": '''

def step():
    za = enc_a(xa)
    zb = enc_b(xb)
    s, p = 0.0, 0.0
    for i in range(3):
        s = 0.0
        s += torch.mean((za[i] - zb[i].detach()) ** 2)
        p += torch.mean((za[i].detach() - zb[i]) ** 2)
    loss1 = 1.0 - k * s
    loss2 = 2.0 + k * p
    loss1.backward(retain_graph=True)
    loss2.backward()
''',
    "term_before_loop_accumulated": '''

def step():
    za = enc_a(xa)
    zb = enc_b(xb)
    x1 = torch.mean((za - zb.detach()) ** 2)
    y1 = torch.mean((za.detach() - zb) ** 2)
    s = 0.0
    for i in range(3):
        s += x1
    loss1 = 1.0 - k * s
    loss2 = 2.0 + k * y1
    loss1.backward(retain_graph=True)
    loss2.backward()
''',
    "len_divisor_changed_by_append": '''

def step():
    za = enc_a(xa)
    zb = enc_b(xb)
    s = torch.mean((za - zb.detach()) ** 2) / len(history)
    history.append(3.0)
    p = torch.mean((za.detach() - zb) ** 2) / len(history)
    loss1 = 1.0 - s
    loss2 = 2.0 + p
    loss1.backward(retain_graph=True)
    loss2.backward()
''',
}


@pytest.mark.parametrize("name", list(WRONG_GRADIENTS))
def test_executed_no_safe_fix_changes_gradients(name):
    harness = pytest.importorskip("gradfix.harness")
    src = SNIPPET_HEAD.replace("history = []", "history = [1.0, 2.0]") + WRONG_GRADIENTS[name]
    result = _lint(src)
    assert result.error is None
    if result.fixed is None:
        return  # no safe rewrite: nothing can be wrong
    report = harness.verify_pair(src, result.fixed.decode(), filename=f"{name}.py", device="cpu", repeat=0)
    assert report.error is None
    assert [r.key for r in report.rows if not r.ok] == []


# Names of the shared value: unique where they are visible, not per file.


def _two_steps(between: str = "") -> str:
    step = '''def {name}():
    za = enc_a(xa)
    zb = enc_b(xb)
    l_a = rec + lam * kl(za, zb.detach())
    l_b = cls - lam * kl(za.detach(), zb){extra}
    l_a.backward(retain_graph=True)
    l_b.backward()
'''
    # The encoders are torch modules: an unknown callee may keep a tensor of one function's graph
    # for the other function's backward, and the merges would then be unsafe (review, round 5).
    modules = "enc_a = torch.nn.Linear(3, 3)\nenc_b = torch.nn.Linear(3, 3)\n\n\n"
    return KL + modules + between + step.format(name="step_a", extra="") + "\n\n" + step.format(name="step_b", extra="\n    print(kl_shared)")


def test_each_function_gets_its_own_shared_name():
    # step_b reads a global `kl_shared` (print): its new local must not shadow it;
    # step_a does not, and other functions' names do not matter to it.
    result = _lint(_two_steps())
    fixed = result.fixed.decode()
    assert result.applied == 2
    assert "    kl_shared = kl(za, grad_scale(zb, -1.0))\n    l_a = rec + lam * kl_shared\n" in fixed.split("def step_b")[0]
    assert "    kl_shared_2 = kl(za, grad_scale(zb, -1.0))\n    l_a = rec + lam * kl_shared_2\n" in fixed.split("def step_b")[1]


def test_functions_without_a_clash_reuse_the_name():
    result = _lint(_two_steps().replace("\n    print(kl_shared)", ""))
    fixed = result.fixed.decode()
    assert result.applied == 2
    assert fixed.count("    kl_shared = kl(za, grad_scale(zb, -1.0))\n") == 2
    assert "kl_shared_2" not in fixed


def test_a_module_level_name_read_by_the_function_is_avoided():
    # `kl_shared` is only used at module level, but the function can read it.
    src = KL + "kl_shared = 3\n\n\n" + TWO_STATEMENTS.replace(KL, "")
    fixed = _lint(src).fixed.decode()
    assert "    kl_shared_2 = kl(za, grad_scale(zb, -1.0))\n" in fixed and "kl_shared = 3\n" in fixed


# One loss whose pair comes through a loop (DCdetector): in scope; one loss written out: GF002's.

ONE_LOSS_LOOP = KL + '''def step(i):
    out, series, prior = model(inp)
    s_loss, p_loss = 0.0, 0.0
    for u in range(len(prior)):
        s_loss += torch.mean(kl(series[u], prior[u].detach()))
        p_loss += torch.mean(kl(series[u].detach(), prior[u]))
    s_loss = s_loss / len(prior)
    p_loss = p_loss / len(prior)
    loss = p_loss - s_loss
{between}    loss.backward()
    opt.step()
'''


def test_one_loss_through_a_loop_is_found_and_fixed_without_a_merge():
    result = _lint(ONE_LOSS_LOOP.format(between=""))
    assert [(f.code, f.line, f.col) for f in result.findings] == [("GF004", 14, 19)]
    finding = result.findings[0]
    assert "(line 13 and here, both in `loss`)" in finding.message
    assert not finding.message.endswith("with one backward") and finding.fixable
    fixed = result.fixed.decode()
    assert (
        "        kl_shared = torch.mean(kl(series[u], grad_scale(prior[u], -1.0)))\n"
        "        s_loss += kl_shared\n"
        "        p_loss += kl_shared.detach()\n"
    ) in fixed
    assert "    loss = p_loss - s_loss\n    loss.backward()\n" in fixed


def test_a_branch_reading_the_loss_as_a_value_keeps_the_pair():
    # DCdetector logs every 100 iterations between the loss and its backward.
    between = "    if (i + 1) % 100 == 0:\n        print(f'loss {loss.item():.4f}')\n"
    result = _lint(ONE_LOSS_LOOP.format(between=between), fix=False)
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(14, 19, True)]


@pytest.mark.parametrize(
    "between,finding",
    [
        # A branch that may change the loss in place: its terms lose their coefficients.
        ("    if i > 3:\n        loss.mul_(2.0)\n", None),
        # A branch that rebinds it: the backward sees another value.
        ("    if i > 3:\n        loss = loss * 2.0\n", None),
        # A branch that keeps it as a tensor: found, the fix unsafe (the name carries other gradients after).
        ("    if i > 3:\n        kept.append(loss)\n", "unsafe"),
    ],
)
def test_a_branch_that_may_change_or_keep_the_loss(between, finding):
    result = _lint(ONE_LOSS_LOOP.format(between=between), fix=False)
    if finding is None:
        assert result.findings == []
    else:
        assert [(f.line, f.col, f.fixable) for f in result.findings] == [(14, 19, False)]
        assert "`loss` is also read as a tensor (line 19)" in result.findings[0].message


@pytest.mark.parametrize(
    "body",
    [
        # straight-line names holding one term each (VQ-VAE): GF002's summed form
        "    q = kl(za, zb.detach())\n    e = kl(za.detach(), zb)\n    loss = rec + q + 0.25 * e\n    loss.backward()\n",
        # in a loop, but the pair is one statement's sum: GF002's form too
        "    loss = 0.0\n    for u in range(3):\n        loss += kl(za, zb.detach()) - kl(za.detach(), zb)\n    loss.backward()\n",
    ],
)
def test_one_loss_written_out_is_left_to_gf002(body):
    src = KL + "def step():\n    za = enc_a(xa)\n    zb = enc_b(xb)\n" + body
    assert _lint(src, fix=False).findings == []
    assert [f.code for f in _lint(src, codes=("GF002",), fix=False).findings] == ["GF002"]


# ---------------------------------------------------------------- 6. which term carries the one evaluation
# The first term carries both gradients, scaled by b/a, unless b/a divides by a symbol and a/b does
# not: then the second term's computation carries them (scaled by a/b) and the first is detached.
# `k = 0.0` (an ablation switching a term off) must not make the rewrite divide by zero.

ORIENT_KL = '''import torch


def kl(p, q):
    res = p * (torch.log(p + 0.0001) - torch.log(q + 0.0001))
    return torch.sum(res, dim=-1)


'''

ORIENT_ONE_LOSS = ORIENT_KL + '''def step(k):
    out, series, prior = model(inp)
    s_loss, p_loss = 0.0, 0.0
    for u in range(len(prior)):
        s_loss += torch.mean(kl(series[u], prior[u].detach()))
        p_loss += torch.mean(kl(series[u].detach(), prior[u]))
    loss = p_loss - k * s_loss
    loss.backward()
'''

ORIENT_ONE_LOSS_FIXED_BODY = '''    for u in range(len(prior)):
        kl_shared = torch.mean(kl(grad_scale(series[u], -k), prior[u]))
        s_loss += kl_shared.detach()
        p_loss += kl_shared
    loss = p_loss - k * s_loss
    loss.backward()
'''


def _orient_lint(src: str, unsafe: bool = False):
    result = lint_bytes(src.encode(), "t.py", LintOptions(("GF004",), fix=True, unsafe_fixes=unsafe))
    assert result.error is None
    return result


def test_orientation_name_coefficient_second_term_carries():
    # `k` is a parameter: the rewrite is not proven (a tensor `k` would lose its gradient),
    # but it multiplies by `k` and never divides by it.
    result = _orient_lint(ORIENT_ONE_LOSS, unsafe=True)
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(14, 19, False)]
    message = result.findings[0].message
    assert "(line 13 and here, both in `loss`)" in message  # reported at the second term, as before
    assert "coefficient `k` is not a number" in message and "divides by" not in message
    fixed = result.fixed.decode()
    assert fixed.endswith(ORIENT_ONE_LOSS_FIXED_BODY)
    assert "/ k" not in fixed


def test_orientation_module_constant_zero_is_safe_and_multiplies():
    src = ORIENT_ONE_LOSS.replace("def step(k):", "k = 0.0\n\n\ndef step():")
    result = _orient_lint(src)
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(17, 19, True)]
    assert result.fixed.decode().endswith(ORIENT_ONE_LOSS_FIXED_BODY)


def test_orientation_default_kept_when_the_ratio_does_not_divide():
    # b/a = -k: the first term carries, as always.
    src = ORIENT_ONE_LOSS.replace("def step(k):", "k = 0.0\n\n\ndef step():").replace(
        "loss = p_loss - k * s_loss", "loss = k * p_loss - s_loss"
    )
    fixed = _orient_lint(src).fixed.decode()
    assert (
        "        kl_shared = torch.mean(kl(series[u], grad_scale(prior[u], -k)))\n"
        "        s_loss += kl_shared\n"
        "        p_loss += kl_shared.detach()\n"
    ) in fixed


def test_orientation_both_ratios_divide_by_a_symbol():
    # -k_min / k_max and -k_max / k_min: no orientation avoids a division; with a divisor that
    # may be zero the fix is unsafe (and left in the default orientation).
    two = ORIENT_ONE_LOSS.replace("def step(k):", "def step(k_max, k_min):").replace(
        "loss = p_loss - k * s_loss", "loss = k_min * p_loss - k_max * s_loss"
    )
    result = _orient_lint(two, unsafe=True)
    assert [f.fixable for f in result.findings] == [False]
    assert "the ratio `-k_min / k_max` divides by `k_max`, which may be zero" in result.findings[0].message
    assert "grad_scale(prior[u], -k_min / k_max)" in result.fixed.decode()
    # Module constants: a divisor bound to 0.0 may be zero, one bound to a non-zero number is not.
    consts = two.replace("def step(k_max, k_min):", "k_max = {}\nk_min = 0.5\n\n\ndef step():")
    zero = _orient_lint(consts.format("0.0"))
    assert [f.fixable for f in zero.findings] == [False] and zero.fixed is None
    assert "the ratio `-k_min / k_max` divides by `k_max`, which may be zero" in zero.findings[0].message
    nonzero = _orient_lint(consts.format("2.0"))
    assert [f.fixable for f in nonzero.findings] == [True]
    assert "kl_shared = torch.mean(kl(series[u], grad_scale(prior[u], -k_min / k_max)))\n" in nonzero.fixed.decode()


def test_orientation_two_pairs_keep_their_order_and_positions():
    src = ORIENT_KL + '''k = 0.0


def step():
    out, series, prior = model(inp)
    s_loss, p_loss = 0.0, 0.0
    for i in range(len(series)):
        s_loss += torch.mean(kl(series[i], prior[i].detach())) + torch.mean(kl(prior[i].detach(), series[i]))
        p_loss += torch.mean(kl(series[i].detach(), prior[i])) + torch.mean(kl(prior[i], series[i].detach()))
    loss = p_loss - k * s_loss
    loss.backward()
'''
    result = _orient_lint(src)
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(17, 19, True), (17, 66, True)]
    assert result.applied == 2
    assert (
        "        kl_shared = torch.mean(kl(grad_scale(series[i], -k), prior[i]))\n"
        "        kl_shared_2 = torch.mean(kl(prior[i], grad_scale(series[i], -k)))\n"
        "        s_loss += kl_shared.detach() + kl_shared_2.detach()\n"
        "        p_loss += kl_shared + kl_shared_2\n"
    ) in result.fixed.decode()
    assert _orient_lint(result.fixed.decode()).findings == []


ORIENT_SNIPPET = SNIPPET_HEAD.replace("k = 0.7", "k = {k}") + '''

def assoc(p, q):
    return kl(p, q.detach())


def assoc_prior(p, q):
    return kl(p.detach(), q)


def step():
    series = [torch.softmax(net_s(x[j]), dim=-1) for j in range(3)]
    prior = [torch.softmax(net_p(x[j]), dim=-1) for j in range(3)]
    rec = (net_s(x[0]) ** 2).mean()
    s_loss, p_loss = 0.0, 0.0
    for j in range(len(series)):
        s_loss += {s_term}
        p_loss += {p_term}
    s_loss = s_loss / len(series)
    p_loss = p_loss / len(series)
    loss1 = rec - k * s_loss
    loss2 = rec + p_loss
    history.append(loss1.item())
    loss1.backward(retain_graph=True)
    loss2.backward()
'''


@pytest.mark.parametrize("k", ["0.0", "0.7"])
@pytest.mark.parametrize(
    "s_term,p_term,shared",
    [
        ("kl(series[j], prior[j].detach())", "kl(series[j].detach(), prior[j])", "s_loss += kl_shared.detach()"),
        # `.detach()` inside a helper: the inlined helper call is the one evaluation, or is detached
        ("kl(series[j], prior[j].detach())", "assoc_prior(series[j], prior[j])", "s_loss += kl_shared.detach()"),
        ("assoc(series[j], prior[j])", "kl(series[j].detach(), prior[j])", "s_loss += kl_shared.detach()"),
        ("assoc(series[j], prior[j])", "assoc_prior(series[j], prior[j])", "s_loss += kl_shared.detach()"),
    ],
    ids=["plain", "helper_second", "helper_first", "helper_both"],
)
def test_executed_second_term_carries(k, s_term, p_term, shared):
    src = ORIENT_SNIPPET.format(k=k, s_term=s_term, p_term=p_term)
    report = _verify(src, "orient_snippet.py", "kl_shared = kl(grad_scale(series[j], -k), prior[j])\n        " + shared)
    assert "        p_loss += kl_shared\n" in _lint(src).fixed.decode()
    keys = {r.key for r in report.rows}
    assert {"net_s.weight.grad", "net_p.weight.grad", "history[0]"} <= keys


# ---------------------------------------------------------------- 7. names the one evaluation reads or the rewrite changes
# (field test 3: global/nonlocal carriers, coefficients bound after the terms, `locals()`)

from gradfix.analysis.introspection import introspection_calls  # noqa: E402

_SCOPE_LOOP = '''import torch


def kl(p, q):
    return torch.sum(p * (torch.log(p + 1e-4) - torch.log(q + 1e-4)), dim=-1).mean()


k = 3.0
G = None


def step({params}):
{pre}    s_loss, p_loss = 0.0, 0.0
    for i in range(3):
{inner}        s_loss += kl(series[i], prior[i].detach())
        p_loss += kl(series[i].detach(), prior[i])
{inner_after}{post}    loss = p_loss - {coef} * s_loss
    loss.backward()
'''


def _scope_src(params="", pre="", inner="", inner_after="", post="", coef="k") -> str:
    return _SCOPE_LOOP.format(params=params, pre=pre, inner=inner, inner_after=inner_after, post=post, coef=coef)


def _line_of(src: str, text: str) -> int:
    return next(n for n, line in enumerate(src.splitlines(), 1) if text in line)


def _one(src: str, codes=("GF004",)):
    findings = _lint(src, codes).findings
    assert len(findings) == 1, [f.message for f in findings]
    return findings[0]


def test_stores_before_uses_after_the_hoisted_step():
    e = _two_losses(
        """
        s = f(a, b.detach())
        p = f(a.detach(), b)
        lam = 3.0
        loss1 = rec - lam * s
        loss2 = rec + p
        """
    )
    since = e.expansion.step_of(e.term("f(a, b.detach())").statement)
    assert since is not None
    assert e.expansion.symbol_invariant("lam") is True  # one use: invariant between its uses
    stores = e.expansion.symbol_stores_before_uses("lam", since)
    assert [e.code(s) for s in stores] == ["lam = 3.0"]
    assert e.expansion.symbol_stores_before_uses("never_used", since) == []


def test_stores_before_the_hoisted_step_do_not_count():
    e = _two_losses(
        """
        lam = 3.0
        s = f(a, b.detach())
        p = f(a.detach(), b)
        loss1 = rec - lam * s
        loss2 = rec + p
        """
    )
    since = e.expansion.step_of(e.term("f(a, b.detach())").statement)
    assert e.expansion.symbol_stores_before_uses("lam", since) == []


def test_stores_in_the_loop_around_the_hoisted_step_count():
    e = _two_losses(
        """
        s, p = 0.0, 0.0
        for i in range(n):
            lam = ws[i]
            s += f(a[i], b[i].detach())
            p += f(a[i].detach(), b[i])
        loss1 = rec - lam * s
        loss2 = rec + p
        """
    )
    since = e.expansion.step_of(e.term("f(a[i], b[i].detach())").statement)
    assert [e.code(s) for s in e.expansion.symbol_stores_before_uses("lam", since)] == ["lam = ws[i]"]


@pytest.mark.parametrize(
    "kwargs,reason",
    [
        ({"post": "    lam = 3.0\n", "coef": "lam"}, "`lam` is assigned after the terms (line {line}): the one evaluation would read it before"),
        ({"inner_after": "        lam = 3.0\n", "coef": "lam"}, "`lam` is assigned after the terms (line {line})"),
        (
            {"pre": "    lam = 1.0\n", "post": "    lam = 3.0\n", "coef": "lam"},
            "`lam` is rebound after the terms (line {line}): the one evaluation would read its earlier value",
        ),
        ({"params": "lam=1.0", "post": "    lam = 3.0\n", "coef": "lam"}, "`lam` is rebound after the terms (line {line})"),
        ({"inner": "        lam = 3.0\n", "coef": "lam"}, "`lam` is assigned in the loop around the terms (line {line})"),
    ],
    ids=["after_loop", "in_loop_after_terms", "rebound_after_loop", "parameter_rebound", "in_loop_before_terms"],
)
def test_coefficient_bound_after_the_one_evaluation_is_unsafe(kwargs, reason):
    src = _scope_src(**kwargs)
    finding = _one(src)
    assert not finding.fixable
    assert reason.format(line=_line_of(src, "lam = 3.0")) in finding.message
    # The rebinding, not "not a number", is the reason.
    assert "is not a number" not in finding.message


def test_coefficient_bound_before_the_terms_keeps_the_safe_fix():
    assert _one(_scope_src(pre="    lam = 3.0\n", coef="lam")).fixable


@pytest.mark.parametrize("keyword", ["global", "nonlocal"])
def test_carrier_declared_in_another_scope_is_unsafe(keyword):
    src = _scope_src(post=f"    {keyword} G\n    G = s_loss\n")
    if keyword == "nonlocal":
        src = src.replace("def step():", "def make():\n    G = None\n\n    def step():")
        body = src.split("    def step():\n")[1]
        src = src.split("    def step():\n")[0] + "    def step():\n" + textwrap.indent(body, "    ") + "\n    return step\n"
    finding = _one(src)
    assert not finding.fixable
    assert f"`G` is declared `{keyword}`" in finding.message


def test_global_declared_but_not_a_carrier_keeps_the_safe_fix():
    assert _one(_scope_src(post="    global G\n    G = float(s_loss)\n")).fixable


@pytest.mark.parametrize(
    "line,name",
    [
        ("    print(locals())\n", "locals"),
        ("    print(vars())\n", "vars"),
        ("    print(dir())\n", "dir"),
        ('    print(eval("s_loss"))\n', "eval"),
        ('    exec("print(s_loss)")\n', "exec"),
        ('    print(globals()["G"])\n', "globals"),
    ],
)
def test_introspection_in_the_function_is_unsafe(line, name):
    src = _scope_src() + line
    finding = _one(src)
    assert not finding.fixable
    assert f"`{name}()` (line {_line_of(src, line.strip())}) may read the names the rewrite removes or changes" in finding.message


@pytest.mark.parametrize("line", ["    print(vars(net))\n", "    net.eval()\n", "    print(dir(net))\n"])
def test_introspection_of_something_else_keeps_the_safe_fix(line):
    assert _one(_scope_src() + line).fixable


def test_introspection_calls_at_module_level_skip_function_bodies():
    module = cst.parse_module("def f():\n    return locals()\n\n\ndef g():\n    return globals()\n\n\nx = vars()\n")
    found = [module.code_for_node(c) for c in introspection_calls(module)]
    assert found == ["globals()", "vars()"]


def test_gf001_eval_in_the_function_is_unsafe():
    src = (
        "import torch\nimport torch.nn.functional as F\n\n"
        "a = torch.randn(4, 3, requires_grad=True)\nb = torch.randn(4, 3, requires_grad=True)\n\n\n"
        "def step():\n"
        "    l1 = F.mse_loss(a.detach(), b)\n"
        "    l1.backward(retain_graph=True)\n"
        "    l2 = -F.mse_loss(a, b.detach())\n"
        "    l2.backward()\n"
        '    return eval("l1")\n'
    )
    finding = _one(src, ("GF001",))
    assert not finding.fixable
    assert f"`eval()` (line {_line_of(src, 'eval(')}) may read the names the rewrite removes or changes" in finding.message
    assert _one(src.replace('    return eval("l1")\n', ""), ("GF001",)).fixable


# An inlined method helper that reads `self.t`: the helper call itself is proven pure, so
# it changes no coefficient (the reason used to name `self.assoc()` as a possible change).

SELF_T_HELPER = """import torch


def kl(p, q):
    return torch.mean(p * (torch.log(p) - torch.log(q)))


class Solver:
    def __init__(self, model):
        self.model = model
        self.t = 2.0

    def assoc(self, p, q):
        return self.t * kl(p, q.detach()) + self.t * kl(q.detach(), p)

    def step(self, x):
        series, prior = self.model(x)
        s_loss, p_loss = 0.0, 0.0
        for u in range(len(series)):
            s_loss += self.assoc(series[u], prior[u])
            p_loss += self.assoc(prior[u], series[u])
        loss1 = -s_loss
        loss2 = p_loss
        loss1.backward(retain_graph=True)
        loss2.backward()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)

    def forward(self, x):
        s = [torch.softmax(self.a(x), -1), torch.softmax(self.a(x * 2), -1)]
        p = [torch.softmax(self.b(x), -1), torch.softmax(self.b(x * 3), -1)]
        return s, p


torch.manual_seed(0)
solver = Solver(Net())
x = torch.randn(3, 4)


def step():
    solver.step(x)
"""


def test_inlined_method_helper_reading_self_attribute_is_safe_and_exact():
    harness = pytest.importorskip("gradfix.harness")
    result = _lint(SELF_T_HELPER)
    assert [(f.line, f.col, f.fixable) for f in result.findings] == [(21, 23, True), (21, 23, True)]
    assert not any("may change" in f.message for f in result.findings)
    report = harness.verify_pair(SELF_T_HELPER, result.fixed.decode(), filename="self_t.py", device="cpu", repeat=0)
    assert report.error is None and report.ok
    assert [r for r in report.rows if r.what == "grad"]


def test_a_method_call_that_may_change_the_coefficient_still_makes_it_unsafe():
    src = SELF_T_HELPER.replace("            p_loss += self.assoc(prior[u], series[u])", "            self.anneal()\n            p_loss += self.assoc(prior[u], series[u])")
    assert "self.anneal()" in src
    result = _lint(src, fix=False)
    assert result.findings and all(not f.fixable for f in result.findings)
    assert "`self.anneal()` may change `self.t`" in result.findings[0].message
