"""Fixes: how a rule's findings become new code.

- `build`: the replacement code (the merged call, the one backward of a sum,
  hoisted assignments, fresh names, node replacement);
- `sums`: GF002's removal of a term from a sum, layout and comments kept;
- `rewrite`: a rule's `Rewrite` (statements replaced, by identity; removed
  statements' comments kept) turned into the text edits of its `Fix`;
- `imports`: imports or inline definitions of the runtime ops, and the
  names they are called by in a file;
- `apply`: applying the fixes of several findings to a file's text in one
  pass (those whose edits do not overlap).
"""
