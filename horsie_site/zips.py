"""What every zip upload is checked for before it is trusted: the entry count and declared
size bounded before anything is inflated, and each member inflated only up to its limit
whatever its header claims, an implausible compression ratio refused. Memory and skill
imports call these with their own limits; every refusal names the file it is about.
"""

from __future__ import annotations

import zipfile
import zlib

ZIP_MAX_RATIO = 100  # inflated / compressed, for members large enough for it to matter
RATIO_FLOOR = 10_000
UNREADABLE = (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError, RuntimeError)


class Refused(ValueError):
    """An upload that cannot be imported; `status` is 400, or 413 when it is too large."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def bounds_check(
    where: str, members: list[zipfile.ZipInfo], *, max_files: int, max_total: int
) -> None:
    if len(members) > max_files:
        raise Refused(f"{where} holds {len(members)} files; the limit is {max_files}.", 413)
    declared = sum(member.file_size for member in members)
    if declared > max_total:
        raise Refused(f"{where} would unpack to {declared} bytes; the limit is {max_total}.", 413)


def inflated(archive: zipfile.ZipFile, member: zipfile.ZipInfo, where: str, limit: int) -> bytes:
    """The member's bytes, at most `limit` + 1 of them (the caller refuses the + 1)."""
    if member.flag_bits & 0x1:
        raise Refused(f"{where} is encrypted.")
    ratio = member.file_size / max(member.compress_size, 1)
    if member.file_size > RATIO_FLOOR and ratio > ZIP_MAX_RATIO:
        raise Refused(f"{where} inflates {ratio:.0f} times: refused as a zip bomb.", 413)
    try:
        with archive.open(member) as handle:
            return handle.read(limit + 1)
    except UNREADABLE:
        raise Refused(f"{where} cannot be read (damaged, or an unsupported compression).") from None
