"""Subagents: time from `spawn_subagent` to the child's first model call, and three
children's wall time against one's.

Turns run in-process on the embedded SQLite database. The model is scripted: the parent
spawns N researchers in one reply, each child's call takes `CHILD_SECONDS` (a stand-in for
a real model's latency), and the wall time runs from the parent's spawning reply to the
parent's call that sees all N answers. Prints the figures; asserts nothing.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

from _setup import django_here, median

CHILD_SECONDS = 0.5
CHILD_PROMPT = "You are a bench CHILD."


def main() -> None:
    django_here()
    from harness.messages import SystemMessage, ToolCall
    from harness.testing import Reply, ScriptedProvider, reply
    from horsie_site import wiring
    from sessions_app.services import message_post, session_create
    from skills_app.models import SubagentType
    from teams_app.services import member_ensure

    class Bench:
        def __init__(self, children: int) -> None:
            calls = tuple(
                ToolCall(
                    id=f"c{i}",
                    name="spawn_subagent",
                    arguments=json.dumps({"type": "researcher", "task": f"Part {i}"}),
                )
                for i in range(children)
            )
            self.children = children
            self.parent = ScriptedProvider(
                [Reply(tool_calls=calls), reply("Asked.")], default=reply("Noted.")
            )
            self.capabilities, self.counter = self.parent.capabilities, self.parent.counter
            self.spawned = 0.0
            self.firsts: list[float] = []
            self.done = threading.Event()
            self.finished = 0.0

        async def stream(self, request):  # type: ignore[no-untyped-def]
            first = request.messages[0]
            system = first.text if isinstance(first, SystemMessage) else ""
            if CHILD_PROMPT in system:
                self.firsts.append(time.perf_counter())
                await asyncio.sleep(CHILD_SECONDS)
                async for event in ScriptedProvider([reply("Part done.")]).stream(request):
                    yield event
                return
            seen = sum(
                "[subagent researcher result]" in getattr(m, "text", "") for m in request.messages
            )
            if seen >= self.children:
                self.finished = time.perf_counter()
                self.done.set()
            if not self.spawned and self.parent.steps and self.parent.steps[0].tool_calls:
                self.spawned = time.perf_counter()
            async for event in self.parent.stream(request):
                yield event

    user, team = member_ensure(username="bench", team_name="bench")
    kind = SubagentType.objects.create(
        team=team, name="researcher", description="Looks things up", system_prompt=CHILD_PROMPT
    )

    def run(children: int) -> Bench:
        bench = Bench(children)
        wiring.provider_for = lambda card: bench
        session = session_create(
            user=user, team=team, fields={"title": "bench", "subagent_types": [kind.pk]}
        )
        message_post(session=session, user=user, text="Split the work.")
        assert bench.done.wait(60), "the parent never saw every answer"
        return bench

    latencies: list[float] = []
    walls: dict[int, list[float]] = {1: [], 3: []}
    for _ in range(5):
        for children in (1, 3):
            bench = run(children)
            latencies += [first - bench.spawned for first in bench.firsts]
            walls[children].append(bench.finished - bench.spawned)
    one, three = median(walls[1]), median(walls[3])
    print(
        f"spawn_subagent to the child's first model call, median: {median(latencies) * 1000:.1f} ms"
    )
    print(
        f"wall time, one child ({CHILD_SECONDS:.1f} s model call), median:    {one * 1000:.0f} ms"
    )
    print(f"wall time, three children at once, median:           {three * 1000:.0f} ms")
    print(f"ratio three/one:                                      {three / one:.2f}")


if __name__ == "__main__":
    main()
