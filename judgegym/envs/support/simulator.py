"""Simulated customers for CustomerSupport-v0: a deterministic rule-based one (the default,
offline) and an LLM one (any litellm model). Both see only the conversation's text, never the
tool results, and end the conversation by writing `STOP_TOKEN`.
"""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from typing import Any

from ...formats.chat import FORMAT_ERROR_PREFIX
from ...judges.base import run_sync
from ...judges.facts import extract_entities, fact_present
from ...judges.llm import JudgeLLM
from ...trajectory import Message
from .scenario import User

STOP_TOKEN = "###STOP###"
"""What a simulated customer writes when the conversation is over for them."""


class CustomerSimulator(ABC):
    """One customer for one episode: `reply` to each assistant text turn.

    `messages` is the whole conversation so far (system, user, assistant and tool messages);
    simulators must only use what a customer sees: user and assistant text. A reply that
    contains `STOP_TOKEN` ends the episode (``TerminationReason.USER_STOP``)."""

    @abstractmethod
    def reply(self, messages: list[Message]) -> str:
        """The customer's next message."""


def _customer_view(messages: list[Message]) -> list[tuple[str, str]]:
    """(role, text) of the turns a customer sees: their own and the agent's text."""
    return [
        (m.role, m.content)
        for m in messages
        if m.role in ("user", "assistant") and m.content and not m.content.startswith(FORMAT_ERROR_PREFIX)
    ]


# Cues in the agent's text, matched case-insensitively.
_ASKS: dict[str, re.Pattern[str]] = {
    "email": re.compile(r"e-?mail"),
    "order_id": re.compile(r"order\s*(?:id|number|no\b|#|identifier|reference)|\bwhich order\b"),
    "name": re.compile(r"\b(?:your|full) name\b"),
    "phone": re.compile(r"\bphone\b"),
    "new_address": re.compile(r"(?<!email )(?<!e-mail )\baddress\b"),
    "reason": re.compile(r"\b(?:reason|why|what happened|what went wrong|what(?:'s| is) wrong)\b"),
    "item": re.compile(r"\b(?:which|what) (?:item|product)\b"),
    "new_variant": re.compile(r"\b(?:size|colou?r|variant|version|which one|instead|swap|replace|exchange it for|prefer)\b"),
}
_ANSWERS: dict[str, tuple[str, ...]] = {
    "email": ("My email is {}.", "It's {}.", "Email: {}", "You can find me under {}."),
    "order_id": ("The order id is {}.", "My order number is {}.", "It's order {}.", "Order {}, I think."),
    "name": ("My name is {}.", "I'm {}."),
    "phone": ("My phone number is {}.",),
    "new_address": ("The new address is {}.", "Please send it to {} instead.", "{}"),
    "reason": ("{}",),
    "item": ("It's the {}.",),
    "new_variant": ("I'd like the {} variant instead.", "{}, please.", "Could I get it in {}?"),
}
"""How the customer gives each fact; one phrasing is drawn per answer (the style seed fixes the draws)."""
_YES = ("Yes, please go ahead.", "Yes.", "Sure, do it.", "That's fine, go ahead.")

_MISMATCH = re.compile(
    r"(?:could ?n[o']t|can ?n[o']t|cannot|unable to|did ?n[o']t|was ?n[o']t able to) (?:find|locate|verify|match|identify)"
    r"|\bno (?:customer|account|order|match)|\b(?:does|do|did) ?n[o']t match|\bnot match|mismatch|\bincorrect|\binvalid"
    r"|double[- ]check|\bnot (?:associated|linked|found)|\bwrong"
)
_OUT_OF_STOCK = re.compile(r"out of stock|sold out|not (?:in stock|available)|unavailable|no stock")
_CONFIRM = re.compile(
    r"\b(?:shall i|should i|would you like me to|do you want me to|can i go ahead|may i|go ahead|proceed|confirm"
    r"|is that (?:ok|okay|right|correct|fine))"
)
_DONE = re.compile(
    r"\b(?:refunded|processed|cancell?ed|updated|changed|exchanged|escalated|created|opened|issued|done|completed?|"
    r"confirmed|submitted|has been|have been|is now|all set)\b"
)
_REFUSE = re.compile(
    r"\b(?:can ?n[o']t|cannot|unable|not able|not eligible|ineligible|outside|past the|beyond|expired|not allowed|not permitted|"
    r"only the account holder|against (?:our )?policy|afraid|decline|won't be able|unfortunately)"
)


class RuleBasedCustomer(CustomerSimulator):
    """A deterministic customer driven by keyword rules on the agent's last text turn.

    Per agent turn, in order:

    1. the agent says the details do not match and the customer gave `User.wrong_order_id`:
       give the right order id;
    2. the agent says the wanted variant is out of stock and there is a
       `User.fallback_variant`: offer it;
    3. the request is resolved: every `required_info` string has been said by the agent
       (in any of its turns, as the verifier checks), this turn does not ask for
       confirmation, and it reports an outcome ("refunded", "escalated", ...) or declines
       ("I'm afraid", "outside the window", ...), or the scenario needs no change: say
       thanks and `STOP_TOKEN`;
    4. the agent asks for facts (email, order id, new address, ...; any fact whose key it
       mentions): give them; asks for confirmation: agree;
    5. the agent declines and the scenario needs no change: accept and stop;
    6. otherwise the turn was unproductive: restate the request; after `patience`
       unproductive turns in a row, give up and stop. Being asked again only for facts
       already given twice also counts as unproductive.

    Phrasing varies like real customers' does, fixed by `style_seed`: each answer's wording
    is drawn from a few templates, and one customer in five gives order ids as a bare
    number ("55669" for "O-55669").
    """

    def __init__(self, user: User, required_info: list[str], needs_change: bool, *, patience: int = 3, style_seed: int | str = 0):
        if patience < 1:
            raise ValueError(f"patience must be >= 1, got {patience}")
        self.user = user
        self.required_info = required_info
        self.needs_change = needs_change
        self.patience = patience
        self._wrong_given = False
        self._corrected = user.wrong_order_id is None
        self._fallback_given = False
        self._unproductive = 0
        self._given: dict[str, int] = {}  # times each fact was given
        self._style = random.Random(f"customer-style/{style_seed}")
        self._bare_order_number = self._style.random() < 0.2  # writes "55669" for "O-55669"

    def reply(self, messages: list[Message]) -> str:
        view = _customer_view(messages)
        text = view[-1][1] if view and view[-1][0] == "assistant" else ""
        lowered = text.casefold()
        said = "\n".join(content for role, content in view if role == "assistant")
        entities = extract_entities(said)
        told = all(fact_present(fact, said, entities) for fact in self.required_info)
        confirming = "?" in text and bool(_CONFIRM.search(lowered))
        if not self._corrected and self._wrong_given and _MISMATCH.search(lowered):
            self._corrected = True
            return self._productive(f"Oh, sorry, my mistake! The correct order id is {self._order_id(self.user.facts['order_id'])}.")
        if self.user.fallback_variant and not self._fallback_given and _OUT_OF_STOCK.search(lowered):
            self._fallback_given = True
            return self._productive(f"That's a pity. Then the {self.user.fallback_variant} variant would be fine too.")
        if told and not confirming:
            if _DONE.search(lowered) or _REFUSE.search(lowered) or not self.needs_change:
                return f"Thank you, that's all I needed. {STOP_TOKEN}"
        answers, repeated = self._answers(lowered)
        if confirming:
            answers.append(self._style.choice(_YES))
        if answers and not (repeated and len(repeated) == len(answers)):
            return self._productive(" ".join(answers))
        if answers:  # asked again for what they already said twice: answer, but lose patience
            self._unproductive += 1
            if self._unproductive >= self.patience:
                return f"I've told you this several times already. I'll try another time. {STOP_TOKEN}"
            return "As I said: " + " ".join(answers)
        if _REFUSE.search(lowered) and not self.needs_change:
            return f"I see. That's a shame, but thank you anyway. {STOP_TOKEN}"
        self._unproductive += 1
        if self._unproductive >= self.patience:
            return f"This isn't getting anywhere. I'll try another time. {STOP_TOKEN}"
        return f"Sorry, I'm not sure that helps. {self.user.opening}"

    def _productive(self, reply: str) -> str:
        self._unproductive = 0
        return reply

    def _answers(self, lowered: str) -> tuple[list[str], list[str]]:
        """Answers to the facts asked for in the agent's turn, and those already given twice."""
        answers, repeated = [], []
        for key, value in self.user.facts.items():
            pattern = _ASKS.get(key)
            asked = pattern.search(lowered) if pattern else key.replace("_", " ").casefold() in lowered
            if not asked:
                continue
            if key == "order_id":
                if not self._corrected:
                    self._wrong_given = True
                    value = self.user.wrong_order_id or value
                value = self._order_id(value)
            if key == "new_variant" and self._fallback_given and self.user.fallback_variant:
                value = self.user.fallback_variant
            phrasings = _ANSWERS.get(key, ("My " + key.replace("_", " ") + " is {}.",))
            answer = self._style.choice(phrasings).format(value)
            if self._given.get(key, 0) >= 2:
                repeated.append(answer)
            self._given[key] = self._given.get(key, 0) + 1
            answers.append(answer)
        return answers, repeated

    def _order_id(self, order_id: str) -> str:
        return order_id.rpartition("-")[2] if self._bare_order_number else order_id


LLM_SYSTEM_PROMPT = """You are playing a customer who is contacting {company}'s customer support by chat. Stay in role.

Your goal: {goal}
Your persona: {persona}

Facts only you know (give one only when the agent asks for it; never make up others):
{facts}

Rules:
- Write only the customer's next message: one or two short sentences, no role labels.
- Do not volunteer facts the agent has not asked for.
- When your goal is met, or the agent has clearly refused or cannot help, write a short goodbye followed by {stop}.
- If the conversation goes in circles, give up politely and end with {stop}."""


class LLMCustomer(CustomerSimulator):
    """A customer played by a language model through `JudgeLLM` (litellm: any provider, an
    OpenAI-compatible ``api_base``, or ``local/smollm2-135m-instruct``).

    The model gets `LLM_SYSTEM_PROMPT` (goal, persona, facts, the stop rule) and the
    conversation with roles swapped (the agent's turns as "user"); tool messages and the
    agent's tool calls are not shown. Replies are stripped; an empty reply becomes "...".
    Model failures (after `JudgeLLM`'s retries) raise `judgegym.judges.llm.JudgeError`.
    """

    def __init__(self, llm: JudgeLLM, user: User, company: str, *, system_prompt: str = LLM_SYSTEM_PROMPT):
        self.llm = llm
        facts = "\n".join(f"- {key.replace('_', ' ')}: {value}" for key, value in user.facts.items())
        if user.wrong_order_id:
            facts += f"\n- the first time you are asked for the order id, you mistakenly give {user.wrong_order_id}"
        if user.fallback_variant:
            facts += f"\n- if the variant you want is out of stock, you would accept {user.fallback_variant}"
        self.system_prompt = system_prompt.format(company=company, goal=user.goal, persona=user.persona, facts=facts, stop=STOP_TOKEN)

    def prompt(self, messages: list[Message]) -> list[dict[str, Any]]:
        """The chat messages sent to the model for the next reply."""
        swapped = {"user": "assistant", "assistant": "user"}
        return [{"role": "system", "content": self.system_prompt}] + [
            {"role": swapped[role], "content": text} for role, text in _customer_view(messages)
        ]

    def reply(self, messages: list[Message]) -> str:
        text, _ = run_sync(self.llm.complete(self.prompt(messages)))
        return text.strip() or "..."


__all__ = ["LLM_SYSTEM_PROMPT", "STOP_TOKEN", "CustomerSimulator", "LLMCustomer", "RuleBasedCustomer"]
