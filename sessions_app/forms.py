"""Browser forms: the same rules as the API's schemas, for people typing into pages.

The new-session form only offers the model cards of the team the browser is working in, so
a session can never be made with another team's card through the page.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from memory_app.selectors import space_costs, spaces_visible
from sessions_app.selectors import model_cards_visible
from skills_app.selectors import bundles_visible, skills_visible

MEMORY_MODES = [("", "off"), ("read", "read"), ("write", "read and write")]


def memory_fields(form: forms.Form, *, user: Any, team: Any, selected: list[Any]) -> None:
    """One choice per memory space the user may select in `team` (off, read, write), named
    `memory_<id>`; `memory_selection` turns the answers into a `memory` selection."""
    spaces = list(spaces_visible(user, team=team)) if team is not None else []
    costs = space_costs(spaces)
    modes = {item.get("space"): item.get("mode") for item in selected if isinstance(item, dict)}
    for space in spaces:
        cost = costs[space.pk]
        form.fields[f"memory_{space.pk}"] = forms.ChoiceField(
            choices=MEMORY_MODES,
            required=False,
            initial=modes.get(space.pk, ""),
            label=f"{space.name}{' (personal)' if space.scope == 'personal' else ''}",
            help_text=f"{cost['notes']} notes, about {cost['tokens']:,} tokens "
            f"(budget {space.budget_tokens:,})",
        )


def skills_fields(form: forms.Form, *, user: Any, team: Any) -> None:
    """The team's skills and bundles, to check; `clean` turns them into id lists."""
    for name, rows in (("skills", skills_visible), ("bundles", bundles_visible)):
        form.fields[name] = forms.ModelMultipleChoiceField(
            queryset=rows(user, team=team) if team is not None else rows(user).none(),
            required=False, widget=forms.CheckboxSelectMultiple,
        )  # fmt: skip
        form.fields[name].label_from_instance = described  # type: ignore[attr-defined]


def described(item: Any) -> str:
    return f"{item.name} — {item.description}" if item.description else item.name


def memory_selection(cleaned: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"space": int(name.removeprefix("memory_")), "mode": mode}
        for name, mode in cleaned.items()
        if name.startswith("memory_") and mode
    ]


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
        memory_fields(self, user=user, team=team, selected=[])
        skills_fields(self, user=user, team=team)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        cleaned["memory"] = memory_selection(cleaned)
        for name in ("skills", "bundles"):
            cleaned[name] = [item.pk for item in cleaned.get(name) or []]
        return cleaned

    def other_fields(self) -> list[Any]:
        return [
            field
            for field in self
            if not field.name.startswith("memory_") and field.name not in ("skills", "bundles")
        ]

    def memory_choices(self) -> list[Any]:
        return [field for field in self if field.name.startswith("memory_")]
