"""The pre-commit hooks, driven by the real `pre-commit` against a temporary repository.

Slow (pre-commit builds a hook environment from this checkout, without
torch): deselect with `-m "not slow"`. `.ci/run` runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))

from tests.test_cli import SEED  # noqa: E402  (the seed pattern: finding at 11:15)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(PRE_COMMIT).exists(), reason="pre-commit is not installed"),
]


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)


@pytest.fixture()
def env(precommit_hooks) -> dict:
    environment = dict(os.environ)
    environment["PRE_COMMIT_HOME"] = str(precommit_hooks[2])
    environment["GIT_AUTHOR_NAME"] = environment["GIT_COMMITTER_NAME"] = "t"
    environment["GIT_AUTHOR_EMAIL"] = environment["GIT_COMMITTER_EMAIL"] = "t@t"
    return environment


def test_commit_blocked_then_passes_after_fix(tmp_path: Path, precommit_hooks, env: dict):
    hook_repo, rev, _ = precommit_hooks
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {rev}\n  hooks:\n  - id: gradfix\n"
    )
    (project / "train.py").write_text(SEED)
    subprocess.run([PRE_COMMIT, "install"], cwd=project, env=env, check=True, capture_output=True)
    _git(project, "add", "-A")

    blocked = subprocess.run(["git", "commit", "-m", "add training step"], cwd=project, env=env, capture_output=True, text=True)
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert "train.py:11:15: GF001 [*]" in output

    # The fix hook rewrites the file (and, as pre-commit hooks that modify
    # files do, fails so the user can review); then the commit goes through.
    fixed = subprocess.run(
        [PRE_COMMIT, "try-repo", str(hook_repo), "gradfix-fix", "--files", "train.py"],
        cwd=project, env=env, capture_output=True, text=True,
    )
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    assert "grad_scale(x, -1.0)" in (project / "train.py").read_text()
    _git(project, "add", "-A")
    done = subprocess.run(["git", "commit", "-m", "add training step"], cwd=project, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hook_environment_has_no_torch(tmp_path: Path, precommit_hooks, env: dict):
    hook_repo, rev, _ = precommit_hooks
    project = tmp_path / "clean"
    project.mkdir()
    _git(project, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hook_repo}\n  rev: {rev}\n  hooks:\n  - id: gradfix\n"
    )
    (project / "ok.py").write_text("print('no autograd here')\n")
    _git(project, "add", "-A")
    result = subprocess.run([PRE_COMMIT, "run", "--all-files"], cwd=project, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    # The hook's virtualenv was built from gradfix's own dependencies only.
    envs = list(Path(env["PRE_COMMIT_HOME"]).glob("repo*/py_env-*"))
    assert envs, "pre-commit built no environment"
    site = list(envs[0].glob("lib/python*/site-packages"))
    assert site and (site[0] / "libcst").is_dir()
    assert not (site[0] / "torch").exists(), "torch leaked into the hook environment"
