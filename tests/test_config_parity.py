"""Configuration parity with ruff: `extend`, `--exclude`/`--extend-exclude`, `gradfix.toml` discovery,
`cache-dir`, and the repository's own `[tool.gradfix]` keeping the fixtures out of a walk."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradfix.cli import main
from gradfix.config import SettingsResolver, discover_files, load_settings
from tests.test_cli import SEED, SEED_FIXED

ROOT = Path(__file__).resolve().parents[1]
# SEED's finding is GF001; with GF001 ignored, GF003 reports the two backward calls.
GF003_LINE = 12


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def codes(stdout: str) -> list:
    return sorted({line.split(": ")[1].split()[0] for line in stdout.splitlines() if ": GF" in line})


def checked(result) -> list:
    return sorted({line.split(":")[0] for line in result.stdout.splitlines() if ": GF" in line})


# ---------------------------------------------------------------------------
# extend


def test_extend_reads_the_base_and_the_extending_files_keys_override(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", """\
        [tool.gradfix]
        ignore = ["GF001"]
        unsafe-fixes = true
        grad-scale-import = "base.ops"
        extend-exclude = ["sub/generated"]
        per-file-ignores = { "sub/legacy.py" = ["GF003", "GF005"] }
        """)
    write(tmp_path / "sub" / "pyproject.toml", """\
        [tool.gradfix]
        extend = "../pyproject.toml"
        unsafe-fixes = false
        extend-exclude = ["scratch"]
        """)
    for name in ("a.py", "legacy.py", "generated/g.py", "scratch/s.py"):
        write(tmp_path / "sub" / name, SEED)
    monkeypatch.chdir(tmp_path)
    settings = SettingsResolver().for_path(Path("sub/a.py"))
    assert settings.unsafe_fixes is False  # overridden
    assert settings.grad_scale_import == "base.ops"  # inherited
    assert settings.extends == (tmp_path / "pyproject.toml",)
    result = invoke("check", "sub")
    # the base's ignore (a selection layer) applies: GF003 instead of GF001; its globs stay relative to its
    # own directory (sub/generated, sub/legacy.py), the extending file's to its (sub/scratch)
    assert checked(result) == ["sub/a.py"], result.output
    assert codes(result.stdout) == ["GF003"]


def test_extend_selection_layers_like_ruff(tmp_path, monkeypatch):
    write(tmp_path / "base.toml", 'select = ["GF001"]\n')
    write(tmp_path / "proj" / "gradfix.toml", 'extend = "../base.toml"\nextend-select = ["GF003"]\nignore = ["GF001"]\n')
    write(tmp_path / "proj" / "a.py", SEED)
    monkeypatch.chdir(tmp_path / "proj")
    assert codes(invoke("check", "a.py").stdout) == ["GF003"]
    write(tmp_path / "proj" / "gradfix.toml", 'extend = "../base.toml"\nselect = ["GF003"]\n')
    assert codes(invoke("check", "a.py").stdout) == ["GF003"]
    write(tmp_path / "proj" / "gradfix.toml", 'extend = "../base.toml"\n')
    assert codes(invoke("check", "a.py").stdout) == ["GF001"]


def test_extend_chain_and_explicit_config(tmp_path):
    write(tmp_path / "a.toml", 'unsafe-fixes = true\n')
    write(tmp_path / "b" / "b.toml", 'extend = "../a.toml"\ngrad-scale-import = "inline"\n')
    write(tmp_path / "c" / "pyproject.toml", '[tool.gradfix]\nextend = "../b/b.toml"\n')
    settings = load_settings(tmp_path / "c" / "pyproject.toml")
    assert (settings.unsafe_fixes, settings.grad_scale_import) == (True, "inline")
    assert settings.extends == (tmp_path / "b" / "b.toml", tmp_path / "a.toml")


@pytest.mark.parametrize("body, message", [
    ('extend = "missing.toml"', r"\[tool\.gradfix\] extend: missing\.toml: no such file"),
    ('extend = 3', r"\[tool\.gradfix\] extend: expected a path, got int"),
    ('extend = "pyproject.toml"', r"\[tool\.gradfix\] extend: circular extend \(.+\)"),
])
def test_bad_extend_is_one_line_exit_2(tmp_path, monkeypatch, body, message):
    import re

    write(tmp_path / "pyproject.toml", f"[tool.gradfix]\n{body}\n")
    write(tmp_path / "a.py", SEED)
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "a.py")
    assert result.exit_code == 2 and "Traceback" not in result.output
    (line,) = result.stderr.splitlines()
    assert re.fullmatch(r"gradfix: pyproject\.toml: " + message, line), line


def test_circular_extend_between_two_files(tmp_path, monkeypatch):
    write(tmp_path / "one.toml", 'extend = "two.toml"\n')
    write(tmp_path / "two.toml", 'extend = "one.toml"\n')
    write(tmp_path / "a.py", SEED)
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "--config", "one.toml", "a.py")
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("circular extend (one.toml -> two.toml -> one.toml)"), result.stderr


# ---------------------------------------------------------------------------
# gradfix.toml discovery


def test_gradfix_toml_is_discovered_and_wins_over_pyproject_in_the_same_directory(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nignore = ["GF003"]\n')
    write(tmp_path / "gradfix.toml", 'ignore = ["GF001"]\n')
    write(tmp_path / "a.py", SEED)
    monkeypatch.chdir(tmp_path)
    assert codes(invoke("check", "a.py").stdout) == ["GF003"]
    assert SettingsResolver().for_path(tmp_path / "a.py").source == tmp_path / "gradfix.toml"
    write(tmp_path / ".gradfix.toml", 'ignore = ["GF003"]\n')  # ruff's .ruff.toml > ruff.toml > pyproject.toml
    assert codes(invoke("check", "a.py").stdout) == ["GF001"]


def test_empty_gradfix_toml_counts_and_nearest_wins(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nignore = ["GF001"]\n')
    write(tmp_path / "nested" / "gradfix.toml", "")  # an empty gradfix.toml: the defaults, rooted here
    write(tmp_path / "nested" / "a.py", SEED)
    write(tmp_path / "b.py", SEED)
    monkeypatch.chdir(tmp_path)
    assert codes(invoke("check", "nested/a.py").stdout) == ["GF001"]
    assert codes(invoke("check", "b.py").stdout) == ["GF003"]


def test_gradfix_toml_errors_name_the_file(tmp_path, monkeypatch):
    write(tmp_path / "gradfix.toml", 'selct = ["GF001"]\n')
    write(tmp_path / "a.py", SEED)
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "a.py")
    assert result.exit_code == 2
    assert result.stderr == "gradfix: gradfix.toml: [tool.gradfix] selct: unknown key (did you mean 'select'?)\n"


# ---------------------------------------------------------------------------
# --exclude / --extend-exclude


def test_extend_exclude_flag_adds_to_the_configuration(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nextend-exclude = ["gen"]\n')
    for name in ("a.py", "gen/g.py", "tmp/t.py", "build/b.py"):
        write(tmp_path / name, SEED)
    monkeypatch.chdir(tmp_path)
    assert checked(invoke("check", ".")) == ["a.py", "tmp/t.py"]
    assert checked(invoke("check", ".", "--extend-exclude", "tmp")) == ["a.py"]
    # a path named on the command line is checked unless --force-exclude
    assert checked(invoke("check", "tmp/t.py", "--extend-exclude", "tmp")) == ["tmp/t.py"]
    assert checked(invoke("check", "tmp/t.py", "--extend-exclude", "tmp", "--force-exclude")) == []


def test_exclude_flag_replaces_configuration_and_defaults(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nexclude = ["gen"]\n')
    for name in ("a.py", "gen/g.py", "tmp/t.py", "build/b.py"):
        write(tmp_path / name, SEED)
    monkeypatch.chdir(tmp_path)
    assert checked(invoke("check", ".")) == ["a.py", "build/b.py", "tmp/t.py"]
    assert checked(invoke("check", ".", "--exclude", "tmp,build")) == ["a.py", "gen/g.py"]
    assert checked(invoke("check", ".", "--exclude", "tmp", "--exclude", "a.py")) == ["build/b.py", "gen/g.py"]


def test_exclude_flags_with_fix_apply_leave_excluded_files_alone(tmp_path, monkeypatch):
    keep = write(tmp_path / "vendor" / "v.py", SEED)
    fixed = write(tmp_path / "a.py", SEED)
    monkeypatch.chdir(tmp_path)
    result = invoke("fix", "--apply", ".", "--extend-exclude", "vendor")
    assert result.exit_code == 0, result.output
    assert keep.read_text() == SEED and fixed.read_text() == SEED_FIXED


# ---------------------------------------------------------------------------
# cache-dir


def test_cache_dir_key_relative_to_the_configuration(tmp_path, monkeypatch):
    monkeypatch.delenv("GRADFIX_CACHE_DIR", raising=False)
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\ncache-dir = "var/gradfix-cache"\n')
    write(tmp_path / "src" / "a.py", SEED)
    monkeypatch.chdir(tmp_path)
    assert invoke("check", "src").exit_code == 1
    cache = tmp_path / "var" / "gradfix-cache"
    assert cache.is_dir() and any(cache.rglob("*.json")), sorted(map(str, tmp_path.rglob("*")))
    assert not (tmp_path / ".gradfix_cache").exists()


def test_environment_variable_wins_over_cache_dir(tmp_path, monkeypatch):
    env_dir = tmp_path / "from-env"
    monkeypatch.setenv("GRADFIX_CACHE_DIR", str(env_dir))
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\ncache-dir = "configured"\n')
    write(tmp_path / "a.py", SEED)
    monkeypatch.chdir(tmp_path)
    assert invoke("check", "a.py").exit_code == 1
    assert env_dir.is_dir() and not (tmp_path / "configured").exists()


def test_cache_dir_must_be_a_string(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\ncache-dir = 1\n')
    write(tmp_path / "a.py", SEED)
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "a.py")
    assert result.exit_code == 2
    assert result.stderr == "gradfix: pyproject.toml: [tool.gradfix] cache-dir: expected a path, got int\n"


# ---------------------------------------------------------------------------
# the repository's own configuration


def test_repository_walk_skips_the_fixtures_but_named_fixtures_are_checked(monkeypatch):
    monkeypatch.chdir(ROOT)
    resolver = SettingsResolver()
    files, problems = discover_files(["."], resolver)
    inputs = ("fixtures/", "examples/", "tests/fuzz_regressions/", "benchmarks/snippets/", "benchmarks/snippets_memory/")
    assert files and not [f for f in files if f.as_posix().startswith(inputs)]
    assert Path("gradfix/cli.py") in files
    assert discover_files(["examples"], resolver)[0] == [Path("examples/adversarial_alignment.py")]
    named = Path("fixtures/GF001/positive")
    walked, _ = discover_files([named], resolver)
    assert walked and all(named in f.parents for f in walked)
    one = sorted(walked)[0]
    assert discover_files([one], resolver)[0] == [one]
    assert discover_files([one], resolver, force_exclude=True)[0] == []


def test_fixture_named_on_the_command_line_is_still_fixed_in_a_dry_run(monkeypatch):
    """The tests run the CLI on fixture paths by name: the repository's exclusion must not hide them."""
    monkeypatch.chdir(ROOT)
    fixture = sorted(Path("fixtures/GF001/positive").glob("*.py"))[0]
    if fixture.name.endswith(".fixed.py"):
        fixture = fixture.with_name(fixture.name.replace(".fixed.py", ".py"))
    result = invoke("fix", "--no-cache", str(fixture))
    assert result.exit_code == 1, result.output
    assert f"--- {fixture}" in result.stdout
