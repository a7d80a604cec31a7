"""What one lint of one file is run with: `LintOptions`, the engine's, the worker task's and the
cache key's one options object.

The options are resolved: the rules are their codes (a selection, a configuration and per-file
ignores already applied; `gradfix.engine` turns the codes into rule modules), and every flag has
its value. `gradfix.api.Options` (selectors, as `--select`) and the configuration
(`gradfix.config.Settings.lint_options`) build them. Nothing here imports more than the standard
library: the options travel to worker processes and are imported by the command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

# Where rewritten code imports gradfix's runtime ops (`grad_scale`, `scaled_params_call`) from
# unless a configuration's `grad-scale-import` names another module (or "inline").
DEFAULT_GRAD_SCALE_IMPORT = "gradfix.autograd"


@dataclass(frozen=True)
class LintOptions:
    """How to lint one file (frozen, hashable, picklable).

    `codes`: the rule codes to run (any order; a list is stored as a tuple). `fix` applies the
    safe fixes and returns the new bytes (`unsafe_fixes`: the unsafe ones too); `ignore_noqa`
    reports what `# noqa` suppresses; `grad_scale_import` is where rewritten code
    takes the gradient-scaling ops from: a module path, or "inline" to define them in the file.
    """

    codes: Tuple[str, ...]
    fix: bool = False
    unsafe_fixes: bool = False
    ignore_noqa: bool = False
    grad_scale_import: str = DEFAULT_GRAD_SCALE_IMPORT

    def __post_init__(self) -> None:
        codes = (self.codes,) if isinstance(self.codes, str) else tuple(self.codes)
        if not all(isinstance(code, str) for code in codes):
            raise TypeError(f"LintOptions.codes holds rule codes (strings), not {codes!r}")
        object.__setattr__(self, "codes", codes)


__all__ = ["DEFAULT_GRAD_SCALE_IMPORT", "LintOptions"]
