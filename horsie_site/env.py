"""Small strict readers for settings from the environment.

A value that does not parse is an error at start-up, never a silent default: `HORSIE_X=ture`
stops the server with a message instead of meaning False. Any variable may instead be given
as `NAME_FILE`, a path whose contents are the value (for secrets mounted as files).
"""

from __future__ import annotations

import os
from pathlib import Path

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


class SettingError(ValueError):
    pass


def raw(name: str) -> str | None:
    path = os.environ.get(f"{name}_FILE")
    if path:
        return Path(path).read_text().strip()
    return os.environ.get(name)


def string(name: str, default: str) -> str:
    value = raw(name)
    return default if value is None or value == "" else value


def boolean(name: str, default: bool) -> bool:
    value = raw(name)
    if value is None or value == "":
        return default
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise SettingError(f"{name}={value!r} is not a boolean (use one of {sorted(TRUE | FALSE)})")


def integer(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    value = raw(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise SettingError(f"{name}={value!r} is not an integer") from None
    if number < minimum:
        raise SettingError(f"{name}={number} is below its minimum {minimum}")
    if maximum is not None and number > maximum:
        raise SettingError(f"{name}={number} is above its maximum {maximum}")
    return number


def number(name: str, default: float, *, low: float, high: float) -> float:
    value = raw(name)
    if value is None or value == "":
        return default
    try:
        parsed = float(value)
    except ValueError:
        raise SettingError(f"{name}={value!r} is not a number") from None
    if not low <= parsed <= high:
        raise SettingError(f"{name}={parsed} is outside [{low}, {high}]")
    return parsed


def string_list(name: str, default: list[str]) -> list[str]:
    value = raw(name)
    if value is None or value == "":
        return default
    return [part.strip() for part in value.split(",") if part.strip()]
