"""The machinery that writes one generated Summarize-v0 document: fresh figures, a cast of people,
and the assembly of key, distractor and filler sentences into sections of paragraphs.

Figures are drawn so that a key fact's value (and each distractor's) is the only place its
canonical entity (`judgegym.judges.facts.extract_entities`) occurs in the document: a summary
that states the number states that fact. The document kinds themselves live in `documents.py`.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import re
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ...judges.facts import canonical_number, extract_entities
from .names import FIRST_NAMES, SURNAMES
from .scenario import KeyFact, Section

MAX_SECTION_WORDS = 560
"""Generated sections stay under this many words (about 3,700 characters), so one
`read_section` call returns a whole section at the default tool-output limit."""
MAX_SECTION_CHARS = 3700
"""Generated sections stay under this many characters (the default output limit is 4,000)."""
LEAD_SHARE = 0.5
"""Chance that a section opens with its key sentence (else with a topic sentence)."""


def split_pool(pool: Sequence[str], split: str) -> tuple[str, ...]:
    """The part of a name pool a split draws from: every third item for "test", the rest for
    "train", so the two splits never share a name."""
    return tuple(item for i, item in enumerate(pool) if (i % 3 == 2) == (split == "test"))


@dataclass(frozen=True)
class Person:
    """Someone in the document: a unique first name and surname, and a job title."""

    first: str
    last: str
    role: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass(frozen=True)
class SectionSpec:
    """A kind of section: title variants, topic sentences that may open it, and its filler."""

    titles: tuple[str, ...]
    intros: tuple[str, ...]
    bank: tuple[str, ...]
    order: int
    chronological: bool = False  # sentences "At HH:MM, ..." are put in time order
    weight: float = 1.0  # relative length (attendance lists and closing notes are short)


@dataclass
class Line:
    """One sentence to place in a section: a template and the values for its fields."""

    section: str
    template: str
    fields: dict[str, str] = field(default_factory=dict)
    lead: bool = False  # a key sentence, which may open its section


@dataclass
class Fact:
    """A key fact while the document is being written (becomes a `KeyFact`)."""

    description: str
    value: str
    subject: list[str]
    statement: str
    section: str
    distractors: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)


# -- figures ----------------------------------------------------------------------------------


def _num(text: str) -> str:
    return f"num:{canonical_number(text)}"


def money_m(tenths: int) -> tuple[str, str]:
    """$4.2 million (from 42)."""
    text = f"{tenths // 10}.{tenths % 10}"
    return f"${text} million", _num(text)


def money(amount: int) -> tuple[str, str]:
    return f"${amount:,}", _num(str(amount))


def percent(tenths: int) -> tuple[str, str]:
    text = f"{tenths // 10}.{tenths % 10}"
    return f"{text}%", _num(text)


def count(n: int, unit: str = "") -> tuple[str, str]:
    return (f"{n:,} {unit}" if unit else f"{n:,}"), _num(str(n))


def date(day: dt.date) -> tuple[str, str]:
    iso = day.isoformat()
    return iso, f"date:{iso}"


class Draft:
    """The state of one document being written: its random stream, the entities already taken,
    its cast and the things it has named.

    Key values and distractors are *reserved*: drawn so that their entity was never used
    before, and never used again by filler. Call every `reserve*` before the first `fill`."""

    def __init__(self, rng: random.Random, split: str, base_date: dt.date, constants: dict[str, str], taken: Iterable[str] = ()):
        self.rng = rng
        self.split = split
        self.base_date = base_date  # filler dates fall within 200 days of it
        self.constants = dict(constants)
        self.reserved: set[str] = set(taken)
        self.people: list[Person] = []
        self.quiet: set[str] = set()  # people named only where they are a distractor
        self._firsts = list(split_pool(FIRST_NAMES, split))
        self._lasts = list(split_pool(SURNAMES, split))
        rng.shuffle(self._firsts)
        rng.shuffle(self._lasts)
        self._drawn: dict[str, list[str]] = {}
        self._lists: dict[str, list[str]] = {}
        self._makers = self._filler_makers()
        self.figures: set[str] = set()
        """Canonical entities of every figure `fill` wrote (`extract_entities` of the text)."""

    # -- reserved values (key facts and distractors) -------------------------------------------

    def reserve(self, make: Callable[[], tuple[str, str]]) -> str:
        """A value whose entity nothing else in the document has; `make` draws a candidate."""
        for _ in range(500):
            text, entity = make()
            if entity not in self.reserved:
                self.reserved.add(entity)
                return text
        raise RuntimeError("could not draw a fresh figure; widen the range")  # pragma: no cover

    def reserve_near(
        self, maker: Callable[[int], tuple[str, str]], centre: int, low: float, high: float, *, direction: int = 0, avoid_round: int = 10
    ) -> str:
        """A reserved value ``maker(n)`` with n within `low`..`high` (relative) of `centre`: above
        it for ``direction=1``, below for -1, either side for 0 (a distractor that looks like the
        key value). n is never a multiple of `avoid_round` (no "$4.0 million")."""

        def make() -> tuple[str, str]:
            while True:
                delta = max(1, round(centre * self.rng.uniform(low, high)))
                n = max(1, centre + (direction or self.rng.choice((-1, 1))) * delta)
                if not avoid_round or n % avoid_round:
                    return maker(n)

        return self.reserve(make)

    def reserve_int(self, maker: Callable[[int], tuple[str, str]], low: int, high: int, *, avoid_round: int = 10) -> tuple[str, int]:
        """A reserved value from ``maker(n)`` with n in [low, high] not a multiple of `avoid_round`
        (so "$4.0 million" and "12.0%" never appear); returns the text and n."""
        drawn: list[int] = []

        def make() -> tuple[str, str]:
            n = self.rng.randint(low, high)
            while avoid_round and n % avoid_round == 0:
                n = self.rng.randint(low, high)
            drawn.append(n)
            return maker(n)

        text = self.reserve(make)
        return text, drawn[-1]

    def reserve_date(self, start: dt.date, days: int) -> str:
        return self.reserve(lambda: date(start + dt.timedelta(days=self.rng.randint(0, days))))

    # -- people and names ---------------------------------------------------------------------

    def person(self, role: str, *, quiet: bool = False) -> Person:
        """A new cast member with a first name and surname no one else in the document has.
        A `quiet` person is never picked by filler text (they are a distractor)."""
        person = Person(self._firsts.pop(), self._lasts.pop(), role)
        self.people.append(person)
        if quiet:
            self.quiet.add(person.name)
        return person

    def pick(self, name: str, pool: Sequence[str], n: int = 1) -> list[str]:
        """`n` items of `pool` (restricted to this split) that this document has not used yet."""
        drawn = self._drawn.setdefault(name, [])
        left = [item for item in split_pool(pool, self.split) if item not in drawn]
        chosen = self.rng.sample(left, n)
        drawn.extend(chosen)
        return chosen

    # -- filler -------------------------------------------------------------------------------

    def fill(self, template: str, fields: dict[str, str] | None = None, *, sentence: bool = True) -> str:
        """`template` with its fields from `fields`, the document's constants, or fresh filler;
        a `sentence` starts with a capital letter. Every figure written is added to `figures`."""
        values: dict[str, str] = {}
        for name in _field_names(template):
            if name in values:
                continue
            if fields and name in fields:
                values[name] = fields[name]
                self.figures |= _entities(fields[name])
            elif name in self.constants:
                values[name] = self.constants[name]
                self.figures |= _entities(self.constants[name])
            else:
                values[name], found = self._filler(name.rstrip(string.digits), set(values.values()))
                self.figures |= found
        text = template.format(**values)
        return text[:1].upper() + text[1:] if sentence else text

    def _filler(self, kind: str, used: set[str]) -> tuple[str, frozenset[str]]:
        """A filler value for a template field and its entities (never a reserved one; a person
        not already `used` in the same sentence)."""
        rng = self.rng
        if kind == "person":
            return rng.choice([p.name for p in self.people if p.name not in self.quiet and p.name not in used]), frozenset()
        if kind == "few":  # small counts as words: they add no figures to the document
            return rng.choice(("three", "four", "five", "six", "seven", "eight", "nine")), frozenset()
        if kind in self._lists:
            text = rng.choice(self._lists[kind])
            return text, _entities(text)
        make = self._makers.get(kind)
        if make is None:
            raise KeyError(f"template field {{{kind}}} has no value")
        for _ in range(500):
            text, entities = make()
            if not entities & self.reserved:
                return text, entities
        raise RuntimeError(f"no fresh filler value for {kind!r}")  # pragma: no cover

    def _filler_makers(self) -> dict[str, Callable[[], tuple[str, frozenset[str]]]]:
        rng, base = self.rng, self.base_date

        def one(made: tuple[str, str]) -> tuple[str, frozenset[str]]:
            return made[0], frozenset((made[1],))

        def clock() -> tuple[str, frozenset[str]]:
            hour, minute = rng.randint(10, 23), rng.randint(10, 59)
            # "23:37" is the one figure time:23:37; a clock whose hour or minute is a reserved
            # number is still drawn again (its clash is returned), so documents stay as they were
            clash = frozenset((f"num:{hour}", f"num:{minute}")) & self.reserved
            return f"{hour}:{minute}", frozenset((f"time:{hour:02d}:{minute:02d}",)) | clash

        return {
            "pct": lambda: one(percent(rng.randint(11, 989))),
            "count": lambda: one(count(rng.randint(120, 90_000))),
            "small": lambda: one(count(rng.randint(11, 95))),
            "money": lambda: one(money(rng.randint(12, 950) * 1000)),
            "moneym": lambda: one(money_m(rng.randint(11, 899))),
            "year": lambda: one((str(n := rng.randint(1979, 2019)), _num(str(n)))),
            "days": lambda: one(count(rng.randint(11, 95), "days")),
            "hours": lambda: one(count(rng.randint(11, 72), "hours")),
            "minutes": lambda: one(count(rng.randint(11, 59), "minutes")),
            "ms": lambda: one(count(rng.randint(11, 900), "ms")),
            "date": lambda: one(date(base + dt.timedelta(days=rng.randint(-200, 200)))),
            "time": clock,
        }

    def set_lists(self, **lists: list[str]) -> None:
        """Named pools for filler fields, e.g. ``team=["the finance team", ...]``."""
        self._lists = {k: list(v) for k, v in lists.items()}

    # -- assembly -----------------------------------------------------------------------------

    def write_sections(
        self,
        specs: dict[str, SectionSpec],
        keys: list[str],
        lines: list[Line],
        total_words: int,
        generic: Sequence[str],
    ) -> tuple[list[Section], dict[str, str]]:
        """Write the sections named by `keys` (in their specs' order) around `lines`, padding
        each with filler to about ``total_words / len(keys)`` words. Returns the sections (ids
        s1, s2, ...) and a map from section key to id.

        Filler comes mostly from the section's own bank, else from the `generic` bank and the
        banks of sections the document leaves out (each template once per document), then
        the generic bank a second time; no template appears twice in one section."""
        rng = self.rng
        ordered = sorted(keys, key=lambda k: specs[k].order)
        ids = {key: f"s{i}" for i, key in enumerate(ordered, start=1)}
        shared = list(generic)
        spare = [t for k, spec in specs.items() if k not in ids for t in spec.bank]
        second = list(generic)
        for pool in (shared, spare, second):
            rng.shuffle(pool)
        per_section = total_words / len(ordered)
        quota = math.ceil((len(shared) + len(spare) + len(second)) / len(ordered))  # shared templates per section
        sections = []
        for key in ordered:
            spec = specs[key]
            own = list(spec.bank)
            rng.shuffle(own)
            mine = [line for line in lines if line.section == key]
            body = [self.fill(line.template, line.fields) for line in mine]
            leads = [text for text, line in zip(body, mine, strict=True) if line.lead]
            if leads and rng.random() < LEAD_SHARE:
                first = rng.choice(leads)
                body.remove(first)
            else:
                first = self.fill(rng.choice(spec.intros))
            target = min(MAX_SECTION_WORDS, round(per_section * spec.weight * rng.uniform(0.8, 1.2)))
            words = len(first.split()) + sum(len(s.split()) for s in body)
            chars = len(first) + sum(len(s) + 1 for s in body)
            used: set[str] = set()
            while words < target:
                pools = (shared, spare, second) if len(used - set(spec.bank)) < quota else ()
                template = _next_template(rng, own, pools, used)
                if template is None:
                    break
                used.add(template)
                sentence = self.fill(template)
                if chars + len(sentence) + 2 > MAX_SECTION_CHARS:
                    break
                body.insert(rng.randint(0, len(body)), sentence)
                words += len(sentence.split())
                chars += len(sentence) + 2
            sentences = [first, *body]
            if spec.chronological:
                sentences = _chronological(sentences)
            paragraphs, i = [], 0
            while i < len(sentences):
                size = rng.randint(3, 6)
                paragraphs.append(" ".join(sentences[i : i + size]))
                i += size
            sections.append(Section(id=ids[key], title=self.fill(rng.choice(spec.titles)), text="\n\n".join(paragraphs)))
        return sections, ids

    def key_facts(self, facts: list[Fact], ids: dict[str, str]) -> list[KeyFact]:
        return [
            KeyFact(
                id=f"k{i}",
                description=f.description,
                value=f.value,
                aliases=f.aliases,
                subject=f.subject,
                distractors=f.distractors,
                section=ids[f.section],
                statement=f.statement,
            )
            for i, f in enumerate(facts, start=1)
        ]


def _next_template(rng: random.Random, own: list[str], pools: tuple[list[str], ...], used: set[str]) -> str | None:
    """Pop the next filler template: usually the section's own, else the first shared pool
    with one not yet `used` in this section."""
    sources = ([own] if own and rng.random() < 0.7 else []) + [*pools, own]
    for source in sources:
        for i in range(len(source) - 1, -1, -1):
            if source[i] not in used:
                return source.pop(i)
    return None


_CLOCK = re.compile(r"^At (\d\d):(\d\d),")


def _chronological(sentences: list[str]) -> list[str]:
    """Sort the "At HH:MM, ..." sentences by time, leaving the others where they are."""
    slots = [i for i, s in enumerate(sentences) if _CLOCK.match(s)]
    timed = sorted((sentences[i] for i in slots), key=lambda s: s[3:8])
    out = list(sentences)
    for i, sentence in zip(slots, timed, strict=True):
        out[i] = sentence
    return out


@lru_cache(maxsize=8192)
def _entities(text: str) -> frozenset[str]:
    return frozenset(extract_entities(text))


@lru_cache(maxsize=4096)
def _field_names(template: str) -> tuple[str, ...]:
    return tuple(name for _, name, _, _ in string.Formatter().parse(template) if name)


__all__ = [
    "Draft",
    "Fact",
    "Line",
    "MAX_SECTION_WORDS",
    "Person",
    "SectionSpec",
    "count",
    "date",
    "money",
    "money_m",
    "percent",
    "split_pool",
]
