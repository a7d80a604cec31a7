"""Run original and rewritten snippets, compare their state, and time them.

Imports torch; only ``gradfix verify`` imports this package (lazily), so
``check`` and ``fix`` work without torch.  The snippet protocol is described
in :mod:`gradfix.harness.runner`, how timings are taken in
:mod:`gradfix.harness.timing`.
"""

from gradfix.harness.compare import Row, collect_state, compare_states, tolerance
from gradfix.harness.runner import (
    DeviceUnavailable,
    PairReport,
    SnippetError,
    format_report,
    resolve_device,
    run_snippet,
    verify_pair,
)
from gradfix.harness.timing import DEFAULT_THREADS, Spread, torch_threads

__all__ = [
    "DEFAULT_THREADS",
    "DeviceUnavailable",
    "PairReport",
    "Row",
    "SnippetError",
    "Spread",
    "collect_state",
    "compare_states",
    "format_report",
    "resolve_device",
    "run_snippet",
    "tolerance",
    "torch_threads",
    "verify_pair",
]
