"""Run original and rewritten snippets, compare their state, and time them.

Imports torch; only ``gradfix verify`` imports this package (lazily), so
``check`` and ``fix`` work without torch.  The snippet protocol is described
in :mod:`gradfix.harness.runner`.
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

__all__ = [
    "DeviceUnavailable",
    "PairReport",
    "Row",
    "SnippetError",
    "collect_state",
    "compare_states",
    "format_report",
    "resolve_device",
    "run_snippet",
    "tolerance",
    "verify_pair",
]
