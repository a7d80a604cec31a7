"""Shared matching helpers of the rules' prechecks (`might_match` in each rule module).

A precheck runs on a file that passed its rule's REQUIRED_TOKENS, before any libcst parse, and
returns False only where its rule provably cannot match (`gradfix.engine.prefilter`). These are
the pieces several prechecks use: regular expressions over the source text that allow whatever
Python allows between tokens, CPython's tree parsed once per file, and the statement lists of
that tree. Everything here is cheap and imports neither libcst nor torch.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, List, Optional

# Between two tokens inside brackets Python allows whitespace, newlines,
# backslash continuations and comments. One character class plus a comment
# that runs to its newline: unambiguous, so searching stays linear.
GAP = rb"(?:[ \t\f\v\r\n\\]|#[^\r\n]*[\r\n])*"
# The keywords that keep the graph: `retain_graph`, and its name before PyTorch 0.4, which the rules
# read as the `retain_graph` it meant (`gradfix.analysis.backward.OLD_RETAIN`).
RETAIN_KEYWORDS = ("retain_graph", "retain_variables")
_RETAIN = rb"retain_(?:graph|variables)"
# `retain_graph=True` (or `retain_variables=True`) as a keyword argument, `(True)` included.
RETAIN_TRUE = re.compile(_RETAIN + GAP + rb"=(?:" + GAP + rb"\()*" + GAP + rb"True")
# `name.backward(` and an argument: Accelerate's `accelerator.backward(loss)` (a tensor's `x.backward(g)` too).
_NAME_BACKWARD_OF_ARGUMENT = rb"|\w" + GAP + rb"\." + GAP + rb"backward" + GAP + rb"\(" + GAP + rb"[^\s)#\\]"
# A plain retaining backward's first argument is `retain_graph=` or `retain_variables=` (only those keywords are allowed).
_BACKWARD_RETAIN = (
    rb"\." + GAP + rb"backward" + GAP + rb"\(" + GAP + _RETAIN + GAP + rb"="
    # The spellings whose loss is an argument: `self.manual_backward(loss, ...)`, `torch.autograd.backward(loss, ...)`.
    + rb"|manual_backward" + GAP + rb"\(|autograd" + GAP + rb"\." + GAP + rb"backward" + GAP + rb"\("
)
BACKWARD_RETAIN = re.compile(_BACKWARD_RETAIN)
# ... and, in a file that mentions `accelerate`, a name's with any argument (`accelerator.backward(loss, ...)`).
BACKWARD_RETAIN_ACCELERATE = re.compile(_BACKWARD_RETAIN + _NAME_BACKWARD_OF_ARGUMENT)
# `).backward(`: the receiver of a backward of a sum is parenthesised (`(a + b).backward()`) or a call
# (`scaler.scale(a - b).backward()`), so its text ends in `)`.
_BACKWARD_OF_CALL = (
    rb"\)" + GAP + rb"\." + GAP + rb"backward" + GAP + rb"\("
    # or a spelling whose loss is an argument (`self.manual_backward(a + b)`)
    + rb"|manual_backward" + GAP + rb"\(|autograd" + GAP + rb"\." + GAP + rb"backward" + GAP + rb"\("
)
BACKWARD_OF_CALL = re.compile(_BACKWARD_OF_CALL)
BACKWARD_OF_CALL_ACCELERATE = re.compile(_BACKWARD_OF_CALL + _NAME_BACKWARD_OF_ARGUMENT)  # (`accelerator.backward(a + b)`)


def accelerate_possible(text: bytes) -> bool:
    """Whether the file may call Accelerate's `accelerator.backward(loss)`: it mentions `accelerate`
    (the analysis needs `Accelerator` imported from it). Elsewhere `name.backward(x)` is a tensor's
    backward with a `gradient`, no site: the prechecks need not look at it."""
    return b"accelerate" in text


def backward_retain(text: bytes) -> bool:
    """A plain retaining backward may be written in the text (`BACKWARD_RETAIN`)."""
    return (BACKWARD_RETAIN_ACCELERATE if accelerate_possible(text) else BACKWARD_RETAIN).search(text) is not None


def backward_of_call(text: bytes) -> bool:
    """A backward of a parenthesised or called receiver, or of an argument, may be written (`BACKWARD_OF_CALL`)."""
    return (BACKWARD_OF_CALL_ACCELERATE if accelerate_possible(text) else BACKWARD_OF_CALL).search(text) is not None
# The stop-gradient calls (`exprs.detach_receiver`: `.detach()`, `torch.detach(`), loosely: any call of
# a name that ends in `detach` (`x.detach(y)`, `undetach(` too; a prefilter test may let more through,
# never less). A pattern that starts with a literal is searched for fast: the exact one, which starts
# at every `.`, took a tenth of a second per megabyte, most of the token stage on a big tree.
DETACH_CALL = re.compile(rb"detach" + GAP + rb"\(")
# The legacy `X.data` read as an operand (`exprs.data_stop`), or `X.data.clone()`: not followed by a
# name character, `.`, `(`, an assignment or `import` (`torch.utils.data.X`, `p.data.copy_(...)`,
# `p.data = w`, `from torch.utils.data import ...` are none of them).
DATA_STOP = re.compile(
    rb"\.data" + GAP + rb"\." + GAP + rb"clone" + GAP + rb"\("
    + rb"|\.data(?![\w.(])(?!" + GAP + rb"(?:[.(]|=(?!=)|import\b))"
)


def has_stop_gradient(text: bytes) -> bool:
    """Some stop-gradient marker in the text: `.detach()`, `torch.detach(`, `X.data`."""
    return DETACH_CALL.search(text) is not None or DATA_STOP.search(text) is not None


def retain_keyword(text: bytes) -> bool:
    """A prefilter entry (REQUIRED_TOKENS) of the rules that need a retaining backward: the text
    mentions `retain_graph` or `retain_variables` (RETAIN_KEYWORDS). Both names, not their common
    prefix `retain_`: `retain_grad()` is far more frequent, and each file that passes the token
    stage costs a parse or a precheck."""
    return b"retain_graph" in text or b"retain_variables" in text


def two_stop_gradients(text: bytes) -> bool:
    """A prefilter entry (REQUIRED_TOKENS) of the rules that match a pair of evaluations: the text
    holds a stop-gradient marker and at least two mentions in all (a pair has one on each side).
    `X.data` counts only as `DATA_STOP` reads it: most files that mention `.data` never use it as an
    operand (`torch.utils.data`), and each file that passes the token stage costs a parse."""
    detaches = text.count(b"detach")
    # Each `DATA_STOP` match starts with its own `.data`: fewer than two mentions in all, none of
    # them can be a pair (most files: two scans of the text, no regular expression).
    if detaches + text.count(b".data") < 2:
        return False
    if detaches >= 2 and DETACH_CALL.search(text) is not None:
        return True
    # Else two mentions, one of them an `X.data` (which is then a stop-gradient), counted only as far
    # as needed: a file that imports `torch.utils.data` mentions `.data` often.
    found = 0
    for _ in DATA_STOP.finditer(text):
        found += 1
        if detaches + found >= 2:
            return True
    return False


def stop_gradient_count(text: bytes) -> int:
    """An upper bound of the stop-gradients in the text: each `detach` and each `X.data` (comments
    and strings included: an overcount only lets a file through)."""
    return text.count(b"detach") + len(DATA_STOP.findall(text))



def tree(data: bytes, state: Dict[str, object]):
    """CPython's tree of the file, parsed at most once per prefilter call (every precheck that wants
    it reads it from the same `state`); None when the file does not parse: the prechecks then let
    the file through, and the parser reports the error."""
    if "tree" not in state:
        import ast
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                state["tree"] = ast.parse(data)
        except BaseException as exc:  # noqa: BLE001 - SyntaxError, ValueError, RecursionError, MemoryError...
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            state["tree"] = None
    return state["tree"]


# The tokens that decide where the module's own statements start (`top_level_cuts`): a comment, a
# string literal (whatever its prefix: none changes where it ends; an unterminated one runs to the
# end of its line, or of the text if triple-quoted) and a backslash continuation, inside which no
# line starts; and a line that starts at a given indentation (column 0 for the module), with the
# first word the cuts read (`_cuts`).
_SKIP = (
    rb"#[^\r\n]*+"
    rb'|"""(?:[^"\\]++|\\.|"(?!""))*+(?:"""|\Z)'
    rb"|'''(?:[^'\\]++|\\.|'(?!''))*+(?:'''|\Z)"
    rb'|"(?:[^"\\\r\n]++|\\.)*+(?:"|$)'
    rb"|'(?:[^'\\\r\n]++|\\.)*+(?:'|$)"
    rb"|\\\r?\n"
)
_LINE = rb"(?:async[ \t]+)?(?:def|class)[ \t]|@|[)\]}]|(?=[^\s#])"


@lru_cache(maxsize=None)
def _layout(indent: bytes) -> "re.Pattern[bytes]":
    """Each match runs to the next line that starts at `indent` (its `line` group: the first word
    there), or to the end of the text (no `line` group). What lies between is consumed inside the
    expression (bytes that start no token, the tokens of `_SKIP`, a quote or a backslash that
    starts none, every other line break), so that Python sees one match per such line, not one per
    comment or string literal (stop 32: the scan was a third of GF002's precheck). A line deeper
    than `indent` is no such line: after `indent` comes a space, which `_LINE` does not start with."""
    at = rb"\n" + re.escape(indent)
    return re.compile(
        rb"(?:[^\n#\"'\\]++|" + _SKIP + rb"|[\\\"']|\n(?!" + re.escape(indent) + rb"(?:" + _LINE + rb")))*+"
        rb"(?:" + at + rb"(?P<line>" + _LINE + rb")|\Z)",
        re.S | re.M,
    )


def top_level_cuts(text: bytes) -> List[int]:
    """Where the text may be cut into runs of whole statements of the module's body: 0, the start
    of each top-level `def` and `class` (of its first decorator, if any), and the text's end.

    `def` and `class` at column 0, outside string literals, start a statement: neither can stand
    inside brackets, and a backslash continuation is no line start here. The decorators right above
    a definition are its own: the `@` lines at column 0 since the last other line there, a line
    that starts with a closing bracket (the end of a decorator's arguments) not counting; after any
    other line there, the next definition gets no cut (the line may be a decorator's argument). A
    `@` at column 0 that is a matrix product inside brackets gives a cut no piece parses across,
    and the caller then parses the whole file."""
    lines = ((m.start("line"), m.group("line")) for m in _layout(b"").finditer(text) if m.lastgroup == "line")
    return _cuts(lines, 0, len(text), decorated=0 if text.startswith(b"@") else -1)


def _cuts(lines, start: int, end: int, decorated: int = -1) -> List[int]:
    """`start`, the start of each definition among `lines` (each `(where, word)`: a line start at
    the level cut, and its first word as `_layout`'s `line` group gives it), at its first decorator,
    and `end`. `decorated`: where the decorators of the first definition start, if before `lines`."""
    cuts = [start]
    unsure = False  # a line came after a decorator: it may be one of its arguments
    for at, word in lines:
        if word == b"@":
            decorated = at if decorated < 0 else decorated
        elif word in (b")", b"]", b"}"):
            continue
        elif word:
            cut = at if decorated < 0 else decorated
            if cut > cuts[-1] and not unsure:
                cuts.append(cut)
            decorated, unsure = -1, False
        elif decorated >= 0:
            decorated, unsure = -1, True  # (no cut before the next definition: it keeps its decorators)
    if end > cuts[-1]:
        cuts.append(end)
    return cuts


# The name of the class a class's pieces are parsed under (`_class_pieces`): no identifier of a file.
PIECE_CLASS = "_gradfix_piece_"


def _breaks(text: bytes, end: int) -> int:
    """The line breaks before `end`, counted as CPython counts lines (`\n`, `\r\n`, a lone `\r`)."""
    return text.count(b"\n", 0, end) + text.count(b"\r", 0, end) - text.count(b"\r\n", 0, end)


def _body_indent(text: bytes, start: int, end: int) -> Optional[bytes]:
    """The indentation of the body of `text[start:end]` if that is a class statement (its
    decorators first), from CPython's tokenizer: the INDENT token after the header's logical line;
    None where it is no class, the body stands on the header's line or the tokens cannot tell."""
    import io
    import tokenize

    header = False  # past the `class` keyword (`def` and `class` cannot stand in a decorator)
    done = False  # past the header's logical line
    try:
        for token in tokenize.tokenize(io.BytesIO(text[start:end]).readline):
            if not header and token.type == tokenize.NAME and token.string in ("class", "def", "async"):
                if token.string != "class":
                    return None
                header = True
            elif header and token.type == tokenize.NEWLINE:
                done = True
            elif done and token.type not in (tokenize.NL, tokenize.COMMENT):
                return token.string.encode() if token.type == tokenize.INDENT else None
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    return None


def _class_cuts(text: bytes, start: int, end: int, indent: bytes) -> List[int]:
    """`top_level_cuts` inside a class statement: `start`, the start of each definition (of its
    first decorator) standing in the class's body at `indent`, and `end`. A line of the body at that
    indentation starts one of its statements unless it continues brackets: there neither `def` nor
    `class` can stand, and a piece cut at a `@` there (a matrix product) does not parse."""
    lines = ((m.start("line") - len(indent), m.group("line")) for m in _layout(indent).finditer(text, start, end) if m.lastgroup == "line")
    return _cuts(lines, start, end)


def _class_pieces(text: bytes, start: int, end: int, marker: "re.Pattern[bytes]", pairs: bool = False):
    """The statements of the class statement `text[start:end]` that hold a marker, parsed one
    definition at a time, under a class named `PIECE_CLASS` at the file's lines, then the marked
    statements of the module that follow the class in the run; None where the class is not cut
    (a body on its header's line, a marker among its first statements). `pairs`: a definition
    holding a single marker is left out (`marked_tree`)."""
    import ast

    indent = _body_indent(text, start, end)
    if not indent:
        return None
    cuts = _class_cuts(text, start, end, indent)
    if len(cuts) < 3:
        return None
    body: list = []
    after: list = []
    for k in range(len(cuts) - 1):
        if marker.search(text, cuts[k], cuts[k + 1]) is None:
            continue
        if k == 0:
            return None  # the header's piece (its bases, docstring, attributes): the class whole
        if pairs and _lone_definition(text, cuts[k], cuts[k + 1], indent, marker):
            continue
        # The piece's first line is its own: the class line right above it (a class is at least one line).
        lines = _breaks(text, cuts[k])
        source = b"\n" * (lines - 1) + b"class " + PIECE_CLASS.encode() + b":\n" + text[cuts[k] : cuts[k + 1]]
        parsed = ast.parse(source).body
        body.extend(parsed[0].body)
        after.extend(parsed[1:])  # the module's statements between the class and the next definition
    return [ast.ClassDef(name=PIECE_CLASS, bases=[], keywords=[], body=body, decorator_list=[]), *after]


# A line that only continues a definition's statement as Python reads it: blank, a comment, or
# indented deeper than the definition (`_lone_definition`).
_BLANK_OR_COMMENT = re.compile(rb"[ \t\f]*(?:#.*)?")


def _lone_definition(text: bytes, start: int, end: int, indent: bytes, marker: "re.Pattern[bytes]") -> bool:
    """Whether the run `text[start:end]` (cut at a definition standing at `indent`: `top_level_cuts`,
    `_class_cuts`) holds exactly one match of `marker`, and that match is certainly inside the
    `def` statement the run starts with (its decorators, its header or its body).

    Proven from the lines alone, or False: the run's first lines are its decorators (each one line
    at `indent` starting with `@`) and then its `def` line; every line after that, up to the
    marker's, is blank, a comment, or starts with `indent` and then one or more spaces or tabs
    (deeper than the definition: no statement at or above its level can start there, so the
    definition has not ended; a form feed, which resets Python's count of indentation, is not
    taken). Anything else (a decorator over several lines, a header continued at a shallower
    column, a string or a bracket continued at column 0, the class's or module's own statements
    after the definition, `\r` line ends) gives False, and the run is parsed as before."""
    first = marker.search(text, start, end)
    if first is None or marker.search(text, first.end(), end) is not None:
        return False
    chunk = text[start:end]
    if b"\r" in chunk:
        return False
    at = first.start() - start
    offset = 0
    seen_def = False
    for line in chunk.split(b"\n"):
        if not seen_def:
            if not line.startswith(indent):
                return False
            head = line[len(indent):]
            if head.startswith(b"@"):
                pass  # a decorator of one line
            elif re.match(rb"(?:async[ \t]+)?def[ \t]", head):
                seen_def = True
            else:
                return False
        elif _BLANK_OR_COMMENT.fullmatch(line) is None:
            deeper = line[len(indent):len(indent) + 1]
            if not line.startswith(indent) or deeper not in (b" ", b"\t") or b"\f" in line[: len(line) - len(line.lstrip())]:
                return False
        if at <= offset + len(line):
            return seen_def  # the marker's line (a decorator's line before the `def`: no proof of one)
        offset += len(line) + 1
    return False


def marked_tree(data: bytes, text: bytes, state: Dict[str, object], marker: "re.Pattern[bytes]", *, pairs: bool = False):
    """(CPython's tree of the top-level statements around every match of `marker`, whether that is
    the whole file's tree), or None when the file does not parse.

    `pairs`: the caller looks only for two markers in one function (GF002's pair of calls, each
    holding a stop-gradient, in one scope): a run that is one definition holding a single marker
    (`_lone_definition`) is left out too, unparsed (stop 32: in transformers, 44% of what the runs
    parsed).

    The parse is most of a precheck's cost, and most of a file holds no marker: the text is cut
    into runs of whole statements of the module's body (`top_level_cuts`), and only the runs
    holding a marker are parsed, each at its own lines: the tree of each is the one CPython makes
    of those statements in the whole file. A run that is one class is cut again, at the definitions
    of its body (`_class_pieces`: a file often is one big class, with a marker in a method or two);
    the marked ones are parsed under a class named `PIECE_CLASS`, whose body holds them as the
    file's class does. Where a run does not parse, or the text is not the file's bytes (a declared
    encoding), the whole file is parsed (`tree`), as the caller must also do when it needs what the
    runs leave out."""
    import ast
    import warnings
    from bisect import bisect_right

    if "marked" in state:
        return state["marked"]  # type: ignore[return-value]
    found = None
    if text is data and "tree" not in state:
        cuts = top_level_cuts(text)
        pieces = sorted({bisect_right(cuts, m.start()) - 1 for m in marker.finditer(text)})
        body: list = []
        left_out = False  # (a run holding a marker, not parsed: the tree is not the whole file's)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for k in pieces:
                    start, end = cuts[k], cuts[k + 1]
                    if pairs and _lone_definition(text, start, end, b"", marker):
                        left_out = True
                        continue
                    if text.startswith((b"class", b"@"), start):
                        split = _class_pieces(text, start, end, marker, pairs)
                        if split is not None:
                            body.extend(split)
                            continue
                    # (the blank lines before it: its nodes' lines are the file's)
                    body.extend(ast.parse(b"\n" * _breaks(text, start) + text[start:end]).body)
            whole = not left_out and len(pieces) == len(cuts) - 1 and not any(isinstance(s, ast.ClassDef) and s.name == PIECE_CLASS for s in body)
            found = (ast.Module(body=body, type_ignores=[]), whole)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            found = None
    if found is None:
        whole_tree = tree(data, state)
        found = None if whole_tree is None else (whole_tree, True)
    state["marked"] = found
    return found


def statement_blocks(data: bytes, state: Dict[str, object]) -> Optional[List[tuple]]:
    """Every statement list of the file with the function it belongs to (the module at top level),
    walked once per prefilter call; None when the file does not parse.

    Statements only: a backward site, a loop and a function are statements, and expressions are
    most of a tree (walking them made the prefilter's checks its slowest part)."""
    import ast

    if "blocks" not in state:
        module = tree(data, state)
        blocks: Optional[List[tuple]] = None
        if module is not None:
            blocks = []
            stack: List[tuple] = [(module.body, module)]
            while stack:
                block, scope = stack.pop()
                blocks.append((block, scope))
                for statement in block:
                    inner_scope = statement if type(statement) in (ast.FunctionDef, ast.AsyncFunctionDef) else scope
                    for name in ("body", "orelse", "finalbody"):
                        inner = getattr(statement, name, None)
                        if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                            stack.append((inner, inner_scope))
                    for clause in getattr(statement, "handlers", ()) or getattr(statement, "cases", ()):
                        stack.append((clause.body, inner_scope))
        state["blocks"] = blocks
    return state["blocks"]  # type: ignore[return-value]


def first_line(node) -> int:
    """The first line of a statement: its first decorator's if it has any."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def lines_of(node, text: bytes, state: Dict[str, object]) -> bytes:
    """The text of the lines a statement spans, from its first decorator's if it has any."""
    if "lines" not in state:
        state["lines"] = text.splitlines()
    lines: List[bytes] = state["lines"]  # type: ignore[assignment]
    return b"\n".join(lines[first_line(node) - 1 : node.end_lineno])


def retained_backward_then_backward(data: bytes, state: Dict[str, object]) -> bool:
    """Some statement list holds a plain `X.backward(retain_graph=True)` statement and, later, another plain
    `Y.backward(...)` statement (plain: keyword arguments only, all `retain_graph`), as GF001's and GF003's
    sites (`gradfix.analysis.backward`) require. True when the file does not parse: the parser reports it."""
    blocks = statement_blocks(data, state)
    if blocks is None:
        return True
    accelerate = accelerate_possible(data)
    for block, _ in blocks:
        retained = False
        for statement in block:
            site = plain_backward(statement, accelerate)
            if site is not None:
                if retained:
                    return True
                retained = site
    return False


def plain_backward(statement, accelerate: bool = False) -> Optional[bool]:
    """None unless a plain backward expression statement (`X.backward(...)`, `self.manual_backward(X, ...)`,
    `torch.autograd.backward(X, ...)`, as `gradfix.analysis.backward.backward_call` reads them); then
    whether it passes `retain_graph=True`. `accelerate`: `accelerate_possible` for the file."""
    site = backward_site(statement, accelerate)
    return None if site is None else site[1]


def backward_site(statement, accelerate: bool = False) -> Optional[tuple]:
    """(the loss expression, whether `retain_graph=True`) of a plain backward expression statement,
    else None. Plain: keyword arguments only, all `retain_graph` or `retain_variables` (`gradient=`,
    `inputs=`, `create_graph=`, `**kwargs` or a second positional argument make it no site; both
    retain keywords together are no site to the rules, a site here: an overestimate only)."""
    import ast

    call = getattr(statement, "value", None) if type(statement) is ast.Expr else None
    if type(call) is not ast.Call:
        return None
    func = call.func
    if type(func) is not ast.Attribute:
        return None
    counts = positional_losses(func, accelerate)
    if len(call.args) not in counts:
        return None
    if call.args:
        # The loss is the one positional argument (a list of tensors is one backward already).
        if type(call.args[0]) in (ast.Starred, ast.List, ast.Tuple):
            return None
        loss = call.args[0]
    else:
        loss = func.value
    retains = False
    for keyword in call.keywords:
        if keyword.arg not in RETAIN_KEYWORDS:
            return None  # gradient=, inputs=, create_graph=, **kwargs: not a site
        retains = retains or (type(keyword.value) is ast.Constant and keyword.value.value is True)
    return loss, retains


def positional_losses(func, accelerate: bool = False) -> tuple:
    """How many positional arguments a backward call of `func` (an `ast` node) may have: 1 for
    `self.manual_backward(loss)` and `torch.autograd.backward(loss)`; 0 for `loss.backward()`, or,
    in a file where `accelerate_possible`, 1 where the receiver is a name (`accelerator.backward(loss)`,
    if the file makes it an Accelerator: an overestimate); none for anything else."""
    import ast

    if type(func) is not ast.Attribute:
        return ()
    if func.attr == "manual_backward" or (func.attr == "backward" and is_autograd(func.value)):
        return (1,)
    if func.attr == "backward":
        return (0, 1) if accelerate and type(func.value) is ast.Name else (0,)
    return ()


def is_autograd(node) -> bool:
    """`torch.autograd` or `autograd`, as written."""
    import ast

    if type(node) is ast.Name:
        return node.id == "autograd"
    return type(node) is ast.Attribute and node.attr == "autograd" and type(node.value) is ast.Name and node.value.id == "torch"
