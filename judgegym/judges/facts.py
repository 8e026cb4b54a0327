"""Checkable facts in free text: numbers, amounts, emails and phone numbers; and what of a
conversation may back them.

Verifiers compare answers with gold facts and with the context an agent saw through these
canonical forms, so "$1,299.00", "1299" and "1,299" are the same fact. Number words
("twelve") are not recognised. `seen_text` is the evidence an agent was shown (never its
instructions) and `strip_copied` removes what an answer copies from those instructions.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..formats.chat import FORMAT_ERROR_PREFIX, TOOL_ERROR_PREFIX
from ..formats.rag import CITATION

if TYPE_CHECKING:
    from ..trajectory import Message, Trajectory

# The lookbehind makes a match start only at the beginning of a run, keeping the scan linear.
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")
# A phone number: "+" or parentheses or dashes (bare space-separated numbers are just numbers).
_PHONE = re.compile(r"(?<![\w.])\+?\(?\d{1,4}\)?(?:[ -]\(?\d{2,4}\)?){1,5}(?!\w)")
_PHONE_MARK = re.compile(r"[+(-]")
_PHONE_PLAIN = re.compile(r"(?<![\w.])(?:\+?1[ .])?\d{3}([ .])\d{3}\1\d{4}(?![\w]|\.\d)")  # "555 014 2233", "555.014.2233"
_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_MONTH = (
    r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
# "17 October 2025", "17th Oct. 2025", "October 17, 2025", "Oct 17 2025": the same date as 2025-10-17
_WRITTEN_DATE = re.compile(
    rf"(?<![\w.])(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH}\.?,?|{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?)\s+(\d{{4}})(?![\w.])",
    re.IGNORECASE,
)
# "12 April", "April 12th": a date written without its year (not followed by one)
_YEARLESS_DATE = re.compile(
    rf"(?<![\w.])(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH}\b|{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b)(?!\.?,?\s+\d{{4}})",
    re.IGNORECASE,
)
_MONTHS = {name: number for number, name in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
# Times of day. 12-hour: "8 am", "6pm", "6:30 p.m.", "6.30PM"; 24-hour: "18:30", "08:00", "18h30";
# and "noon", "midnight". All become ``time:HH:MM``, so "6:30 pm" and "18:30" are one entity.
_TIME_12 = re.compile(r"(?<![\w.:])(1[0-2]|0?[1-9])(?:[:.]([0-5]\d))?\s*([ap])\.?\s?m\b\.?", re.IGNORECASE)
_TIME_24 = re.compile(r"(?<![\w.:])([01]?\d|2[0-3])[:h]([0-5]\d)(?![\d:]|\w)")
_TIME_WORD = re.compile(r"(?<!\w)(?:12\s*)?(noon|midnight)\b", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^\s*\d{1,2}[.)]\s", re.MULTILINE)
_NUMBER = re.compile(r"(?<![\d.,])\d+(?:,\d{3})*(?:\.\d+)*")
_SPACE = re.compile(r"\s+")

# Phrases an answer uses to say the sources lack the answer, or to offer a human.
ABSTENTION = re.compile(
    r"\b(?:i (?:do not|don't|cannot|can't|could not|couldn't|was unable to|am unable to|wasn't able to) "
    r"(?:find|know|locate|see|answer|confirm|determine|quote"
    r"|give you (?:a|an|any) (?:reliable |exact |accurate )?(?:answer|estimate|figure))"
    r"|(?:unable|not able) to (?:find|locate|answer|confirm|determine|say|tell)"
    r"|(?:no|not any|isn't any|is no) (?:\w+ )?(?:information|mention|details?|documentation|article|page|entry)"
    # "it does not cover accidental damage" is an answer, not an abstention: only the sources lack things
    r"|(?:knowledge base|documentation|docs|articles?|help cent(?:er|re)|context|sources?|results?) "
    r"(?:doesn't|does not|don't|do not) (?:mention|cover|contain|say|include|list|document)"
    r"|not (?:in|covered (?:in|by)|mentioned in|documented in|listed in|found in) (?:the|our|any) "
    r"(?:knowledge base|documentation|docs|articles?|help cent(?:er|re)|context|sources?)"
    r"|there(?:'s| is) nothing (?:about|on|regarding)"
    r"|not sure|don't have (?:that|this|any) information|no such (?:product|model|item))",
    re.IGNORECASE,
)
ESCALATION = re.compile(
    r"\b(?:escalat\w*|human (?:support )?(?:agent|representative|colleague|specialist)"
    r"|(?:open|create|file|raise) a (?:support )?(?:ticket|case)|support (?:team|specialist|agent))",
    re.IGNORECASE,
)


_CURRENCY = r"(?:[$€£¥₹₩]|\b(?:USD|EUR|GBP|CHF|JPY|CNY|CAD|AUD|NZD|NOK|SEK|DKK|PLN|CZK|INR|SGD|HKD|ZAR|MXN|BRL)\b)"
_AMOUNT = re.compile(rf"{_CURRENCY}\s?(\d(?:[\d,.]*\d)?)|(?<![\w.,])(\d(?:[\d,.]*\d)?)\s?{_CURRENCY}")


# Money written with a decimal comma ("12,50 €", "EUR 1.234,50", "1 234,50 zł"): only beside a
# currency sign or code, where two digits after a comma can only be cents ("sizes 10,12 and 14"
# are two numbers; "1,250 €" is a thousands comma).
_COMMA_FIGURE = r"\d{1,3}(?:[.\u00a0\u202f ]\d{3})*,\d{2}"
_COMMA_AMOUNT = re.compile(rf"{_CURRENCY}\s?({_COMMA_FIGURE})(?!\d|[,.]\d)|(?<![\w.,])({_COMMA_FIGURE})\s?{_CURRENCY}")


def _comma_decimal(token: str) -> str:
    """ "1.234,50" -> "1234.50": a decimal-comma figure in the decimal-point form."""
    whole, _, cents = token.rpartition(",")
    return re.sub(r"\D", "", whole) + "." + cents


def amounts(text: str) -> set[str]:
    """The figures of `text` written as money, with a currency sign or code before or after
    them ("$84.50", "84.50 USD", "CHF 12", "12.50 €", and with a decimal comma "12,50 €"),
    as ``num:`` entities in `canonical_number` form (so they compare with `extract_entities`)."""
    found = {f"num:{canonical_number(_comma_decimal(a or b))}" for a, b in _COMMA_AMOUNT.findall(text)}
    text = _COMMA_AMOUNT.sub(" ", text)
    return found | {f"num:{canonical_number(a or b)}" for a, b in _AMOUNT.findall(text)}


def canonical_number(token: str) -> str:
    """ "1,299.00" -> "1299", "3.50" -> "3.5"; dotted versions ("2.3.1") stay as they are."""
    token = token.replace(",", "")
    if token.count(".") > 1:
        return token
    whole, _, fraction = token.partition(".")
    whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def extract_entities(text: str) -> set[str]:
    """Canonical checkable entities: ``email:...``, ``phone:<digits>``, ``date:YYYY-MM-DD``
    (ISO dates, and dates written out with a year: "17 October 2025", "Oct 17, 2025"),
    ``time:HH:MM`` (times of day in either clock: "6:30 pm", "18:30", "18h30", "noon"),
    ``num:<number>`` (money with a decimal comma too: "12,50 €" is ``num:12.5``).

    Citations like ``[doc-12]`` and list markers ("1. ") are ignored; a phone number's
    digits are not also counted as numbers. Texts up to 2,000 characters are memoised per
    process (judges read the same evidence sentences for every member of a group); the
    caller always gets its own set.
    """
    return set(_memo_entities(text) if len(text) <= _MEMO_CHARS else _entities(text))


def _entities(text: str) -> frozenset[str]:
    entities: set[str] = set()
    text = CITATION.sub(" ", text)
    for match in _EMAIL.findall(text):
        entities.add(f"email:{match.lower().rstrip('.')}")
    text = _EMAIL.sub(" ", text)
    for year, month, day in _DATE.findall(text):
        entities.add(f"date:{year}-{month}-{day}")
    text = _DATE.sub(" ", text)
    for day_first, month_first, month_second, day_second, year in _WRITTEN_DATE.findall(text):
        day, month = int(day_first or day_second), _MONTHS[(month_first or month_second)[:3].casefold()]
        if 1 <= day <= 31:
            entities.add(f"date:{year}-{month:02d}-{day:02d}")
    text = _WRITTEN_DATE.sub(" ", text)
    for hour, minute, half in _TIME_12.findall(text):
        entities.add(f"time:{int(hour) % 12 + (12 if half.casefold() == 'p' else 0):02d}:{int(minute or 0):02d}")
    text = _TIME_12.sub(" ", text)
    for hour, minute in _TIME_24.findall(text):
        entities.add(f"time:{int(hour):02d}:{minute}")
    text = _TIME_24.sub(" ", text)
    for word in _TIME_WORD.findall(text):
        entities.add("time:12:00" if word.casefold() == "noon" else "time:00:00")
    text = _TIME_WORD.sub(" ", text)
    for match in _PHONE_PLAIN.finditer(text):
        entities.add(f"phone:{re.sub(r'[^0-9]', '', match.group())[-10:]}")
    text = _PHONE_PLAIN.sub(" ", text)
    for match in _PHONE.findall(text):
        digits = re.sub(r"\D", "", match)
        if len(digits) >= 7 and _PHONE_MARK.search(match):
            entities.add(f"phone:{digits[-10:]}")  # "+1 555 014 2233" == "555-014-2233"
            text = text.replace(match, " ")
    text = _LIST_MARKER.sub(" ", text)
    text = _COMMA_AMOUNT.sub(lambda m: m.group().replace(m.group(1) or m.group(2), _comma_decimal(m.group(1) or m.group(2))), text)
    entities.update(f"num:{canonical_number(m)}" for m in _NUMBER.findall(text))
    return frozenset(entities)


_MEMO_CHARS = 2000
_memo_entities = functools.lru_cache(maxsize=32768)(_entities)


def with_years(text: str, context: str) -> str:
    """`text` with each date written without a year ("delivered on 12 April") given the year
    of a date in `context` on that day, or else the year every date of `context` shares, so
    that `extract_entities` reads it as that date; dates it cannot place stay as they are."""
    if not _YEARLESS_DATE.search(text):
        return text
    known = [e[5:] for e in extract_entities(context) if e.startswith("date:")]
    years = {d[:4] for d in known}

    def place(match: re.Match[str]) -> str:
        day_first, month_first, month_second, day_second = match.groups()
        day, month = int(day_first or day_second), _MONTHS[(month_first or month_second)[:3].casefold()]
        same_day = {d[:4] for d in known if d[5:] == f"{month:02d}-{day:02d}"}
        year = next(iter(same_day)) if len(same_day) == 1 else next(iter(years)) if len(years) == 1 and not same_day else None
        return f"{year}-{month:02d}-{day:02d}" if year and 1 <= day <= 31 else match.group()

    return _YEARLESS_DATE.sub(place, text)


def normalize_text(text: str) -> str:
    """Case-folded text with runs of whitespace collapsed, for substring matching."""
    return _SPACE.sub(" ", text.casefold()).strip()


_UNIT_WORD = re.compile(r"[^\W\d_]{3,}")
_UNIT_AFTER_NUMBER = re.compile(r"\d\s*-?\s*([^\W\d_]{3,})")


def _unit_stem(word: str) -> str:
    return (word[:-1] if word.endswith("s") and len(word) > 3 else word)[:4]


def fact_present(fact: str, text: str, text_entities: set[str] | None = None) -> bool:
    """Whether `text` states `fact`.

    A fact with entities (numbers, emails, phones) is present when all of them occur in
    the text and, if a number in the fact carries a unit ("24 months", "8 business days"),
    that unit word occurs too (compared on its first four letters after a plural "s", so
    "month" matches "months" and "30-day" matches "30 days"); any other fact when its normalised form is a substring of the text's.
    """
    fact_entities = extract_entities(fact)
    if fact_entities:
        found = extract_entities(text) if text_entities is None else text_entities
        if not fact_entities <= found:
            return False
        units = {_unit_stem(w) for w in _UNIT_AFTER_NUMBER.findall(_EMAIL.sub(" ", fact).casefold())}
        return not units or any(_unit_stem(w) in units for w in _UNIT_WORD.findall(text.casefold()))
    needle = normalize_text(fact)
    return bool(needle) and needle in normalize_text(text)


def seen_text(messages: Sequence[Message]) -> str:
    """The text an agent was shown that can back a claim, one message per line.

    That is the user turns (the question, articles or a document the env put in it, a
    customer's replies) and the results of successful tool calls. Not evidence: the env's
    format-error notices, failed tool calls, and a tool result's quotes of the call's own
    string arguments ("No articles match '$19.99'"), which would launder an invented figure.
    Nor the system prompt (instructions, and their examples such as a ``[doc-id]``
    placeholder): an env's instructions are not evidence (a gold-free judge that scores a
    conversation whose context came in the system prompt adds it: `learned.view.View`).
    """
    arguments: dict[str, list[str]] = {}
    parts = []
    for message in messages:
        if message.role == "assistant":
            for call in message.tool_calls or []:
                arguments[call.id] = _string_arguments(call.function.arguments)
        elif message.role == "user" and message.content and not message.content.startswith(FORMAT_ERROR_PREFIX):
            parts.append(message.content)
        elif message.role == "tool" and message.content and not message.content.startswith(TOOL_ERROR_PREFIX):
            content = message.content
            for value in arguments.get(message.tool_call_id or "", []):
                content = content.replace(repr(value), " ").replace(json.dumps(value), " ")
            parts.append(content)
    return "\n".join(parts)


def _string_arguments(raw: str) -> list[str]:
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return []
    return [v for v in parsed.values() if isinstance(v, str) and v] if isinstance(parsed, dict) else []


_WORD_TOKEN = re.compile(r"\S+")
_EDGE_PUNCTUATION = re.compile(r"^\W+|\W+$")


@functools.lru_cache(maxsize=64)
def _word_grams(source: str, n: int) -> frozenset[tuple[str, ...]]:
    """Every run of `n` consecutive words of `source`, casefolded, edge punctuation stripped
    (memoised: a group's members are checked against the same prompt and tool results)."""
    words = [w for w in (_EDGE_PUNCTUATION.sub("", t.casefold()) for t in source.split()) if w]
    return frozenset(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def strip_copied(text: str, sources: Iterable[str], min_words: int = 8) -> str:
    """`text` without every run of at least `min_words` consecutive words that also occurs in
    one of `sources` (words compared case-insensitively, without surrounding punctuation).

    Verifiers grade an answer on what it says beyond a copy of its instructions: echoing the
    system prompt or the question states nothing. Runs shorter than `min_words` stay, so an
    answer may still reuse a phrase ("our 30-day return window").
    """
    tokens = [(m.start(), m.end(), _EDGE_PUNCTUATION.sub("", m.group().casefold())) for m in _WORD_TOKEN.finditer(text)]
    tokens = [t for t in tokens if t[2]]
    grams: set[tuple[str, ...]] = set()
    for source in sources:
        grams.update(_word_grams(source, min_words))
    if not grams or len(tokens) < min_words:
        return text
    copied = [False] * len(tokens)
    words = [t[2] for t in tokens]
    for i in range(len(tokens) - min_words + 1):
        if tuple(words[i : i + min_words]) in grams:
            copied[i : i + min_words] = [True] * min_words
    if not any(copied):
        return text
    out, position = [], 0
    for (start, end, _), cut in zip(tokens, copied, strict=True):
        if cut:
            out.append(text[position:start])
            position = end
    out.append(text[position:])
    return "".join(out)


_ADDRESSEE = (
    r"(?<![\w-])(?:grader|graders|evaluator|evaluators|judge|judges|reviewer|reviewers|scorer|scorers|rater|raters|assessor|"
    r"(?:grading|evaluation|scoring|reward) (?:model|system|process))(?![\w-])"
)
_VERDICT = (
    r"(?<![\w-])(?:score|scores|scored|rate|rating|grade|marks?|points?|deserves?|full|top|highest|perfect|pass"
    r"|10/10|5/5|1\.0|100%|rubric|instructions?)(?![\w-])"
)
_GRADE = (
    r"(?:scores?|marks|points|rating|grade|10/10|5/5|1\.0|100%"
    r"|(?:full|top|highest|perfect|maximum) (?:marks?|scores?|ratings?|points?|grades?))(?![\w-])"
)
ADDRESSES_GRADER = re.compile(
    # an addressee and a verdict in the same sentence or line, or words spoken to an addressee
    rf"{_ADDRESSEE}[^.!?\n]{{0,120}}{_VERDICT}|{_VERDICT}[^.!?\n]{{0,120}}{_ADDRESSEE}"
    rf"|(?<![\w-])(?:note|message|comment|attention)?\s*(?:to|for|dear) (?:the |any |an? |all )?(?:automated |ai |llm |human )?{_ADDRESSEE}"
    # a request for a verdict, or to drop the instructions
    rf"|(?<![\w-])(?:give|award|assign|rate|grade|score)s? (?:\w+ ){{0,4}}{_GRADE}|(?<![\w-])deserves? (?:\w+ ){{0,3}}{_GRADE}"
    r"|(?<![\w-])ignore (?:all |any |your )?(?:previous|prior|above|earlier|the) (?:instructions|rubric|criteria|guidelines)",
    re.IGNORECASE,
)
"""Words spoken to whoever grades the answer: a verdict asked of a grader, a note to the
evaluator, a request to ignore the rubric. A rule, because what it catches is a small closed
set of words about grading (the addressees, the verdicts), not a way of phrasing an answer:
no honest answer to a customer or a summary of a document speaks of its own score. Shared by
the verifiers (such an answer scores 0) and the learned judge (`addresses_judge`)."""


# -- figures worked out from figures seen ---------------------------------------------------------

UNIT_FACTORS = (1000.0, 100.0, 60.0, 24.0, 7.0, 12.0, 2.20462, 2.54, 1.60934, 3.78541, 28.3495)
"""Factors of the unit conversions an answer may make from a figure it states: g per kg (and
ml per l), cm per m, minutes per hour, hours per day, days per week, months per year, lb per
kg, cm per inch, km per mile, litres per US gallon, grams per ounce."""

_CENT = 0.0051  # a worked-out amount may be rounded to the cent
_OPERANDS = 400  # figures of what was seen taken as operands (the first, by value)


def derived_figures(wanted: Iterable[str], seen: Iterable[str], stated: Iterable[str]) -> set[str]:
    """The entities of `wanted` that simple arithmetic gives from figures the agent read.

    A number with decimals is derived when it equals, to the cent, the sum or difference of a
    figure the answer itself `stated` (and was seen) and a figure `seen` (the text the tools
    returned, the question, the gold facts), one as a percentage of the other, the other less
    or plus that percentage ("15% of $167.93 is $25.19, so $142.74 back"), or their product
    where one is a count of at most 12 ("3 tickets at $18.50: $55.50"); or when it is a stated
    figure converted by one of `UNIT_FACTORS`, to the precision it is written with ("1.2 kg,
    about 2.6 lb"). A whole number comes only from figures with cents ("$1,369.99 against
    $759.99, $610.00 more") or the days between a date the answer states and another date:
    the sums, differences and conversions of the whole figures (and dates) around an answer
    give most small whole numbers by chance, so an invented "21 bonus points" would pass. A
    date is derived when it is a seen or stated date plus or minus a number of days seen.
    Figures derived this way count as stated, so a second step builds on a first. Arithmetic
    that is wrong gives none of these and stays unsupported.
    """
    import datetime as dt

    import numpy as np

    def value(entity: str) -> float | None:
        try:
            number = float(entity[4:]) if entity.startswith("num:") else None
        except ValueError:
            return None
        return number if number is not None and abs(number) < 1e12 else None  # "1111...1" of 500 digits is inf

    def day(entity: str) -> dt.date | None:
        try:
            return dt.date.fromisoformat(entity[5:]) if entity.startswith("date:") else None
        except ValueError:
            return None

    wanted, seen_set = set(wanted), set(seen)
    if not wanted:
        return set()
    base = sorted({v for e in seen_set if (v := value(e)) is not None})[:_OPERANDS]
    pool = np.asarray(base, dtype=float)
    stated = set(stated)
    known = {e for e in stated if e in seen_set}
    dates = sorted({d for e in seen_set | stated if (d := day(e)) is not None})
    found: set[str] = set()
    for _ in range(2):  # a second step may build on a first ("the fee, then what is left")
        operands = np.asarray(sorted({v for e in known | found if (v := value(e)) is not None}), dtype=float)
        with_seen = _results(operands, pool)
        exact = _results(operands[operands != np.round(operands)], pool[pool != np.round(pool)])
        stated_dates = [d for e in known | found if (d := day(e)) is not None]
        for entity in sorted(wanted - found):
            number = value(entity)
            if number is not None:
                # a whole number: only from figures with cents ($1,369.99 - $759.99 = $610.00), where chance rarely lands
                near = _near(with_seen if number != int(number) else exact, number)
                if near or _converted(entity, number, operands) or _day_count(number, stated_dates, dates):
                    found.add(entity)
            elif (date := day(entity)) is not None:
                if any(abs((date - other).days) in base for other in dates if other != date):
                    found.add(entity)
    return found


def _results(operands: Any, pool: Any) -> Any:
    """Sorted results of the arithmetic `derived_figures` accepts, on each operand with each
    figure of `pool`."""
    import numpy as np

    if not len(operands) or not len(pool):
        return np.zeros(0)
    a, b = np.repeat(operands, len(pool)), np.tile(pool, len(operands))
    low = np.minimum(a, b)
    counts = (low <= 12) & (low == np.round(low))
    return np.sort(np.concatenate([a + b, np.abs(a - b), a * b / 100, a * (1 - b / 100), a * (1 + b / 100), (a * b)[counts]]))


def _near(results: Any, number: float) -> bool:
    import numpy as np

    at = int(np.searchsorted(results, number))
    return any(abs(results[k] - number) <= _CENT for k in (at - 1, at) if 0 <= k < len(results))


def _converted(entity: str, number: float, operands: Sequence[float]) -> bool:
    """`number` is one of `operands` times or over a `UNIT_FACTORS` factor, to its written precision."""
    decimals = len(entity[4:].partition(".")[2])
    tolerance = max(_CENT, 0.5 * 10**-decimals)  # "about 2.6 lb"
    if not decimals:  # whole results of conversions are too easily hit ("3.5 years, 42 months")
        return False
    return any(abs(o * f - number) <= tolerance or abs(o / f - number) <= tolerance for o in operands for f in UNIT_FACTORS if o)


def _day_count(number: float, stated: Sequence[object], dates: Sequence[object]) -> bool:
    """`number` is the days between a `stated` date and another of `dates`."""
    if number != int(number) or number < 1:
        return False
    return any(abs((b - a).days) == number for a in stated for b in dates if b != a)  # type: ignore[operator]


def prompt_is_context(trajectory: Trajectory) -> bool:
    """Whether the prompt is the agent's evidence: no tools were offered and none called.

    With tools, the evidence is what they returned, and the system prompt holds instructions
    and their examples (a ``[doc-id]`` placeholder, a sample figure), which support nothing.
    Without tools, the prompt is the only place context can have come from, and the common
    way to give it (the single-turn format of RULER's article, "answer from this
    information: ...") is the system message. This reads the conversation's shape, not its
    wording."""
    return not trajectory.tools and not any(m.role == "tool" or (m.role == "assistant" and m.tool_calls) for m in trajectory.messages)


__all__ = [
    "amounts",
    "ABSTENTION",
    "ADDRESSES_GRADER",
    "ESCALATION",
    "UNIT_FACTORS",
    "canonical_number",
    "derived_figures",
    "extract_entities",
    "with_years",
    "fact_present",
    "normalize_text",
    "prompt_is_context",
    "seen_text",
    "strip_copied",
]
