"""Browser forms for the team page and the invitation link: the API's rules, for people."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm

from teams_app.models import ROLES


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=ROLES)


class ProviderKeyForm(forms.Form):
    name = forms.CharField(max_length=100, widget=forms.TextInput(attrs={"placeholder": "openai"}))
    value = forms.RegexField(
        regex=r"^[\x21-\x7e]+$",
        max_length=4096,
        strip=True,
        label="Key",
        error_messages={"invalid": "A key is printable characters with no spaces."},
        # Write-only: the browser never gets the value back, not even in a re-shown form.
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )


class SignupForm(UserCreationForm):  # type: ignore[type-arg]
    """A new account through an invitation link: a username and a password, twice."""
