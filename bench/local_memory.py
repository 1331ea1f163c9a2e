"""Peak memory of the web process with the bundled local model loaded and answering.

Starts `daphne` on the embedded defaults, reads its peak resident set (VmHWM) at rest,
sends one message to a session on the default (local) model card, waits for the reply and
reads the peak again.
"""

from __future__ import annotations

import sys

from _setup import ROOT

sys.path.insert(0, str(ROOT))
from tests.support.stack import Stack  # noqa: E402


def peak_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def main() -> None:
    stack = Stack()
    try:
        stack.start_web()
        pid = stack.processes["web"].pid
        before = peak_mib(pid)
        session = stack.session_on(None, title="local model")
        status, done = stack.api(
            "POST", f"/sessions/{session}/messages?wait=300", {"text": "Say hello in five words."}
        )
        assert status == 200 and done["entries"][-1]["kind"] == "assistant", done
        print(f"web process peak RSS at rest:             {before:.0f} MiB")
        print(f"web process peak RSS, local model loaded: {peak_mib(pid):.0f} MiB")
        print(f"reply: {done['entries'][-1]['content'][:60]!r}")
    finally:
        stack.close()


if __name__ == "__main__":
    main()
