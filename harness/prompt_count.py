"""The provider's own count of the next request, where the compaction decision needs it.

A wire without the model's tokenizer counts by the estimate, calibrated on the usage the
last call reported; the text added since (a large paste, a long tool result) is estimated
only. Where the wire's server counts prompts (`Capabilities.counts_prompt`: Anthropic's
count endpoint), the assembled request is counted by it before the call while no call has
calibrated the estimate, and once the calibrated estimate reaches `COUNT_FROM` of the
trigger: the decision is the server's wherever the estimate could be wrong enough to matter,
and costs nothing far below the trigger. The count recalibrates the view the decision and a
compaction read (its cut and budgets agree with it). A count that fails, or is nonsense,
leaves the calibrated estimate to decide.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import cast

from harness.providers.base import PromptCounter, ProviderError
from harness.runtime import Deps, SessionView, TurnConfig, read_view
from harness.tokens import calibration

log = logging.getLogger(__name__)
# Of the trigger: below it a calibrated estimate decides, uncounted. A quarter still catches
# text estimated at a quarter of its cost (four UTF-8 bytes a character, all counted).
COUNT_FROM = 0.25


async def trigger_view(config: TurnConfig, deps: Deps, view: SessionView) -> SessionView:
    """`view`, or the same session recalibrated on the server's count of its request."""
    trigger = view.policy.trigger_tokens
    if not deps.provider.capabilities.counts_prompt or trigger is None:
        return view
    calibrated = view.state.calibration is not None
    if calibrated and view.context.tokens < COUNT_FROM * trigger:
        return view
    request = view.context.request(config.max_output_tokens)
    try:
        counted = await cast(PromptCounter, deps.provider).count_tokens(request)
    except ProviderError as error:
        log.warning("session %s: the prompt count failed (%s)", config.session_id, error)
        return view
    ratio = calibration(counted, view.context.estimate)
    if ratio is None:
        return view
    state = replace(view.state, calibration=ratio, calibrated_on=view.state.seq)
    return await read_view(config, deps, state)
