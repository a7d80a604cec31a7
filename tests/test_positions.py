"""One codegen pass gives what libcst's position and parent providers give (`analysis.positions`)."""

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider, WhitespaceInclusivePositionProvider

from gradfix.analysis.positions import node_maps

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "fixtures").rglob("*.py"))[::5] + [ROOT / "gradfix" / "engine.py", ROOT / "gradfix" / "analysis" / "between.py"]

_SHAPES = '''\
# header comment

@decorator(
    1,
)
# between decorator and def
async def f(a,
            b):  # trailing
    """doc"""
    x = 1; y = 2

    # a comment owned by the next statement
    if x:
        pass
    elif y:
        pass
    else:
        pass
        # footer of the else block
    match a:
        case 1:
            return b
    try:
        pass
    except* ValueError:
        pass
class C: pass
def g():
    class D:
        class E: x = property(len)
    return D
while True: break
with open(a) as f, open(b) as (g):
    v = [i for i in f if i] + {k: w for k, w in g} and {*a} or (lambda q=1, *r, s, **t: q)(*a, **b)
    z = f"{v!r:>{width}} {v=}" if (n := len(v)) else "x" "y"
    del z[1:2, ...], v.attr
    global gg
    x: int = yield from v
    assert not -x < 1 <= 2, "m"
    raise ValueError() from None
    print(*a, sep="", **b)[::-1]
async def h():
    async with a as b:
        async for c in d:
            await c
    return [d async for d in e]
'''


# Line breaks and file ends that positions must count as libcst does.
_ENDS = [
    "x = 1",
    "",
    "\n\n",
    "# only a comment",
    "a = (1,\r\n     2)\r\nb = 3\r\n",
    "a = 1\rb = [\r  2]\r",
    "if x:\n    pass\n# trailing comment",
    "def f():\n    return 1",
    "s = '''a\r\nb'''\nt = 1 \\\r\n  + 2\n",
    "class C:\n    x = 1\n\n    # indented comment\n\n",
]


@pytest.mark.parametrize(
    "source",
    [*SOURCES, _SHAPES, *_ENDS],
    ids=lambda s: s.name if isinstance(s, Path) else ("shapes" if s is _SHAPES else repr(s)[:30]),
)
def test_one_pass_gives_libcsts_positions_parents_and_statement_spans(source):
    module = cst.parse_module(source.read_bytes() if isinstance(source, Path) else source)
    nodes = node_maps(module)
    spans = nodes.spans
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    assert nodes.positions == dict(wrapper.resolve(PositionProvider))
    parents = wrapper.resolve(ParentNodeProvider)
    assert nodes.parents.keys() == parents.keys()
    assert all(nodes.parents[node] is parent for node, parent in parents.items())
    inclusive = wrapper.resolve(WhitespaceInclusivePositionProvider)
    statements = [node for node in inclusive if isinstance(node, cst.BaseStatement)]
    assert len(statements) > 3 or source in _ENDS
    assert spans == {node: inclusive[node] for node in statements}
    assert nodes.code == module.code


@pytest.mark.parametrize("source", [*SOURCES, _SHAPES], ids=lambda s: s.name if isinstance(s, Path) else "shapes")
def test_the_statement_walk_finds_every_block_and_class(source):
    """`Layout.blocks` and `statements.class_defs` walk statements only; a full libcst walk finds the same."""
    from gradfix.analysis.statements import class_defs
    from gradfix.fixes.rewrite import Layout

    module = cst.parse_module(source.read_bytes() if isinstance(source, Path) else source)
    blocks, classes = {}, []

    class Every(cst.CSTVisitor):
        def visit_Module(self, node):
            blocks.update((id(s), node) for s in node.body)

        def visit_IndentedBlock(self, node):
            blocks.update((id(s), node) for s in node.body)

        def visit_ClassDef(self, node):
            classes.append(node)

    module.visit(Every())
    layout = Layout(module, node_maps(module).spans)
    assert {key: block for key, (block, _) in layout.blocks.items()} == blocks
    assert list(class_defs(module)) == classes
    for block, indents in {id(b): (b, i) for b, i in layout.blocks.values()}.values():
        for statement in block.body:  # each at its block's indentation is its source text
            text = "".join(layout.lines[layout.first_line(statement) - 1 : layout.end_line(statement) - 1])
            assert layout.render([statement], indents) == text
