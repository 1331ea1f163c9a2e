"""The summariser's provider with its text shown as it streams.

A compaction takes 20–90 s; watchers see the summary being written instead of a bare
"compacting". The text goes out through the session's event sink like a reply's (a stream
of deltas with offsets), while the page shows "Compacting…", so it lands under that notice.
The call itself is unchanged: `summarise` still drains the stream to its final response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from harness.messages import ModelRequest, ResponseDone, StreamEvent, TextDelta
from harness.ports import EventSink
from harness.providers.base import Provider
from harness.tokens import TokenCounter


class Watched:
    def __init__(self, inner: Provider, events: EventSink, session_id: int) -> None:
        self.inner = inner
        self.capabilities = inner.capabilities
        self.events = events
        self.session_id = session_id

    @property
    def counter(self) -> TokenCounter:
        return self.inner.counter

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # The stream ends as the response arrives: a caller that stops reading there leaves
        # this generator to be closed later, when another stream may be open.
        await self.events.stream_start(self.session_id)
        ended = False
        try:
            async for event in self.inner.stream(request):
                if isinstance(event, TextDelta):
                    await self.events.delta(self.session_id, event.text)
                elif isinstance(event, ResponseDone):
                    ended = True
                    await self.events.stream_end(self.session_id)
                yield event
        finally:
            if not ended:
                await self.events.stream_end(self.session_id)
