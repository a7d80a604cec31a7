"""Reasons are values: one per unproven condition, kept in the order found, each once, and
discharged by what they are about, never by their text."""

from gradfix.reasons import COEFFICIENT, LOOP, UNPROVEN, Reason, Reasons


def test_reasons_keep_order_and_drop_repeats():
    reasons = Reasons(["b is not proven", Reason("a is not proven", LOOP)])
    reasons.add("b is not proven")
    reasons.add(Reason("b is not proven", LOOP))  # the same text, once
    assert [(r.text, r.kind) for r in reasons] == [("b is not proven", UNPROVEN), ("a is not proven", LOOP)]
    assert reasons.text() == "b is not proven; a is not proven"
    assert len(reasons) == 2 and bool(reasons)
    assert not Reasons() and Reasons().text() == ""


def test_discard_removes_by_kind_and_subject_only():
    reasons = Reasons(
        [
            Reason("coefficient `lam` is not a number: ...", COEFFICIENT, "lam"),
            Reason("coefficient `mu` is not a number: ...", COEFFICIENT, "mu"),
            # the same words about `lam`, of another kind: a text match would have removed it
            Reason("coefficient `lam` is not a number: ... (in a loop)", LOOP, "lam"),
        ]
    )
    reasons.discard(COEFFICIENT, "lam")
    assert [(r.kind, r.subject) for r in reasons] == [(COEFFICIENT, "mu"), (LOOP, "lam")]
