"""gradfix as a flake8 plugin: `flake8 --select GF train.py` reports gradfix's findings.

Registered under the `flake8.extension` entry point `GF`. Each file is linted
by the same engine as `gradfix check` (`gradfix.engine.lint_bytes`), with the
rules `[tool.gradfix]` selects for it (the nearest `pyproject.toml`, with
`per-file-ignores`). An opt-in rule (GF002) also runs when flake8's own
`--select`/`--extend-select` names its full code. flake8 applies its own
selection and `# noqa` on top.

A finding is reported at its line and column (flake8 counts columns from 0)
as `GFxxx message`. flake8 reports syntax errors itself (E999), so this plugin
stays silent on them; a configuration error or a file gradfix cannot analyse
is reported once, at 1:1, as `GF000`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List, Sequence, Tuple

from gradfix import __version__

ERROR_CODE = "GF000"


class GradfixChecker:
    name = "gradfix"
    version = __version__

    # Full codes of rules named in flake8's --select/--extend-select (opt-in rules run when named).
    requested: Tuple[str, ...] = ()

    def __init__(self, tree, filename: str, lines: Sequence[str]) -> None:  # noqa: ARG002 - flake8 passes the tree
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, options) -> None:
        from gradfix.rules import ALL_RULES

        named = []
        for attribute in ("select", "extend_select", "extended_default_select"):
            for code in getattr(options, attribute, None) or ():
                code = str(code).strip().upper()
                if any(rule.CODE == code for rule in ALL_RULES):
                    named.append(code)
        cls.requested = tuple(dict.fromkeys(named))

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        for line, col, text in self._results():
            yield line, col, text, type(self)

    def _results(self) -> List[Tuple[int, int, str]]:
        from gradfix.config import ConfigError, SettingsResolver
        from gradfix.engine import lint_bytes
        from gradfix.rules import SelectionError

        data, path = self._source()
        try:
            settings = SettingsResolver().for_path(path)
            options = settings.lint_options(path, cli_extend_select=self.requested)
        except (ConfigError, SelectionError) as exc:
            return [(1, 0, f"{ERROR_CODE} gradfix: {exc}")]
        try:
            result = lint_bytes(data, self.filename, options)
        except RecursionError:
            return [(1, 0, f"{ERROR_CODE} gradfix: too deeply nested for gradfix's analysis")]
        except Exception as exc:  # noqa: BLE001 - one file's internal error must not end flake8's run
            from gradfix.parallel import internal_error

            return [(1, 0, f"{ERROR_CODE} gradfix: {internal_error(exc)}")]
        if result.error:
            if "SyntaxError" in result.error or "IndentationError" in result.error or "TabError" in result.error:
                return []  # flake8's E999
            return [(1, 0, f"{ERROR_CODE} gradfix could not check this file: {result.error}")]
        return [(f.line, max(f.col - 1, 0), f"{f.code} {f.message}") for f in result.findings]

    def _source(self) -> Tuple[bytes, Path]:
        """The text flake8 read (a file, or standard input under `--stdin-display-name`), as the
        bytes gradfix reads, and the path whose settings apply."""
        import io
        import tokenize

        text = "".join(self.lines)
        data = text.encode("utf-8", "surrogatepass")
        try:  # a file declaring another encoding is handed to the engine in that encoding
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            if encoding not in ("utf-8", "utf-8-sig"):
                data = text.encode(encoding)
        except (SyntaxError, LookupError, UnicodeError):
            pass
        name = self.filename
        where = Path(name) if name and name not in ("stdin", "-") else Path.cwd() / "stdin.py"
        return data, where
