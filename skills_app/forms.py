"""Browser forms for skills and friends: the same rules as the API's (the services check)."""

from __future__ import annotations

from typing import Any

from django import forms

from sessions_app.selectors import model_cards_visible
from skills_app.models import Bundle, Skill


class TeamForm(forms.Form):
    def __init__(self, *args: Any, team: Any = None, user: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.team, self.user = team, user


class SkillForm(TeamForm):
    name = forms.CharField(
        max_length=64, help_text="What the agent types to load it: a-z, 0-9, - and _."
    )
    description = forms.CharField(
        max_length=1024, help_text="One line: the agent picks the skill by it."
    )
    body = forms.CharField(required=False, max_length=100_000, widget=forms.Textarea(attrs={"rows": 12}),
                           help_text="Markdown; in context only once the agent loads the skill.")  # fmt: skip
    bundle = forms.ModelChoiceField(queryset=Bundle.objects.none(), required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["bundle"].queryset = Bundle.objects.filter(team=self.team)  # type: ignore[attr-defined]


class BundleForm(TeamForm):
    name = forms.CharField(max_length=64)
    description = forms.CharField(max_length=1024, required=False)
    skills = forms.ModelMultipleChoiceField(
        queryset=Skill.objects.none(), required=False, widget=forms.CheckboxSelectMultiple,
        help_text="A skill is in one bundle at most: checking it here moves it.",
    )  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["skills"].queryset = Skill.objects.filter(team=self.team)  # type: ignore[attr-defined]

    def clean_skills(self) -> list[int]:
        return [skill.pk for skill in self.cleaned_data["skills"]]


class CommandForm(TeamForm):
    name = forms.CharField(max_length=64, help_text="Typed as /name in the composer.")
    description = forms.CharField(max_length=1024, required=False)
    template = forms.CharField(max_length=100_000, widget=forms.Textarea(attrs={"rows": 6}),
                               help_text="$ARGUMENTS is replaced by what follows the name.")  # fmt: skip


class SubagentTypeForm(TeamForm):
    name = forms.CharField(max_length=64, help_text="What the agent names in spawn_subagent.")
    description = forms.CharField(
        max_length=1024, help_text="One line: the agent picks the type by it."
    )
    system_prompt = forms.CharField(
        required=False, max_length=100_000, widget=forms.Textarea(attrs={"rows": 6})
    )
    model = forms.ModelChoiceField(queryset=None, required=False, label="Model card",
                                   empty_label="the parent session's")  # fmt: skip
    tools = forms.CharField(required=False, max_length=10_000,
                            help_text="Tool names, separated by commas or spaces; empty: the defaults.")  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].queryset = model_cards_visible(self.user, team=self.team)  # type: ignore[attr-defined]

    def clean_tools(self) -> list[str]:
        return self.cleaned_data["tools"].replace(",", " ").split()
