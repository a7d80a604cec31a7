"""Parse once, run the selected rules, collect findings, apply fixes.

The engine is the one entry point shared by the CLI, the verification harness
and the tests: `lint_bytes` takes a file's bytes and returns its findings and,
on request, the fixed bytes. It never touches the filesystem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Iterable, List, Optional, Sequence, Set, Tuple

from gradfix.findings import Finding, TextEdit, is_suppressed, noqa_map

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


def prefilter(data: bytes, rules: Sequence[ModuleType]) -> List[ModuleType]:
    """The rules whose required tokens all occur in the file: only these need a parse."""
    return [r for r in rules if all(token in data for token in r.REQUIRED_TOKENS)]


def lint_bytes(
    data: bytes,
    path: str,
    rules: Sequence[ModuleType],
    *,
    fix: bool = False,
    unsafe_fixes: bool = False,
    ignore_noqa: bool = False,
    with_edits: bool = False,
    grad_scale_import: str = "gradfix.autograd",
) -> FileResult:
    """Lint one file's bytes.

    `fix` applies fixes (unsafe ones too with `unsafe_fixes`) and returns the
    new bytes in `fixed`; `with_edits` attaches each finding's own fix as text
    edits (for formats that show or serialise fixes). `grad_scale_import` is
    where rewritten code takes the gradient-scaling op from: a module path, or
    `inline` to define it once in the file.
    """
    result = FileResult(path)
    candidates = prefilter(data, rules)
    if not candidates:
        return result
    parsed = _parse(data)
    if isinstance(parsed, str):
        result.error = parsed
        return result
    try:
        findings, module = _run(parsed, path, candidates, grad_scale_import)
    except RecursionError:
        # Valid but deeply nested code (hundreds of unary operators) exhausts
        # libcst's recursive metadata passes: report it, do not crash.
        result.error = "1:1: too deeply nested for gradfix's analysis (RecursionError)"
        return result
    findings, suppressed = _unsuppressed(findings, module.code, ignore_noqa)
    if with_edits:
        findings = [_with_edits(module, f) for f in findings]
    result.findings = findings
    result.suppressed = suppressed
    if not fix:
        result.remaining = list(findings)
        return result

    current = data
    applied = 0
    for _ in range(MAX_FIX_PASSES):
        fixable = [f for f in findings if f.fix is not None and (f.fix.safe or unsafe_fixes)]
        if not fixable:
            break
        new_module, count = apply_fixes(module, fixable)
        if count == 0:
            break
        applied += count
        current = new_module.bytes
        reparsed = _parse(current)
        if isinstance(reparsed, str):  # pragma: no cover - a bug in a rule's rewrite
            result.error = f"internal error: the fixed code does not parse ({reparsed}); file left unchanged"
            result.applied = 0
            result.remaining = list(result.findings)
            return result
        findings, module = _run(reparsed, path, candidates, grad_scale_import)
        findings, _ = _unsuppressed(findings, module.code, ignore_noqa)
    result.applied = applied
    result.remaining = findings
    if current != data:
        result.fixed = current
    return result


def _with_edits(module, finding: Finding) -> Finding:
    """The finding with its fix alone applied, expressed as whole-line edits."""
    import dataclasses
    import difflib

    if finding.fix is None:
        return finding
    new_module, count = apply_fixes(module, [finding])
    if not count:
        return finding
    from gradfix.files import lines_with_ends

    before = lines_with_ends(module.code)
    after = lines_with_ends(new_module.code)
    edits = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            edits.append(TextEdit(i1 + 1, i2 + 1, "".join(after[j1:j2])))
    return dataclasses.replace(finding, edits=tuple(edits))


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
        return f"{line}:{col}: {kind}: {exc.msg}"
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


def _run(module, path: str, rules: Sequence[ModuleType], grad_scale_import: str = "gradfix.autograd"):
    from libcst.metadata import MetadataWrapper

    from gradfix.rules import RuleContext

    wrapper = MetadataWrapper(module)
    ctx = RuleContext(
        path=path,
        grad_scale_name=_grad_scale_name(wrapper.module, grad_scale_import),
        grad_scale_module=grad_scale_import,
    )
    by_code = {}
    for rule in rules:
        visitor = rule.Visitor(ctx)
        wrapper.visit(visitor)
        by_code[rule.CODE] = visitor.findings
    findings: List[Finding] = []
    for rule in rules:
        stronger = [f for code in getattr(rule, "SUPERSEDED_BY", ()) for f in by_code.get(code, ())]
        taken = {id(node) for f in stronger if f.fix is not None for node in f.fix.replacements}
        for finding in by_code[rule.CODE]:
            if finding.fix is not None and any(id(node) in taken for node in finding.fix.replacements):
                continue  # the same statements are covered by a better rewrite
            findings.append(finding)
    return findings, wrapper.module


def _grad_scale_name(module, source: str = "gradfix.autograd") -> str:
    """The name rewritten code calls the op by in this file.

    The name our op is already bound to (imported from `source`, or defined
    inline by an earlier fix), else `grad_scale` unless the file uses that name
    for something else, else a fresh `gradfix_grad_scale[_N]`.
    """
    import libcst as cst

    from gradfix.rewrite import INLINE_MARKER, dotted

    names: Set[str] = set()
    bound: List[str] = []

    class Collect(cst.CSTVisitor):
        def visit_ImportFrom(self, node: cst.ImportFrom) -> Optional[bool]:
            if node.module is not None and dotted(node.module) == source and not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    if alias.name.value == "grad_scale":
                        bound.append(alias.asname.name.value if alias.asname else "grad_scale")  # type: ignore[union-attr]
            return True

        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if source == "inline" and INLINE_MARKER in _leading_comments(node):
                bound.append(node.name.value)

    module.visit(Collect())
    if bound:
        return bound[0]
    if "grad_scale" not in names:
        return "grad_scale"
    candidate, n = "gradfix_grad_scale", 1
    while candidate in names:
        n += 1
        candidate = f"gradfix_grad_scale_{n}"
    return candidate


def _leading_comments(node) -> str:
    return "".join(line.comment.value for line in node.leading_lines if line.comment is not None)


def apply_fixes(module, findings: Iterable[Finding]):
    """Apply the fixes whose statements do not overlap an earlier one's; return (module, count)."""
    from gradfix.rewrite import apply_fixes as apply

    return apply(module, findings)
