"""The `gradfix` command line, driven through click's CliRunner on real files.

check / fix / rule / --version run in-process and never need torch; only the
`verify` tests import torch (and are skipped without it).  Exit codes follow
DESIGN §4: 0 clean (or all fixed), 1 findings remain, 2 usage/input error.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import gradfix
from gradfix.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "GF001"

SEED = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F

    x = torch.randn(4, 3, requires_grad=True)
    y = torch.randn(4, 3, requires_grad=True)


    def step():
        l1 = F.mse_loss(x.detach(), y)
        l1.backward(retain_graph=True)
        l2 = -1 * F.mse_loss(x, y.detach())
        l2.backward()
    """
)

SEED_FIXED = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F
    from gradfix.autograd import grad_scale

    x = torch.randn(4, 3, requires_grad=True)
    y = torch.randn(4, 3, requires_grad=True)


    def step():
        l1 = F.mse_loss(grad_scale(x, -1.0), y)
        l1.backward()
    """
)

# The seed with a callee gradfix cannot prove parameter-free: the finding has
# only an unsafe fix.
UNSAFE = SEED.replace("import torch.nn.functional as F", "from mylib import crit").replace("F.mse_loss", "crit")

CLEAN = "import torch\n\nx = torch.randn(3)\nprint(x.sum())\n"

SUMMARY_ONE_FIXABLE = "Found 1 finding (1 fixable with `gradfix fix --apply`).\n"
LINE = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<col>\d+): (?P<code>GF\d{3})(?P<star> \[\*\])? (?P<msg>.+)$")


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def write(path: Path, text, mode: int = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    if mode is not None:
        path.chmod(mode)
    return path


def no_traceback(result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output


def parsed_lines(stdout: str):
    lines = stdout.splitlines()
    matches = [LINE.match(line) for line in lines]
    assert all(matches), lines
    return matches


# ---------------------------------------------------------------------------
# check: output format, summary, exit codes


def test_check_reports_one_line_per_finding_with_fix_mark_and_summary(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", p)
    no_traceback(result)
    assert result.exit_code == 1
    (m,) = parsed_lines(result.stdout)
    assert (m["path"], m["line"], m["col"], m["code"], m["star"]) == (str(p), "11", "15", "GF001", " [*]")
    assert "F.mse_loss" in m["msg"]
    assert result.stderr == SUMMARY_ONE_FIXABLE


def test_check_clean_file_passes(tmp_path):
    p = write(tmp_path / "clean.py", CLEAN)
    result = invoke("check", p)
    no_traceback(result)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "All checks passed!\n"


def test_check_unsafe_only_finding_has_no_fix_mark(tmp_path):
    p = write(tmp_path / "unsafe.py", UNSAFE)
    result = invoke("check", p)
    assert result.exit_code == 1
    (m,) = parsed_lines(result.stdout)
    assert (m["line"], m["col"], m["star"]) == ("11", "15", None)
    assert "unsafe fix" in m["msg"]
    assert result.stderr == "Found 1 finding.\n"


def test_check_output_is_sorted_by_path_line_col_regardless_of_argument_order(tmp_path):
    two = (FIXTURES / "positive" / "p23_two_findings.py").read_bytes()
    write(tmp_path / "z.py", SEED)
    write(tmp_path / "d" / "b.py", two)
    write(tmp_path / "d" / "a" / "c.py", SEED)
    write(tmp_path / "d" / "a.py", SEED)
    result = invoke("check", tmp_path / "z.py", tmp_path / "d")
    assert result.exit_code == 1
    matches = parsed_lines(result.stdout)
    keys = [(m["path"], int(m["line"]), int(m["col"])) for m in matches]
    assert keys == sorted(keys)
    rel = [(str(Path(k[0]).relative_to(tmp_path)), k[1], k[2]) for k in keys]
    assert rel == [
        ("d/a.py", 11, 15),
        ("d/a/c.py", 11, 15),
        ("d/b.py", 20, 11),
        ("d/b.py", 24, 11),
        ("z.py", 11, 15),
    ]
    assert result.stderr == "Found 5 findings (5 fixable with `gradfix fix --apply`).\n"


def test_check_output_is_deterministic(tmp_path):
    for name in ("b.py", "a.py", "c/d.py", "c/a.py"):
        write(tmp_path / name, SEED)
    first = invoke("check", tmp_path)
    second = invoke("check", tmp_path)
    assert first.stdout == second.stdout and first.stdout.count("\n") == 4


def test_check_default_path_is_current_directory(tmp_path, monkeypatch):
    write(tmp_path / "seed.py", SEED)
    write(tmp_path / "sub" / "clean.py", CLEAN)
    monkeypatch.chdir(tmp_path)
    result = invoke("check")
    assert result.exit_code == 1
    (m,) = parsed_lines(result.stdout)
    assert (m["path"], m["line"], m["col"]) == ("seed.py", "11", "15")


def test_check_default_path_clean_directory(tmp_path, monkeypatch):
    write(tmp_path / "clean.py", CLEAN)
    monkeypatch.chdir(tmp_path)
    result = invoke("check")
    assert result.exit_code == 0
    assert result.stderr == "All checks passed!\n"


EXCLUDED = [".git", ".venv", "venv", "__pycache__", "build", "dist", "node_modules", ".tox", ".mypy_cache", "site-packages"]


def test_walk_is_recursive_and_skips_excluded_directories_and_non_python_files(tmp_path):
    write(tmp_path / "pkg" / "deep" / "er" / "found.py", SEED)
    write(tmp_path / "stub.pyi", SEED)
    write(tmp_path / "notes.txt", SEED)
    write(tmp_path / "script", SEED)  # no suffix: not walked
    for name in EXCLUDED:
        write(tmp_path / name / "hidden.py", SEED)
        write(tmp_path / "pkg" / name / "nested" / "hidden.py", SEED)
    result = invoke("check", tmp_path)
    assert result.exit_code == 1
    paths = [str(Path(m["path"]).relative_to(tmp_path)) for m in parsed_lines(result.stdout)]
    assert paths == ["pkg/deep/er/found.py", "stub.pyi"]


@pytest.mark.parametrize("name", ["build", ".venv", "__pycache__"])
def test_explicit_file_inside_excluded_directory_is_checked(tmp_path, name):
    p = write(tmp_path / name / "seed.py", SEED)
    result = invoke("check", p)
    assert result.exit_code == 1
    (m,) = parsed_lines(result.stdout)
    assert m["path"] == str(p)


def test_same_file_given_twice_is_reported_once(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", p, tmp_path, p)
    assert result.exit_code == 1
    assert len(parsed_lines(result.stdout)) == 1


# ---------------------------------------------------------------------------
# rule selection


@pytest.mark.parametrize("select", ["GF001", "GF", "GF0", "ALL", "gf001", "all", ",GF001", "GF001,GF", "GF001, GF"])
def test_select_matching_gf001_reports(tmp_path, select):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", "--select", select, p)
    no_traceback(result)
    assert result.exit_code == 1
    assert len(parsed_lines(result.stdout)) == 1


@pytest.mark.parametrize("option", ["--select", "--ignore"])
@pytest.mark.parametrize("command", ["check", "fix"])
def test_unknown_selector_is_a_usage_error(tmp_path, option, command):
    p = write(tmp_path / "seed.py", SEED)
    before = p.read_bytes()
    args = [command, option, "GF9", p] + (["--apply"] if command == "fix" else [])
    result = invoke(*args)
    no_traceback(result)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "GF9" in result.stderr
    assert p.read_bytes() == before


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_selector_is_a_usage_error_even_with_no_files_to_check(tmp_path, option):
    (tmp_path / "empty").mkdir()
    result = invoke("check", option, "GF9", tmp_path / "empty")
    no_traceback(result)
    assert result.exit_code == 2
    assert "GF9" in result.stderr


@pytest.mark.parametrize(
    "args",
    [["--ignore", "GF001,GF003,GF005"], ["--ignore", "GF"], ["--select", "ALL", "--ignore", "GF001", "--ignore", "GF003", "--ignore", "GF005"]],
)
def test_ignore_removes_the_rule(tmp_path, args):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", *args, p)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "All checks passed!\n"


def test_without_the_merges_gf005_reports_the_seeds_needless_retain(tmp_path):
    # `l2` is built afresh from the leaves `x` and `y`: nothing backpropagates through `l1`'s graph
    # again. GF001 and GF003, which merge the two, supersede this finding; without them it stands.
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", "--ignore", "GF001,GF003", "--output-format", "concise", p)
    assert result.exit_code == 1
    assert [line.split(" ", 2)[:2] for line in result.stdout.splitlines()] == [[f"{p}:10:17:", "GF005"]]


def test_ignoring_gf001_lets_gf003_report_the_two_backward_calls(tmp_path):
    # GF001 supersedes GF003 on the seed; without GF001 the merge of the two
    # backward calls is still a valid, weaker finding.
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("check", "--ignore", "GF001", p)
    assert result.exit_code == 1
    assert [m["code"] for m in parsed_lines(result.stdout)] == ["GF003"]
    assert parsed_lines(invoke("check", p).stdout)[0]["code"] == "GF001"


def test_ignore_under_fix_writes_nothing(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("fix", "--apply", "--ignore", "GF001,GF003,GF005", p)
    assert result.exit_code == 0
    assert p.read_text() == SEED


# ---------------------------------------------------------------------------
# noqa


def with_comment_on_line(text: str, lineno: int, comment: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[lineno - 1] = lines[lineno - 1].rstrip("\n") + "  " + comment + "\n"
    return "".join(lines)


BUG_NOQA_CASE = (
    "BUG: engine._unsuppressed skips noqa parsing when the lower-case text 'noqa' is absent, "
    "so `# NOQA` (matched case-insensitively by findings._NOQA, as flake8/ruff do) never suppresses"
)


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: GF001",
        "# noqa",
        "# noqa:GF001",
        "# noqa: GF002, GF001",
        "# noqa: gf001",
        pytest.param("# NoQA: GF001"),
        pytest.param("# NOQA: GF001"),
        pytest.param("# NOQA"),
    ],
)
def test_noqa_on_the_reported_line_suppresses(tmp_path, comment):
    p = write(tmp_path / "seed.py", with_comment_on_line(SEED, 11, comment))
    result = invoke("check", p)
    assert result.exit_code == 0, result.stdout
    assert result.stdout == ""
    assert result.stderr == "All checks passed!\n"

    shown = invoke("check", "--ignore-noqa", p)
    assert shown.exit_code == 1
    (m,) = parsed_lines(shown.stdout)
    assert (m["line"], m["col"]) == ("11", "15")


@pytest.mark.parametrize("comment", ["# noqa: GF002", "# noqa: E501"])
def test_noqa_for_another_code_does_not_suppress(tmp_path, comment):
    p = write(tmp_path / "seed.py", with_comment_on_line(SEED, 11, comment))
    result = invoke("check", p)
    assert result.exit_code == 1
    (m,) = parsed_lines(result.stdout)
    assert (m["line"], m["col"]) == ("11", "15")


@pytest.mark.parametrize("lineno", [9, 10, 12])
def test_noqa_on_another_line_does_not_suppress(tmp_path, lineno):
    p = write(tmp_path / "seed.py", with_comment_on_line(SEED, lineno, "# noqa: GF001"))
    result = invoke("check", p)
    assert result.exit_code == 1
    assert len(parsed_lines(result.stdout)) == 1


def test_noqa_is_honoured_by_fix_and_ignore_noqa_fixes(tmp_path):
    text = with_comment_on_line(SEED, 11, "# noqa: GF001")
    p = write(tmp_path / "seed.py", text)
    result = invoke("fix", "--apply", p)
    assert result.exit_code == 0
    assert p.read_text() == text
    forced = invoke("fix", "--apply", "--ignore-noqa", p)
    assert forced.exit_code == 0
    assert "grad_scale" in p.read_text()
    assert invoke("check", "--ignore-noqa", p).exit_code == 0


# ---------------------------------------------------------------------------
# fix


def test_fix_without_apply_prints_a_unified_diff_and_writes_nothing(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    before = p.read_bytes()
    mtime = p.stat().st_mtime_ns
    result = invoke("fix", p)
    no_traceback(result)
    assert p.read_bytes() == before
    assert p.stat().st_mtime_ns == mtime
    assert sorted(os.listdir(tmp_path)) == ["seed.py"]
    lines = result.stdout.splitlines()
    assert lines[0] == f"--- {p}"
    assert lines[1] == f"+++ {p}"
    assert lines[2].startswith("@@ ")
    expected = "".join(
        difflib.unified_diff(
            SEED.splitlines(keepends=True), SEED_FIXED.splitlines(keepends=True), fromfile=str(p), tofile=str(p)
        )
    )
    assert result.stdout == expected
    assert result.stderr == "Would fix 1 finding in 1 file.\n"
    # Nothing was written, so the finding remains: exit 1 (as `ruff check --diff`).
    assert result.exit_code == 1


def test_fix_diff_marks_missing_newline_at_end_of_file(tmp_path):
    p = write(tmp_path / "seed.py", SEED.rstrip("\n"))
    result = invoke("fix", p)
    assert "\\ No newline at end of file\n" in result.stdout
    assert result.stdout.endswith("\n")
    assert p.read_text() == SEED.rstrip("\n")


def test_fix_diff_on_clean_file_is_empty(tmp_path):
    p = write(tmp_path / "clean.py", CLEAN)
    result = invoke("fix", p)
    assert result.exit_code == 0
    assert result.stdout == ""


def test_fix_apply_rewrites_then_check_is_clean_and_second_fix_is_a_no_op(tmp_path):
    p = write(tmp_path / "seed.py", SEED)
    result = invoke("fix", "--apply", p)
    no_traceback(result)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "Fixed 1 finding in 1 file.\n"
    assert p.read_text() == SEED_FIXED

    check = invoke("check", p)
    assert check.exit_code == 0
    assert check.stdout == ""

    after = p.read_bytes()
    again = invoke("fix", "--apply", p)
    assert again.exit_code == 0
    assert again.stderr == "Fixed 0 findings in 0 files.\n"
    assert p.read_bytes() == after


def test_fix_apply_on_a_directory(tmp_path):
    a = write(tmp_path / "a.py", SEED)
    b = write(tmp_path / "sub" / "b.py", SEED)
    c = write(tmp_path / "clean.py", CLEAN)
    result = invoke("fix", "--apply", tmp_path)
    assert result.exit_code == 0
    assert result.stderr == "Fixed 2 findings in 2 files.\n"
    assert a.read_text() == SEED_FIXED and b.read_text() == SEED_FIXED
    assert c.read_text() == CLEAN


def test_fix_apply_leaves_unsafe_only_finding_and_exits_1(tmp_path):
    p = write(tmp_path / "unsafe.py", UNSAFE)
    result = invoke("fix", "--apply", p)
    no_traceback(result)
    assert result.exit_code == 1
    assert p.read_text() == UNSAFE
    (m,) = parsed_lines(result.stdout)
    assert (m["path"], m["line"], m["col"], m["star"]) == (str(p), "11", "15", None)
    assert "--unsafe-fixes" in result.stderr
    assert "1 remaining" in result.stderr


def test_fix_apply_unsafe_fixes_applies_unsafe_ones(tmp_path):
    p = write(tmp_path / "unsafe.py", UNSAFE)
    result = invoke("fix", "--apply", "--unsafe-fixes", p)
    assert result.exit_code == 0
    assert result.stderr == "Fixed 1 finding in 1 file.\n"
    text = p.read_text()
    assert "crit(grad_scale(x, -1.0), y)" in text
    assert ".detach()" not in text and "retain_graph" not in text
    assert invoke("check", p).exit_code == 0


def test_fix_apply_mixed_safe_and_unsafe_exits_1_and_fixes_the_safe_one(tmp_path):
    safe = write(tmp_path / "a_safe.py", SEED)
    unsafe = write(tmp_path / "b_unsafe.py", UNSAFE)
    result = invoke("fix", "--apply", tmp_path)
    assert result.exit_code == 1
    assert safe.read_text() == SEED_FIXED
    assert unsafe.read_text() == UNSAFE
    (m,) = parsed_lines(result.stdout)
    assert m["path"] == str(unsafe)


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_fix_apply_preserves_file_mode(tmp_path, mode):
    p = write(tmp_path / "seed.py", SEED, mode=mode)
    result = invoke("fix", "--apply", p)
    assert result.exit_code == 0
    assert p.read_text() == SEED_FIXED
    assert stat.S_IMODE(p.stat().st_mode) == mode


def test_fix_apply_leaves_no_temporary_files(tmp_path):
    write(tmp_path / "seed.py", SEED)
    write(tmp_path / "sub" / "other.py", SEED)
    result = invoke("fix", "--apply", tmp_path)
    assert result.exit_code == 0
    found = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert found == ["seed.py", "sub", "sub/other.py"]


def test_fix_apply_through_a_symlink_writes_the_target_and_keeps_the_link(tmp_path):
    target = write(tmp_path / "real" / "seed.py", SEED)
    link = tmp_path / "link.py"
    link.symlink_to(Path("real") / "seed.py")
    result = invoke("fix", "--apply", link)
    assert result.exit_code == 0
    assert link.is_symlink()
    assert target.read_text() == SEED_FIXED
    assert sorted(os.listdir(tmp_path / "real")) == ["seed.py"]


# ---------------------------------------------------------------------------
# rule, --version, python -m gradfix


def test_rule_prints_the_documentation():
    result = invoke("rule", "GF001")
    assert result.exit_code == 0
    assert "## Fix safety" in result.stdout
    assert "## What it does" in result.stdout
    assert invoke("rule", "gf001").stdout == result.stdout


@pytest.mark.parametrize("args", [["--all"], []])
def test_rule_all_lists_gf001(args):
    result = invoke("rule", *args)
    assert result.exit_code == 0
    rows = [line for line in result.stdout.splitlines() if line.startswith("GF001")]
    assert len(rows) == 1
    assert "detached-double-backward" in rows[0]


def test_rule_unknown_code_is_a_usage_error():
    result = invoke("rule", "GF999")
    no_traceback(result)
    assert result.exit_code == 2
    assert "GF999" in result.stderr
    assert result.stdout == ""


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout == f"gradfix, version {gradfix.__version__}\n"


def test_unknown_command_and_option_are_usage_errors(tmp_path):
    assert invoke("lint").exit_code == 2
    assert invoke("check", "--frobnicate", tmp_path).exit_code == 2


def test_python_dash_m_gradfix_help():
    proc = subprocess.run(
        [sys.executable, "-m", "gradfix", "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    for command in ("check", "fix", "verify", "rule"):
        assert re.search(rf"^\s+{command}\b", proc.stdout, re.M), proc.stdout


# ---------------------------------------------------------------------------
# check and fix never import torch


TORCH_FREE = textwrap.dedent(
    """
    import sys
    from gradfix.cli import main

    codes = []
    for args in (["check", A], ["fix", A], ["fix", "--apply", B], ["check", B], ["rule", "GF001"]):
        try:
            main(args, standalone_mode=False)
        except SystemExit as exc:
            codes.append(exc.code)
        else:
            codes.append(0)
    leaked = sorted(m for m in sys.modules if m == "torch" or m.startswith(("torch.", "gradfix.harness")))
    assert not leaked, leaked
    print("codes", codes)
    """
)


def test_check_and_fix_never_import_torch(tmp_path):
    a = write(tmp_path / "a.py", SEED)
    b = write(tmp_path / "b.py", SEED)
    script = f"A = {str(a)!r}\nB = {str(b)!r}\n" + TORCH_FREE
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # a dry-run fix leaves the finding on disk: exit 1, like `ruff check --diff`
    assert "codes [1, 1, 0, 0, 0]" in proc.stdout, proc.stdout + proc.stderr
    assert b.read_text() == SEED_FIXED


def test_check_importtime_shows_no_torch(tmp_path):
    a = write(tmp_path / "a.py", SEED)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gradfix", "check", str(a)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "libcst" in imported  # the file has candidate tokens, so it was parsed
    assert not [m for m in imported if m == "torch" or m.startswith("torch.")]


# ---------------------------------------------------------------------------
# prefilter (intended: ruff-like speed)


def test_prefilter_skips_parsing_files_without_candidate_tokens_so_their_syntax_errors_go_unreported(tmp_path):
    from gradfix.engine import lint_bytes
    from gradfix.options import LintOptions
    from gradfix.rules import select

    codes = tuple(r.CODE for r in select())
    broken = b"def (:\n    x = = 1\n"
    for data in (broken, broken + b"x.detach()\n", broken + b"y.backward()\n", b"\x00\xff" + broken):
        # (GF001 needs `.detach(`, `.backward(` and `retain_graph`; GF003 the last two)
        result = lint_bytes(data, "broken.py", LintOptions(codes, fix=True))
        assert result.error is None and result.findings == [] and result.fixed is None, data

    # with both tokens present the file is parsed and the error is reported
    result = lint_bytes(broken + b"x.detach()\ny.backward(retain_graph=True)\n", "broken.py", LintOptions(codes))
    assert result.error is not None and "SyntaxError" in result.error

    p = write(tmp_path / "broken.py", broken)
    cli = invoke("check", p)
    assert cli.exit_code == 0
    assert cli.stderr == "All checks passed!\n"


# ---------------------------------------------------------------------------
# verify (imports torch)


P02 = FIXTURES / "positive" / "p02_seed_step_function.py"
N01 = FIXTURES / "negative" / "n01_step_between.py"
# A critic module class gradfix cannot prove deterministic: only an unsafe fix.
U05 = FIXTURES / "unsafe" / "u05_module_critic_general_coef.py"


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_verify_positive_fixture_ok_with_speedup(torch):
    result = invoke("verify", P02, "--device", "cpu", "--repeat", "3")
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert "rewrote 1 finding" in result.stdout
    assert re.search(r"^OK\b", result.stdout, re.M), result.stdout
    assert re.search(r"speedup [0-9.]+x", result.stdout), result.stdout
    assert "MISMATCH" not in result.stdout


def test_verify_cuda_without_cuda_is_a_one_line_error(torch):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available")
    result = invoke("verify", P02, "--device", "cuda", "--repeat", "1")
    no_traceback(result)
    assert result.exit_code == 2
    assert result.stdout == ""
    # torch may print its own import warnings to stderr; gradfix says one line
    ours = [line for line in result.stderr.splitlines() if line.startswith("gradfix")]
    assert len(ours) == 1 and "CUDA" in ours[0], result.stderr


def test_verify_negative_fixture_has_nothing_to_rewrite(torch):
    result = invoke("verify", N01, "--device", "cpu", "--repeat", "1")
    assert result.exit_code == 0
    assert "nothing to rewrite\n" in result.stdout
    assert "--unsafe-fixes" not in result.stdout


def test_verify_unsafe_fixture_without_unsafe_fixes_gives_the_hint(torch):
    result = invoke("verify", U05, "--device", "cpu", "--repeat", "1")
    assert result.exit_code == 0
    assert "nothing to rewrite" in result.stdout
    assert "--unsafe-fixes" in result.stdout


def test_verify_unsafe_fixture_with_unsafe_fixes_is_a_mismatch_in_the_critic(torch):
    result = invoke("verify", U05, "--device", "cpu", "--repeat", "0", "--unsafe-fixes")
    no_traceback(result)
    assert result.exit_code == 1, result.output
    mismatched = re.findall(r"MISMATCH (\S+?):", result.stdout)
    assert mismatched, result.stdout
    assert all(name.startswith("critic.") for name in mismatched), mismatched
    assert any(name.endswith(".grad") for name in mismatched)


def test_verify_missing_file_is_a_usage_error(tmp_path):
    result = invoke("verify", tmp_path / "nope.py", "--device", "cpu")
    no_traceback(result)
    assert result.exit_code == 2


@pytest.mark.parametrize("bad", ["0", "-2"])
def test_verify_threads_below_one_is_a_one_line_usage_error(torch, bad):
    result = invoke("verify", P02, "--device", "cpu", "--threads", bad)
    no_traceback(result)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"gradfix verify: --threads must be at least 1, got {bad}\n"


def test_verify_reports_the_thread_count_and_the_spread_and_restores_threads(torch):
    from gradfix.harness.timing import DEFAULT_THREADS

    before = torch.get_num_threads()
    default = invoke("verify", P02, "--device", "cpu", "--repeat", "3")
    assert default.exit_code == 0, default.output
    assert DEFAULT_THREADS == 1  # the CLI's default (cli.py does not import torch to read it)
    time_line = default.stdout.splitlines()[-1]
    assert re.search(r"original [0-9.]+ ms \(IQR [0-9.]+-[0-9.]+\), rewritten [0-9.]+ ms \(IQR ", time_line), time_line
    assert re.search(r"speedup [0-9.]+x \(IQR [0-9.]+-[0-9.]+", time_line), time_line
    assert time_line.endswith("(median of 3 calls each, order alternating, 1 CPU thread, cpu)"), time_line
    two = invoke("verify", P02, "--device", "cpu", "--repeat", "2", "--threads", "2")
    assert two.exit_code == 0, two.output
    assert two.stdout.splitlines()[-1].endswith(", 2 CPU threads, cpu)"), two.stdout
    assert torch.get_num_threads() == before
