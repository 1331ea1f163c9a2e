"""Browser forms: the same rules as the API's schemas, for people typing into pages.

The new-session form only offers the model cards of the team the browser is working in, so
a session can never be made with another team's card through the page.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from sessions_app.selectors import model_cards_visible


class SessionForm(forms.Form):
    title = forms.CharField(
        max_length=200,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "What is this session about?"}),
    )
    model = forms.ModelChoiceField(queryset=None, label="Model card", empty_label=None)
    system_prompt = forms.CharField(
        max_length=100_000, required=False, widget=forms.Textarea(attrs={"rows": 5})
    )
    auto_compact = forms.BooleanField(
        required=False,
        initial=True,
        label="Compact automatically",
        help_text="Summarise old entries when the context window fills up.",
    )

    def __init__(self, *args: Any, user: Any, team: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.fields["model"].queryset = model_cards_visible(user, team=team)  # type: ignore[attr-defined]
        self.fields["system_prompt"].initial = settings.HORSIE["DEFAULT_SYSTEM_PROMPT"]
