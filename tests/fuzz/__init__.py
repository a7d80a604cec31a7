"""Differential fuzzing of gradfix's safe fixes (see tests/test_fuzz.py).

`catalogue` holds the parts (callees, operands and their aliases, pattern
forms, coefficients and their rebindings, statements between the passes) and
the Hypothesis strategy `steps()` that assembles them into complete snippets
following the harness's snippet protocol; `check` lints, rewrites, executes
both and reports any difference.
"""
