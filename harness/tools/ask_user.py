"""`ask_user {"question", "options"?}`: ask the people watching and wait for the answer.

The question is pending from its result on; the turn ends after this step and the session
waits. The answer arrives as an `answer` entry, which settles it and starts a turn.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from pydantic import BaseModel, Field

from harness.tools.base import Text, ToolContext, ToolOutcome, TypedTool, refused

MAX_QUESTION = 4_000
MAX_OPTIONS = 10
MAX_OPTION = 200
MAX_PENDING = 5


class AskArgs(BaseModel):
    question: Text = Field(max_length=MAX_QUESTION)
    options: list[Annotated[Text, Field(max_length=MAX_OPTION)]] = Field(
        default_factory=list, max_length=MAX_OPTIONS
    )


class AskUser(TypedTool[AskArgs]):
    name = "ask_user"
    description = (
        "Ask the user a question and stop until they answer. Offer options when the answer "
        "is one of a few choices. The answer comes back as the next input."
    )
    Args = AskArgs

    async def call(self, args: AskArgs, context: ToolContext) -> ToolOutcome:
        if len(context.state.questions) >= MAX_PENDING:
            return refused(f"{MAX_PENDING} questions are already waiting for an answer.")
        asked = {
            "id": "q-" + secrets.token_hex(4),
            "question": args.question,
            "options": list(args.options),
        }
        return ToolOutcome(
            text=f"Question {asked['id']} asked. The turn ends here; the answer will come "
            "back as the next input.",
            data={"question": asked},
            ends_turn=True,
        )
