"""`gradfix server`: a real LSP session over stdio, driven by pytest-lsp's client.

initialize, didOpen -> publishDiagnostics, codeAction -> the fix's edit, the
edit applied to the document and sent back (didChange) -> no diagnostics left;
unsafe fixes are titled as such; settings come from the nearest [tool.gradfix].
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[1]

TRAIN = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F

    x = torch.randn(4, 3, requires_grad=True)
    y = torch.randn(4, 3, requires_grad=True)
    l1 = F.mse_loss(x.detach(), y)
    l1.backward(retain_graph=True)
    l2 = -1 * F.mse_loss(x, y.detach())
    l2.backward()
    """
)


def fixed_by_cli(text: str) -> str:
    """What `gradfix fix -` makes of `text`: the code action must give the same."""
    from click.testing import CliRunner

    from gradfix.cli import main

    return CliRunner().invoke(main, ["fix", "--no-cache", "--isolated", "-"], input=text).stdout


UNSAFE = (ROOT / "fixtures" / "GF001" / "unsafe" / "u05_module_critic_general_coef.py").read_text(encoding="utf-8")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "gradfix", "server"]))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=tmp_path_factory.getbasetemp().as_uri(),
        )
    )
    yield
    await lsp_client.shutdown_session()


def apply_edits(text: str, edits) -> str:
    """Apply LSP text edits (line/character ranges) to `text`, last first."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        return offsets[position.line] + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


async def open_document(client: LanguageClient, path: Path, text: str) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri


async def test_diagnostics_code_action_and_edit(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "train.py"
    path.write_text(TRAIN, encoding="utf-8")
    uri = await open_document(client, path, TRAIN)
    diagnostics = client.diagnostics[uri]
    assert len(diagnostics) == 1
    diag = diagnostics[0]
    assert diag.code == "GF001" and diag.source == "gradfix"
    assert diag.severity == types.DiagnosticSeverity.Warning
    assert (diag.range.start.line, diag.range.start.character) == (7, 10)  # line 8, column 11
    assert diag.message.startswith("`F.mse_loss` evaluated twice with complementary `.detach()`")

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        )
    )
    quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert len(quick) == 1
    assert quick[0].title.startswith("gradfix: ") and quick[0].is_preferred
    new_text = apply_edits(TRAIN, quick[0].edit.changes[uri])
    assert new_text == fixed_by_cli(TRAIN)
    assert "l1_l2 = F.mse_loss(grad_scale(x, -1.0), y)\n" in new_text
    fix_all = [a for a in actions if a.kind == "source.fixAll.gradfix"]
    assert len(fix_all) == 1 and apply_edits(TRAIN, fix_all[0].edit.changes[uri]) == new_text

    # The client applies the edit and sends the new text: the finding is gone.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


async def test_unsafe_fix_is_titled_unsafe(client: LanguageClient, tmp_path: Path):
    uri = await open_document(client, tmp_path / "critic.py", UNSAFE)
    diag = client.diagnostics[uri][0]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag], only=[types.CodeActionKind.QuickFix]),
        )
    )
    assert [a.title.split(":")[0] for a in actions] == ["gradfix (unsafe fix)"]
    assert not actions[0].is_preferred
    assert "[unsafe fix:" in diag.message


async def test_settings_from_nearest_pyproject(client: LanguageClient, tmp_path: Path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.gradfix]\nignore = ["GF001", "GF003"]\n', encoding="utf-8")
    uri = await open_document(client, project / "src" / "train.py", TRAIN)
    assert list(client.diagnostics[uri]) == []

    # Saving re-reads the configuration.
    (project / "pyproject.toml").write_text("[tool.gradfix]\n", encoding="utf-8")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [d.code for d in client.diagnostics[uri]] == ["GF001"]


async def test_syntax_error_and_bad_config_publish_nothing(client: LanguageClient, tmp_path: Path):
    uri = await open_document(client, tmp_path / "broken.py", "l1 = f(x.detach(), y\nl1.backward(retain_graph=True)\nl2.backward()\n")
    assert list(client.diagnostics[uri]) == []
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "pyproject.toml").write_text("[tool.gradfix]\nselct = []\n", encoding="utf-8")
    uri = await open_document(client, bad / "train.py", TRAIN)
    assert list(client.diagnostics[uri]) == []
    messages = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert any("selct: unknown key" in m for m in messages), client.messages


@pytest.mark.filterwarnings("ignore::pytest.PytestWarning")
def test_check_never_imports_the_server_libraries(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    code = (
        "import sys; from gradfix.cli import main\n"
        "try:\n    main(['check', '--no-cache', 'train.py'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol', 'torch', 'flake8')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip().splitlines()[-1] == "[]"
