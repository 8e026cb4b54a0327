"""People's names for Summarize-v0: the generator's name pools and the detector of "First Last"
names in free text that the verifier uses to catch invented people.

A name counts as a person's when its first word is a known first name: any split's pool, or
the first name of someone in the document. Names outside that reach (an invented "John
Smith") are not detected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

FIRST_NAMES: tuple[str, ...] = (
    "Priya", "Daniel", "Mei", "Tomasz", "Amara", "Lucas", "Ingrid", "Rafael", "Naomi", "Kwame",
    "Sofia", "Haruto", "Elena", "Mateo", "Aisha", "Jonas", "Leila", "Dmitri", "Yuki", "Camille",
    "Oluwaseun", "Anika", "Felix", "Ines", "Rohan", "Greta", "Tariq", "Marisol", "Henrik", "Chiara",
    "Bilal", "Freya", "Arjun", "Noor", "Emeka", "Beatriz", "Lars", "Zara", "Kenji", "Aurelie",
    "Samir", "Hana", "Viktor", "Lucia", "Obinna", "Astrid", "Diego", "Farah", "Nikolai", "Ayesha",
    "Tobias", "Esther", "Ravi", "Magda", "Idris", "Selin", "Joaquin", "Anouk", "Kofi", "Rania",
    "Stefan", "Leonie", "Hamza", "Ximena", "Bogdan", "Yasmin", "Callum", "Mirela", "Thandiwe", "Emil",
    "Paloma", "Sanne", "Adebayo", "Keiko", "Malik", "Ottilie", "Vikram", "Renata", "Soren", "Adaeze",
    "Pedro", "Lina", "Casimir", "Imani", "Gustavo", "Anders", "Nadia", "Ibrahim", "Elif", "Marek",
    "Zainab", "Hugo", "Wanjiru", "Teodor", "Ilse", "Rashid",
)  # fmt: skip

SURNAMES: tuple[str, ...] = (
    "Raman", "Okafor", "Lindqvist", "Kowalczyk", "Mensah", "Ferreira", "Nakamura", "Haddad", "Brennan", "Castellanos",
    "Adeyemi", "Novak", "Sorensen", "Moreau", "Chaudhry", "Esposito", "Takahashi", "Abernathy", "Oyelaran", "Delacroix",
    "Varga", "Petrov", "Achterberg", "Quist", "Bianchi", "Osei", "Halvorsen", "Kapoor", "Marchetti", "Nwosu",
    "Lindgren", "Szabo", "Yilmaz", "Duarte", "Fitzgerald", "Mbeki", "Rasmussen", "Iyer", "Okonkwo", "Vasquez",
    "Hoffmann", "Rossi", "Akhtar", "Lemaire", "Nieminen", "Ortega", "Pereira", "Sato", "Adjei", "Bauer",
    "Cardoso", "Dimitrov", "Engel", "Fonseca", "Gallagher", "Horvath", "Ibarra", "Jansen", "Kato", "Lombardi",
    "Moretti", "Nilsson", "Olsen", "Pham", "Quintero", "Reyes", "Schulz", "Tanaka", "Urquhart", "Valdez",
    "Weber", "Yamamoto", "Zielinski", "Abara", "Bergstrom", "Dragomir", "Eklund", "Falk", "Gruber", "Hakimi",
    "Ivanova", "Jovanovic", "Kruger", "Laine", "Mwangi", "Nordin", "Ozturk", "Pajari", "Rinaldi", "Saarinen",
    "Tiwari", "Umeh", "Vogel", "Whitlock", "Barros", "Cheng",
)  # fmt: skip

_WORD = r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?"
_PAIR = re.compile(rf"(?<![\w'’-])({_WORD}) (?=({_WORD})(?![\w-]))")  # the lookahead lets pairs overlap
_KNOWN_FIRST = frozenset(FIRST_NAMES)


def person_names(text: str, known: Iterable[str] = ()) -> set[str]:
    """The "First Last" names in `text` that look like people's: two capitalised words
    separated by one space where the first is a pool first name or the first name of a `known`
    person ("Chair Priya Raman" yields "Priya Raman"; a possessive "'s" is not part of the
    name). A surname alone is not enough: "Ms Raman" and "When Okafor" are no names here."""
    firsts = _KNOWN_FIRST | {name.split()[0] for name in known if name.split()}
    return {f"{first} {last}" for first, last in _PAIR.findall(text) if first in firsts}


__all__ = ["FIRST_NAMES", "SURNAMES", "person_names"]
