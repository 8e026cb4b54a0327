"""Section features (Summarize-v0 and any document read in sections): how much was read and how
many sections the summary covers."""

from __future__ import annotations

from ...formats.summarize import SECTION_LINE
from .text import CONTENT_WORD, sentence_anchors
from .view import View


def section_features(view: View, answer: str) -> dict[str, float]:
    listing = "\n".join(c.result for c in view.calls if c.ok and c.name == "list_sections")
    sections = {section_id: title for section_id, title, _ in SECTION_LINE.findall(listing)}
    read = {str(c.arguments.get("section_id", "")).strip("[] ").casefold() for c in view.calls if c.ok and c.name == "read_section"}
    titles = {w.casefold() for title in sections.values() for w in CONTENT_WORD.findall(title)}
    answer_words = [w.casefold() for w in CONTENT_WORD.findall(answer)]
    return {
        "read_share": len(read & {s.casefold() for s in sections}) / len(sections) if sections else float(bool(read)),
        "title_share": sum(w in titles for w in answer_words) / len(answer_words) if answer_words and titles else 0.0,
        "sections_covered": _sections_covered(view, answer, {s.casefold() for s in sections}),
    }


def _sections_covered(view: View, answer: str, listed: set[str]) -> float:
    """Share of the document's sections (those `listed` and those read) that the answer draws
    on: it repeats a figure or a name of a section read, or two words that only that section
    uses. A summary of one section, or of the headings, covers few, and so does one that
    read only the first of the sections listed; 0 when no section was read."""
    texts: dict[str, str] = {}
    for call in view.calls:
        if call.ok and call.name == "read_section":
            key = str(call.arguments.get("section_id", "")).strip("[] ").casefold()
            texts[key] = texts.get(key, "") + "\n" + call.result.partition("\n\n")[2]
    if not texts:
        return 0.0
    words = {key: {w.casefold() for w in CONTENT_WORD.findall(text)} for key, text in texts.items()}
    answer_words = {w.casefold() for w in CONTENT_WORD.findall(answer)}
    answer_anchors = sentence_anchors(answer)
    covered = 0
    for key, text in texts.items():
        others = set().union(*(w for k, w in words.items() if k != key))
        covered += bool(sentence_anchors(text) & answer_anchors) or len((words[key] - others) & answer_words) >= 2
    return covered / len(listed | texts.keys())
