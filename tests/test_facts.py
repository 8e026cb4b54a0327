"""Tests for judgegym.judges.facts: canonical entities in free text and fact matching."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import examples

from judgegym.judges.facts import (
    UNIT_FACTORS,
    canonical_number,
    derived_figures,
    extract_entities,
    fact_present,
    normalize_text,
    strip_copied,
    with_years,
)

PREFIXES = ("email:", "phone:", "date:", "time:", "num:")


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("token", "canonical"),
    [
        ("1,299.00", "1299"),
        ("1299", "1299"),
        ("1,299", "1299"),
        ("3.50", "3.5"),
        ("3.5", "3.5"),
        ("10.0", "10"),
        ("100", "100"),  # trailing zeros of integers are significant
        ("1000", "1000"),
        ("100.00", "100"),
        ("007", "7"),
        ("0", "0"),
        ("0.00", "0"),
        ("2.3.1", "2.3.1"),
        ("10.20.30", "10.20.30"),
    ],
)
def test_canonical_number(token, canonical):
    assert canonical_number(token) == canonical


@pytest.mark.parametrize("text", ["$1,299.00", "1299", "1,299", "USD 1,299.0", "costs $1299."])
def test_amount_forms_are_one_entity(text):
    assert extract_entities(text) == {"num:1299"}


def test_decimal_trailing_zero():
    assert extract_entities("3.50") == extract_entities("3.5") == {"num:3.5"}
    assert extract_entities("3.05") != extract_entities("3.5")


def test_version_number_kept_whole():
    assert extract_entities("Update to version 2.3.1 today.") == {"num:2.3.1"}
    assert extract_entities("2.3.1") != extract_entities("2.3")
    assert extract_entities("2.3.1") != extract_entities("231")


def test_sentence_final_period_not_part_of_number():
    assert extract_entities("Refunds take 14 days. Shipping is 5.") == {"num:14", "num:5"}


@pytest.mark.parametrize("written", ["17 October 2025", "17th Oct. 2025", "October 17, 2025", "Oct 17 2025", "on 17 october, 2025"])
def test_a_date_written_out_with_its_year_is_the_iso_date(written):
    assert extract_entities(f"Delivered {written}, 66 days ago.") == {"date:2025-10-17", "num:66"}


def test_a_date_without_a_year_and_a_modal_may_stay_numbers():
    assert extract_entities("due 10 July") == {"num:10"}
    assert extract_entities("you may 12 times in 2025") == {"num:12", "num:2025"}


def test_a_date_without_its_year_takes_the_year_of_the_context():
    context = "Today is 2025-08-20. Delivered on 2025-07-10. Ordered on 2024-12-30."
    placed = with_years("Delivered on 10 July; it closed on 9 August. Ordered Dec 30th.", context)
    assert placed == "Delivered on 2025-07-10; it closed on 9 August. Ordered 2024-12-30."  # two years: only same-day dates
    assert with_years("It closed on 9 August.", "Today is 2025-08-20.") == "It closed on 2025-08-09."
    assert with_years("Due 4 June 2026, or May 3.", "") == "Due 4 June 2026, or May 3."  # a year given, or none to take


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=80), st.text(max_size=80))
def test_placing_years_never_fails_and_changes_only_dates(text, context):
    placed = with_years(text, context)
    assert isinstance(placed, str)
    if placed != text:
        assert {e for e in extract_entities(placed) if e.startswith("date:")} - extract_entities(text)


def test_distinct_numbers_stay_distinct():
    assert extract_entities("100 and 10 and 1000") == {"num:100", "num:10", "num:1000"}
    assert extract_entities("12") != extract_entities("120")


# --------------------------------------------------------------------------- emails


def test_email_case_insensitive():
    assert extract_entities("Write to Support@ACME.com") == extract_entities("support@acme.COM") == {"email:support@acme.com"}


def test_email_trailing_period_and_digits():
    entities = extract_entities("Contact help2024@mail.acme-corp.co.uk.")
    assert entities == {"email:help2024@mail.acme-corp.co.uk"}  # no num:2024 from inside the address


def test_email_plus_and_dots():
    assert extract_entities("john.doe+orders@example.org") == {"email:john.doe+orders@example.org"}


# --------------------------------------------------------------------------- phones


@pytest.mark.parametrize(
    "text",
    [
        "555-014-2233",
        "(555) 014-2233",
        "555.014.2233",
        "555 014 2233",
        "+1 555 014 2233",
        "+1 (555) 014-2233",
        "+1-555-014-2233",
    ],
)
def test_phone_formats_are_equal(text):
    assert extract_entities(f"Call us at {text} today.") == {"phone:5550142233"}


def test_seven_digit_phone():
    assert extract_entities("Dial 555-0142.") == {"phone:5550142"}


def test_phone_digits_not_counted_as_numbers():
    entities = extract_entities("Call 555-014-2233 about order 1299.")
    assert entities == {"phone:5550142233", "num:1299"}


def test_short_dashed_number_is_not_a_phone():
    assert not any(e.startswith("phone:") for e in extract_entities("Room 12-34"))


def test_iso_date_not_taken_for_phone():
    entities = extract_entities("Delivered on 2024-01-15.")
    assert entities == {"date:2024-01-15"}
    assert extract_entities("2024-01-15 and 555-014-2233") == {"date:2024-01-15", "phone:5550142233"}


# --------------------------------------------------------------------------- citations and list markers


@pytest.mark.parametrize("text", ["See [doc-12].", "[12]", "Sources: [kb-2024-01][doc-7]"])
def test_citations_ignored(text):
    assert extract_entities(text) == set()


def test_citations_ignored_but_other_numbers_kept():
    assert extract_entities("Shipping takes 3 days [doc-12].") == {"num:3"}


def test_list_markers_ignored():
    text = "1. Open the app\n2. Tap Settings\n  3) Choose Refund\n10. Confirm"
    assert extract_entities(text) == set()


def test_list_marker_ignored_but_item_numbers_kept():
    assert extract_entities("1. Pay $25.00\n2. Wait 3 days") == {"num:25", "num:3"}


def test_mixed_text():
    text = "1. Email billing@acme.com or call +1 (555) 014-2233.\n2. Refund of $1,299.00 arrives by 2024-02-01 [doc-3]."
    assert extract_entities(text) == {"email:billing@acme.com", "phone:5550142233", "num:1299", "date:2024-02-01"}


def test_no_entities():
    assert extract_entities("") == set()
    assert extract_entities("Free shipping on all orders!") == set()


# --------------------------------------------------------------------------- fact_present


def test_fact_present_numeric_in_other_format():
    assert fact_present("The laptop costs 1299", "It is $1,299.00 including tax.")
    assert fact_present("$3.50 fee", "a fee of 3.5 dollars")


def test_fact_present_numeric_missing():
    assert not fact_present("The laptop costs 1299", "It is $1,199.00.")
    assert not fact_present("Refunds within 30 days", "Refunds within 3 days")


def test_fact_present_needs_every_entity():
    fact = "Email billing@acme.com or call 555-014-2233"
    assert fact_present(fact, "call (555) 014-2233 or write BILLING@acme.com")
    assert not fact_present(fact, "call (555) 014-2233")


def test_fact_present_phone_with_country_code():
    assert fact_present("Support line: 555-014-2233", "Phone +1 555 014 2233")


def test_fact_present_non_numeric_is_normalised_substring():
    assert fact_present("Free  Shipping", "We offer free\nshipping worldwide.")
    assert fact_present("Hauptstraße", "HAUPTSTRASSE 5")  # case-folded, not just lower-cased
    assert not fact_present("free returns", "We offer free shipping.")


def test_fact_present_empty_fact_is_false():
    assert not fact_present("", "anything")
    assert not fact_present("   ", "anything at all")


def test_fact_present_uses_given_entities():
    assert fact_present("Costs 1299", "no numbers here", text_entities={"num:1299"})
    assert not fact_present("Costs 1299", "Costs 1299", text_entities=set())


def test_normalize_text():
    assert normalize_text("  Hello\t\nWORLD  ") == "hello world"


# --------------------------------------------------------------------------- times of day


@pytest.mark.parametrize(
    ("text", "times"),
    [
        ("Open 8 am to 6 pm Eastern Time.", {"time:08:00", "time:18:00"}),
        ("Open 08:00-18:00.", {"time:08:00", "time:18:00"}),
        ("Doors at 6:30 p.m. sharp", {"time:18:30"}),
        ("last entry 6.30PM", {"time:18:30"}),
        ("Fermeture 18h30", {"time:18:30"}),
        ("from noon until midnight", {"time:12:00", "time:00:00"}),
        ("12 am", {"time:00:00"}),
        ("12 pm", {"time:12:00"}),
    ],
)
def test_times_of_day_in_either_clock_are_one_entity(text, times):
    assert extract_entities(text) == times


@pytest.mark.parametrize("text", ["I am 5 minutes away", "6 amazing deals", "a 3:1 ratio", "version 10.20.30"])
def test_things_that_are_not_times_stay_numbers(text):
    assert not any(e.startswith("time:") for e in extract_entities(text))


def test_a_time_in_the_other_clock_is_present_and_a_swapped_one_is_not():
    article = "The observatory is open 7 pm to 11:30 pm on Fridays."
    assert fact_present("19:00", article) and fact_present("23:30", article)
    assert not fact_present("17:00", article), "5 pm is not 7 pm"
    assert not fact_present("7 am", article), "morning is not evening"


@settings(max_examples=examples(200), deadline=None)
@given(hour=st.integers(0, 23), minute=st.integers(0, 59), spaced=st.booleans(), dotted=st.booleans())
def test_property_12_and_24_hour_forms_agree(hour, minute, spaced, dotted):
    half = ("p" if hour >= 12 else "a") + (".m." if dotted else "m")
    twelve = f"{hour % 12 or 12}:{minute:02d}{' ' if spaced else ''}{half}"
    expected = {f"time:{hour:02d}:{minute:02d}"}
    assert extract_entities(f"at {twelve} today") == extract_entities(f"at {hour:02d}:{minute:02d} today") == expected
    assert extract_entities(f"at {hour}:{minute:02d}") == expected


# --------------------------------------------------------------------------- properties


@settings(max_examples=examples(300), deadline=None)
@given(text=st.text())
def test_property_extract_entities_never_raises(text):
    entities = extract_entities(text)
    assert isinstance(entities, set)
    assert all(isinstance(e, str) and e.startswith(PREFIXES) for e in entities)


@settings(max_examples=examples(300), deadline=None)
@given(text=st.lists(st.sampled_from(list("0123456789.,-+() $@[]\n:ab")), max_size=40).map("".join))
def test_property_extract_entities_never_raises_on_number_soup(text):
    entities = extract_entities(text)
    assert all(e.startswith(PREFIXES) for e in entities)
    assert fact_present(text, text) in (True, False)


@settings(max_examples=examples(300), deadline=None)
@given(n=st.integers(min_value=0))
def test_property_formatted_amount_equals_plain_number(n):
    formatted = f"${n:,}.00"
    assert extract_entities(formatted) == extract_entities(str(n)) == {f"num:{n}"}
    assert fact_present(str(n), f"The total is {formatted}.")


@settings(max_examples=examples(200), deadline=None)
@given(n=st.integers(min_value=0, max_value=10**9), cents=st.integers(min_value=0, max_value=99))
def test_property_trailing_zeros_of_decimals_do_not_matter(n, cents):
    assert extract_entities(f"{n}.{cents:02d}") == extract_entities(f"{n}.{cents:02d}000")


# --------------------------------------------------------------------------- bugs


@pytest.mark.parametrize(
    ("fact", "text"),
    [("Order 1002", "Your orders are 1001 1002 1003."), ("12.50", "Options cost 12.50 13.75")],
)
def test_space_separated_numbers_are_not_a_phone(fact, text):
    assert fact_present(fact, text)


def test_a_number_with_a_unit_needs_the_unit_too():
    assert fact_present("1 business day", "Delivery takes 1 business day.")
    assert fact_present("24 months", "a 24-month warranty")
    assert not fact_present("1 business day", "This answer deserves a score of 1.0.")
    assert not fact_present("24 months", "24 days")
    assert fact_present("$129.99", "It costs 129.99 dollars.")  # no unit word in the fact


@pytest.mark.parametrize(
    ("fact", "text", "present"),
    [
        ("30 days", "You had a 30-day window.", True),
        ("30 days", "within 30 days", True),
        ("24 months", "a 24-month warranty", True),
        ("30 days", "30 hours", False),
        ("8 business days", "8 business days", True),
    ],
)
def test_unit_words_match_across_plural_and_hyphenated_forms(fact, text, present):
    assert fact_present(fact, text) is present


def test_memoised_entities_are_the_callers_own_and_long_texts_read_the_same():
    text = "Call 555-014-2233 or help@shop.example by 17 October 2025 about the $1,299.00 order."
    first = extract_entities(text)
    first.add("num:999")  # a caller changing its set must not change what the next caller gets
    assert extract_entities(text) == {"phone:5550142233", "email:help@shop.example", "date:2025-10-17", "num:1299"}
    long = text + " filler" * 400  # over the memoised length: computed directly, same entities
    assert len(long) > 2000 and extract_entities(long) == extract_entities(text)


def test_strip_copied_gives_the_same_result_when_a_source_repeats():
    source = "Answer only from the knowledge base and cite every article you rely on as its id."
    answer = "Answer only from the knowledge base and cite every article you rely on. The kettle costs $89."
    once = strip_copied(answer, [source])
    assert "$89" in once and "knowledge base" not in once
    assert strip_copied(answer, [source]) == once == strip_copied(answer, [source, source])


# -- figures worked out from figures seen --------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "unsupported"),
    [
        ("The fee is 15% of $167.93, so $25.19; you get $142.74 back.", set()),
        ("You get $142.74 back.", {"num:142.74"}),  # no figure of the working stated: not shown to be worked out
        ("The Pro is $1,369.99 and the Lite $759.99: $610.00 more.", set()),
        ("The Pro is $1,369.99 and the Lite $759.99: $600.00 more.", {"num:600"}),
        ("$167.93 plus $12.50 express shipping: $180.43 in all.", set()),
        ("$167.93 plus $12.50 express shipping: $181.43 in all.", {"num:181.43"}),
        ("It weighs 1.2 kg (about 2.6 lb).", set()),
        ("It weighs 1.2 kg (about 3.1 lb).", {"num:3.1"}),
        ("Delivered 2025-03-03; the window closes 2025-04-02, 30 days later.", set()),
        ("Delivered 2025-03-03; the window closes 2025-04-05.", {"date:2025-04-05"}),
        ("3 tickets at $18.50 cost $55.50.", set()),
        ("The warranty is 30 months, or 24 months extended.", {"num:24"}),  # a whole number needs both operands stated
    ],
)
def test_derived_figures_accept_right_arithmetic_on_figures_read_and_nothing_else(answer, unsupported):
    seen = extract_entities(
        "Price: $167.93. Restocking fee: 15%. Express shipping: $12.50. The Pro costs $1,369.99 and the Lite "
        "$759.99. Weight: 1.2 kg. Delivered on 2025-03-03; returns within 30 days. Warranty: 30 months. Adult: $18.50. "
        "How much are 3 tickets?"
    )
    stated = extract_entities(answer)
    unread = stated - seen
    assert unread - derived_figures(unread, seen, stated) == unsupported


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1000, 99999), st.integers(1000, 99999), st.integers(1, 99))
def test_a_sum_of_two_stated_prices_is_derived_and_a_wrong_one_is_not(a_cents, b_cents, off):
    assume(a_cents % 100 and b_cents % 100)  # a whole sum of whole prices is not derived: chance gives too many
    a, b = a_cents / 100, b_cents / 100
    seen = extract_entities(f"${a:.2f} and ${b:.2f}")
    right = extract_entities(f"${a:.2f} + ${b:.2f} = ${a + b:.2f}")
    assert derived_figures(right - seen, seen, right) == right - seen
    wrong_total = round(a + b + off / 100, 2)
    pairs = [(x, y) for x in (a, b) for y in (a, b)]  # a figure with itself too: doubling is arithmetic
    others = [r for x, y in pairs for r in (x + y, abs(x - y), x * y / 100, x * (1 - y / 100), x * (1 + y / 100))]
    assume(all(abs(wrong_total - o) > 0.0051 for o in others) and wrong_total != int(wrong_total))
    assume(all(abs(wrong_total - x * f) > 0.0051 and abs(wrong_total - x / f) > 0.0051 for x in (a, b) for f in UNIT_FACTORS))
    wrong = extract_entities(f"${a:.2f} + ${b:.2f} = ${wrong_total:.2f}")
    assert derived_figures(wrong - seen, seen, wrong) == set()


def test_derived_figures_take_any_number_a_model_writes():
    huge = extract_entities("1" * 500 + " items, 10.5 kg, 1e400, 2025-01-01")
    assert derived_figures(huge, extract_entities("10.5 kg on 2025-01-05"), huge) == set()


def test_amounts_are_figures_written_as_money_in_any_currency_sign_or_code():
    from judgegym.judges.facts import amounts

    text = "Refund $587.96 (66.8%), or 84.50 USD, CHF 12, 12.50 €, ¥3,000; order O-1033, 3 items."
    assert amounts(text) == {"num:587.96", "num:84.5", "num:12", "num:12.5", "num:3000"}


@pytest.mark.parametrize(
    ("text", "number"),
    [("12,50 €", "12.5"), ("€12,50.", "12.5"), ("EUR 1.234,50", "1234.5"), ("1 234,50 EUR", "1234.5"), ("CHF 0,95", "0.95")],
)
def test_money_with_a_decimal_comma_is_the_same_figure(text, number):
    from judgegym.judges.facts import amounts

    assert extract_entities(text) == amounts(text) == {f"num:{number}"}
    assert fact_present(f"€{number}", f"The ticket costs {text}")


@pytest.mark.parametrize(("text", "numbers"), [("1,250 €", {"1250"}), ("€1,299.00", {"1299"}), ("sizes 10,12 and 14", {"10", "14"})])
def test_a_comma_away_from_money_or_before_three_digits_is_not_a_decimal_comma(text, numbers):
    assert extract_entities(text) == {f"num:{n}" for n in numbers}


@settings(max_examples=examples(200), deadline=None)
@given(euros=st.integers(min_value=0, max_value=10**7), cents=st.integers(min_value=0, max_value=99))
def test_property_a_decimal_comma_amount_equals_its_decimal_point_form(euros, cents):
    european = f"{euros:,}".replace(",", ".") + f",{cents:02d} €"
    assert extract_entities(european) == extract_entities(f"€{euros}.{cents:02d}")
