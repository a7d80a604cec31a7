"""`gradfix server`: a language server over stdio (pygls), for editors.

- Diagnostics on open, change and save of a Python document: the findings of
  `gradfix check` (same engine, `gradfix.engine.lint_bytes`), with the rules
  the nearest `[tool.gradfix]` selects for the document's path (re-read on
  every lint, so an edited `pyproject.toml` applies at the next change).
- A quick-fix code action per finding with a fix: a safe fix is titled
  `gradfix: <what it does>` and preferred; an unsafe one is offered too, titled
  `gradfix (unsafe fix): <what it does>`, with the reason in the diagnostic.
  Each applies the fix's own whole-line edits.
- `source.fixAll.gradfix`: every safe fix at once, as one edit of the document.

A configuration error is shown to the user (window/showMessage) and the
document gets no diagnostics; a document that does not parse gets none
either (the editor's Python support reports syntax errors).

pygls and lsprotocol come with the `server` extra (`pip install
'gradfix[server]'`) and are imported only here: `gradfix check` never loads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlparse

from gradfix import __version__

SOURCE = "gradfix"
FIX_ALL = "source.fixAll.gradfix"


def _path_of(uri: str) -> Optional[Path]:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


class Analysis:
    """One lint of one document version: its findings (with edits) or why there are none."""

    def __init__(self, findings=(), error: Optional[str] = None, fixed: Optional[bytes] = None) -> None:
        self.findings = list(findings)
        self.error = error
        self.fixed = fixed


def analyse(uri: str, text: str, *, fix: bool = False) -> Analysis:
    """Lint a document's text with the settings of the nearest `[tool.gradfix]`."""
    from gradfix.config import ConfigError, SettingsResolver
    from gradfix.engine import lint_bytes
    from gradfix.rules import SelectionError

    path = _path_of(uri) or Path.cwd() / "untitled.py"
    try:
        settings = SettingsResolver().for_path(path)
        # Fixes from the editor are the safe ones, whatever the configuration's `unsafe-fixes`.
        options = settings.lint_options(path, fix=fix, unsafe_fixes=False)
    except (ConfigError, SelectionError) as exc:
        return Analysis(error=f"configuration: {exc}")
    if settings.is_excluded(path):
        return Analysis()
    data = text.encode("utf-8", "surrogatepass")
    try:
        result = lint_bytes(data, str(path), options)
    except RecursionError:
        return Analysis(error=f"{path.name}: too deeply nested for gradfix's analysis")
    except Exception as exc:  # noqa: BLE001 - a gradfix bug must not take the editor's server down
        from gradfix.parallel import internal_error

        return Analysis(error=f"{path.name}: {internal_error(exc)}")
    if result.error:
        return Analysis(error=f"{path.name}:{result.error}")
    return Analysis(result.findings, fixed=result.fixed)


def create_server():
    """The pygls server with gradfix's features registered (not started)."""
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    from gradfix.files import lines_with_ends

    server = LanguageServer("gradfix", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
    # Per document: (version, text, analysis, diagnostics) of the last lint.
    state: Dict[str, Tuple[Optional[int], str, Analysis, List[types.Diagnostic]]] = {}

    def position(lines: List[str], line: int, column: int) -> types.Position:
        """gradfix's 1-based line and code-point column as an LSP position in the client's units."""
        row = max(line - 1, 0)
        if row >= len(lines):
            return types.Position(line=len(lines), character=0)
        text = lines[row].rstrip("\r\n")
        character = server.workspace.position_codec.client_num_units(text[: max(column - 1, 0)])
        return types.Position(line=row, character=character)

    def diagnostic(lines: List[str], finding) -> types.Diagnostic:
        start = position(lines, finding.line, finding.col)
        end_line, end_col = (finding.end_line, finding.end_col) if finding.end_line > 0 else (finding.line, finding.col)
        message = finding.message
        fix = finding.fix
        if fix is not None and fix.safe:
            message += " (safe fix available)"
        return types.Diagnostic(
            range=types.Range(start=start, end=position(lines, end_line, max(end_col, 1))),
            message=message,
            severity=types.DiagnosticSeverity.Warning,
            code=finding.code,
            source=SOURCE,
        )

    def lint(uri: str) -> Tuple[str, Analysis, List[types.Diagnostic]]:
        document = server.workspace.get_text_document(uri)
        cached = state.get(uri)
        if cached is not None and cached[0] == document.version and cached[1] == document.source:
            return cached[1], cached[2], cached[3]
        text = document.source
        analysis = analyse(uri, text)
        if analysis.error:
            server.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"gradfix: {analysis.error}"))
            if analysis.error.startswith("configuration: "):
                server.window_show_message(
                    types.ShowMessageParams(type=types.MessageType.Error, message=f"gradfix: {analysis.error[15:]}")
                )
        lines = lines_with_ends(text)
        diagnostics = [diagnostic(lines, f) for f in analysis.findings]
        state[uri] = (document.version, text, analysis, diagnostics)
        return text, analysis, diagnostics

    def publish(uri: str) -> None:
        document = server.workspace.get_text_document(uri)
        if document.language_id not in (None, "", "python") and not uri.endswith((".py", ".pyi")):
            return
        _, _, diagnostics = lint(uri)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version)
        )

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: types.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: types.DidChangeTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: types.DidSaveTextDocumentParams) -> None:
        state.pop(params.text_document.uri, None)  # the configuration may have changed with the save
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params: types.DidCloseTextDocumentParams) -> None:
        state.pop(params.text_document.uri, None)
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    def text_edits(lines: List[str], edits) -> List[types.TextEdit]:
        out = []
        for edit in sorted(edits, key=lambda e: (e.start_line, e.end_line)):
            out.append(types.TextEdit(
                range=types.Range(start=position(lines, edit.start_line, 1), end=position(lines, edit.end_line, 1)),
                new_text=edit.content,
            ))
        return out

    def overlaps(a: types.Range, b: types.Range) -> bool:
        return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (
            b.start.line, b.start.character) <= (a.end.line, a.end.character)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False),
    )
    def code_action(ls, params: types.CodeActionParams) -> List[types.CodeAction]:
        uri = params.text_document.uri
        text, analysis, diagnostics = lint(uri)
        lines = lines_with_ends(text)
        only = params.context.only
        actions: List[types.CodeAction] = []
        wants_quickfix = not only or any(str(kind).startswith(types.CodeActionKind.QuickFix) for kind in only)
        wants_fix_all = not only or any(FIX_ALL.startswith(str(kind)) for kind in only)
        if wants_quickfix:
            for finding, diag in zip(analysis.findings, diagnostics):
                fix = finding.fix
                if fix is None or not finding.edits or not overlaps(diag.range, params.range):
                    continue
                title = f"gradfix: {fix.description}" if fix.safe else f"gradfix (unsafe fix): {fix.description}"
                actions.append(types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=bool(fix.safe),
                    edit=types.WorkspaceEdit(changes={uri: text_edits(lines, finding.edits)}),
                ))
        if wants_fix_all and any(f.fix is not None and f.fix.safe for f in analysis.findings):
            fixed = analyse(uri, text, fix=True).fixed
            if fixed is not None:
                end = types.Position(line=len(lines), character=0)
                actions.append(types.CodeAction(
                    title="gradfix: fix all safe fixes",
                    kind=FIX_ALL,
                    edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(
                        range=types.Range(start=types.Position(line=0, character=0), end=end),
                        new_text=fixed.decode("utf-8", "surrogatepass"),
                    )]}),
                ))
        return actions

    return server


def serve() -> None:
    """Run the server on stdin/stdout until the client exits."""
    create_server().start_io()
