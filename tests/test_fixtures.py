"""Every rule against its fixtures (fixtures/<CODE>/{positive,negative,unsafe}):
positions, exact rewrites, fixed points, and gradients.

Every positive fixture has a hand-reviewed expected rewrite `<name>.fixed.py`;
the gradient tests execute original and rewrite with the same seed and compare
every parameter, leaf gradient and logged value (gradfix.harness).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gradfix.engine import lint_bytes
from gradfix.options import LintOptions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPECT = re.compile(r"^# expect: (GF\d{3}) (\d+):(\d+) (safe|unsafe)\s*$", re.MULTILINE)
DIFFERS = re.compile(r"^# differs: (\S+)\s*$", re.MULTILINE)
RAISES = re.compile(r"^# rewrite raises: (\w+)\s*$", re.MULTILINE)
# An original that raises on the installed torch (`retain_variables=True`, removed in 0.4) and what
# it meant, one text replaced by another: the rewrite is compared with the original as meant.
ORIGINAL_RAISES = re.compile(r"^# original raises: (\w+)\s*$", re.MULTILINE)
AS_MEANT = re.compile(r"^# as meant: (\S+) -> (\S+)\s*$", re.MULTILINE)


def _sources(kind: str):
    return sorted(p for p in FIXTURES.glob(f"GF*/{kind}/*.py") if not p.name.endswith(".fixed.py"))


def _options(path: Path, **flags) -> LintOptions:
    # Each rule's fixtures are checked with that rule alone.
    return LintOptions((path.parent.parent.name,), **flags)


POSITIVE = _sources("positive")
NEGATIVE = _sources("negative")
UNSAFE = _sources("unsafe")


def _ids(paths):
    return [f"{p.parent.parent.name}/{p.stem}" for p in paths]


def test_fixture_counts():
    # GF001's issue asks for at least 15 positives and 12 negatives; keep it so,
    # and give every other rule positives and negatives too.
    def count(code, kind):
        return sum(1 for p in POSITIVE + NEGATIVE + UNSAFE if p.parent.parent.name == code and p.parent.name == kind)

    assert count("GF001", "positive") >= 15 and count("GF001", "negative") >= 12 and count("GF001", "unsafe") >= 3
    for rule_dir in FIXTURES.glob("GF*"):
        assert count(rule_dir.name, "positive") >= 3 and count(rule_dir.name, "negative") >= 3, rule_dir.name


@pytest.mark.parametrize("path", POSITIVE + UNSAFE, ids=_ids(POSITIVE + UNSAFE))
def test_findings_at_expected_positions(path: Path):
    data = path.read_bytes()
    expected = [(code, int(line), int(col), safety == "safe") for code, line, col, safety in EXPECT.findall(data.decode())]
    assert expected, f"{path.name} declares no `# expect:` line"
    result = lint_bytes(data, str(path), _options(path))
    assert result.error is None
    got = [(f.code, f.line, f.col, f.fixable) for f in result.findings]
    assert got == expected


@pytest.mark.parametrize("path", POSITIVE + UNSAFE, ids=_ids(POSITIVE + UNSAFE))
def test_rewrite_equals_expected(path: Path):
    unsafe = path.parent.name == "unsafe"
    result = lint_bytes(path.read_bytes(), str(path), _options(path, fix=True, unsafe_fixes=unsafe))
    expected = path.with_suffix(".fixed.py").read_bytes()
    assert result.fixed is not None
    assert result.fixed.decode() == expected.decode()
    assert result.remaining == []


@pytest.mark.parametrize("path", UNSAFE, ids=_ids(UNSAFE))
def test_unsafe_fix_not_applied_by_default(path: Path):
    result = lint_bytes(path.read_bytes(), str(path), _options(path, fix=True))
    assert result.fixed is None
    assert result.findings and all(f.fix is not None and not f.fix.safe for f in result.findings)
    assert all("[unsafe fix: " in f.message for f in result.findings)


@pytest.mark.parametrize("path", POSITIVE + UNSAFE, ids=_ids(POSITIVE + UNSAFE))
def test_fixed_file_is_a_fixed_point(path: Path):
    fixed = path.with_suffix(".fixed.py").read_bytes()
    result = lint_bytes(fixed, str(path), _options(path, fix=True, unsafe_fixes=True))
    assert result.findings == []
    assert result.fixed is None


@pytest.mark.parametrize("path", NEGATIVE, ids=_ids(NEGATIVE))
def test_negative_has_no_finding_and_no_change(path: Path):
    result = lint_bytes(path.read_bytes(), str(path), _options(path, fix=True, unsafe_fixes=True))
    assert result.error is None
    assert result.findings == []
    assert result.fixed is None


def _verify(path: Path, device: str):
    harness = pytest.importorskip("gradfix.harness")
    original = path.read_text()
    rewritten = path.with_suffix(".fixed.py").read_text()
    report = harness.verify_pair(original, rewritten, filename=str(path), device=device, repeat=0)
    raises = ORIGINAL_RAISES.findall(original)
    if raises:
        # The fix's unsafe reason says the original raises: check it, then compare the rewrite
        # with what the original meant.
        assert report.error_side == "original" and raises[0] in report.error, report.error
        ((old, new),) = AS_MEANT.findall(original)
        assert old in original
        report = harness.verify_pair(original.replace(old, new), rewritten, filename=str(path), device=device, repeat=0)
    return report


def _assert_equivalent(path: Path, device: str):
    report = _verify(path, device)
    raises = RAISES.findall(path.read_text())
    if raises:
        # Documented unsafe cases whose rewrite fails loudly (the reason the fix is unsafe).
        assert report.error is not None and raises[0] in report.error, report.error
        return
    assert report.error is None, report.error
    differs = DIFFERS.findall(path.read_text())
    bad = [row for row in report.rows if not row.ok]
    if differs:
        # Documented unsafe cases: the rewrite differs exactly where the
        # message says (e.g. the parameters of a module callee), nowhere else.
        assert bad, f"{path.name}: expected a difference under {differs}"
        assert all(any(row.path.startswith(prefix) for prefix in differs) for row in bad), [r.path for r in bad]
    else:
        assert not bad, "\n".join(f"{r.path} {r.what}: abs {r.max_abs} rel {r.max_rel} {r.note}" for r in bad)
    assert len(report.rows) > 0


@pytest.mark.parametrize("path", POSITIVE + UNSAFE, ids=_ids(POSITIVE + UNSAFE))
def test_rewrite_gradients_match_cpu(path: Path):
    _assert_equivalent(path, "cpu")


@pytest.mark.cuda
@pytest.mark.parametrize("path", POSITIVE + UNSAFE, ids=_ids(POSITIVE + UNSAFE))
def test_rewrite_gradients_match_cuda(path: Path):
    _assert_equivalent(path, "cuda")
