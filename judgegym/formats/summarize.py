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


_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety"
_NUMBER_WORDS = {word: value for value, word in enumerate(_UNITS.split())} | {
    word: 20 + 10 * value for value, word in enumerate(_TENS.split())
}


def _count_pattern(name: str) -> str:
    units, tens = _UNITS.replace(" ", "|"), _TENS.replace(" ", "|")
    return (
        rf"(?P<{name}>\d{{1,3}}(?:,\d{{3}})*|(?:(?:a|one|two|three|four|five)[ -]hundred(?:[ -](?:and[ -])?)?)?"
        rf"(?:(?:{tens})(?:[ -](?:{units}))?|{units})?)"
    )


_LIMIT = re.compile(
    r"(?:\b(?:at most|no more than|not more than|no longer than|not exceeding|not to exceed|fewer than|less than|under|below|"
    r"up to|within|in|to|max(?:imum)?\.?|limit(?:ed)? (?:of|to))|[≤<]=?)\s*(?:(?:about|around|roughly|approximately|some)\s+)?"
    + _count_pattern("before")
    + r"[ -]words?\b|\b"
    + _count_pattern("after")
    + r"[ -]words?(?:\s*(?:or (?:fewer|less|under)|max(?:imum)?|tops|at most|limit)\b"
    + r"|[- ](?:limit|max(?:imum)?|summary|answer|reply|response)\b)",
    re.IGNORECASE,
)


def _count(text: str) -> int | None:
    text = text.casefold().replace(",", "")
    if text.isdigit():
        return int(text)
    total = 0
    for word in re.split(r"[ -]+", text):
        if word in ("hundred",):
            total = max(total, 1) * 100
        elif word in _NUMBER_WORDS:
            total += _NUMBER_WORDS[word]
        elif word == "a":
            total += 1
    return total or None


def word_limit_of(text: str) -> int | None:
    """The word limit `text` asks for, or None: the smallest number of words it names as a
    bound, in any of the ways English states one, before the number ("at most 100 words",
    "in under 80 words", "no more than sixty words", "≤ 60 words", "within 50 words") or after
    it ("50 words max", "70 words or fewer", "a 100-word summary"), in digits or words.

    A rule is right here: how English bounds a length is a small closed grammar, the same in
    every world, and a number of words stated without a bound ("the 1,200-word report",
    "[s3] Budget (412 words)") is not a limit. The env publishes its own limit as
    ``info["facts"]["word_limit"]`` (its `request` says "at most N words"); this reads the
    limit of any other request, e.g. a stored conversation or a user's own prompt."""
    counts = [_count(match.group("before") or match.group("after") or "") for match in _LIMIT.finditer(text)]
    counts = [c for c in counts if c]
    return min(counts) if counts else None


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
