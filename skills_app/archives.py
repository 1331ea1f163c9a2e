"""Reading a zip of skill folders, and writing skills out as one: nothing else.

The format is the Agent Skills one: a folder per skill holding a `SKILL.md` (YAML front matter
with `name` and `description`, then the markdown body) and any other files the skill refers
to, kept as text under their path in the folder. A folder may sit at any depth (a zip of a
`skills/` folder works); a file belongs to the nearest folder above it that holds a
`SKILL.md`; hidden files and macOS litter are ignored and reported.

Everything is read and checked in memory before anything is written (the caller writes all or
nothing), and every refusal names its file. The zip is read defensively, as memory imports
are: entry count and declared size bounded before anything is inflated; each member inflated
only up to its limit whatever its header claims; an implausible compression ratio refused;
no absolute path, `..`, backslash, drive letter, control character or symlink. The front
matter is read by PyYAML's safe loader with aliases refused, so a few hundred bytes of
anchors cannot expand into gigabytes.
"""

from __future__ import annotations

import io
import json
import posixpath
import stat
import zipfile
from dataclasses import dataclass, field
from typing import IO, Any

import yaml

from horsie_site.zips import Refused, bounds_check, inflated

UPLOAD_MAX_BYTES = 10_000_000
ZIP_MAX_FILES = 2_000
ZIP_MAX_TOTAL_BYTES = 30_000_000  # what the zip may inflate to, all members together
FILE_MAX_BYTES = 1_000_000  # one member inflated
SKILL_FILES_MAX_BYTES = 2_000_000  # one skill's other files together
SKILL_MAX_FILES = 200
FRONT_MATTER_MAX = 20_000
SKILL_FILE = "SKILL.md"
LITTER = ("__MACOSX",)


@dataclass(frozen=True, kw_only=True)
class SkillDraft:
    """One skill to be: where it came from (for errors), and what it holds."""

    source: str
    name: str
    description: str
    body: str
    meta: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Unpacked:
    skills: list[SkillDraft]
    ignored: list[str]


class NoAliasLoader(yaml.SafeLoader):
    """The safe loader, refusing anchors' aliases (the "billion laughs" expansion)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not accepted", self.peek_event().start_mark
            )
        return super().compose_node(parent, index)


# Reading -------------------------------------------------------------------------------


def unpacked(name: str, stream: IO[bytes], size: int) -> Unpacked:
    where = f"`{name[:100]}`"
    if size > UPLOAD_MAX_BYTES:
        raise Refused(f"{where} has {size} bytes; the limit is {UPLOAD_MAX_BYTES}.", 413)
    data = stream.read(UPLOAD_MAX_BYTES + 1)
    if len(data) > UPLOAD_MAX_BYTES:
        raise Refused(f"{where} is larger than {UPLOAD_MAX_BYTES} bytes.", 413)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        raise Refused(f"{where} is not a zip file that can be read.") from None
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        bounds_check(where, members, max_files=ZIP_MAX_FILES, max_total=ZIP_MAX_TOTAL_BYTES)
        texts, ignored = member_texts(archive, members)
    return Unpacked(skills=drafts_of(texts), ignored=ignored)


def member_texts(
    archive: zipfile.ZipFile, members: list[zipfile.ZipInfo]
) -> tuple[dict[str, str], list[str]]:
    """{path: text} of every member that is not litter; the litter's paths apart."""
    texts: dict[str, str] = {}
    ignored: list[str] = []
    for member in members:
        path = path_check(member)
        if is_litter(path):
            ignored.append(path)
            continue
        if path in texts:
            raise Refused(f"`{path}` is in the zip twice.")
        texts[path] = member_text(archive, member, path)
    return texts, ignored


def path_check(member: zipfile.ZipInfo) -> str:
    """The member's path, when it is a plain relative path inside the zip."""
    raw = member.filename
    where = f"`{raw[:200]}`"
    if any(ord(char) < 32 or ord(char) == 127 for char in raw):
        raise Refused(f"{where}: the path holds a control character.")
    if "\\" in raw or raw.startswith("/") or ":" in raw:
        raise Refused(
            f"{where}: absolute paths, backslashes and drive letters are refused (path trick)."
        )
    parts = raw.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise Refused(f"{where}: empty, `.` or `..` path parts are refused (path trick).")
    if stat.S_ISLNK(member.external_attr >> 16):
        raise Refused(f"{where} is a symbolic link: refused (path trick).")
    return raw


def is_litter(path: str) -> bool:
    parts = path.split("/")
    return parts[0] in LITTER or any(part.startswith(".") for part in parts)


def member_text(archive: zipfile.ZipFile, member: zipfile.ZipInfo, path: str) -> str:
    where = f"`{path[:200]}`"
    if member.file_size > FILE_MAX_BYTES:
        raise Refused(f"{where} has {member.file_size} bytes; the limit is {FILE_MAX_BYTES}.", 413)
    data = inflated(archive, member, where, FILE_MAX_BYTES)
    if len(data) > FILE_MAX_BYTES:
        raise Refused(f"{where} inflates past {FILE_MAX_BYTES} bytes: refused as a zip bomb.", 413)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Refused(f"{where} is not UTF-8 text: a skill keeps text files only.") from None


def drafts_of(texts: dict[str, str]) -> list[SkillDraft]:
    folders = sorted(
        (posixpath.dirname(path) for path in texts if posixpath.basename(path) == SKILL_FILE),
        key=lambda folder: (-folder.count("/"), folder),
    )  # deepest first: a file belongs to the nearest skill folder above it
    if not folders:
        raise Refused(f"The zip holds no `{SKILL_FILE}`: send a zip of folders, each with one.")
    files: dict[str, dict[str, str]] = {folder: {} for folder in folders}
    for path, text in texts.items():
        if posixpath.basename(path) == SKILL_FILE and posixpath.dirname(path) in files:
            continue
        owner = next((f for f in folders if inside(path, f)), None)
        if owner is None:
            raise Refused(f"`{path}` is in no skill folder (no `{SKILL_FILE}` beside or above it).")
        files[owner][path[len(owner) + 1 :] if owner else path] = text
    drafts = [skill_draft(folder, texts[joined(folder)], files[folder]) for folder in folders]
    names_unique(drafts)
    return sorted(drafts, key=lambda draft: draft.name)


def inside(path: str, folder: str) -> bool:
    return not folder or path.startswith(folder + "/")


def joined(folder: str) -> str:
    return f"{folder}/{SKILL_FILE}" if folder else SKILL_FILE


def skill_draft(folder: str, text: str, files: dict[str, str]) -> SkillDraft:
    source = f"`{joined(folder)[:200]}`"
    front, body = front_matter(source, text)
    name, description = front.pop("name", None), front.pop("description", None)
    if not isinstance(name, str) or not name.strip():
        raise Refused(f"{source}: the front matter has no `name`.")
    if not isinstance(description, str) or not description.strip():
        raise Refused(f"{source}: the front matter has no `description`.")
    files_check(source, files)
    return SkillDraft(source=source, name=name.strip(), description=" ".join(description.split()),
                      body=body, meta=as_json(source, front), files=files)  # fmt: skip


def front_matter(source: str, text: str) -> tuple[dict[str, Any], str]:
    """The YAML between the opening `---` line and the next `---` line, and the body after."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r ") != "---":
        raise Refused(f"{source} has no front matter: it must start with a `---` line.")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip("\r ") == "---"), None)
    if end is None:
        raise Refused(f"{source}: the front matter is not closed by a `---` line.")
    header = "\n".join(lines[1:end])
    if len(header) > FRONT_MATTER_MAX:
        raise Refused(f"{source}: the front matter is longer than {FRONT_MATTER_MAX} characters.")
    try:
        front = yaml.load(header, Loader=NoAliasLoader)  # noqa: S506 the safe loader, no aliases
    except yaml.YAMLError as error:
        problem = str(error).replace("\n", " ")[:300]
        raise Refused(f"{source}: the front matter is not valid YAML ({problem}).") from None
    if not isinstance(front, dict):
        raise Refused(f"{source}: the front matter must be a mapping of fields.")
    return front, "\n".join(lines[end + 1 :]).lstrip("\r\n")


def as_json(source: str, front: dict[Any, Any]) -> dict[str, Any]:
    """The other front-matter fields as JSON (dates become text)."""
    try:
        return dict(json.loads(json.dumps({str(k): v for k, v in front.items()}, default=str)))
    except (ValueError, TypeError):
        raise Refused(f"{source}: the front matter holds values that cannot be kept.") from None


def files_check(source: str, files: dict[str, str]) -> None:
    if len(files) > SKILL_MAX_FILES:
        raise Refused(
            f"{source}: its folder holds {len(files)} files; the limit is {SKILL_MAX_FILES}.", 413
        )
    total = sum(len(text.encode()) for text in files.values())
    if total > SKILL_FILES_MAX_BYTES:
        raise Refused(
            f"{source}: its folder's files hold {total} bytes; the limit is "
            f"{SKILL_FILES_MAX_BYTES}.",
            413,
        )


def names_unique(drafts: list[SkillDraft]) -> None:
    seen: dict[str, str] = {}
    for draft in drafts:
        if draft.name in seen:
            raise Refused(
                f"{draft.source}: the name {draft.name!r} is already taken by {seen[draft.name]}."
            )
        seen[draft.name] = draft.source


# Writing -------------------------------------------------------------------------------


def skill_md(*, name: str, description: str, meta: dict[str, Any], body: str) -> str:
    front = yaml.safe_dump(
        {"name": name, "description": description, **meta},
        sort_keys=False, allow_unicode=True, width=1_000_000,
    )  # fmt: skip
    return f"---\n{front}---\n\n{body}"


def zip_of(skills: list[dict[str, Any]]) -> bytes:
    """A zip of `<name>/SKILL.md` folders with their files (what `unpacked` takes back)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for skill in skills:
            name = skill["name"]
            archive.writestr(f"{name}/{SKILL_FILE}", skill_md(
                name=name, description=skill["description"], meta=skill["meta"],
                body=skill["body"],
            ))  # fmt: skip
            for path, text in sorted(skill["files"].items()):
                archive.writestr(f"{name}/{path}", text)
    return buffer.getvalue()
