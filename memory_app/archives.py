"""Reading markdown uploads into notes, and writing a space out as a zip: nothing else.

An upload is one zip of `<title>.md` files, one or more markdown files (a note each), or an
`AGENTS.md` / `CLAUDE.md`, split into one note per heading. Everything is read in memory and
checked before a single note is written (the caller writes all or nothing). A zip is read
defensively: its entry count and declared size are bounded before anything is inflated, each
member is inflated only up to its limit whatever its header claims, an implausible compression
ratio is refused, and only flat `<name>.md` members are accepted, so no path (`../x.md`,
`/etc/x.md`, `dir/x.md`) ever names a note. Every refusal names the file it is about.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from horsie_site.zips import Refused, bounds_check, inflated

UPLOAD_MAX_BYTES = 5_000_000  # what one import may send, all files together
ZIP_MAX_FILES = 500
ZIP_MAX_TOTAL_BYTES = 10_000_000  # what a zip may inflate to, all members together
FILE_MAX_BYTES = 400_000  # one member inflated; the note size limit is checked after decoding
SPLIT_NAMES = ("agents", "claude")  # AGENTS.md, CLAUDE.md: one note per heading
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")


@dataclass(frozen=True, kw_only=True)
class Piece:
    """One note to be: where it came from (for errors), its title and its body."""

    source: str
    title: str
    body: str


Upload = tuple[str, IO[bytes], int]  # file name, content, size in bytes


def pieces_from(uploads: Iterable[Upload]) -> list[Piece]:
    uploads = list(uploads)
    if not uploads:
        raise Refused("Send a zip of <title>.md files, markdown files, or an AGENTS.md as `file`.")
    total = sum(size for _, _, size in uploads)
    if total > UPLOAD_MAX_BYTES:
        raise Refused(f"The upload has {total} bytes; the limit is {UPLOAD_MAX_BYTES}.", 413)
    pieces: list[Piece] = []
    for name, stream, _ in uploads:
        pieces.extend(upload_pieces(name, stream))
    titles_unique(pieces)
    if not pieces:
        raise Refused("The upload holds no markdown to import.")
    return pieces


def upload_pieces(name: str, stream: IO[bytes]) -> list[Piece]:
    base = name_check(name, f"`{name[:100]}`")
    if base.lower().endswith(".zip"):
        return zip_pieces(base, stream)
    if not base.lower().endswith(".md"):
        raise Refused(f"`{base}` is not markdown: send .md files, or a zip of them.")
    text = decoded(stream.read(FILE_MAX_BYTES + 1), f"`{base}`")
    stem = base[:-3]
    if stem.lower() in SPLIT_NAMES:
        return split_by_heading(base, stem, text)
    return [Piece(source=f"`{base}`", title=stem, body=text)]


def name_check(name: str, where: str) -> str:
    """A flat `<name>.<ext>`: no folder, no path, nothing hidden."""
    if "/" in name or "\\" in name or name.startswith(".") or ":" in name:
        raise Refused(
            f"{where}: only plain file names are accepted (no folders, paths or hidden files): "
            "put the .md files at the top level."
        )
    if any(ord(char) < 32 for char in name):
        raise Refused(f"{where}: the file name holds a control character.")
    return name


def decoded(data: bytes, where: str) -> str:
    if len(data) > FILE_MAX_BYTES:
        raise Refused(f"{where} is larger than {FILE_MAX_BYTES} bytes.", 413)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Refused(f"{where} is not UTF-8 text.") from None


def zip_pieces(source: str, stream: IO[bytes]) -> list[Piece]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(stream.read(UPLOAD_MAX_BYTES + 1)))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        raise Refused(f"`{source}` is not a zip file that can be read.") from None
    with archive:
        members = archive.infolist()
        bounds_check(f"`{source}`", members, max_files=ZIP_MAX_FILES, max_total=ZIP_MAX_TOTAL_BYTES)
        return [member_piece(source, archive, member) for member in members]


def member_piece(source: str, archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> Piece:
    where = f"`{source}` › `{member.filename[:200]}`"
    name = name_check(member.filename, where)
    if not name.lower().endswith(".md"):
        raise Refused(f"{where} is not markdown: a space zip holds only <title>.md files.")
    data = inflated(archive, member, where, FILE_MAX_BYTES)
    return Piece(source=where, title=name[:-3], body=decoded(data, where))


def split_by_heading(source: str, stem: str, text: str) -> list[Piece]:
    """One note per heading of the level that structures the file: the shallowest level
    used more than once (so a lone `# Title` above `## Sections` splits by sections). Text
    before the first such heading becomes a note named after the file. A `/` in a heading
    becomes `-`: a title names a file under /memories/<space>/."""
    lines = text.splitlines()
    headings = heading_lines(lines)
    if not headings:
        return [Piece(source=f"`{source}`", title=stem, body=text.strip())]
    levels = [level for _, level, _ in headings]
    repeated = [level for level in set(levels) if levels.count(level) > 1]
    split = min(repeated) if repeated else min(levels)
    cuts = [(index, title) for index, level, title in headings if level == split]
    pieces = []
    head = "\n".join(lines[: cuts[0][0]]).strip()
    if head:
        pieces.append(Piece(source=f"`{source}` (before the first heading)", title=stem, body=head))
    for number, (index, title) in enumerate(cuts):
        end = cuts[number + 1][0] if number + 1 < len(cuts) else len(lines)
        body = "\n".join(lines[index + 1 : end]).strip()
        where = f"`{source}` › heading `{title[:100]}` (line {index + 1})"
        pieces.append(Piece(source=where, title=title.replace("/", "-").replace("\\", "-"),
                            body=body))  # fmt: skip
    return pieces


def heading_lines(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of every ATX heading outside fenced code."""
    found = []
    fence: str | None = None
    for index, line in enumerate(lines):
        opened = FENCE.match(line)
        if opened:
            fence = None if fence == opened[1] else (fence or opened[1])
            continue
        match = HEADING.match(line) if fence is None else None
        if match:
            found.append((index, len(match[1]), match[2].strip()))
    return found


def titles_unique(pieces: list[Piece]) -> None:
    seen: dict[str, str] = {}
    for piece in pieces:
        if piece.title in seen:
            raise Refused(
                f"{piece.source}: the title {piece.title!r} is already taken by "
                f"{seen[piece.title]}; titles are unique in a space."
            )
        seen[piece.title] = piece.source


def zip_of(notes: Iterable[tuple[str, str]]) -> bytes:
    """A zip of `<title>.md` files, one per (title, body)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for title, body in notes:
            archive.writestr(f"{title}.md", body)
    return buffer.getvalue()
