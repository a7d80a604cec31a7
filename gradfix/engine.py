"""Parse once, run the selected rules, collect findings, apply fixes.

The engine is the one entry point shared by the CLI, the verification harness
and the tests: `lint_bytes` takes a file's bytes and returns its findings and,
on request, the fixed bytes. It never touches the filesystem.
"""

from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from types import ModuleType
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from gradfix import prechecks
from gradfix.findings import Finding, is_suppressed, noqa_map
from gradfix.options import DEFAULT_GRAD_SCALE_IMPORT, LintOptions

# Fixes that conflict (touch the same statement) are applied over several
# passes; a handful is plenty, and the bound guarantees termination.
MAX_FIX_PASSES = 5


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)  # what `check` reports (after noqa)
    fixed: Optional[bytes] = None  # new content when fixes were applied and changed something
    applied: int = 0  # number of findings fixed
    remaining: List[Finding] = field(default_factory=list)  # findings left after fixing
    error: Optional[str] = None  # one-line message: "line:col: what" or "what"
    suppressed: int = 0
    # The findings whose fixes were applied, as reported in the pass that applied them (a
    # later pass sees the text the earlier ones wrote): what `--show-fixes` lists.
    fixed_findings: List[Finding] = field(default_factory=list)


def prefilter(data: bytes, rules: Sequence[ModuleType], *, parse: bool = True) -> List[ModuleType]:
    """The rules to run on a file: an empty list when no selected rule can match it (no libcst parse then).

    Only ever skips files where the rules provably cannot match (they compare
    libcst's source text, so a rule's identifiers appear in the file's text
    as written), in two stages:

    1. Each rule's REQUIRED_TOKENS must all occur in the file's text (an entry
       may instead be a cheap test of the text, `prechecks.two_stop_gradients`:
       no parse, byte-level regular expressions only). A token
       made of several Python tokens (`.detach(`) also matches with anything
       Python allows between them (`x.detach ()`, a backslash continuation,
       comments inside brackets). A file declaring a non-UTF-8 encoding is
       searched in its decoded text.
    2. Each rule that passed stage 1 may have a precheck (`might_match(data,
       text, state)` on the rule module, built from `gradfix.prechecks`) that
       says it cannot match. The file is skipped only when every such rule is
       ruled out, the file decodes strictly and it parses (CPython's parser);
       otherwise every rule that passed stage 1 runs, exactly as without
       stage 2, and reports the syntax error. Where GF002's precheck parsed
       only the top-level statements that hold a stop-gradient
       (`prechecks.marked_tree`; not a definition that holds only one),
       those must parse: a syntax error elsewhere in the file then goes
       unreported, as in a file that fails stage 1.
       (What only libcst stumbles on, in a file no rule can match, is not
       reported either: a RecursionError in its metadata passes, syntax its
       grammar lacks.)

    `parse=False` stops after stage 1 (no CPython parse in this call): the
    cheap routing test of `gradfix.parallel`, whose workers then run the full
    prefilter in `lint_bytes`.
    """
    text = _searchable(data)
    haystack = data if text is None else text
    # Each entry is tested once per file, whichever rules share it (every rule but GF002 needs a
    # `backward(`): each test is a search of the whole text.
    held: Dict[object, bool] = {}

    def holds(entry) -> bool:
        found = held.get(entry)
        if found is None:
            found = held[entry] = _has_any_token(haystack, entry)
        return found

    candidates = [r for r in rules if all(holds(token) for token in r.REQUIRED_TOKENS)]
    if not candidates or text is None or not parse:
        return candidates  # text None: undecodable, left to the parser to report, as before
    state: Dict[str, object] = {}
    # A precheck that parses only pieces of the file runs after those that parse all of it: it then
    # reads their tree instead of parsing its pieces too (`prechecks.marked_tree`).
    for rule in sorted(candidates, key=lambda r: getattr(r, "PRECHECK_PARSES_PIECES", False)):
        check = getattr(rule, "might_match", None)
        if check is None or check(data, text, state):
            return candidates
    # No rule can match if what the prechecks parsed parses; a file that does not is left to
    # `_parse` to report (a precheck that needs the whole tree parsed all of it). Where no precheck
    # parsed anything, the whole file is parsed, so that its syntax error is reported.
    if "tree" not in state and "marked" not in state:
        prechecks.tree(data, state)
    return [] if _decodes(data) and state.get("tree", True) is not None else candidates


_TOKEN_PIECE = re.compile(rb"[A-Za-z0-9_]+|[^A-Za-z0-9_\s]+")


@lru_cache(maxsize=256)
def _lenient(token: bytes):
    """How to find a token of several Python tokens with any gap between them; None for a single piece.

    (pieces, pattern, anchor, tail): `pattern` is the whole token; `anchor` its
    first identifier piece, `tail` a pattern for the token from the anchor on.
    """
    pieces = tuple(_TOKEN_PIECE.findall(token))
    if len(pieces) < 2 or b"".join(pieces) != token:
        return None
    anchor = next((i for i, p in enumerate(pieces) if p[:1].isalnum() or p[:1] == b"_"), None)
    tail = None if anchor is None else re.compile(prechecks.GAP.join(re.escape(p) for p in pieces[anchor:]))
    return pieces, re.compile(prechecks.GAP.join(re.escape(p) for p in pieces)), anchor, tail


_SPACE = b" \t\f\v\r\n\\"


def _has_any_token(text: bytes, entry) -> bool:
    """Whether one REQUIRED_TOKENS entry holds: a token occurs, or a cheap test of the text
    (a function, `prechecks.two_stop_gradients`) says yes."""
    if callable(entry):
        return bool(entry(text))
    return _has_token(text, entry)


def _has_token(text: bytes, token: bytes) -> bool:
    """Whether `token` occurs in `text`, with any gap Python allows between its pieces."""
    lenient = _lenient(token)
    if lenient is None:
        return token in text
    pieces, pattern, anchor, tail = lenient
    # The name first: in most files it is absent, and one search of the text settles it.
    if anchor is not None and pieces[anchor] not in text:
        return False
    if token in text:
        return True
    if not all(p in text for p in pieces):
        return False
    if anchor != 1 or len(pieces[0]) != 1:
        return pattern.search(text) is not None
    # The usual shape, `.name(`: look around each occurrence of `name` rather than
    # run the pattern over the whole file (a regex search is far slower than find).
    lead, name = pieces[0][0], pieces[1]
    at = text.find(name)
    while at >= 0:
        if tail.match(text, at):
            k = at - 1
            crossed_line = False
            while k >= 0 and text[k] in _SPACE:
                crossed_line = crossed_line or text[k] in b"\r\n"
                k -= 1
            if k >= 0 and text[k] == lead:
                return True
            if crossed_line:  # a comment may stand between: let the full pattern decide
                return pattern.search(text) is not None
        at = text.find(name, at + 1)
    return False


_LINE_BREAK = re.compile(rb"[\r\n]")


def _head_end(data: bytes) -> int:
    """Where the third line-break character (`\r` or `\n`) of the text is, or its end: an encoding
    declaration (`coding`) starts before it (a CRLF counts twice, as it always has here)."""
    at = 0
    for _ in range(3):
        found = _LINE_BREAK.search(data, at)
        if found is None:
            return len(data)
        at = found.end()
    return at - 1


def _searchable(data: bytes) -> Optional[bytes]:
    """The file's text as UTF-8 bytes (`data` itself unless it declares another encoding); None if undecodable."""
    # (searched for in the first two lines only: the whole file was once searched, per prefilter call)
    if data.find(b"coding", 0, _head_end(data)) < 0:
        return data  # no encoding declaration in the first two lines: UTF-8
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if encoding in ("utf-8", "utf-8-sig"):
            return data
        return data.decode(encoding).encode("utf-8", "surrogatepass")
    except (SyntaxError, LookupError, UnicodeError, ValueError):
        return None


def _decodes(data: bytes) -> bool:
    """Whether the whole file decodes strictly, as libcst decodes it (CPython forgives bad bytes in comments)."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeError, ValueError):
        return False
    return True


def rule_modules(codes: Iterable[str]) -> List[ModuleType]:
    """The rule modules `codes` names, in registry order (`ValueError` for a code no rule has):
    where rule codes become rules."""
    from gradfix.rules import ALL_RULES, by_code

    named = set()
    for code in codes:
        rule = by_code(code)
        if rule is None:
            raise ValueError(f"unknown rule code {code!r}")
        named.add(rule.CODE)
    return [rule for rule in ALL_RULES if rule.CODE in named]


def lint_bytes(data: bytes, path: str, options: LintOptions) -> FileResult:
    """Lint one file's bytes with the rules `options.codes` names.

    `options.fix` applies fixes (unsafe ones too with `unsafe_fixes`) and
    returns the new bytes in `fixed` (each finding's fix is its text edits,
    `Fix.edits`, whether or not it is applied); `grad_scale_import` is where rewritten code takes the gradient-scaling op
    from: a module path, or `inline` to define it once in the file (see
    `gradfix.options.LintOptions`).
    """
    with _gc_paused():
        return _lint_bytes(data, path, options)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for one file, then restore it as it was.

    Parsing and analysing a file allocate a few hundred thousand objects (libcst nodes, the
    maps over them) that live until the file is done. With the collector on, those allocations set
    off its young-generation collections, which traverse the growing graph again and again. Part
    of it is held by reference cycles (a rule visitor and the classifier that keeps its bound
    methods, classes made per call), so the file's tree is freed by one collection once the
    collector is back, not by reference counting (design §4).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _lint_bytes(data: bytes, path: str, options: LintOptions) -> FileResult:
    result = FileResult(path)
    candidates = prefilter(data, rule_modules(options.codes))
    if not candidates:
        return result
    parsed = _parse(data)
    if isinstance(parsed, str):
        result.error = parsed
        return result
    try:
        findings, module, code = _run(parsed, path, candidates, options.grad_scale_import, b";" in data)
    except RecursionError:
        # Valid but deeply nested code (hundreds of unary operators) exhausts
        # libcst's recursive metadata passes: report it, do not crash.
        result.error = "1:1: too deeply nested for gradfix's analysis (RecursionError)"
        return result
    findings, suppressed = _unsuppressed(findings, code, options.ignore_noqa)
    result.findings = findings
    result.suppressed = suppressed
    if not options.fix:
        result.remaining = list(findings)
        return result

    from gradfix.fixes.apply import apply_fixes

    text = code
    applied = 0
    fixed_findings: List[Finding] = []
    for _ in range(MAX_FIX_PASSES):
        fixable = [f for f in findings if f.fix is not None and (f.fix.safe or options.unsafe_fixes)]
        if not fixable:
            break
        text, done = apply_fixes(text, fixable)
        if not done:
            break
        applied += len(done)
        fixed_findings.extend(done)
        reparsed = _parse(text.encode(module.encoding))
        if isinstance(reparsed, str):  # pragma: no cover - a bug in a rule's rewrite
            result.error = f"internal error: the fixed code does not parse ({reparsed}); file left unchanged"
            result.applied = 0
            result.remaining = list(result.findings)
            return result
        findings, module, code = _run(reparsed, path, candidates, options.grad_scale_import, ";" in text)
        findings, _ = _unsuppressed(findings, code, options.ignore_noqa)
    result.applied = applied
    result.fixed_findings = fixed_findings
    result.remaining = findings
    if applied:
        current = text.encode(module.encoding)
        if current != data:
            result.fixed = current
    return result


def _parse(data: bytes):
    """A libcst module, or a one-line error `LINE:COL: message`.

    CPython's own parser checks the file first: it is several times faster
    than libcst, gives exact positions and messages, rejects what Python
    rejects (NUL bytes, bad encodings), and keeps inputs that crash libcst's
    native parser (thousands of nested brackets) away from it.
    """
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are not our business
            ast.parse(data)
    except SyntaxError as exc:
        line = exc.lineno if exc.lineno and exc.lineno > 0 else 1
        col = exc.offset if exc.offset and exc.offset > 0 else 1
        kind = "SyntaxError" if type(exc) is SyntaxError else type(exc).__name__
        # The running interpreter's grammar may be older than the file's (3.11 rejects PEP 695
        # `type X = ...` and 3.12's nested f-string quotes): libcst's own parser, which does not
        # depend on the interpreter, decides. Its error, if any, is CPython's message.
        newer = _parse_newer_syntax(data, str(exc.msg))
        return newer if newer is not None else f"{line}:{col}: {kind}: {exc.msg}"
    except (ValueError, UnicodeDecodeError, LookupError) as exc:  # NUL bytes, undecodable text
        return f"1:1: cannot read the source: {_first_line(exc)}"
    except (RecursionError, MemoryError) as exc:
        return f"1:1: too deeply nested to parse ({type(exc).__name__})"

    import libcst as cst

    try:
        return cst.parse_module(data)
    except cst.ParserSyntaxError as exc:
        # Python accepts it but libcst's grammar does not (newer syntax).
        return f"{exc.raw_line}:{exc.raw_column + 1}: libcst cannot parse this file: {_first_line(exc.message)}"
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError) as exc:
        return f"1:1: libcst cannot parse this file: {_first_line(exc)}"


def _parse_newer_syntax(data: bytes, message: str):
    """libcst's module for source the running interpreter rejects, or None where libcst rejects it too.

    Never for what CPython rejects for reasons no grammar changes (NUL bytes), nor for deep
    nesting, which crashes libcst's native parser (a segfault, not an exception).
    """
    if b"\x00" in data or "null byte" in message or "nested" in message or _bracket_depth(data) > 100:
        return None
    import libcst as cst

    try:
        return cst.parse_module(data)
    except Exception:  # noqa: BLE001 - any failure: CPython's syntax error stands
        return None


def _bracket_depth(data: bytes) -> int:
    """The deepest bracket nesting in the bytes (strings and comments counted too: an upper bound)."""
    depth = deepest = 0
    for byte in data:
        if byte in b"([{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b")]}":
            depth = max(0, depth - 1)
    return deepest


def _first_line(exc: object) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _unsuppressed(findings: List[Finding], source: str, ignore_noqa: bool) -> Tuple[List[Finding], int]:
    findings = sorted(findings, key=Finding.sort_key)
    if ignore_noqa or "NOQA" not in source.upper():
        return findings, 0
    noqa = noqa_map(source)
    kept = [f for f in findings if not is_suppressed(f, noqa)]
    return kept, len(findings) - len(kept)


def _run(module, path: str, rules: Sequence[ModuleType], grad_scale_import: str = DEFAULT_GRAD_SCALE_IMPORT, may_join: bool = True):
    """The findings of the rules on a parsed file, the module their positions refer to, and its text.

    `may_join`: whether the file's text holds a `;` (False spares the walk for `a; b` lines).
    """
    from libcst.metadata import MetadataWrapper, ScopeProvider

    from gradfix.analysis.facts import FileFacts
    from gradfix.analysis.positions import node_maps
    from gradfix.analysis.walk import forget, walk_tree
    from gradfix.fixes.imports import op_names
    from gradfix.rules import RuleContext, visitor

    from gradfix import semicolons

    # `a; b` lines are read one statement per line; what the rules report is mapped back.
    joined = semicolons.split(module) if may_join else None
    # A module `_parse` just made holds each node once: the wrapper's defensive deep copy (a
    # tenth of a second on a big file) is needed only for the split module, built from the parsed one.
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True) if joined is None else MetadataWrapper(joined[0])
    facts = FileFacts(wrapper.module, node_maps(wrapper.module))
    ctx = RuleContext(
        path=path,
        op_names=op_names(wrapper.module, grad_scale_import, facts.code),
        grad_scale_module=grad_scale_import,
        facts=facts,
        scopes=lambda: wrapper.resolve(ScopeProvider),  # (the wrapper keeps what it resolved)
    )
    by_code = {}
    try:
        for rule in rules:
            rule_visitor = visitor(rule)(ctx)
            # `wrapper.visit(rule_visitor)`, walking the tree without rebuilding it (`walk_tree`)
            with rule_visitor.resolve(wrapper):
                walk_tree(wrapper.module, rule_visitor)
            by_code[rule.CODE] = rule_visitor.findings
    finally:
        forget()  # the children read on this file's trees
    findings: List[Finding] = []
    for rule in rules:
        stronger = [f for code in getattr(rule, "SUPERSEDED_BY", ()) for f in by_code.get(code, ())]
        taken = {start for f in stronger if f.fix is not None for start in f.fix.statements}
        for finding in by_code[rule.CODE]:
            if finding.fix is not None and not taken.isdisjoint(finding.fix.statements):
                continue  # the same statements are covered by a better rewrite
            findings.append(finding)
    if joined is not None:
        findings = [joined[1].finding(f) for f in findings]
        return findings, module, module.code
    return findings, wrapper.module, facts.code
