"""Browser forms: the same rules as the API's schemas, for people typing into pages.

The new-session form only offers the model cards of the team the browser is working in, so
a session can never be made with another team's card through the page.
"""

from __future__ import annotations

from typing import Any

import pydantic
from django import forms
from django.conf import settings

from horsie_site.inputs import TOKENS_MAX
from memory_app.selectors import space_costs, spaces_visible
from sessions_app import presets
from sessions_app.models import LOCAL_NOTE, REPLAY_RULES, WIRES, AgentPreset
from sessions_app.schemas import ModelCardIn, PresetIn
from sessions_app.selectors import model_cards_visible, presets_visible
from skills_app.selectors import bundles_visible, skills_visible, subagent_types_visible

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


class PickedIds(forms.ModelMultipleChoiceField):
    """Checkboxes over the team's items that clean to a list of ids. Whether each id may be
    selected is `presets.selections_check`'s to say, so a page refuses another team's item
    in the same words as the API."""

    def clean(self, value: Any) -> list[int]:
        if self.disabled:
            value = self.initial
        ids = []
        for item in value or []:
            text = str(item.pk if hasattr(item, "pk") else item).strip()
            if not text.isdigit() or len(text) > 12:
                raise forms.ValidationError(f"Not an id: {text[:20]!r}.")
            ids.append(int(text))
        return ids


PICKABLE = {
    "skills": (skills_visible, "Skills"),
    "bundles": (bundles_visible, "Bundles (all their skills)"),
    "subagent_types": (subagent_types_visible, "Subagent types"),
}


def skills_fields(
    form: forms.Form,
    *,
    user: Any,
    team: Any,
    names: tuple[str, ...] = ("skills", "bundles"),
    selected: Any = None,
) -> None:
    """The team's skills and bundles (and subagent types, when named), to check; each
    cleans to a list of ids. `selected`: the preset or session whose ids start checked."""
    for name in names:
        rows, label = PICKABLE[name]
        form.fields[name] = PickedIds(
            queryset=rows(user, team=team) if team is not None else rows(user).none(),
            required=False, widget=forms.CheckboxSelectMultiple, label=label,
            initial=list(getattr(selected, name, None) or []),
        )  # fmt: skip
        form.fields[name].label_from_instance = described  # type: ignore[attr-defined]


def selection_refused(form: forms.Form, refused: presets.SelectionInvalid) -> None:
    """The check's complaint on the field it concerns (memory's on the whole form)."""
    form.add_error(refused.field if refused.field in form.fields else None, str(refused))


def described(item: Any) -> str:
    return f"{item.name} — {item.description}" if item.description else item.name


def memory_selection(cleaned: dict[str, Any], data: Any = None) -> list[dict[str, Any]]:
    """The spaces chosen on the form; with the posted `data`, also any `memory_<id>` sent
    for a space the form did not offer, so the selection check refuses it by name rather
    than the page dropping it unseen."""
    chosen = [
        {"space": int(name.removeprefix("memory_")), "mode": mode}
        for name, mode in cleaned.items()
        if name.startswith("memory_") and mode
    ]
    offered = set(cleaned)
    for name in data or {}:
        space = name.removeprefix("memory_")
        mode = data.get(name)
        if name not in offered and name != space and mode in ("read", "write"):
            if not space.isdigit() or len(space) > 12:
                raise forms.ValidationError(f"No such memory space: {space[:20]}.")
            chosen.append({"space": int(space), "mode": mode})
    return chosen


def card_label(card: Any) -> str:
    return f"{card.name} — {card.note}" if card.note else str(card.name)


class SessionForm(forms.Form):
    """A new session; with a `preset`, the fields start from the preset's values, and what
    the form sends is explicit and wins, as in the API's session create. What the form does
    not show (max steps, `compact_at`, subagent types) comes from the preset."""

    preset = forms.ModelChoiceField(
        queryset=None, required=False, label="Agent preset", empty_label="none",
        help_text="Fills the form from the preset; what you change here wins.",
    )  # fmt: skip
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

    def __init__(
        self, *args: Any, user: Any, team: Any, preset: AgentPreset | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.user, self.team = user, team
        self.fields["model"].queryset = model_cards_visible(user, team=team)  # type: ignore[attr-defined]
        self.fields["model"].label_from_instance = card_label  # type: ignore[attr-defined]
        if not self.fields["model"].queryset.exists():  # type: ignore[attr-defined]
            # No card yet: the session gets the bundled one (`services.default_card`).
            self.fields["model"].required = False
            self.fields["model"].empty_label = f"Bundled SmolLM2 — {LOCAL_NOTE}"  # type: ignore[attr-defined]
        self.fields["preset"].queryset = presets_visible(user).filter(team=team)  # type: ignore[attr-defined]
        self.fields["system_prompt"].initial = settings.HORSIE["DEFAULT_SYSTEM_PROMPT"]
        if preset is not None:
            self.preset_fill(preset)
        memory_fields(self, user=user, team=team, selected=preset.memory if preset else [])
        skills_fields(self, user=user, team=team, selected=preset)

    def preset_fill(self, preset: AgentPreset) -> None:
        self.fields["preset"].initial = preset.pk
        if preset.model_id is not None:
            self.fields["model"].initial = preset.model_id
        self.fields["system_prompt"].initial = preset.system_prompt
        self.fields["auto_compact"].initial = preset.auto_compact

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        try:
            cleaned["memory"] = memory_selection(cleaned, self.data)
            presets.selections_check(cleaned, user=self.user, team=self.team)
        except presets.SelectionInvalid as refused:
            selection_refused(self, refused)
        except forms.ValidationError as error:
            self.add_error(None, error)
        return cleaned

    def only_bundled(self) -> bool:
        """The team has no model but the bundled demo one (or none yet: it gets that one)."""
        cards = self.fields["model"].queryset  # type: ignore[attr-defined]
        return not cards.exclude(wire="local").exists()

    def other_fields(self) -> list[Any]:
        return [
            field
            for field in self
            if not field.name.startswith("memory_")
            and field.name not in PICKABLE
            and field.name != "preset"
        ]

    def memory_choices(self) -> list[Any]:
        return [field for field in self if field.name.startswith("memory_")]


# Agent presets -------------------------------------------------------------------------


class PresetForm(forms.Form):
    """An agent preset as a person types it. `preset_fields` checks the result with the
    API's own schema (`PresetIn`: the same bounds for `max_steps` and `compact_at`), and the
    save goes through `presets.preset_create`/`preset_update`, whose selection check is the
    API's, so the page and the API refuse the same input in the same words."""

    name = forms.CharField(max_length=100)
    model = forms.ModelChoiceField(
        queryset=None, required=False, label="Model card",
        empty_label="none: the session's own choice, else the team's first card",
    )  # fmt: skip
    system_prompt = forms.CharField(
        max_length=100_000, required=False, widget=forms.Textarea(attrs={"rows": 6})
    )
    max_steps = forms.IntegerField(
        min_value=1, max_value=1000, initial=25, label="Max steps",
        help_text="Model calls one turn may make before it stops.",
    )  # fmt: skip
    auto_compact = forms.BooleanField(
        required=False, initial=True, label="Compact automatically",
        help_text="Summarise old entries when the context window fills up.",
    )  # fmt: skip
    compact_at = forms.FloatField(
        required=False, label="Compact at",
        widget=forms.NumberInput(attrs={"step": "any", "placeholder": "server trigger"}),
        help_text="Below 1: a fraction of the window (0.6); 1 or more: a token count (50000). "
        "Only moves compaction earlier than the server's trigger. Empty: the server's.",
    )  # fmt: skip

    def __init__(
        self, *args: Any, user: Any, team: Any, preset: AgentPreset | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("label_suffix", "")
        if preset is not None and "initial" not in kwargs:
            kwargs["initial"] = {name: getattr(preset, name) for name in PRESET_PLAIN}
            kwargs["initial"]["model"] = preset.model_id
        super().__init__(*args, **kwargs)
        self.user, self.team, self.preset = user, team, preset
        self.fields["model"].queryset = model_cards_visible(user, team=team)  # type: ignore[attr-defined]
        self.fields["model"].label_from_instance = card_label  # type: ignore[attr-defined]
        memory_fields(self, user=user, team=team, selected=preset.memory if preset else [])
        skills_fields(self, user=user, team=team, names=tuple(PICKABLE), selected=preset)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        try:
            cleaned["memory"] = memory_selection(cleaned, self.data) + self.memory_unseen()
        except forms.ValidationError as error:
            self.add_error(None, error)
        return cleaned

    def memory_unseen(self) -> list[dict[str, Any]]:
        """Spaces the preset selects that this user cannot see (a teammate's personal
        space): they are not on the form, so saving it keeps them as they were."""
        kept = self.preset.memory if self.preset is not None else []
        return [
            item
            for item in kept
            if isinstance(item, dict) and f"memory_{item.get('space')}" not in self.fields
        ]

    def preset_fields(self) -> dict[str, Any]:
        """The preset's fields, checked by the API's schema; on a refusal, the schema's
        complaint is on the field it names and `forms.ValidationError` is raised."""
        cleaned = self.cleaned_data
        fields = {name: cleaned.get(name) for name in (*PRESET_PLAIN, *PICKABLE, "memory")}
        fields["model"] = None
        try:
            checked = PresetIn.model_validate(fields)
        except pydantic.ValidationError as error:
            for problem in error.errors():
                name = str(problem["loc"][0]) if problem["loc"] else ""
                self.add_error(name if name in self.fields else None, problem["msg"])
            raise forms.ValidationError("The preset was not saved.") from None
        out = checked.dict(include=set(fields))
        out["model"] = cleaned.get("model")
        return out

    def other_fields(self) -> list[Any]:
        return [field for field in self if field.name in PRESET_PLAIN or field.name == "model"]

    def memory_choices(self) -> list[Any]:
        return [field for field in self if field.name.startswith("memory_")]

    def picked_fields(self) -> list[Any]:
        return [self[name] for name in PICKABLE]


PRESET_PLAIN = ("name", "system_prompt", "max_steps", "auto_compact", "compact_at")


# Model cards ---------------------------------------------------------------------------

# What the form says per wire: where the SDK goes when no base URL is given, and an example.
WIRE_HINTS = {
    "openai_chat": {
        "base_url": "https://api.openai.com/v1",
        "model": "gpt-4.1-mini",
        "help": "OpenAI's chat completions, or any compatible server (vLLM, llama.cpp, Ollama): "
        "give its base URL, e.g. http://127.0.0.1:8080/v1.",
    },
    "openai_responses": {
        "base_url": "https://api.openai.com/v1",
        "model": "gpt-5-mini",
        "help": "OpenAI's Responses API; reasoning is kept encrypted and replayed on later calls.",
    },
    "anthropic": {
        "base_url": "https://api.anthropic.com",
        "model": "claude-sonnet-4-5",
        "help": "Anthropic's Messages API; thinking blocks are replayed with their signatures.",
    },
    "local": {
        "base_url": "",
        "model": "smollm2-135m-instruct",
        "help": "The bundled local model, run in this server: no key, no network.",
    },
}
PRICE_FIELDS = ("input", "cached_input", "output")


def price_field(label: str) -> forms.FloatField:
    return forms.FloatField(
        required=False,
        min_value=0,
        max_value=1_000_000,
        label=label,
        widget=forms.NumberInput(attrs={"step": "any", "placeholder": "—"}),
    )


class ModelCardForm(forms.Form):
    """A model card as a person types it; `card_fields` gives the API's fields, checked by
    the API's own schema (`ModelCardIn`), so both refuse the same input the same way. The
    endpoint fields are admin-only; the view leaves them out when the form did not send them
    (a member sees them read-only), and the card service refuses a member who sends them."""

    name = forms.CharField(max_length=100)
    wire = forms.ChoiceField(choices=WIRES)
    model = forms.CharField(max_length=200, label="Model id")
    base_url = forms.CharField(max_length=500, required=False, label="Base URL")
    key = forms.TypedChoiceField(required=False, coerce=int, empty_value=None, label="Provider key")
    context_window = forms.IntegerField(
        required=False,
        min_value=256,
        max_value=TOKENS_MAX,
        help_text="Tokens the model accepts. Empty: unknown, and the session never compacts "
        "on its own.",
    )
    max_output_tokens = forms.IntegerField(
        min_value=1, max_value=1_000_000, initial=1024, label="Output limit",
        help_text="The most tokens one reply may have; a reply cut there is marked truncated.",
    )  # fmt: skip
    price_input = price_field("Input")
    price_cached_input = price_field("Cached input")
    price_output = price_field("Output")
    reasoning_replay = forms.ChoiceField(
        choices=REPLAY_RULES,
        initial="never",
        label="Reasoning replay",
        help_text="Whether the model's own reasoning is sent back on later calls: never, only "
        "within a tool loop, or always. Some servers reject a tool turn without it.",
    )

    thinking_budget = forms.IntegerField(
        required=False, min_value=1024, max_value=1_000_000, label="Thinking budget",
        help_text="Anthropic only: tokens a reply may spend on extended thinking (at least "
        "1,024, below the output limit). Empty: no extended thinking.",
    )  # fmt: skip

    def __init__(self, *args: Any, keys: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        choices = [("", "none")]
        choices += [(key.pk, f"{key.name} (…{key.last4})") for key in keys]
        self.fields["key"].choices = choices  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        prices = {name: cleaned.get(f"price_{name}") for name in PRICE_FIELDS}
        given = [value for value in prices.values() if value is not None]
        if given and len(given) < len(PRICE_FIELDS):
            raise forms.ValidationError(
                "Give all three prices (input, cached input, output), or none."
            )
        cleaned["prices"] = prices if given else None
        return cleaned

    def card_fields(self, sent: Any) -> dict[str, Any]:
        """The API's fields from the cleaned form, checked by its schema; endpoint fields
        only when the browser sent them. Raises `forms.ValidationError` with the schema's
        complaint."""
        cleaned = self.cleaned_data
        fields = {name: cleaned.get(name) for name in CARD_FIELDS}
        fields["base_url"] = (cleaned.get("base_url") or "").strip() or None
        for name in ENDPOINT_FORM_FIELDS:
            if name not in sent:
                fields.pop(name)
        try:
            checked = ModelCardIn.model_validate(fields)
        except pydantic.ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
            )
            raise forms.ValidationError(problems) from None
        return checked.dict(include=set(fields))


CARD_FIELDS = (
    "name", "wire", "model", "base_url", "key", "context_window", "max_output_tokens",
    "reasoning_replay", "thinking_budget", "prices",
)  # fmt: skip
ENDPOINT_FORM_FIELDS = ("base_url", "key")


def card_initial(card: Any) -> dict[str, Any]:
    initial = {name: getattr(card, name) for name in CARD_FIELDS if name not in ("key", "prices")}
    initial["key"] = card.key_id or ""
    initial["base_url"] = card.base_url or ""
    for name in PRICE_FIELDS:
        initial[f"price_{name}"] = (card.prices or {}).get(name)
    return initial
