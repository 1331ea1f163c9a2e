"""When a session compacts, and the budgets it keeps to, as one frozen value.

`window` is the window the session works within: the card's declared one, or what the
server was found to accept when that is less (`within`); `declared_window` keeps the card's
figure for display. Every budget is a share of the working window, in the tokens of the
session's counter:

- **trigger** `trigger × W`, moved earlier by `compact_at` and by the headroom rule
  `prompt + max_output + summary_budget <= W`. No window, no trigger.
- **recent budget** what a cut keeps verbatim; **summary budget** what a summary may use; a
  trigger moved early shrinks what a cut keeps (`cut_budget`), so the context after a fold
  starts well below the trigger instead of at it;
- **skills budget** what the bodies of loaded skills may take when a boundary attaches them
  again (none without a window);
- **entry limit** the most one input or tool output may take in context: anything larger is
  shown as its head and tail, so no single paste can wedge a session.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

ENTRY_SHARE = 0.5


@dataclass(frozen=True, kw_only=True)
class Policy:
    window: int | None
    max_output_tokens: int
    auto: bool = True
    trigger: float = 0.8
    compact_at: float | None = None
    recent_fraction: float = 0.2
    summary_fraction: float = 0.1
    skills_fraction: float = 0.1
    clear_tool_results: bool = False
    declared_window: int | None = None

    def within(self, effective_window: int | None) -> Policy:
        """The policy for a server found to accept `effective_window` tokens at most."""
        declared = self.declared_window or self.window
        if effective_window is None or self.window is None or effective_window >= self.window:
            return replace(self, declared_window=declared)
        return replace(self, window=effective_window, declared_window=declared)

    @property
    def effective_window(self) -> int | None:
        """The server's window when it is less than the card declares."""
        if self.declared_window is None or self.window == self.declared_window:
            return None
        return self.window

    @property
    def summary_budget(self) -> int:
        return int((self.window or 0) * self.summary_fraction)

    @property
    def skills_budget(self) -> int | None:
        return int(self.window * self.skills_fraction) if self.window else None

    @property
    def recent_budget(self) -> int:
        return int((self.window or 0) * self.recent_fraction)

    def cut_budget(self, fixed: int) -> int:
        """What a cut keeps verbatim when the context also holds `fixed` tokens that no fold
        shrinks (system prompt, tools, skills, memory, state): the recent budget, but at most half the
        room the trigger leaves beside them and a summary, so the next turns have the other
        half. Without this an early trigger is reached again by the fold itself: a compaction
        on every turn, each folding one turn."""
        trigger = self.trigger_tokens
        if trigger is None:
            return self.recent_budget
        room = trigger - fixed - self.summary_budget
        return max(0, min(self.recent_budget, room // 2))

    @property
    def entry_limit(self) -> int | None:
        return int(self.window * ENTRY_SHARE) if self.window else None

    @property
    def trigger_tokens(self) -> int | None:
        """The prompt size at which auto-compaction runs; None when it never does."""
        if self.window is None:
            return None
        tokens = self.trigger * self.window
        if self.compact_at is not None:
            at = self.compact_at * self.window if self.compact_at < 1 else self.compact_at
            tokens = min(tokens, at)
        headroom = self.window - self.max_output_tokens - self.summary_budget
        return max(1, int(min(tokens, headroom)))

    @property
    def armed(self) -> bool:
        return self.auto and self.window is not None

    def why_not(self) -> str | None:
        if self.window is None:
            return "the model card declares no context window"
        if not self.auto:
            return "auto-compaction is off for this session"
        return None
