"""Provider keys at rest: Fernet (AES-128-CBC with HMAC-SHA256) under `HORSIE_SECRETS_KEY`.

The key lives outside the database (the environment, or `var/secrets_key` by default), so a
database dump or backup holds only ciphertext. A token that no longer decrypts (the key was
changed) is an error that names the fix, never an empty credential sent upstream.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class VaultError(Exception):
    pass


def _fernet() -> Fernet:
    return Fernet(settings.HORSIE_SECRETS_KEY)


def encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise VaultError(
            "A stored provider key no longer decrypts: HORSIE_SECRETS_KEY has changed. "
            "Set it back, or have an admin store the key again."
        ) from None
