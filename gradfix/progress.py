"""The progress bar of `gradfix check` / `fix`: on stderr, only on a terminal, only for long runs.

`tracked(results, total)` counts a run's results on a bar as they arrive (the command line
passes it to `gradfix.api.lint_paths` as `progress`); `ProgressBar` draws it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Iterator, TextIO

# A progress bar is worth drawing only for runs of this many files, and only
# when stderr is a terminal (see tracked).
PROGRESS_THRESHOLD = 200


def is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class ProgressBar:
    """`gradfix [#####-----] 120/400 files` on one line of a terminal, redrawn in place.

    Drawn when created, then at most every `interval` seconds and once more
    when the count reaches the total; `close()` erases it, so what is
    printed next (the summary, or the findings when stdout is the same
    terminal) starts on a clean line and the bar leaves nothing behind.
    Only carriage returns and spaces: no cursor or erase escapes that a
    terminal might not know.
    """

    def __init__(self, total: int, stream: TextIO, *, label: str = "gradfix", interval: float = 0.1) -> None:
        self.total, self.stream, self.label, self.interval = total, stream, label, interval
        self.width = self._columns(stream) - 1  # never the last column: some terminals wrap there
        self.drawn = 0  # length of the line on screen
        self.last = 0.0
        self.update(0, force=True)

    @staticmethod
    def _columns(stream) -> int:
        try:
            columns = os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 0
        return columns if columns > 0 else 80

    def update(self, done: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if not (force or done >= self.total or now - self.last >= self.interval):
            return
        self.last = now
        count = f"{done}/{self.total} files"
        room = self.width - len(self.label) - len(count) - 4
        if room >= 10:
            filled = room * done // max(self.total, 1)
            line = f"{self.label} [{'#' * filled}{'-' * (room - filled)}] {count}"
        else:
            line = f"{self.label} {count}"[: self.width]
        self._write("\r" + line + " " * max(0, self.drawn - len(line)))
        self.drawn = len(line)

    def close(self) -> None:
        if self.drawn:
            self._write("\r" + " " * self.drawn + "\r")
            self.drawn = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a terminal gone away must not fail the run
            pass


@contextlib.contextmanager
def tracked(results: Iterator, total: int) -> Iterator[Iterator]:
    """`results`, counted on a progress bar on stderr when worth it (see PROGRESS_THRESHOLD).

    Only stderr is written to, and only when it is a terminal: stdout (JSON,
    SARIF, diffs, `fix -`'s source) never sees the bar. Each result counts
    when it arrives; the bar is erased when the block ends, however it ends.
    """
    stream = sys.stderr
    bar = ProgressBar(total, stream) if total >= PROGRESS_THRESHOLD and is_terminal(stream) else None

    def counted() -> Iterator:
        for done, item in enumerate(results, 1):
            bar.update(done)
            yield item

    try:
        yield iter(results) if bar is None else counted()
    finally:
        if bar is not None:
            bar.close()
        # The caller takes exactly one result per file and leaves `results`
        # suspended at its last one: close it now (a worker pool shuts down
        # there) rather than whenever it is garbage-collected.
        close = getattr(results, "close", None)
        if close is not None:
            close()
