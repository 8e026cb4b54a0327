"""The Summarize-v0 document generator: determinism across processes, length, consistency of
key facts with the text, unique figures, and disjoint train / test name pools."""

from __future__ import annotations

import hashlib
import os
import re
import string
import subprocess
import sys

import pytest

from judgegym.envs.summarize import KINDS, check_scenario, generate_scenario
from judgegym.envs.summarize import documents as docs
from judgegym.envs.summarize.draft import MAX_SECTION_WORDS
from judgegym.envs.summarize.names import FIRST_NAMES, SURNAMES
from judgegym.judges.facts import extract_entities

SEEDS = range(12)


@pytest.fixture(scope="module")
def generated():
    return {(split, kind, seed): generate_scenario(split, seed, kind) for split in ("train", "test") for kind in KINDS for seed in SEEDS}


def test_the_same_seed_gives_the_same_document_in_another_process():
    code = (
        "import hashlib; from judgegym.envs.summarize import generate_scenario as g; "
        "print(hashlib.sha256(g('test', 5).model_dump_json().encode()).hexdigest())"
    )
    here = hashlib.sha256(generate_scenario("test", 5).model_dump_json().encode()).hexdigest()
    for hash_seed in ("1", "2"):  # str hashing differs between these processes; documents must not
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": hash_seed}
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == here
    assert generate_scenario("test", 5) == generate_scenario("test", 5)
    assert generate_scenario("test", 5) != generate_scenario("test", 6)


def test_documents_are_long_and_split_into_readable_sections(generated):
    for (split, kind, seed), scenario in generated.items():
        assert 3000 <= scenario.words <= 8000, (split, kind, seed, scenario.words)
        assert 8 <= len(scenario.sections) <= 16
        assert all(s.words <= MAX_SECTION_WORDS + 60 for s in scenario.sections)
        assert [s.id for s in scenario.sections] == [f"s{i}" for i in range(1, len(scenario.sections) + 1)]
        assert scenario.id == f"{split}-{kind}-{seed}" and scenario.kind == kind
        assert 150 <= scenario.word_limit <= 250 and len(scenario.reference_summary.split()) <= scenario.word_limit


def test_the_generators_figure_inventory_matches_the_text(generated):
    for scenario in generated.values():
        assert scenario.task()["document_entities"] == sorted(extract_entities(scenario.text())), scenario.id


def test_key_facts_are_consistent_with_the_document(generated):
    for scenario in generated.values():
        check_scenario(scenario)  # values in the text, distractors state no key value, reference within limit and complete
        sections = {s.id: s for s in scenario.sections}
        for fact in scenario.key_facts:
            assert fact.section in sections and fact.subject
            assert fact.value.casefold() in sections[fact.section].text.casefold() or extract_entities(fact.value) <= extract_entities(
                sections[fact.section].text
            )


def test_each_key_figure_is_written_only_for_its_fact(generated):
    """A figure of a key fact never doubles as a distractor, another fact's figure or filler:
    every sentence containing it is one the generator wrote for that fact."""
    for scenario in generated.values():
        key = {f.id: extract_entities(f.value) for f in scenario.key_facts}
        for fact in scenario.key_facts:
            for distractor in fact.distractors:
                assert not extract_entities(distractor) & set().union(*key.values()), (scenario.id, distractor)
        for fact in scenario.key_facts:
            others = set().union(*(e for fid, e in key.items() if fid != fact.id and e != key[fact.id]))
            assert not key[fact.id] & others, (scenario.id, fact.id)
        sentences = [extract_entities(s) for s in re.split(r"(?<=[.!?])\s+", scenario.text())]
        for fact in scenario.key_facts:
            for entity in key[fact.id]:
                assert 1 <= sum(entity in found for found in sentences) <= 3, (scenario.id, entity)


def test_train_and_test_never_share_names(generated):
    def names(split):
        found = set()
        for (s, _, _), scenario in generated.items():
            if s == split:
                found |= set(scenario.people)
                found |= {f.value for f in scenario.key_facts if not extract_entities(f.value)}
                found |= {d for f in scenario.key_facts for d in f.distractors if not extract_entities(d)}
        return found

    train, test = names("train"), names("test")
    assert len(train) > 100 and len(test) > 50
    first = {n.split()[0] for n in train if " " in n} & {n.split()[0] for n in test if " " in n} & set(FIRST_NAMES)
    assert not train & test and not first


def test_generated_people_are_real_pool_names_and_pools_are_unambiguous():
    assert len(set(FIRST_NAMES)) == len(FIRST_NAMES) and len(set(SURNAMES)) == len(SURNAMES)
    for pool in (SURNAMES, docs._SERVICES, docs._CITIES, docs._VENDORS):
        for a in pool:
            assert not any(a.casefold() in b.casefold() for b in pool if b != a), a  # no name inside another


def test_templates_carry_no_figures_of_their_own():
    """Every number in a document comes from a drawn value, so the generator controls them all."""
    banks = [docs.GENERIC]
    for sections in (docs._OPS_SECTIONS, docs._INCIDENT_SECTIONS, docs._MINUTES_SECTIONS, docs._SPEC_SECTIONS):
        banks += [spec.bank + spec.intros + spec.titles for spec in sections.values()]
    for template in (t for bank in banks for t in bank):
        literal = "".join(text for text, *_ in string.Formatter().parse(template))
        assert not re.search(r"\d|@", literal), template


def test_unknown_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown document kind 'novel'"):
        generate_scenario("train", 0, "novel")
