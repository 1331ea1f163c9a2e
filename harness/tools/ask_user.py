"""`ask_user {"question", "options"?}`: ask the people watching and wait for the answer.

The question is pending from its result on; the turn ends after this step and the session
waits. The answer arrives as an `answer` entry, which settles it and starts a turn.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from harness.messages import ToolSpec
from harness.tools.base import ToolContext, ToolOutcome, refused

MAX_QUESTION = 4_000
MAX_OPTIONS = 10
MAX_OPTION = 200
MAX_PENDING = 5

SPEC = ToolSpec(
    name="ask_user",
    description=(
        "Ask the user a question and stop until they answer. Offer options when the answer "
        "is one of a few choices. The answer comes back as the next input."
    ),
    parameters={
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "options": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["question"],
    },
)


def options_problem(options: Any) -> str | None:
    if not isinstance(options, list) or len(options) > MAX_OPTIONS:
        return f'"options" must be a list of at most {MAX_OPTIONS} strings.'
    for option in options:
        if not isinstance(option, str) or not option.strip() or len(option) > MAX_OPTION:
            return f"Each option must be a non-empty string of at most {MAX_OPTION} characters."
    return None


class AskUser:
    spec = SPEC

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        question = arguments.get("question")
        options = arguments.get("options") or []
        if not isinstance(question, str) or not question.strip():
            return refused('"question" must be a non-empty string.')
        if len(question) > MAX_QUESTION:
            return refused(f'"question" must be at most {MAX_QUESTION} characters.')
        problem = options_problem(options)
        if problem is not None:
            return refused(problem)
        if len(context.state.questions) >= MAX_PENDING:
            return refused(f"{MAX_PENDING} questions are already waiting for an answer.")
        asked = {
            "id": "q-" + secrets.token_hex(4),
            "question": question.strip(),
            "options": [o.strip() for o in options],
        }
        return ToolOutcome(
            text=f"Question {asked['id']} asked. The turn ends here; the answer will come "
            "back as the next input.",
            data={"question": asked},
            ends_turn=True,
        )
