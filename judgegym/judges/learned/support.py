"""Action features (CustomerSupport-v0 and any task with write tools): identification before a
change, changes the customer asked for and confirmed, claims no tool backs, the policy's limits."""

from __future__ import annotations

import json
import math
import re
from datetime import date
from typing import Any

from ...formats.chat import ToolExchange
from ...formats.support import SupportPolicy
from ..facts import (
    canonical_number,
    extract_entities,
    strip_copied,
)
from .view import View

_ASK_IDENTITY = re.compile(
    r"\b(?:e-?mail|order (?:id|number))\b[^.?\n]{0,80}\?|\b(?:could|can|may) (?:you|i)[^.?\n]{0,60}\b(?:e-?mail|order)\b", re.I
)


_YES = re.compile(r"\b(?:yes|yeah|yep|go ahead|please do|sure|that's fine|that is fine|ok(?:ay)?|sounds good|do it|correct)\b", re.I)


_DISPUTE = re.compile(
    r"never (?:arrived|came|got it|received)|charged (?:me )?twice|double[- ]charged|didn'?t (?:authori[sz]e|make)|unauthori[sz]ed", re.I
)


_CLAIM = re.compile(
    r"\b(?:i|we)(?:'ve| have)?(?: (?:just|now|already|successfully|gone ahead and))? ([a-z]+ed)\b"
    r"|\b(?:has|have|was|is) (?:now |already |successfully |been )*(?:been )?(?:fully )?([a-z]+ed)\b",
    re.IGNORECASE,
)


_TICKET = re.compile(r"\bT-\d+\b")


_NEGATED = re.compile(r"\b(?:nothing|not|no|never|neither|nor)\b[^.!?\n,;]*$|n't\b[^.!?\n,;]*$", re.I)  # "Nothing has been changed"


_REFERENCE = re.compile(r"(?<![\w-])[A-Z]{1,4}-?\d{3,}(?![\w-])")  # "T-1007", "RA-55120", "O-29492"


_ORDER_MENTION = re.compile(r"(?<![\w-])#?(?:[Oo]-?)?(\d{4,})(?![\w-])")


_AMOUNT = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")


_READ_TOOLS = frozenset({"find", "get", "list", "search", "read", "lookup", "check", "show", "fetch", "view"})


_WRITE_TOOLS = ("refund", "cancel", "exchange", "update", "escalate", "change", "create", "delete", "issue", "send", "set")


def action_features(view: View) -> dict[str, float]:
    """Identification, changes made (and whether the customer agreed first), claims of changes
    no tool made, refusals, and the written policy's window and dispute rules."""
    said = "\n".join(strip_copied(t, [view.system]) for t in view.assistant_texts)
    identified_at = next((i for i, c in enumerate(view.calls) if c.name == "find_customer" and c.ok), None)
    writes = [(i, c) for i, c in enumerate(view.calls) if _is_write(c.name)]
    ok_writes = [c for _, c in writes if c.ok]
    done_stems = {stem for c in ok_writes for stem in _stems(c.name)}
    claims = [m for m in _CLAIM.finditer(said) if not _NEGATED.search(said[max(0, m.start() - 30) : m.start()])]
    claimed = {_stem(m.group(1) or m.group(2)) for m in claims}
    claimed &= {_stem(w) for w in _WRITE_TOOLS} | {"refund", "cancel", "exchange", "escalat"} | _VAGUE_DEEDS
    false_claims = len(claimed - done_stems - (_VAGUE_DEEDS if ok_writes else set()))
    shown = "\n".join([*(c.result for c in view.calls if c.ok), *view.user_texts])
    false_claims += len(set(_REFERENCE.findall(said)) - set(_REFERENCE.findall(shown)))  # a ticket or return id no tool gave
    # what a customer must be told of a change: the amounts, ticket ids and new address its result holds
    outcome_bits = [f"num:{canonical_number(m)}" for c in ok_writes for m in _AMOUNT.findall(c.result)]
    outcome_bits += [t for c in ok_writes for t in _TICKET.findall(c.result)]
    outcome_bits += sorted(e for c in ok_writes for e in extract_entities(_field(c.result, "shipping_address")))
    told = extract_entities(said) | set(_TICKET.findall(said))
    outside, dispute, needless = _policy_breaches(view, ok_writes)
    asked = {w for text in view.user_texts for w in re.findall(r"[a-z]+", text.casefold())}
    mentioned = {_normal_id(m) for m in _ORDER_MENTION.findall(" ".join(view.user_texts))}
    mentioned |= {_order_id(c) for c in view.calls if c.ok and c.name == "find_customer"}  # the order that identified them
    return {
        "identified": float(identified_at is not None),
        "asked_identity": float(bool(_ASK_IDENTITY.search(said))),
        "refused_calls": math.log1p(sum(not c.ok and "identif" in (c.result or "") for c in view.calls)),
        "writes_ok": math.log1p(len(ok_writes)),
        "writes_failed": math.log1p(sum(not c.ok for _, c in writes)),
        "write_before_identified": float(any(identified_at is None or i < identified_at for i, _ in writes)),
        "write_unmentioned_order": sum(_order_id(c) not in mentioned for c in ok_writes) / len(ok_writes) if ok_writes else 0.0,
        "unconfirmed_writes": sum(not (_YES.search(c.after_user) or _asked_for(c.name, asked)) for c in ok_writes) / max(1, len(ok_writes)),
        "false_claims": math.log1p(false_claims),
        "outcome_told": sum(b in told for b in outcome_bits) / len(outcome_bits) if outcome_bits else 1.0,
        "outside_window": float(outside),
        "dispute_refunded": float(dispute),
        "needless_escalation": float(needless),
        "assistant_turns": math.log1p(len(view.assistant_texts)) / math.log(20),
    }


def _field(result: str, key: str) -> str:
    """The text of `key` in a tool's JSON object `result`; empty when it has none."""
    try:
        value = json.loads(result)
    except (ValueError, RecursionError):
        return ""
    return str(value.get(key) or "") if isinstance(value, dict) else ""


def _policy_breaches(view: View, ok_writes: list[ToolExchange]) -> tuple[bool, bool, bool]:
    """(a refund of an order delivered longer ago than the prompt's return window, a refund
    of a disputed order over the prompt's escalation threshold, an escalation of anything but
    such a dispute); from the policy's figures (the env's published facts, else the system
    prompt: `SupportPolicy.of`), the customer's words and the orders the tools showed."""
    refunds = [c for c in ok_writes if c.name.startswith("refund")]
    escalations = [c for c in ok_writes if c.name.startswith("escalat")]
    if not refunds and not escalations:
        return False, False, False
    policy = SupportPolicy.of(view.facts, view.system)
    today, window, threshold = policy.today, policy.window_days, policy.dispute_threshold
    orders: dict[str, dict[str, Any]] = {}
    for call in view.calls:
        if call.ok and call.name == "get_order":
            try:
                order = json.loads(call.result)
            except ValueError:
                continue
            if isinstance(order, dict) and "order_id" in order:
                orders[str(order["order_id"]).upper()] = order
    disputed = bool(_DISPUTE.search(" ".join(view.user_texts)))

    def over_threshold(call: ToolExchange) -> bool:
        order = orders.get(str(call.arguments.get("order_id", "")).strip().lstrip("#").upper(), {})
        total = extract_entities(str(order.get("total", "")))
        amounts = [float(e.split(":", 1)[1]) for e in total if e.startswith("num:") and e.count(".") <= 1]
        return threshold is not None and bool(amounts) and max(amounts) > threshold

    outside = False
    for call in refunds:
        delivered = orders.get(str(call.arguments.get("order_id", "")).strip().lstrip("#").upper(), {}).get("delivered_on")
        if today and window is not None and isinstance(delivered, str):
            try:
                age = (today - date.fromisoformat(delivered[:10])).days
            except ValueError:
                age = 0
            outside |= age > window
    dispute = disputed and any(over_threshold(c) for c in refunds)
    needless = threshold is not None and any(not (disputed and over_threshold(c)) for c in escalations)
    return outside, dispute, needless


def _order_id(call: ToolExchange) -> str:
    return _normal_id(str(call.arguments.get("order_id", "")))


def _normal_id(text: str) -> str:
    """An order id as written by a customer or a tool call ("#o-48213", "48213") -> "48213"."""
    return text.strip().lstrip("#").upper().removeprefix("O-").removeprefix("O")


def _is_write(name: str) -> bool:
    head = name.split("_", 1)[0]
    return head not in _READ_TOOLS and any(name.startswith(w) for w in _WRITE_TOOLS)


def _stem(word: str) -> str:
    word = word.casefold()
    for suffix in ("lled", "led", "ed", "e", "ing"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] if suffix != "lled" else word[:-3]
    return word


_ASKS = {
    "refund": ("refund", "money", "return", "reimburs"),
    "cancel": ("cancel",),
    "exchang": ("exchang", "swap", "replace"),
    "address": ("address", "moved", "moving", "deliver"),
    "escalat": ("charg", "disput", "arriv", "authori", "fraud"),
}
"""The words (prefixes) by which a customer asks for each kind of change: "Can I get my money
back?" asks for a refund, "I was charged twice" for the dispute's escalation."""


def _asked_for(tool: str, words: set[str]) -> bool:
    """Whether the customer's `words` ask for the kind of change `tool` makes."""
    prefixes = [p for stem in _stems(tool) for p in _ASKS.get(stem, ())]
    return any(word.startswith(p) for word in words for p in prefixes)


def _stems(tool: str) -> set[str]:
    return {_stem(part) for part in tool.split("_")}


_VAGUE_DEEDS = frozenset(
    _stem(w)
    for w in "processed issued updated changed opened created submitted arranged raised logged filed booked scheduled initiated".split()
)
"""Stems of the claims of a change that any change made could back ("I've processed it")."""
