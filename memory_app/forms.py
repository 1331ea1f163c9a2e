"""Browser forms for memory spaces: the same rules as the API's schemas."""

from __future__ import annotations

from typing import Any

from django import forms


class SpaceForm(forms.Form):
    name = forms.CharField(max_length=100)
    description = forms.CharField(
        max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    scope = forms.ChoiceField(
        choices=[("team", "Team: every member of the team"), ("personal", "Personal: only you")],
        initial="team",
    )
    budget_tokens = forms.IntegerField(
        min_value=1, max_value=1_000_000, initial=2000, label="Budget (tokens)",
        help_text="What the space may cost in every model call; beyond it notes are left out, "
        "and the context says which.",
    )  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)


class SpaceSettingsForm(SpaceForm):
    """A space's settings; its scope stays what it was made with."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        del self.fields["scope"]
