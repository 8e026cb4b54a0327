"""Summarize-v0's text formats: the request (with its word limit), the section listing of
``list_sections`` and the section headers of ``read_section``."""

from __future__ import annotations

import re

WORD_LIMIT = re.compile(r"at most (\d+) words")
"""The word limit as the request states it; group 1 is the number."""

SECTION_ID = re.compile(r"^\[([^\]\s]+)\] ", re.MULTILINE)
"""The id opening a line of ``list_sections``, a ``read_section`` header or a section shown in
the prompt; group 1 is the id."""

SECTION_LINE = re.compile(r"^\[([^\]\s]+)\] (.+?) \(([\d,]+) words\)$", re.MULTILINE)
"""One line of ``list_sections``: ``[s3] Title (1,234 words)``; groups: id, title, words."""

PART_HEADER = re.compile(r"\[(?P<id>[^\]\n]+)\] [^\n]*?(?: \(part (?P<part>\d+) of (?P<of>\d+)\))?")
"""The header line of a ``read_section`` result: ``[s3] Title``, with `` (part 2 of 3)`` when
the section comes in parts (match it against the whole first line)."""

CONTINUED = re.compile(r"\n\n\[Part \d+ of \d+ follows[^\n]*\]$")
"""The note that ends a part of a section when another part follows."""


def request(label: str, title: str, word_limit: int) -> str:
    """The first line of the user turn: what to summarise, in at most `word_limit` words."""
    return f'Summarize the {label} "{title}" in at most {word_limit} words.'


def shown_section(section_id: str, title: str, text: str) -> str:
    """A section as the prompt shows it: its header line, a blank line, its text."""
    return f"[{section_id}] {title}\n\n{text}"


def word_limit_of(text: str) -> int | None:
    """The word limit `text` states (`request`'s wording), or None. A fallback for stored
    conversations: the env publishes the limit as ``info["facts"]["word_limit"]``."""
    match = WORD_LIMIT.search(text)
    return int(match.group(1)) if match else None


def section_line(section_id: str, title: str, words: int) -> str:
    """One line of ``list_sections``."""
    return f"[{section_id}] {title} ({words:,} words)"


def part_header(section_id: str, title: str, part: int, parts: int) -> str:
    """The header line of a ``read_section`` result (`part` of `parts`, from 1)."""
    header = f"[{section_id}] {title}"
    return f"{header} (part {part} of {parts})" if parts > 1 else header


def continued(section_id: str, part: int, parts: int) -> str:
    """The note after part `part` of `parts` saying how to read the next one."""
    return f'\n\n[Part {part + 1} of {parts} follows: read_section(section_id="{section_id}", part={part + 1})]'


__all__ = [
    "CONTINUED",
    "PART_HEADER",
    "SECTION_ID",
    "SECTION_LINE",
    "WORD_LIMIT",
    "continued",
    "part_header",
    "request",
    "section_line",
    "shown_section",
    "word_limit_of",
]
