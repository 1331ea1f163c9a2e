"""Compaction: policy (when, and the budgets), cut (where), prompts (the summary request),
boundary (the entry's one shape) and runner (the calls, the entries, the fallbacks)."""
