"""`[tool.gradfix]` configuration: discovery, validation, selection, exclusion."""

from __future__ import annotations

import os
import textwrap
import types
from pathlib import Path

import pytest

import gradfix.rules
from gradfix.config import (
    ConfigError,
    Settings,
    SettingsResolver,
    default_settings,
    discover_files,
    load_settings,
    parse_selectors,
)
from gradfix.files import DEFAULT_EXCLUDES
from gradfix.rules import SelectionError


def _rule(code: str, default: bool = True) -> types.ModuleType:
    module = types.ModuleType(f"fake_{code.lower()}")
    module.CODE, module.DEFAULT = code, default
    return module


@pytest.fixture
def fake_rules(monkeypatch):
    """A registry with a few rules, so selection semantics can be observed."""
    registry = (_rule("GF001"), _rule("GF002"), _rule("GF003", default=False), _rule("GF101"))
    monkeypatch.setattr(gradfix.rules, "ALL_RULES", registry)
    return registry


def codes(rules) -> list:
    return [r.CODE for r in rules]


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def rel(files, root: Path) -> list:
    return sorted(Path(os.path.relpath(f, root)).as_posix() for f in files)


# --------------------------------------------------------------------------- #
# Discovery
# --------------------------------------------------------------------------- #


def test_nearest_pyproject_wins_and_nested_projects_differ(tmp_path, fake_rules):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nselect = ["GF0"]\nignore = ["GF002"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[tool.gradfix]\nselect = ["GF1"]\n')
    outer = write(tmp_path / "pkg" / "deep" / "a.py")
    inner = write(tmp_path / "sub" / "x" / "b.py")
    resolver = SettingsResolver()

    s_outer, s_inner = resolver.for_path(outer), resolver.for_path(inner)
    assert s_outer.source == tmp_path / "pyproject.toml" and s_outer.root == tmp_path
    assert s_inner.source == tmp_path / "sub" / "pyproject.toml" and s_inner.root == tmp_path / "sub"
    assert codes(s_outer.rules_for(outer)) == ["GF001", "GF003"]
    assert codes(s_inner.rules_for(inner)) == ["GF101"]
    # Cached per directory: the same object comes back.
    assert resolver.for_path(tmp_path / "pkg" / "deep" / "other.py") is s_outer


def test_pyproject_without_table_is_skipped(tmp_path, fake_rules):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nignore = ["GF001"]\n')
    write(tmp_path / "lib" / "pyproject.toml", '[project]\nname = "lib"\n[tool.black]\nline-length = 100\n')
    write(tmp_path / "lib" / "gradfix_notes" / "pyproject.toml", '[project]\nname = "gradfix-notes"\n')
    f = write(tmp_path / "lib" / "gradfix_notes" / "m.py")
    settings = SettingsResolver().for_path(f)
    assert settings.source == tmp_path / "pyproject.toml"
    assert codes(settings.rules_for(f)) == ["GF002", "GF101"]


def test_no_config_gives_defaults(tmp_path, fake_rules):
    f = write(tmp_path / "a.py")
    settings = SettingsResolver().for_path(f)
    assert settings.root is None and settings.source is None
    assert settings == default_settings()
    assert codes(settings.rules_for(f)) == ["GF001", "GF002", "GF101"]


def test_explicit_config_overrides_discovery(tmp_path, fake_rules):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nselect = ["GF001"]\n')
    explicit = write(tmp_path / "conf" / "gradfix.toml", 'select = ["GF101"]\nexclude = ["gen"]\n')
    f = write(tmp_path / "a.py")
    settings = SettingsResolver(config=explicit).for_path(f)
    assert settings.source == explicit and settings.root == tmp_path / "conf"
    assert codes(settings.rules_for(f)) == ["GF101"]


def test_explicit_pyproject_uses_its_tool_table(tmp_path, fake_rules):
    explicit = write(tmp_path / "other" / "pyproject.toml", '[project]\nname = "x"\n[tool.gradfix]\nselect = ["GF002"]\n')
    assert load_settings(explicit).select == ("GF002",)
    # A pyproject.toml without the table is the defaults, not "unknown key 'project'".
    bare = write(tmp_path / "bare" / "pyproject.toml", '[project]\nname = "x"\n')
    assert load_settings(bare).select is None
    # A gradfix.toml that nests the table is read from tool.gradfix too.
    nested = write(tmp_path / "n" / "gradfix.toml", '[tool.gradfix]\nignore = ["GF1"]\n')
    assert load_settings(nested).ignore == ("GF1",)


def test_isolated_ignores_all_configuration(tmp_path, fake_rules):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nselect = ["GF101"]\n')
    explicit = write(tmp_path / "gradfix.toml", 'select = ["GF002"]\n')
    f = write(tmp_path / "a.py")
    for resolver in (SettingsResolver(isolated=True), SettingsResolver(isolated=True, config=explicit)):
        assert resolver.for_path(f) == default_settings()


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #


def _error(tmp_path, monkeypatch, text: str) -> str:
    write(tmp_path / "pyproject.toml", text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        SettingsResolver().for_path(tmp_path / "a.py")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_key_message(tmp_path, monkeypatch):
    message = _error(tmp_path, monkeypatch, '[tool.gradfix]\nselct = ["GF001"]\n')
    assert message == "pyproject.toml: [tool.gradfix] selct: unknown key (did you mean 'select'?)"
    message = _error(tmp_path, monkeypatch, "[tool.gradfix]\nfrobnicate = 1\n")
    assert message == "pyproject.toml: [tool.gradfix] frobnicate: unknown key"
    message = _error(tmp_path, monkeypatch, "[tool.gradfix]\nunsafe_fixes = true\n")
    assert message == "pyproject.toml: [tool.gradfix] unsafe_fixes: unknown key (did you mean 'unsafe-fixes'?)"


def test_unknown_key_names_the_file_outside_cwd(tmp_path, monkeypatch):
    (tmp_path / "elsewhere").mkdir()
    write(tmp_path / "proj" / "pyproject.toml", "[tool.gradfix]\nextend-selct = []\n")
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(ConfigError) as info:
        SettingsResolver().for_path(tmp_path / "proj" / "a.py")
    assert str(info.value) == (
        f"{tmp_path / 'proj' / 'pyproject.toml'}: [tool.gradfix] extend-selct: unknown key "
        "(did you mean 'extend-select'?)"
    )


@pytest.mark.parametrize(
    "body, expected",
    [
        ("select = 1", "select: expected a list of strings, got int"),
        ('ignore = "GF001"', "ignore: expected a list of strings, got str"),
        ("extend-select = [1]", "extend-select: expected a list of strings, got a list containing int"),
        ("exclude = {a = 1}", "exclude: expected a list of strings, got dict"),
        ('respect-gitignore = "yes"', "respect-gitignore: expected a boolean, got str"),
        ("unsafe-fixes = 1", "unsafe-fixes: expected a boolean, got int"),
        ('per-file-ignores = ["x"]', "per-file-ignores: expected a table of glob = [rule selectors], got list"),
        ("per-file-ignores = {'x.py' = 'GF001'}", "per-file-ignores: 'x.py': expected a list of strings, got str"),
        ("grad-scale-import = 3", "grad-scale-import: expected a string, got int"),
    ],
)
def test_bad_value_types(tmp_path, monkeypatch, body, expected):
    assert _error(tmp_path, monkeypatch, f"[tool.gradfix]\n{body}\n") == f"pyproject.toml: [tool.gradfix] {expected}"


@pytest.mark.parametrize(
    "body, expected",
    [
        ('select = ["GF9"]', "select: unknown rule selector 'GF9'"),
        ('extend-select = ["GF001", "XYZ"]', "extend-select: unknown rule selector 'XYZ'"),
        ('ignore = ["GF0011"]', "ignore: unknown rule selector 'GF0011'"),
        ("per-file-ignores = {'tests/*' = ['GF9']}", "per-file-ignores: 'tests/*': unknown rule selector 'GF9'"),
    ],
)
def test_bad_rule_codes(tmp_path, monkeypatch, body, expected):
    assert _error(tmp_path, monkeypatch, f"[tool.gradfix]\n{body}\n") == f"pyproject.toml: [tool.gradfix] {expected}"


def test_selectors_are_case_insensitive_and_all_works(tmp_path):
    settings = load_settings(write(tmp_path / "gradfix.toml", 'select = ["all"]\nignore = [" gf001 "]\n'))
    assert settings.select == ("ALL",) and settings.ignore == ("GF001",)


def test_toml_syntax_error(tmp_path, monkeypatch):
    message = _error(tmp_path, monkeypatch, "[tool.gradfix]\nselect = [\"GF001\"\nignore = []\n")
    assert message.startswith("pyproject.toml: invalid TOML: ")
    assert "line" in message


def test_explicit_config_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"missing\.toml: cannot read: "):
        SettingsResolver(config=tmp_path / "missing.toml")
    bad = write(tmp_path / "gradfix.toml", "select = = 1\n")
    with pytest.raises(ConfigError) as info:
        load_settings(bad)
    assert str(info.value).startswith(f"{bad}: invalid TOML: ") and "\n" not in str(info.value)


def test_grad_scale_import(tmp_path):
    def load(value):
        return load_settings(write(tmp_path / "gradfix.toml", f"grad-scale-import = {value}\n"))

    assert default_settings().grad_scale_import == "gradfix.autograd"
    assert load('"gradfix.autograd"').grad_scale_import == "gradfix.autograd"
    assert load('"inline"').grad_scale_import == "inline"
    assert load('"my_project.utils._autograd"').grad_scale_import == "my_project.utils._autograd"
    for bad in ('"my-project.autograd"', '"pkg..mod"', '".relative"', '""', '"pkg.class"', '"1pkg"'):
        with pytest.raises(ConfigError) as info:
            load(bad)
        message = str(info.value)
        assert message.startswith(f"{tmp_path / 'gradfix.toml'}: [tool.gradfix] grad-scale-import: expected \"inline\"")
        assert repr(bad.strip('"')) in message


def test_booleans_and_defaults(tmp_path):
    settings = load_settings(write(tmp_path / "gradfix.toml", "unsafe-fixes = true\nrespect-gitignore = false\n"))
    assert settings.unsafe_fixes is True and settings.respect_gitignore is False
    d = default_settings()
    assert (d.unsafe_fixes, d.respect_gitignore, d.exclude, d.extend_exclude) == (False, True, None, ())


# --------------------------------------------------------------------------- #
# Rule selection
# --------------------------------------------------------------------------- #


def test_cli_layers_over_config(fake_rules, tmp_path):
    s = Settings(root=tmp_path, source=None, select=("GF0",), extend_select=("GF101",), ignore=("GF002",))
    f = tmp_path / "a.py"
    assert codes(s.rules_for(f)) == ["GF001", "GF003", "GF101"]
    # --extend-select / --ignore add to the configuration.
    assert codes(s.rules_for(f, cli_ignore=["GF1"])) == ["GF001", "GF003"]
    assert codes(s.rules_for(f, cli_extend_select=["GF002"])) == ["GF001", "GF002", "GF003", "GF101"]
    # --select starts over, as ruff's CLI --select does (config extend/ignore dropped).
    assert codes(s.rules_for(f, cli_select=["GF002,GF101"])) == ["GF002", "GF101"]
    assert codes(s.rules_for(f, cli_select=["ALL"], cli_ignore=["GF1"])) == ["GF001", "GF002", "GF003"]
    # More specific selectors win, ignore wins at equal specificity.
    assert codes(s.rules_for(f, cli_select=["GF"], cli_ignore=["GF0"], cli_extend_select=["GF002"])) == [
        "GF002",
        "GF101",
    ]
    with pytest.raises(SelectionError, match="GF9"):
        s.rules_for(f, cli_select=["GF9"])


def test_parse_selectors(fake_rules):
    assert parse_selectors(None) is None
    assert parse_selectors([]) == ()
    assert parse_selectors(["gf001, GF1", "all"]) == ("GF001", "GF1", "ALL")
    with pytest.raises(SelectionError, match="unknown rule selector `GF9`"):
        parse_selectors(["GF001,GF9"])


def test_config_select_empty_selects_nothing(fake_rules, tmp_path):
    s = Settings(root=tmp_path, source=None, select=())
    assert s.rules_for(tmp_path / "a.py") == []


def test_per_file_ignores(tmp_path, fake_rules):
    write(
        tmp_path / "pyproject.toml",
        """\
        [tool.gradfix]
        [tool.gradfix.per-file-ignores]
        "tests/**/*.py" = ["GF001"]
        "__init__.py" = ["GF002"]
        "scripts/*" = ["GF1"]
        "!src/**" = ["GF101"]
        """,
    )
    resolver = SettingsResolver()

    def enabled(relpath: str, **cli) -> list:
        path = tmp_path / relpath
        return codes(resolver.for_path(path).rules_for(path, **cli))

    assert enabled("src/pkg/mod.py") == ["GF001", "GF002", "GF101"]
    assert enabled("src/pkg/__init__.py") == ["GF001", "GF101"]
    assert enabled("tests/test_a.py") == ["GF002"]  # `**/` matches zero directories
    assert enabled("tests/unit/deep/test_b.py") == ["GF002"]
    assert enabled("tests/unit/__init__.py") == []
    assert enabled("other/tests/test_c.py") == ["GF001", "GF002"]  # relative to the config dir
    assert enabled("scripts/run.py") == ["GF001", "GF002"]
    # Per-file ignores apply whatever the command line selected.
    assert enabled("tests/t.py", cli_select=["ALL"]) == ["GF002", "GF003"]


def test_per_file_ignores_relative_to_config_dir_with_explicit_config(tmp_path, fake_rules):
    config = write(tmp_path / "cfg" / "gradfix.toml", '[per-file-ignores]\n"tests/*.py" = ["GF001"]\n')
    s = SettingsResolver(config=config).for_path(tmp_path / "tests" / "a.py")
    assert codes(s.rules_for(tmp_path / "tests" / "a.py")) == ["GF001", "GF002", "GF101"]
    assert codes(s.rules_for(tmp_path / "cfg" / "tests" / "a.py")) == ["GF002", "GF101"]


# --------------------------------------------------------------------------- #
# Exclusion and file discovery
# --------------------------------------------------------------------------- #


def _tree(root: Path) -> None:
    for name in ("src/a.py", "src/b.pyi", "src/notes.txt", "build/gen.py", "generated/g.py", "src/generated/h.py",
                 "legacy/old.py", ".venv/lib/site.py"):
        write(root / name)


def test_default_excludes(tmp_path):
    _tree(tmp_path)
    files, problems = discover_files([tmp_path], SettingsResolver())
    assert problems == []
    assert rel(files, tmp_path) == ["generated/g.py", "legacy/old.py", "src/a.py", "src/b.pyi", "src/generated/h.py"]
    assert "build" in DEFAULT_EXCLUDES and ".venv" in DEFAULT_EXCLUDES


def test_extend_exclude_adds_to_defaults(tmp_path):
    _tree(tmp_path)
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nextend-exclude = ["generated", "legacy/old.py"]\n')
    files, _ = discover_files([tmp_path], SettingsResolver())
    assert rel(files, tmp_path) == ["src/a.py", "src/b.pyi"]


def test_exclude_replaces_defaults(tmp_path):
    _tree(tmp_path)
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nexclude = ["./src/generated/", "*.pyi"]\n')
    files, _ = discover_files([tmp_path], SettingsResolver())
    assert rel(files, tmp_path) == [".venv/lib/site.py", "build/gen.py", "generated/g.py", "legacy/old.py", "src/a.py"]


def test_exclude_relative_to_config_dir_and_per_project(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nextend-exclude = ["pkg/skip"]\n')
    write(tmp_path / "pkg" / "skip" / "a.py")
    write(tmp_path / "sub" / "pkg" / "skip" / "b.py")  # `pkg/skip` is anchored at the config dir
    write(tmp_path / "proj" / "pyproject.toml", '[tool.gradfix]\nextend-exclude = ["mine"]\n')
    write(tmp_path / "proj" / "mine" / "c.py")
    write(tmp_path / "mine" / "d.py")  # the inner project's exclude does not reach out
    files, _ = discover_files([tmp_path], SettingsResolver())
    assert rel(files, tmp_path) == ["mine/d.py", "sub/pkg/skip/b.py"]


def test_is_excluded_checks_parents_below_root(tmp_path):
    s = load_settings(write(tmp_path / "proj" / "gradfix.toml", 'extend-exclude = ["vendored"]\n'))
    assert s.is_excluded(tmp_path / "proj" / "vendored" / "x" / "y.py")
    assert s.is_excluded(tmp_path / "proj" / "build" / "y.py")
    assert not s.is_excluded(tmp_path / "proj" / "src" / "y.py")
    assert not s.is_excluded(tmp_path / "proj")
    # Directories above the configuration's directory do not count.
    s2 = load_settings(write(tmp_path / "build" / "gradfix.toml", ""))
    assert not s2.is_excluded(tmp_path / "build" / "src" / "y.py")


def _git_project(root: Path, *, respect: bool = True) -> None:
    write(root / "pyproject.toml", f"[tool.gradfix]\nrespect-gitignore = {'true' if respect else 'false'}\n")
    (root / ".git" / "info").mkdir(parents=True)
    write(root / ".git" / "info" / "exclude", "local_*.py\n")
    write(root / ".gitignore", "out/\n*_pb2.py\n!keep_pb2.py\n")
    write(root / "pkg" / ".gitignore", "private.py\n/rooted.py\n")
    for name in ("a.py", "out/o.py", "m_pb2.py", "keep_pb2.py", "local_x.py", "pkg/private.py", "pkg/rooted.py",
                 "pkg/sub/rooted.py", "pkg/sub/private.py", "pkg/ok.py", "private.py"):
        write(root / name)


def test_gitignore_respected_by_default(tmp_path):
    _git_project(tmp_path)
    files, _ = discover_files([tmp_path], SettingsResolver())
    assert rel(files, tmp_path) == ["a.py", "keep_pb2.py", "pkg/ok.py", "pkg/sub/rooted.py", "private.py"]


def test_gitignore_not_respected_when_disabled(tmp_path):
    _git_project(tmp_path, respect=False)
    files, _ = discover_files([tmp_path], SettingsResolver())
    assert len(files) == 11


def test_gitignore_without_git_dir_uses_config_root(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.gradfix]\n")
    write(tmp_path / ".gitignore", "gen/\n")
    write(tmp_path / "gen" / "a.py")
    write(tmp_path / "b.py")
    files, _ = discover_files([tmp_path], SettingsResolver())
    assert rel(files, tmp_path) == ["b.py"]
    # --isolated: defaults, and without a repository there is nothing to anchor a .gitignore.
    if any((parent / ".git").exists() for parent in tmp_path.parents):
        return  # the temporary directory is inside some repository here
    files, _ = discover_files([tmp_path], SettingsResolver(isolated=True))
    assert rel(files, tmp_path) == ["b.py", "gen/a.py"]


def test_new_resolver_sees_changed_gitignore(tmp_path):
    _git_project(tmp_path)
    assert (tmp_path / "pkg" / "ok.py") in discover_files([tmp_path], SettingsResolver())[0]
    write(tmp_path / "pkg" / ".gitignore", "ok.py\n")
    assert (tmp_path / "pkg" / "ok.py") not in discover_files([tmp_path], SettingsResolver())[0]


def test_explicit_paths_checked_unless_force_exclude(tmp_path):
    _git_project(tmp_path)
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nextend-exclude = ["vendored"]\n')
    vendored = write(tmp_path / "vendored" / "v.py")
    ignored = tmp_path / "m_pb2.py"
    venv_file = write(tmp_path / ".venv" / "x.py")
    plain = tmp_path / "a.py"
    explicit = [vendored, ignored, venv_file, plain, tmp_path / "out"]

    files, problems = discover_files(explicit, SettingsResolver())
    assert problems == []
    assert rel(files, tmp_path) == [".venv/x.py", "a.py", "m_pb2.py", "out/o.py", "vendored/v.py"]

    files, _ = discover_files(explicit, SettingsResolver(), force_exclude=True)
    assert rel(files, tmp_path) == ["a.py"]


def test_walking_an_ignored_directory_still_skips_what_is_ignored_in_it(tmp_path):
    _git_project(tmp_path)
    write(tmp_path / "out" / "sub" / "m_pb2.py")
    write(tmp_path / "out" / "sub" / "s.py")
    files, _ = discover_files([tmp_path / "out"], SettingsResolver())
    assert rel(files, tmp_path) == ["out/o.py", "out/sub/s.py"]
    files, _ = discover_files([tmp_path / "out" / "sub"], SettingsResolver())
    assert rel(files, tmp_path) == ["out/sub/s.py"]
    assert discover_files([tmp_path / "out"], SettingsResolver(), force_exclude=True)[0] == []


def test_missing_paths_and_symlinks(tmp_path):
    write(tmp_path / "real" / "a.py")
    (tmp_path / "proj").mkdir()
    try:
        os.symlink(tmp_path / "real", tmp_path / "proj" / "link", target_is_directory=True)
        os.symlink(tmp_path / "proj", tmp_path / "proj" / "loop", target_is_directory=True)
    except (OSError, NotImplementedError):  # pragma: no cover - no symlinks here
        pytest.skip("symlinks unavailable")
    write(tmp_path / "proj" / "b.py")
    files, problems = discover_files([tmp_path / "proj", str(tmp_path / "nope.py")], SettingsResolver())
    assert rel(files, tmp_path) == ["proj/b.py"]
    assert problems == [(str(tmp_path / "nope.py"), "No such file or directory")]


def test_relative_paths_are_kept_relative(tmp_path, monkeypatch):
    write(tmp_path / "pyproject.toml", '[tool.gradfix]\nextend-exclude = ["skip"]\n')
    write(tmp_path / "pkg" / "a.py")
    write(tmp_path / "pkg" / "skip" / "b.py")
    monkeypatch.chdir(tmp_path)
    files, _ = discover_files(["pkg", "./pkg/a.py"], SettingsResolver())
    assert files == [Path("pkg/a.py")]


def test_config_error_propagates_from_discovery(tmp_path, monkeypatch):
    write(tmp_path / "sub" / "pyproject.toml", "[tool.gradfix]\nselect = 3\n")
    write(tmp_path / "sub" / "a.py")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^sub[/\\]pyproject\.toml: \[tool\.gradfix\] select: "):
        discover_files(["."], SettingsResolver())


def test_a_walk_yields_its_files_in_sorted_order_as_it_finds_them(tmp_path, monkeypatch):
    """`iter_files` on one directory (stop 35): the files come in the order of their `str` (what
    `discover_files` sorts into), though a directory is listed only when the walk reaches it:
    `a.py` < `a-b/` files < `a/` files < `a_b.py` (`-` and `.` sort before `/`, `_` after), and the
    first file is yielded before the later directories are listed."""
    names = ["a.py", "a-b/c.py", "a-b.py", "a/b.py", "a/z/y.py", "a_b.py", "A.py", "b/é.py", "b.pyi", "b0/x.py", "a.b/q.py"]
    for name in names:
        write(tmp_path / name)
    write(tmp_path / "a" / "notes.txt")
    monkeypatch.chdir(tmp_path)
    from gradfix.config import iter_files

    expected, _ = discover_files(["."], SettingsResolver())
    assert [p.as_posix() for p in expected] == sorted(names)
    listed = []
    real = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(os.fspath(path)) or real(path))
    problems: list = []
    walk = iter_files(["."], SettingsResolver(), problems)
    first = next(walk)
    assert first == Path("A.py") and listed == ["."]
    assert [first, *walk] == expected and not problems
    # Each directory listed once, when the walk reaches it.
    assert [os.path.relpath(d, tmp_path) for d in listed] == [".", "a-b", "a.b", "a", os.path.join("a", "z"), "b", "b0"]
