"""Comments survive the rewrites.

GF002 removes one term of a sum. In a sum written over several lines, libcst
keeps the comment that ends a line in the whitespace *after* that line's last
token (the next operator's, or the closing parenthesis'), so dropping the
removed operator with its whitespace used to lose the comment of the line
before the removed term and move the removed term's own comment up onto that
line. Every comment now stays: the line before keeps its own, the removed
line's becomes a comment line of its own where the term was.

`gradfix.fixes.rewrite` removes whole statements (GF001, GF003): a removed
statement's trailing comment becomes a comment line before the next
statement, also when that statement is replaced by a single one (see the
comment in `rewrite_body` for why it is not moved onto the replacement's
line).
"""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize
from collections import Counter

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions


def _comments(source: str) -> Counter:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return Counter(t.string for t in tokens if t.type == tokenize.COMMENT)


def _fix(source: str, code: str, *, unsafe: bool = False) -> str:
    """The rewrite of `source`, checked to parse, keep every comment and be a fixed point."""
    data = textwrap.dedent(source).encode()
    result = lint_bytes(data, "train.py", LintOptions((code,), fix=True, unsafe_fixes=unsafe))
    assert result.error is None
    assert result.fixed is not None and result.remaining == []
    fixed = result.fixed.decode()
    ast.parse(fixed)
    assert _comments(fixed) == _comments(data.decode())
    again = lint_bytes(result.fixed, "train.py", LintOptions((code,), fix=True, unsafe_fixes=True))
    assert again.findings == [] and again.fixed is None
    return fixed


def _expect(text: str) -> str:
    return textwrap.dedent(text)


# GF002: the comments of a removed term.


def test_gf002_removed_last_term_keeps_both_comments():
    fixed = _fix(
        """\
        import torch.nn.functional as F


        def vq_loss(recon, z_q, z_e, beta):
            loss = (
                recon
                + F.mse_loss(z_q, z_e.detach())  # codebook
                + beta * F.mse_loss(z_q.detach(), z_e)  # commitment
            )
            return loss
        """,
        "GF002",
        unsafe=True,  # (`beta`, a parameter: a caller's loss weight, safe since stop 35)
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale


        def vq_loss(recon, z_q, z_e, beta):
            loss_term = F.mse_loss(z_q, grad_scale(z_e, beta))
            loss = (
                recon
                + (loss_term + beta * loss_term.detach())  # codebook
                # commitment
            )
            return loss
        """
    )


def test_gf002_removed_middle_term_comment_stays_in_place():
    fixed = _fix(
        """\
        import torch.nn.functional as F

        BETA = 0.25


        def vq_loss(recon, kl, z_q, z_e):
            loss = (
                recon  # reconstruction
                + F.mse_loss(z_q, z_e.detach())  # codebook
                + BETA * F.mse_loss(z_q.detach(), z_e)  # commitment
                + kl  # prior
            )
            return loss
        """,
        "GF002",
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale

        BETA = 0.25


        def vq_loss(recon, kl, z_q, z_e):
            loss_term = F.mse_loss(z_q, grad_scale(z_e, BETA))
            loss = (
                recon  # reconstruction
                + (loss_term + (BETA * loss_term).detach())  # codebook
                # commitment
                + kl  # prior
            )
            return loss
        """
    )


def test_gf002_no_value_correction_keeps_comments():
    # Coefficients adding up to one: the merged call replaces the first term in place.
    fixed = _fix(
        """\
        import torch.nn.functional as F


        def vq_loss(recon, z_q, z_e):
            loss = (
                recon
                + 0.75 * F.mse_loss(z_q, z_e.detach())  # codebook
                + 0.25 * F.mse_loss(z_q.detach(), z_e)  # commitment
            )
            return loss
        """,
        "GF002",
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale


        def vq_loss(recon, z_q, z_e):
            loss = (
                recon
                + F.mse_loss(grad_scale(z_q, 0.75), grad_scale(z_e, 0.25))  # codebook
                # commitment
            )
            return loss
        """
    )


def test_gf002_terms_defined_by_name_keep_sum_comments():
    fixed = _fix(
        """\
        import torch.nn.functional as F

        BETA = 0.25


        def vq_loss(recon, z_q, z_e):
            q_latent = F.mse_loss(z_q, z_e.detach())
            e_latent = F.mse_loss(z_q.detach(), z_e)
            loss = (
                recon
                + q_latent  # codebook
                + BETA * e_latent  # commitment
            )
            return loss
        """,
        "GF002",
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale

        BETA = 0.25


        def vq_loss(recon, z_q, z_e):
            q_latent = F.mse_loss(z_q, grad_scale(z_e, BETA))
            loss = (
                recon
                + (q_latent + (BETA * q_latent).detach())  # codebook
                # commitment
            )
            return loss
        """
    )


def test_gf002_lines_broken_after_operators():
    # The next operator moves up to the removed one's place: lines still end in `+  # comment`.
    fixed = _fix(
        """\
        import torch.nn.functional as F

        BETA = 0.25


        def vq_loss(recon, kl, z_q, z_e):
            loss = (recon +  # reconstruction
                    F.mse_loss(z_q, z_e.detach()) +  # codebook
                    BETA * F.mse_loss(z_q.detach(), z_e) +  # commitment
                    kl)  # prior
            return loss
        """,
        "GF002",
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale

        BETA = 0.25


        def vq_loss(recon, kl, z_q, z_e):
            loss_term = F.mse_loss(z_q, grad_scale(z_e, BETA))
            loss = (recon +  # reconstruction
                    (loss_term + (BETA * loss_term).detach()) +  # codebook
                    # commitment
                    kl)  # prior
            return loss
        """
    )


def test_gf002_comments_inside_removed_term_and_sum_in_call():
    # The sum is an argument, not parenthesised itself; the comments inside
    # the removed call become comment lines where the term was.
    fixed = _fix(
        """\
        import torch.nn.functional as F

        BETA = 0.25


        def vq_loss(recon, z_q, z_e, history):
            history.append(
                recon
                + F.mse_loss(z_q, z_e.detach())  # codebook
                + BETA * F.mse_loss(
                    z_q.detach(),  # stop-gradient on the codebook
                    z_e,
                )  # commitment
            )
        """,
        "GF002",
        unsafe=True,  # the evaluation moves before `history.append()`
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale

        BETA = 0.25


        def vq_loss(recon, z_q, z_e, history):
            mse_loss_term = F.mse_loss(z_q, grad_scale(z_e, BETA))
            history.append(
                recon
                + (mse_loss_term + (BETA * mse_loss_term).detach())  # codebook
                # stop-gradient on the codebook
                # commitment
            )
        """
    )


def test_gf002_comment_that_cannot_stay_in_a_one_line_sum():
    # Outside brackets the sum cannot break a line: the comment from inside
    # the removed term goes on a line of its own before the statement.
    fixed = _fix(
        """\
        import torch.nn.functional as F


        def vq_loss(recon, z_q, z_e):
            # the VQ loss
            loss = recon + 0.5 * F.mse_loss(z_q, z_e.detach()) + 0.5 * F.mse_loss(z_q.detach(),  # commitment
                                                                                   z_e)  # total
            return loss
        """,
        "GF002",
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale


        def vq_loss(recon, z_q, z_e):
            # the VQ loss
            # commitment
            loss = recon + F.mse_loss(grad_scale(z_q, 0.5), grad_scale(z_e, 0.5))  # total
            return loss
        """
    )


def test_gf002_without_comments_unchanged_layout():
    # No comment in the removed text: the layout is exactly as before.
    fixed = _fix(
        """\
        import torch.nn.functional as F

        BETA = 0.25


        def vq_loss(recon, z_q, z_e):
            loss = (
                recon
                + F.mse_loss(z_q, z_e.detach())
                + BETA * F.mse_loss(z_q.detach(), z_e)
            )
            return loss
        """,
        "GF002",
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale

        BETA = 0.25


        def vq_loss(recon, z_q, z_e):
            loss_term = F.mse_loss(z_q, grad_scale(z_e, BETA))
            loss = (
                recon
                + (loss_term + (BETA * loss_term).detach())
            )
            return loss
        """
    )


# gradfix.fixes.rewrite: the trailing comment of a removed statement.


def test_removed_statement_comment_is_a_line_before_the_merged_backward():
    # `# keep graph` described `retain_graph=True`, which the merge removes:
    # as the trailing comment of `(loss_rec + loss_kl).backward()` it would
    # claim the merged call keeps the graph. It stays a line of its own.
    fixed = _fix(
        """\
        def step(model, opt, x):
            opt.zero_grad()
            loss_rec = model(x).pow(2).mean()
            loss_kl = model(x).abs().mean()
            loss_rec.backward(retain_graph=True)  # keep graph
            loss_kl.backward()
            opt.step()
        """,
        "GF003",
    )
    assert fixed == _expect(
        """\
        def step(model, opt, x):
            opt.zero_grad()
            loss_rec = model(x).pow(2).mean()
            loss_kl = model(x).abs().mean()
            # keep graph
            (loss_rec + loss_kl).backward()
            opt.step()
        """
    )


def test_removed_statements_comments_keep_their_order():
    fixed = _fix(
        """\
        import torch.nn.functional as F


        def step(x, y, opt):
            l1 = F.mse_loss(x.detach(), y)  # first
            l1.backward(retain_graph=True)  # keep graph
            l2 = -1 * F.mse_loss(x, y.detach())  # second
            l2.backward()
            opt.step()
        """,
        "GF001",
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale


        def step(x, y, opt):
            l1 = F.mse_loss(grad_scale(x, -1.0), y)  # first
            # keep graph
            # second
            l1.backward()
            opt.step()
        """
    )


# gradfix.fixes.rewrite: the blank lines of a removed statement.


def test_blank_line_before_removed_statement_stays():
    # The blank line and `# minimax` stood before the removed first backward:
    # both stay, before the merged call (it was dropped, joining the
    # paragraphs).
    fixed = _fix(
        """\
        def step(model, opt, x):
            loss_rec = model(x).pow(2).mean()
            loss_kl = model(x).abs().mean()

            # minimax
            loss_rec.backward(retain_graph=True)
            loss_kl.backward()
            opt.step()
        """,
        "GF003",
    )
    assert fixed == _expect(
        """\
        def step(model, opt, x):
            loss_rec = model(x).pow(2).mean()
            loss_kl = model(x).abs().mean()

            # minimax
            (loss_rec + loss_kl).backward()
            opt.step()
        """
    )


def test_removed_statement_lines_come_before_the_next_statements_own():
    # Source order: the removed call's comment, then the next statement's.
    # Blank lines on both sides do not add up to two.
    fixed = _fix(
        """\
        def step(model, opt, x):
            loss_rec = model(x).pow(2).mean()
            loss_kl = model(x).abs().mean()

            loss_rec.backward(retain_graph=True)  # keep graph

            # then the second
            loss_kl.backward()
            opt.step()
        """,
        "GF003",
    )
    assert fixed == _expect(
        """\
        def step(model, opt, x):
            loss_rec = model(x).pow(2).mean()
            loss_kl = model(x).abs().mean()

            # keep graph

            # then the second
            (loss_rec + loss_kl).backward()
            opt.step()
        """
    )


def test_blank_lines_of_statements_removed_at_block_end_are_dropped():
    fixed = _fix(
        """\
        import torch.nn.functional as F


        def step(x, y):
            l1 = F.mse_loss(x.detach(), y)
            l1.backward(retain_graph=True)

            # second
            l2 = -1 * F.mse_loss(x, y.detach())
            l2.backward()


        def other():
            pass
        """,
        "GF001",
    )
    assert fixed == _expect(
        """\
        import torch.nn.functional as F
        from gradfix.autograd import grad_scale


        def step(x, y):
            l1 = F.mse_loss(grad_scale(x, -1.0), y)

            # second
            l1.backward()


        def other():
            pass
        """
    )
