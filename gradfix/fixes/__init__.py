"""Fixes: how a rule's findings become new code.

- `build`: the replacement code (the merged call, the one backward of a sum,
  hoisted assignments, fresh names, node replacement);
- `sums`: GF002's removal of a term from a sum, layout and comments kept;
- `apply`: applying the fixes of several findings to a file in one pass
  (statement replacement by identity, removed statements' comments kept,
  imports or inline definitions of the runtime ops, the names they are
  called by).
"""
