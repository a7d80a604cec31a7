"""Run a program in a process of its own, as `python script.py` would, without importing torch again.

Some reproducers leave something behind in the process that runs them (an `atexit` callback, a
signal handler, a finalizer, a patched torch): they run apart from the tests. A fresh interpreter
per program spent most of its time importing torch (over a second of CPU, twice per case, some
fifty cases). Here one interpreter per test process imports torch once (`_Zygote`, started on
first use) and forks a child per program. The child runs the script as `python script.py` does
(`runpy.run_path` as `__main__`, the script's directory first on `sys.path`, `sys.argv` the
script, the script's directory as the working directory, standard input empty) and leaves through
the interpreter's normal shutdown, so `atexit` callbacks, finalizers and buffered output behave as
in a fresh process; its standard output and error go to files of their own. The interpreter that
forks has done nothing but import torch: no thread of its own, no tensor made, its random state
as a fresh import leaves it.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

_CODE = r"""
import json, os, runpy, sys, traceback
import torch  # once: every program forked from here starts with it imported

sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            opened = os.open(path, flags)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdin = open(0, closefd=False)
        os.chdir(os.path.dirname(request["script"]))
        sys.argv = [request["script"]]
        sys.path[0] = os.path.dirname(request["script"])
        code = 0
        try:
            runpy.run_path(request["script"], run_name="__main__")
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.exit(code)  # the interpreter's own shutdown: atexit callbacks, finalizers, flushes
    _, status = os.waitpid(pid, 0)
    print(json.dumps(os.waitstatus_to_exitcode(status)), flush=True)
"""


class _Zygote:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
        )

    def run(self, script: Path, out: Path, err: Path, timeout: float) -> Optional[int]:
        """The exit code of the script's process, or None past `timeout` seconds (the zygote is then killed)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"script": str(script), "out": str(out), "err": str(err)}) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            self.kill()
            return None
        line = self.process.stdout.readline()
        if not line:  # the zygote died
            self.kill()
            return None
        return int(json.loads(line))

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, 9)
        except ProcessLookupError:
            pass
        self.process.wait()


_zygote: Optional[_Zygote] = None


def run_apart(source: str, timeout: float = 300) -> str:
    """What the program printed (standard output, then standard error), or `raised (exit N): [its
    last line of standard error]` where it exited with a nonzero status."""
    global _zygote
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(source)
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        if _zygote is None or _zygote.process.poll() is not None:
            _zygote = _Zygote()
        code = _zygote.run(script, out, err, timeout)
        if code is None:
            _zygote = None
            return "raised (timeout, or the process that runs programs died)"
        stdout, stderr = out.read_text(), err.read_text()
    if code != 0:
        return f"raised (exit {code}): {stderr.strip().splitlines()[-1:]}"
    return stdout + stderr
