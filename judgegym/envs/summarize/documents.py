"""Procedurally generated long documents for Summarize-v0: operations reviews, incident reports,
meeting minutes and product specifications, one per (split, kind, seed).

Each document is about 3,100 to 4,700 words in 8 to 14 sections of up to 560 words. Its key facts (figures, dates,
decisions, owners) sit among distractors (last quarter's figure, the rejected vendor, the
time to mitigate next to the time to resolve) and filler paragraphs full of other numbers.
Train and test draw organisations, people, places, vendors and systems from disjoint pools.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from ...judges.facts import extract_entities
from .draft import Draft, Fact, Line, SectionSpec, count, money, money_m, percent
from .scenario import SummaryScenario

KINDS: tuple[str, ...] = ("operations_review", "incident_report", "meeting_minutes", "product_spec")
"""The generated document kinds."""

KIND_LABELS: dict[str, str] = {
    "operations_review": "operations review",
    "incident_report": "incident report",
    "meeting_minutes": "meeting minutes",
    "product_spec": "product specification",
}

# -- pools (each split uses its own part: see draft.split_pool) ---------------------------------

_ORG_NAMES = (
    "Halcyon", "Brightwater", "Kestrel", "Ironvale", "Larkfield", "Meridian", "Northgate", "Oakmere", "Pinecroft",
    "Redcliff", "Saltmarsh", "Thornbury", "Upperton", "Valecrest", "Westhaven", "Ashdown", "Blackmoor", "Coldharbour",
    "Dunmore", "Eastwick", "Fairhaven", "Glenrock", "Hartwell", "Ivybridge", "Juniper", "Kingsmead", "Lockwood",
    "Millbrook", "Newhaven", "Oldcastle", "Penrose", "Quarry Hill", "Rosewood", "Silverton", "Tallis", "Underhill",
    "Vantage", "Whitford", "Yardley", "Zephyr", "Amberley", "Birchwood",
)  # fmt: skip
_CITIES = (
    "Leeds", "Rotterdam", "Lyon", "Porto", "Gdansk", "Bilbao", "Tampere", "Graz", "Aarhus", "Leipzig", "Bologna",
    "Ghent", "Cork", "Brno", "Malmo", "Utrecht", "Nantes", "Seville", "Turin", "Bristol", "Dortmund", "Krakow",
    "Eindhoven", "Linz", "Bergen", "Antwerp", "Valencia", "Glasgow", "Lille", "Poznan", "Basel", "Odense",
    "Hamburg", "Zaragoza", "Genoa", "Cardiff", "Tartu", "Plovdiv", "Cluj", "Debrecen", "Kaunas", "Ljubljana",
)  # fmt: skip
_VENDORS = (
    "Corvid Analytics", "Brightline Systems", "Tessellate", "Quillon Data", "Halden Works", "Meridel Systems",
    "Parcelon", "Stratavia", "Lumora Labs", "Veltrix", "Oakridge Digital", "Sableform", "Northwind Consulting",
    "Cobaltia", "Fernlight", "Granitecore", "Helioscope", "Ironleaf Software", "Jadeport", "Kinnear & Vale",
    "Lodestar Partners", "Mosaiq", "Nimbusline", "Orrery Group", "Pellucid", "Quartzline", "Riverbend Solutions",
    "Skyloom", "Tidewell", "Umberfield", "Vireo Technologies", "Wexford Digital", "Xylem Works", "Yellowfin Labs",
    "Zenithal", "Arclight Data",
)  # fmt: skip
_SERVICES = (
    "ledger-proxy", "checkout-api", "auth-gateway", "payment-router", "session-store", "order-service",
    "search-indexer", "notification-hub", "billing-engine", "rate-limiter", "config-service", "feature-flags",
    "inventory-sync", "media-cache", "identity-broker", "event-bus", "pricing-service", "report-builder",
    "export-worker", "webhook-relay", "token-service", "catalog-api", "basket-service", "fraud-scorer",
    "geo-resolver", "mail-dispatcher", "shipping-quotes", "refund-processor", "audit-writer", "metrics-collector",
    "schema-registry", "queue-broker", "dns-cache", "edge-router", "image-resizer", "tenant-directory",
)  # fmt: skip
_CODENAMES = (
    "Kestrel", "Marlin", "Osprey", "Juniper", "Cobalt", "Lantern", "Meridian", "Harbor", "Sextant", "Aurora",
    "Beacon", "Cascade", "Driftwood", "Ember", "Fathom", "Glacier", "Horizon", "Inkwell", "Jetty", "Keystone",
    "Lumen", "Monsoon", "Nautilus", "Obsidian", "Pioneer", "Quarry", "Rampart", "Solstice", "Tundra", "Umbra",
    "Vanguard", "Wayfarer", "Yarrow", "Zodiac", "Anchor", "Bastion",
)  # fmt: skip


@dataclass
class _Plan:
    """A document kind's plan for one document: its facts and sentences, before filler."""

    title: str
    draft: Draft
    sections: dict[str, SectionSpec]
    core: tuple[str, ...]  # sections that always appear (they hold the key facts)
    words: tuple[int, int]  # range of the document's length
    facts: list[Fact] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)

    def add(
        self,
        fact: Fact,
        key_templates: tuple[str, ...],
        extra: tuple[tuple[str, str, dict[str, str]], ...] = (),
        fields: dict[str, str] | None = None,
    ) -> None:
        """Add a key fact, its key sentence (one of `key_templates`, with ``{value}``), and
        `extra` sentences as (section, template, fields), e.g. its distractors."""
        self.facts.append(fact)
        template = self.draft.rng.choice(key_templates)
        self.lines.append(Line(fact.section, template, {"value": fact.value, **(fields or {})}, lead=True))
        self.lines.extend(Line(section, text, values) for section, text, values in extra)

    def line(self, section: str, template: str, fields: dict[str, str] | None = None, *, lead: bool = False) -> None:
        self.lines.append(Line(section, template, dict(fields or {}), lead=lead))


def _spec(
    order: int,
    titles: tuple[str, ...],
    intros: tuple[str, ...],
    bank: tuple[str, ...],
    *,
    chronological: bool = False,
    weight: float = 1.0,
) -> SectionSpec:
    return SectionSpec(titles, intros, bank, order, chronological, weight)


# -- filler shared by every kind -------------------------------------------------------------------

GENERIC: tuple[str, ...] = (
    "{person} reminded readers that the figures in this section come from the monthly close and may be restated after audit.",
    "The {team} team asked whether the current reporting cadence is still the right one, and it was agreed to revisit it later.",
    "A short survey of {small} managers found broad support for the approach, although several asked for clearer guidance.",
    "Where a figure here differs from an earlier draft, the later figure should be used; the change log lists {few} corrections.",
    "{person} pointed out that comparisons with earlier periods are affected by the change in accounting policy made in {year}.",
    "None of the items discussed here requires a decision beyond those recorded elsewhere in this document.",
    "The working group met {few} times and published short notes after each meeting.",
    "Feedback from the regional teams has been consolidated and will be shared with the leadership group in a separate memo.",
    "Several smaller initiatives were paused so that the team could focus on the priorities agreed at the start of the year.",
    "Spending on external advisers in this area came to {money}, broadly in line with expectations.",
    "The {team} team now publishes a weekly dashboard, which has been opened roughly {count} times since it launched.",
    "It is worth stressing that these observations are provisional and rest on a limited sample.",
    "Training completion reached {pct}, with the remaining staff booked onto sessions over the coming weeks.",
    "{person} will present a fuller analysis at a later meeting if the trend persists.",
    "Documentation for the process lives in the shared handbook, which was last revised on {date}.",
    "The figures exclude one-off items, which are listed separately where relevant.",
    "A trial in {city} ran for {days} and produced results that were encouraging but not conclusive.",
    "Internal audit reviewed the controls in this area and raised {small} low-priority findings, all of which have owners.",
    "There were no changes to the governance arrangements in this area.",
    "Readers who need the underlying data can request access through the usual channels; the data set has about {count} rows.",
    "The cost of this work was {money} below the original estimate, mostly because of hiring delays.",
    "Colleagues in {city} contributed much of the groundwork, and their effort is gratefully acknowledged.",
    "Capacity in the {team} team remained tight, with utilisation averaging {pct}.",
    "An informal comparison with {small} peer organisations suggests performance close to the median on most measures.",
    "The points in this section were discussed with {person} before publication.",
    "A number of long-standing issues were closed, bringing the open list down to {few} items.",
    "Process changes introduced in {year} continue to bear fruit, though the gains are now smaller each quarter.",
    "A note to staff about these changes went out on {date} and drew few questions.",
    "Travel and events spending totalled {money}, below the cap set at the start of the year.",
    "{person} has agreed to be the point of contact for questions about this section.",
    "The method is unchanged from previous reports, so figures are directly comparable unless noted otherwise.",
    "Staff turnover in the {team} team was {pct} on an annualised basis.",
    "The legal team reviewed the wording of the related policies and suggested only minor edits.",
    "Some of the data for {city} arrived late and has been estimated where necessary.",
    "Over the past {few} months the volume of internal requests has grown steadily, though not yet enough to need more staff.",
    "Historical comparisons go back to {year}, when the current data warehouse was introduced.",
    "A clean-up of the internal wiki removed about {count} outdated pages.",
    "The team also tracks {small} secondary indicators that are not reported here in detail.",
    "Nothing in this section changes the overall assessment given at the start of the document.",
    "A cross-functional review is planned for later in the year to check that these arrangements still work.",
    "{person} thanked the {team} team for turning the analysis around in {days}.",
    "A backlog of {small} minor requests was cleared during the period.",
    "The next update on this topic will include the results of the survey that closed on {date}.",
    "Opinions differed on how much weight to give the early results, and the discussion was noted without a conclusion.",
    "A briefing pack of {small} pages was prepared for new joiners.",
    "{person} chaired a short workshop on the topic, attended by {few} colleagues.",
    "The team reviewed its own assumptions twice during the period and changed {few} of them.",
    "A first draft of a new dashboard has been built and will be tested with {few} users.",
    "Progress against last year's recommendations is mixed: most are complete, a few remain open.",
    "Data quality has improved, although manual corrections are still needed each week.",
    "A review of handovers between teams found that responsibilities were mostly clear.",
    "The team is piloting a shorter weekly report, which early readers prefer.",
    "Managers were asked to confirm the accuracy of the figures for their areas before publication.",
    "Two long-serving colleagues retired during the period, and their knowledge has been documented.",
    "A new starter guide was written for the {team} team.",
    "Demand for analysis from other departments continues to exceed the capacity available.",
    "The recommendations from the external review in {year} have now all been addressed.",
    "{person} raised a concern about the workload of the {team} team, which will be monitored.",
    "Meeting notes and supporting papers are stored in the shared drive.",
    "The escalation route for urgent questions is unchanged.",
    "A lessons-learned session was held after the busiest week and produced {few} practical changes.",
    "It was agreed that the next update should be shorter and focus on exceptions.",
    "The template for status reports was simplified after feedback from readers.",
    "Budget holders were reminded of the deadline for the mid-year forecast.",
    "There is no evidence so far that the change has had unintended effects.",
    "The team in {city} has offered to host the next planning session.",
    "Spending on software subscriptions was {money}, slightly above the previous year.",
    "Requests for exceptions to the standard process fell to {small} over the period.",
    "Benchmarks from the industry body were published on {date} and are broadly consistent with our own figures.",
    "{person} will circulate a short note summarising the open questions.",
    "A pilot of shared service desks in {city} will continue for another {days}.",
    "An internal newsletter item about this work was read by roughly {count} colleagues.",
    "The governance calendar for next year has been drafted and shared with the {team} team.",
    "External consultants were used for specialist advice only, at a cost of {money}.",
    "Not every measure moved in the right direction, and the exceptions are explained where they arise.",
)


# -- operations review ------------------------------------------------------------------------------

_OPS_SECTIONS: dict[str, SectionSpec] = {
    "summary": _spec(
        0,
        ("Executive summary", "Summary", "Overview of the quarter"),
        (
            "This review summarises the operational and financial performance of {org} in {period}.",
            "{period} was a quarter of steady execution for {org}, with progress on most of the priorities set at the start of the year.",
            "This document reviews how {org} performed in {period} and records the decisions taken by the executive team.",
        ),
        (
            "The sections that follow cover finance, fulfilment, customer support, people, network expansion and procurement.",
            "Overall, the executive team considers the quarter to have been in line with expectations, with exceptions noted below.",
            "Where figures are compared with {prev_period}, the comparison uses the same method and the same set of sites.",
            "The review was prepared by the strategy office with input from every functional lead.",
            "Several risks flagged in the previous review have eased, while two new ones have been added.",
            "Most operational measures improved slightly, although costs in {city} remain above plan.",
            "The appendices hold site-level detail that is not repeated in the main text.",
            "The quarter-end close was completed in {days}, and the {team} team is thanked for its work on it.",
            "A draft of this review was circulated to site managers on {date} and their comments have been incorporated.",
        ),
    ),
    "history": _spec(
        1,
        ("Background: company history", "Background", "About {org}"),
        ("{org} was founded in {year} as a regional haulier.", "This background section is included for readers new to {org}."),
        (
            "The company opened its first warehouse in {city} in {year}.",
            "A management buyout in {year} set the business on its current course.",
            "The customer base grew from a handful of retailers to more than {count} business accounts.",
            "The company moved into e-commerce fulfilment in {year}, and that work now makes up most of its volume.",
            "Its founders still sit on the board, although neither has an executive role.",
            "Over the years {org} has acquired {few} smaller operators.",
            "The head office moved to {city} in {year}.",
            "The company's values, written down in {year}, emphasise safety, reliability and fairness.",
            "The fleet has grown to about {count} vehicles, including subcontracted capacity.",
            "Past expansions have typically taken two years from decision to opening.",
        ),
    ),
    "finance": _spec(
        2,
        ("Financial performance", "Finance", "Financial results"),
        (
            "This section covers the financial results for {period}.",
            "Financial performance in {period} was shaped by contract volumes and by continued pressure on transport costs.",
        ),
        (
            "Transport costs rose by {pct} compared with the same quarter last year, mainly because of fuel surcharges.",
            "Labour costs were {moneym}, slightly above plan because of overtime during the peak weeks.",
            "Working capital improved as debtor days fell to {small}.",
            "The largest customer accounted for {pct} of sales, down from the previous year as the customer base broadened.",
            "Property costs were flat, with rent reviews at {small} sites deferred to next year.",
            "Cash at the end of the quarter stood at {moneym}.",
            "The finance team completed the move of the general ledger to {system}, which should shorten future closes.",
            "Bad-debt provisions of {money} were released after a long-standing dispute was settled.",
            "Energy costs at the warehouses came to {money}, with {city} the largest single consumer.",
            "Foreign-exchange effects were small, amounting to less than {money} in total.",
            "Insurance premiums rose at renewal, adding about {money} to the annual cost base.",
            "Spending on existing sites totalled {moneym}, mostly on racking and conveyor upgrades.",
            "{person} noted that the cost-to-serve model is being rebuilt and will be ready for the next review.",
        ),
    ),
    "fulfilment": _spec(
        3,
        ("Fulfilment and delivery", "Fulfilment", "Warehouse and delivery performance"),
        (
            "This section reports on order volumes, delivery performance and warehouse productivity.",
            "The fulfilment network handled a busy quarter without major disruption.",
        ),
        (
            "Pick rates at {city} averaged {count} lines per shift, the highest in the network.",
            "The share of parcels dispatched on the day they were placed was {pct}.",
            "Damaged-in-transit claims fell to {small} per ten thousand parcels.",
            "New slotting rules in {system} reduced average travel distance for pickers by {pct}.",
            "Two of the older sortation lines in {city} were taken out of service for refurbishment for {days}.",
            "Returns volumes were {count} units, most of them processed within {days}.",
            "The fleet team retired {small} of the oldest vans and replaced them with electric models.",
            "Peak-week volumes were handled with temporary staff from {small} agencies.",
            "Inventory accuracy, measured by cycle counts, was {pct}.",
            "Dock-to-stock time improved to {hours} on average.",
            "Mis-shipments were traced mainly to labelling errors, which the {team} team is addressing.",
            "{person} led a review of the late-evening cut-off, which will move back by half an hour from next month.",
        ),
    ),
    "support": _spec(
        4,
        ("Customer support", "Customer service", "Support and customer experience"),
        (
            "Customer support volumes and service quality are summarised here.",
            "The customer support team dealt with higher contact volumes than usual this quarter.",
        ),
        (
            "The average first response time on email was {hours}.",
            "Chat accounted for {pct} of all contacts, up from last year.",
            "The most common contact reason was delivery status, followed by address changes.",
            "A new self-service tracking page launched on {date} and deflected an estimated {count} contacts.",
            "Complaints escalated to the executive office numbered {small}.",
            "The support team ran a calibration exercise so that agents score quality consistently.",
            "Agent attrition remained a concern, at {pct} annualised.",
            "The knowledge base was reorganised and {small} outdated articles were removed.",
            "Weekend coverage was extended in {city} to match the delivery schedule.",
            "{person} presented a proposal to route business customers to a dedicated queue.",
            "Average handling time on the phone was {minutes}.",
            "Customer effort scores improved after the returns form was simplified.",
        ),
    ),
    "people": _spec(
        5,
        ("People and organisation", "People", "Workforce"),
        (
            "This section covers the workforce, hiring and engagement.",
            "The people team focused on retention and on hiring for the peak season.",
        ),
        (
            "Voluntary attrition for the quarter was {pct}.",
            "The engagement survey had a response rate of {pct}, the highest since it began.",
            "{small} managers completed the new leadership programme.",
            "Absence was highest in {city}, where a seasonal illness affected several shifts.",
            "The graduate scheme received {count} applications for its next intake.",
            "A revised shift pattern was agreed with employee representatives on {date}.",
            "The average time to fill a warehouse vacancy fell to {days}.",
            "Internal promotions filled {pct} of supervisory roles.",
            "Wellbeing initiatives included a trial of flexible shift swaps in {city}.",
            "{person} joined the executive team as interim lead for the {team} function.",
            "The pay review for operational staff takes effect next quarter, at a cost of about {moneym} a year.",
            "Agency workers made up {pct} of hours worked during peak weeks.",
        ),
    ),
    "network": _spec(
        6,
        ("Network expansion", "Network and capacity planning", "Capacity and new sites"),
        (
            "This section records the executive team's decision on new distribution capacity.",
            "Capacity in the existing network is close to its limit, and the executive team reviewed options for more this quarter.",
        ),
        (
            "Utilisation across the existing sites averaged {pct} during the quarter.",
            "The site selection study weighed labour availability, road access, land costs and proximity to customers.",
            "A consultancy was engaged to model demand growth over the next five years.",
            "The planning application process is expected to take several months.",
            "Engagement with the local authority has been positive so far.",
            "The design brief calls for a building of about {count} square metres.",
            "Automation options will be evaluated separately once the building design is fixed.",
            "Transport modelling suggests average delivery distances will fall by {pct} once the new capacity is running.",
            "{person} briefed the board on the labour market study, which found adequate availability of warehouse staff.",
            "Sustainability requirements for the new building include solar panels and rainwater harvesting.",
            "The lease-versus-buy analysis favoured a long lease with an option to purchase.",
        ),
    ),
    "procurement": _spec(
        7,
        ("Procurement and carriers", "Procurement", "Suppliers and carriers"),
        (
            "This section covers supplier performance and purchasing.",
            "Procurement activity this quarter centred on transport and packaging contracts.",
        ),
        (
            "Fuel surcharge mechanisms are being reviewed across all transport agreements.",
            "Packaging suppliers raised prices by an average of {pct}.",
            "A tender for forklift maintenance closed on {date} with {small} bids.",
            "Spend under management reached {pct} of total third-party spend.",
            "The procurement team introduced a supplier code of conduct, which {small} suppliers have signed so far.",
            "Consolidating the purchase of consumables is expected to save {money} a year.",
            "{vendor} was added to the approved supplier list for temporary labour.",
            "Payment terms for smaller suppliers were shortened to support their cash flow.",
            "Contract data is being moved into {system} so that renewal dates are tracked automatically.",
            "{person} chaired the quarterly supplier review meeting.",
        ),
    ),
    "customers": _spec(
        8,
        ("Customers and contracts", "Commercial update"),
        ("This section covers new business and customer retention.", "The commercial team had a productive quarter."),
        (
            "{small} new customer contracts were signed, the largest with a homewares retailer.",
            "One customer served notice, citing a move to in-house fulfilment.",
            "The pipeline of proposals stands at {moneym} of annual value.",
            "Price increases averaging {pct} were agreed with most customers at renewal.",
            "A customer advisory board met for the first time on {date}.",
            "{person} leads the account team for the three largest customers.",
            "Customer audits of our sites passed without major findings.",
            "Service credits paid to customers totalled {money}.",
            "Cross-selling of returns handling added {small} accounts.",
        ),
    ),
    "technology": _spec(
        9,
        ("Technology and systems", "Technology"),
        (
            "This section summarises changes to the systems that run the operation.",
            "Technology work this quarter was dominated by upgrades to {system}.",
        ),
        (
            "Availability of {system} was {pct} over the quarter.",
            "The upgrade of {system} was completed over a weekend with no impact on shipping.",
            "Handheld scanners at {small} sites were replaced with newer models.",
            "A data warehouse refresh reduced the time to produce daily reports to {minutes}.",
            "Security patching compliance reached {pct}.",
            "The integration with {vendor} went live on {date}.",
            "Two minor outages of {system} were resolved within the agreed recovery time.",
            "The technology roadmap for next year prioritises forecasting and yard visibility.",
            "{person} is leading a review of software licences, which has found {money} of unused spend.",
            "Wi-Fi coverage at {city} was improved after complaints from pickers.",
            "A phishing simulation was clicked by {pct} of recipients, fewer than in the previous exercise.",
        ),
    ),
    "safety": _spec(
        10,
        ("Health, safety and environment", "Safety and environment"),
        (
            "Safety performance and environmental measures are reported in this section.",
            "Keeping people safe remains the first priority of every site.",
        ),
        (
            "Near-miss reports increased to {count}, which the safety team reads as a sign of better reporting.",
            "A fire drill at {city} revealed a blocked exit, which was cleared the same day.",
            "Forklift refresher training was completed by {pct} of licensed drivers.",
            "Scope one and two emissions fell by {pct} year on year.",
            "Waste sent to landfill was {count} kilograms, with recycling rates improving at every site.",
            "The safety committee met monthly and reviewed {small} incident investigations.",
            "An external audit of {city} found no major non-conformities.",
            "{person} introduced a new pre-shift safety briefing format.",
            "Electric vehicle charging points were installed at {small} sites.",
            "Noise monitoring in the sortation hall found levels within limits.",
        ),
    ),
    "facilities": _spec(
        11,
        ("Facilities and maintenance", "Property and maintenance"),
        (
            "This section covers the condition and maintenance of the property portfolio.",
            "Maintenance work this quarter focused on roofs, docks and lighting.",
        ),
        (
            "Roof repairs at {city} were completed ahead of the winter.",
            "LED lighting now covers {pct} of warehouse floor space.",
            "Planned maintenance compliance was {pct}.",
            "Dock levellers at {small} doors were replaced.",
            "The maintenance budget was underspent by {money} because parts arrived late.",
            "Security guarding contracts were renewed with {vendor}.",
            "Car parking at {city} was extended to reduce congestion at shift change.",
            "A condition survey of the oldest building identified {small} items for the next capital plan.",
            "Cleaning contracts were retendered and will switch over on {date}.",
            "{person} manages the facilities helpdesk, which received {count} requests.",
        ),
    ),
    "risk": _spec(
        12,
        ("Risks and mitigations", "Risk register"),
        ("The principal risks tracked by the executive team are summarised below.", "This section updates the risk register."),
        (
            "Labour availability remains the highest-rated risk, particularly in {city}.",
            "The risk of a cyber incident affecting {system} is mitigated by offline backups and a tested recovery plan.",
            "Customer concentration risk has eased as new contracts were signed.",
            "Fuel price volatility is partly hedged through surcharge clauses.",
            "The risk of delay to the expansion programme is rated medium because planning approval is not yet secured.",
            "Regulatory changes to driver hours could affect route planning from next year.",
            "A supplier failure risk was added after {vendor} reported financial difficulties.",
            "Business continuity plans were tested at {few} sites.",
            "{person} owns the review of insurance cover, which will conclude before renewal.",
            "Climate-related risks, including flooding at low-lying sites, are being assessed.",
            "The executive team reviews the register monthly and the board quarterly.",
        ),
    ),
    "market": _spec(
        13,
        ("Market context", "Market and competition"),
        ("This section sets the quarter in the context of the wider market.", "Demand in the sector grew modestly during the quarter."),
        (
            "Industry parcel volumes grew by about {pct} year on year.",
            "Competitors continued to invest in automation, with at least {few} new automated sites announced.",
            "Warehouse rents in the main corridors rose by {pct}.",
            "Consumer confidence weakened late in the quarter, which may affect volumes in the months ahead.",
            "Several smaller operators left the market, creating opportunities to win their customers.",
            "Customers increasingly ask for delivery slots of an hour or less.",
            "The market for temporary warehouse labour remains tight.",
            "E-commerce penetration in the regions we serve is estimated at {pct}.",
            "New entrants are competing mainly on price in the same-day segment.",
        ),
    ),
    "sites": _spec(
        20,
        ("Appendix A: site-level figures", "Appendix: site detail"),
        ("This appendix gives selected figures for individual sites.", "Site-level figures are provided for reference."),
        (
            "{city} dispatched {count} parcels and handled {count2} returns.",
            "Utilisation at {city} peaked at {pct} in the busiest week.",
            "{city} reported {small} reportable safety incidents.",
            "Energy use at {city} was {count} kilowatt-hours.",
            "Labour productivity at {city} was {pct} above the network average.",
            "{city} recorded inventory accuracy of {pct}.",
            "The {city} site processed {count} inbound pallets.",
            "Overtime at {city} amounted to {pct} of hours worked.",
            "{city} received {small} customer complaints that were escalated beyond the site.",
        ),
    ),
    "methodology": _spec(
        21,
        ("Appendix B: definitions and methodology", "Appendix: methodology"),
        ("This appendix defines the measures used in the review.", "Definitions used throughout this document are set out below."),
        (
            "A delivery counts as punctual if it arrives within the promised window.",
            "Sales figures are reported net of fuel surcharges passed through to customers.",
            "Workforce figures include permanent and fixed-term employees but exclude agency workers.",
            "Service quality is measured by a survey sent after each resolved contact.",
            "Profitability measures are calculated before interest and tax.",
            "Utilisation is the share of usable pallet positions occupied at the end of each day.",
            "Contacts include emails, chats and phone calls logged in the support system.",
            "Parcels are counted when they leave the building, not when they are placed.",
            "Figures for {prev_period} have been restated where the definitions changed.",
            "Site-level figures may not sum to network totals because of rounding and central adjustments.",
            "Where data was missing for part of a week, it was estimated from the adjacent weeks.",
        ),
    ),
}
_OPS_CORE = ("summary", "finance", "fulfilment", "support", "people", "network", "procurement")
_SITE_SUBJECT = ["distribution centre", "distribution center", "new site", "programme", "program"]


def _operations_review(rng: random.Random, split: str) -> _Plan:
    quarter, year = rng.randint(1, 4), rng.randint(2023, 2027)
    prev_quarter, prev_year = (quarter - 1, year) if quarter > 1 else (4, year - 1)
    period, prev_period = f"Q{quarter} {year}", f"Q{prev_quarter} {prev_year}"
    end = dt.date(year, 3 * quarter, 28)
    d = Draft(
        rng,
        split,
        end,
        {"period": period, "prev_period": prev_period},
        taken={f"num:{quarter}", f"num:{year}", f"num:{prev_quarter}", f"num:{prev_year}"},
    )
    org = f"{d.pick('org', _ORG_NAMES)[0]} {rng.choice(('Logistics', 'Freight', 'Distribution', 'Fulfilment'))}"
    d.constants["org"] = org
    sites = d.pick("city", _CITIES, 5)
    new_city, *shortlist = d.pick("city", _CITIES, 3)
    d.set_lists(
        team=["finance", "network planning", "customer support", "people", "procurement", "safety", "technology", "fleet", "analytics"],
        city=sites,
        system=[
            "the warehouse management system",
            "the route optimiser",
            "the order management platform",
            "the labour scheduling tool",
            "the yard management system",
        ],
        vendor=d.pick("vendor", _VENDORS, 4),
    )
    lead = d.person("Vice President of Network Planning")
    sponsor = d.person("Chief Operating Officer", quiet=True)
    buyer = d.person("Head of Procurement")
    helper = d.person("Senior Category Manager", quiet=True)
    for role in ("Chief Executive", "Chief Financial Officer", "Head of Customer Support", "People Director", "Site Manager"):
        d.person(role)
    p = _Plan(f"{org} Operations Review, {period}", d, _OPS_SECTIONS, _OPS_CORE, (3800, 5000))

    revenue, tenths = d.reserve_int(money_m, 180, 2400)
    rev_prev, rev_plan = d.reserve_near(money_m, tenths, 0.04, 0.15), d.reserve_near(money_m, tenths, 0.02, 0.09)
    p.add(
        Fact(
            "Revenue for the quarter",
            revenue,
            ["revenue"],
            f"Revenue for {period} was {revenue}.",
            "finance",
            [rev_prev, rev_plan],
            [_short_m(revenue)],
        ),
        (
            "Revenue for {period} was {value}.",
            "{org} recorded revenue of {value} in {period}.",
            "Quarterly revenue reached {value}, with growth concentrated in e-commerce contracts.",
        ),
        (
            ("finance", "In {prev_period}, revenue had been {d}.", {"d": rev_prev}),
            ("finance", "The annual plan had assumed revenue of {d} for the quarter.", {"d": rev_plan}),
        ),
    )
    margin, tenths = d.reserve_int(percent, 45, 240)
    margin_budget = d.reserve_near(percent, tenths, 0.05, 0.2)
    p.add(
        Fact("Operating margin", margin, ["margin"], f"The operating margin was {margin}.", "finance", [margin_budget]),
        ("The operating margin was {value} for the quarter.", "Operating margin came to {value}, helped by lower agency costs."),
        (("finance", "The budget had assumed an operating margin of {d}.", {"d": margin_budget}),),
    )
    on_time, tenths = d.reserve_int(percent, 860, 990)
    best, on_time_prev = d.reserve_near(percent, tenths, 0.005, 0.02), d.reserve_near(percent, tenths, 0.01, 0.04)
    p.add(
        Fact(
            "On-time delivery rate", on_time, ["on-time", "on time"], f"On-time delivery was {on_time}.", "fulfilment", [best, on_time_prev]
        ),
        ("Across the network, {value} of deliveries arrived on time.", "The on-time delivery rate for the quarter was {value}."),
        (
            (
                "fulfilment",
                "{best_city} was again the strongest site, with {d} of its deliveries on time.",
                {"d": best, "best_city": sites[0]},
            ),
            ("fulfilment", "On-time delivery had been {d} in {prev_period}.", {"d": on_time_prev}),
        ),
    )
    hundreds = lambda k: count(k * 100)  # noqa: E731
    orders, n = d.reserve_int(hundreds, 2500, 49000)
    orders_prev = d.reserve_near(hundreds, n, 0.05, 0.15)
    p.add(
        Fact(
            "Orders shipped in the quarter", orders, ["order"], f"{orders} orders were shipped in the quarter.", "fulfilment", [orders_prev]
        ),
        ("The network shipped {value} orders in {period}.", "Order volume for the quarter was {value}."),
        (("fulfilment", "In {prev_period} the network had shipped {d} orders.", {"d": orders_prev}),),
    )
    tickets, n = d.reserve_int(count, 8000, 95000)
    backlog, tickets_prev = d.reserve_near(count, n, 0.85, 0.95, direction=-1), d.reserve_near(count, n, 0.05, 0.2)
    p.add(
        Fact(
            "Support tickets handled",
            tickets,
            ["ticket"],
            f"Customer support handled {tickets} tickets.",
            "support",
            [backlog, tickets_prev],
        ),
        ("Customer support handled {value} tickets during the quarter.", "The support team handled {value} tickets in {period}."),
        (
            ("support", "The open backlog stood at {d} tickets on the last day of the quarter.", {"d": backlog}),
            ("support", "{prev_period} volume had been {d} tickets.", {"d": tickets_prev}),
        ),
    )
    csat, tenths = d.reserve_int(percent, 710, 940)
    bench = d.reserve_near(percent, tenths, 0.02, 0.08)
    p.add(
        Fact(
            "Customer satisfaction (CSAT)", csat, ["satisfaction", "csat"], f"Customer satisfaction (CSAT) was {csat}.", "support", [bench]
        ),
        ("Customer satisfaction (CSAT) was {value}.", "The CSAT score for the quarter was {value}."),
        (("support", "The industry satisfaction benchmark we track stands at {d}.", {"d": bench}),),
    )
    headcount, n = d.reserve_int(count, 420, 9800)
    workforce_plan, hires = d.reserve_near(count, n, 0.03, 0.1), d.reserve_int(count, 30, 400)[0]
    p.add(
        Fact(
            "Headcount at quarter end",
            headcount,
            ["headcount", "employees", "staff"],
            f"Headcount at quarter end was {headcount} employees.",
            "people",
            [workforce_plan, hires],
        ),
        ("Headcount at the end of the quarter was {value} employees.", "The company ended {period} with {value} employees."),
        (
            ("people", "The workforce plan had assumed {d} employees by this point.", {"d": workforce_plan}),
            ("people", "{d} people were hired during the quarter.", {"d": hires}),
        ),
    )
    p.add(
        Fact(
            "Location of the new distribution centre",
            new_city,
            _SITE_SUBJECT,
            f"A new distribution centre will be built in {new_city}.",
            "network",
            shortlist,
        ),
        (
            "The executive team approved a new distribution centre in {value}.",
            "After comparing three locations, the board chose {value} for the new distribution centre.",
        ),
        (
            (
                "network",
                "{d1} and {d2} were also shortlisted but scored lower on labour availability and land costs.",
                {"d1": shortlist[0], "d2": shortlist[1]},
            ),
        ),
    )
    capex, tenths = d.reserve_int(money_m, 40, 600)
    request = d.reserve_near(money_m, tenths, 0.08, 0.25, direction=1)
    p.add(
        Fact(
            "Capital approved for the new site",
            capex,
            ["capital", "capex", "investment"],
            f"The board approved {capex} of capital expenditure for the new site.",
            "network",
            [request],
            [_short_m(capex)],
        ),
        (
            "Capital expenditure of {value} was approved for the project.",
            "The board approved {value} of capital investment for the programme.",
        ),
        (("network", "The original request had been for {d}.", {"d": request}),),
    )
    opening = d.reserve_date(end + dt.timedelta(days=200), 280)
    first_plan = d.reserve_date(end + dt.timedelta(days=120), 400)
    p.add(
        Fact(
            "Opening date of the new site",
            opening,
            ["open", "go-live"],
            f"The new site is due to open on {opening}.",
            "network",
            [first_plan],
        ),
        ("The new distribution centre is scheduled to open on {value}.", "Opening is planned for {value}, subject to planning consent."),
        (("network", "The first business case had assumed an opening date of {d}.", {"d": first_plan}),),
    )
    p.add(
        Fact(
            "Lead of the new site programme",
            lead.name,
            _SITE_SUBJECT,
            f"{lead.name} will lead the new site programme.",
            "network",
            [sponsor.name],
            [lead.last],
        ),
        ("{value}, the {role}, will lead the programme.", "The programme will be led by {value}, the {role}."),
        (("network", "{d}, the {d_role}, is the executive sponsor of the programme.", {"d": sponsor.name, "d_role": sponsor.role}),),
        {"role": lead.role},
    )
    due = d.reserve_date(end + dt.timedelta(days=30), 100)
    expiry = d.reserve_date(end + dt.timedelta(days=140), 200)
    _action_pair(
        p,
        "procurement",
        buyer.name,
        buyer.last,
        due,
        "renegotiate the national carrier contract",
        "the carrier contract renegotiation",
        ["carrier"],
        owner_distractors=[helper.name],
        due_distractors=[expiry],
        fields={"role": buyer.role},
        template="{owner}, the {role}, will {action} by {due}.",
    )
    p.line("procurement", "The current carrier contract expires on {d}.", {"d": expiry})
    p.line("procurement", "{d} will support the analysis of lane-level rates.", {"d": helper.name})
    p.line("summary", "Revenue for the quarter was {value}.", {"value": revenue}, lead=True)
    p.line(
        "summary",
        "The most significant decision of the quarter was to build a new distribution centre in {value}.",
        {"value": new_city},
        lead=True,
    )
    return p


def _action_pair(
    p: _Plan,
    section: str,
    owner: str,
    surname: str,
    due: str,
    action: str,
    noun: str,
    subject: list[str],
    *,
    owner_distractors: list[str] | None = None,
    due_distractors: list[str] | None = None,
    fields: dict[str, str] | None = None,
    template: str = "{owner} will {action} by {due}.",
) -> None:
    """Two key facts, the owner and the deadline of an action item, stated in one sentence."""
    statement = f"{owner} will {action} by {due}."
    p.facts.append(Fact(f"Owner of {noun}", owner, subject, statement, section, list(owner_distractors or []), [surname]))
    p.facts.append(Fact(f"Deadline for {noun}", due, subject, statement, section, list(due_distractors or [])))
    p.line(section, template, {"owner": owner, "due": due, "action": action, **(fields or {})}, lead=True)


def _short_m(value: str) -> str:
    """ "$4.2 million" -> "$4.2M"."""
    return value.replace(" million", "M")


# -- incident report ---------------------------------------------------------------------------------

_INCIDENT_SECTIONS: dict[str, SectionSpec] = {
    "summary": _spec(
        0,
        ("Summary", "Incident summary", "Executive summary"),
        (
            "This report describes the incident {inc}, which affected {service}, and the actions agreed afterwards.",
            "This is the post-incident review of {inc}, written in the blameless format used across {org}.",
        ),
        (
            "The report was reviewed by the engineering leadership group before publication.",
            "The purpose of the review is to learn from the incident, not to assign blame.",
            "All times in this report are in UTC.",
            "The sections below cover impact, the timeline, detection, the root cause, contributing factors and follow-up actions.",
            "Customers were informed through the status page and, for the largest accounts, directly by their account managers.",
            "The incident was declared at the highest severity level because checkout traffic was affected.",
            "A draft of this report was shared with the teams involved on {date} for comments.",
            "Questions about this report should be directed to the reliability engineering team.",
        ),
    ),
    "architecture": _spec(
        1,
        ("Background: system architecture", "Background", "How the system works"),
        (
            "This background section explains how {service} fits into the wider platform.",
            "Readers unfamiliar with the platform may find this overview of the architecture useful.",
        ),
        (
            "{service} sits behind the edge load balancers and serves requests from the web and mobile clients.",
            "Requests fan out to {system} and {system2}, which hold session and pricing data.",
            "The platform runs in {few} availability zones in two regions.",
            "Each service publishes metrics to the central monitoring stack, which retains them for {days}.",
            "Deployments go through a staging environment and a progressive rollout.",
            "Configuration is stored centrally and pushed to services within a few seconds of a change.",
            "Most services scale automatically on request rate, with a floor of {few} instances each.",
            "The data layer uses a primary database with read replicas in each zone.",
            "{system} was rewritten in {year} and has been stable since.",
            "Traffic peaks in the evening, when volumes reach about {count} requests per second.",
            "Service ownership is recorded in the service catalogue, which lists {small} production services.",
        ),
    ),
    "impact": _spec(
        2,
        ("Customer impact", "Impact"),
        ("This section describes who was affected and how.", "The incident had a direct effect on customers trying to complete purchases."),
        (
            "Customers saw error pages or long waits when submitting orders.",
            "Mobile app users were affected as well as web users, because both use the same backend.",
            "Business customers using the API received timeout errors.",
            "Support received {count} contacts related to the incident over the following two days.",
            "Social media mentions of the outage peaked at around {small} per minute.",
            "Some customers retried their orders and were charged twice; these charges were reversed.",
            "Partners who depend on our webhooks saw delays in order notifications.",
            "No data was lost, and all orders that appeared to succeed were processed.",
            "Conversion rates took several hours to return to normal after service was restored.",
            "Internal tools that rely on {system} were also degraded.",
        ),
    ),
    "timeline": _spec(
        3,
        ("Timeline", "Timeline of events"),
        ("The timeline below lists the main events in order.", "Key events during the incident are listed below, in UTC."),
        (
            "At {time}, a configuration change was deployed to {system}.",
            "At {time}, error rates on {service} began to climb.",
            "At {time}, the on-call engineer joined the incident channel.",
            "At {time}, the team rolled back the most recent deployment of {system}, with no effect.",
            "At {time}, a status page update was published.",
            "At {time}, engineers noticed connection errors in the logs of {system}.",
            "At {time}, traffic was shifted away from the most affected zone.",
            "At {time}, database load returned to normal levels.",
            "At {time}, the team began a controlled restart of {service}.",
            "At {time}, error rates dropped below the alerting threshold.",
            "At {time}, customer support was briefed and given a holding statement.",
            "At {time}, the incident was downgraded and monitoring continued.",
            "At {time}, a second, smaller spike in errors was seen and investigated.",
            "At {time}, the vendor {vendor} confirmed that their service was healthy.",
        ),
        chronological=True,
    ),
    "detection": _spec(
        4,
        ("Detection and response", "Response"),
        (
            "This section covers how the incident was detected and how the team responded.",
            "The response followed the standard incident process.",
        ),
        (
            "The first alert came from the error-rate monitor on {service}.",
            "The incident channel was opened automatically when the alert fired.",
            "A second engineer was paged to help after the initial diagnosis stalled.",
            "The team considered a full failover but decided the risk was too high.",
            "Communication between responders worked well, although the incident channel became crowded.",
            "The status page was updated every {few} minutes during the incident.",
            "Dashboards for {system} were missing a panel for connection counts, which slowed diagnosis.",
            "The runbook for {service} was partly out of date.",
            "Responders from {few} teams took part at some point.",
            "Leadership was informed through the usual escalation path.",
        ),
    ),
    "root_cause": _spec(
        5,
        ("Root cause", "Root cause analysis"),
        ("This section explains why the incident happened.", "The investigation traced the failure through several layers."),
        (
            "The failure was not visible in staging, because staging traffic is far lower than production traffic.",
            "The problem had been latent for some time and was triggered by the evening traffic peak.",
            "Retries from clients amplified the load once the first errors appeared.",
            "Once the fault was identified, the fix itself took only a few minutes to apply.",
            "Logs retained for {days} were enough to reconstruct the sequence of events.",
            "A similar pattern was found in a load test run in {year}, but it was not followed up.",
            "The fault affected all zones at once because configuration is shared.",
            "Engineers reproduced the failure in a test environment the following day.",
            "The analysis was peer-reviewed by {person}.",
        ),
    ),
    "factors": _spec(
        6,
        ("Contributing factors", "Why it got worse"),
        (
            "Several factors made the incident longer or more severe than it needed to be.",
            "Beyond the root cause, other factors contributed.",
        ),
        (
            "Alert thresholds had been raised months earlier to reduce noise, which delayed the first page.",
            "The on-call engineer was new to {service} and had not yet shadowed a full rotation.",
            "The dashboards did not show saturation clearly.",
            "A planned capacity increase had been postponed.",
            "The rollback procedure for {system} takes longer than for other services.",
            "Documentation described an architecture that had since changed.",
            "Two teams were changing related systems on the same day without coordinating.",
            "Client retry settings were more aggressive than the platform guidelines recommend.",
            "Load testing had not covered the evening peak pattern.",
        ),
    ),
    "actions": _spec(
        7,
        ("Follow-up actions", "Remediation and follow-up actions", "Action items"),
        ("The actions below were agreed at the review meeting.", "Follow-up work is tracked in the reliability backlog."),
        (
            "Each action has a single owner and a due date, and progress is reviewed weekly.",
            "Actions that slip by more than two weeks are escalated to the engineering director.",
            "Some smaller improvements were made during the incident and are not listed separately.",
            "The review meeting was attended by {few} people from {few2} teams.",
            "Longer-term architectural work will be considered in the next planning cycle.",
            "{person} will track the actions and report on them at the monthly reliability review.",
        ),
    ),
    "comms": _spec(
        8,
        ("Customer communication", "Communications"),
        ("This section reviews how the incident was communicated.", "Communication with customers and staff is reviewed here."),
        (
            "The first status page update went out shortly after the incident was declared.",
            "Updates were posted regularly until the incident was resolved.",
            "Account managers contacted the {few} largest customers directly.",
            "A summary was emailed to affected business customers on {date}.",
            "Some customers found the early updates too vague.",
            "The social media team answered questions using an approved holding statement.",
            "Internal updates were posted in the company-wide channel.",
            "The final incident summary was published on the status page the next day.",
        ),
    ),
    "went_well": _spec(
        9,
        ("What went well",),
        ("Several things went well during the response.", "The review noted the following strengths."),
        (
            "The incident channel was opened quickly and roles were assigned early.",
            "Engineers from different teams collaborated without friction.",
            "The decision to shift traffic was made quickly once the data supported it.",
            "Customer support had a holding statement within minutes.",
            "Automated backups and replicas meant no data was lost.",
            "The timeline was recorded as events happened, which made this review easier.",
            "The vendor {vendor} responded to our query promptly.",
        ),
    ),
    "went_badly": _spec(
        10,
        ("What could have gone better", "Lessons learned"),
        ("The review also identified things that did not go well.", "Some parts of the response could be improved."),
        (
            "Too many people joined the incident channel, which made it hard to follow.",
            "The first hypothesis was pursued for too long before being abandoned.",
            "Dashboards for {system} were hard to find.",
            "Some responders were unsure who was making decisions.",
            "Handover between shifts was informal.",
            "The runbook did not cover this failure mode.",
            "Status page updates were sometimes delayed while waiting for approval.",
        ),
    ),
    "related": _spec(
        11,
        ("Related incidents", "Previous incidents"),
        (
            "This section lists earlier incidents with similar symptoms.",
            "Earlier incidents on the same systems are summarised for context.",
        ),
        (
            "An incident in {year} also involved {system}, but its cause was different.",
            "A minor degradation on {date} affected {count} requests and was resolved without customer impact.",
            "Several near misses were recorded in the past year, none of which led to an outage.",
            "The reliability team keeps a register of incidents, which currently lists {small} entries for {service}.",
            "Trends across incidents are reviewed quarterly.",
        ),
    ),
    "metrics": _spec(
        20,
        ("Appendix: metrics and dashboards", "Appendix: supporting data"),
        ("This appendix lists the metrics used in the analysis.", "Supporting data is provided for reference."),
        (
            "Median latency on {service} during normal operation is {ms}.",
            "The error budget for {service} allows {minutes} of downtime per month.",
            "CPU utilisation on {system} peaked at {pct} during the incident.",
            "Database connections peaked at {count}.",
            "Request volume in the hour before the incident was {count} per minute.",
            "Cache hit rates fell to {pct} during the incident.",
            "Queue depth on {system} reached {count} messages.",
            "Garbage collection pauses reached {ms} at the worst point.",
        ),
    ),
    "glossary": _spec(
        21,
        ("Appendix: glossary", "Glossary"),
        ("Terms used in this report are defined below.", "This glossary explains the technical terms in this report."),
        (
            "An incident commander coordinates the response and makes decisions during an incident.",
            "A runbook is a set of documented steps for handling a known situation.",
            "Failover means moving traffic from a failed component to a healthy one.",
            "An error budget is the amount of unreliability a service may have before work is paused.",
            "A canary release exposes a change to a small share of traffic first.",
            "Saturation describes how full a resource, such as a connection pool, is.",
            "Mean time to recovery is the average time taken to restore service.",
            "A blameless review focuses on systems and processes rather than individuals.",
        ),
    ),
    "process": _spec(
        12,
        ("About this review", "Review process"),
        ("This section explains how the review was carried out.", "The review followed the standard post-incident process."),
        (
            "Interviews were held with {few} responders in the week after the incident.",
            "Logs, metrics and chat transcripts were collected and analysed.",
            "The review meeting took place on {date}.",
            "{person} facilitated the review meeting.",
            "The draft report was circulated for comment before publication.",
            "Reviews are published internally so that other teams can learn from them.",
        ),
    ),
}
_INCIDENT_CORE = ("summary", "impact", "timeline", "detection", "root_cause", "actions")
_SYMPTOMS = ("outage", "elevated error rates", "degraded performance", "failed requests")
_CAUSES = (
    "connection pool exhaustion in {rc}",
    "a misconfigured timeout in {rc}",
    "a memory leak in {rc}",
    "an expired certificate on {rc}",
    "a schema change that {rc} could not read",
    "a retry storm from {rc}",
)
_INCIDENT_ACTIONS = (
    ("add saturation dashboards for {rc}", "the saturation dashboards", ["saturation"]),
    ("rewrite the failover runbook", "the runbook rewrite", ["runbook"]),
    ("run a failover drill for {service}", "the failover drill", ["drill"]),
    ("add synthetic checks for {service}", "the synthetic checks", ["synthetic"]),
    ("introduce a canary stage for configuration changes", "the canary stage", ["canary"]),
    ("cap per-tenant connection limits in {rc}", "the per-tenant limits", ["per-tenant", "tenant"]),
    ("load-test {service} at twice peak traffic", "the load test", ["load-test", "load test"]),
)


def _incident_report(rng: random.Random, split: str) -> _Plan:
    start = dt.date(rng.randint(2023, 2027), rng.randint(1, 12), rng.randint(1, 28))
    number = rng.randint(1100, 9899)
    d = Draft(rng, split, start, {"inc": f"INC-{number}"}, taken={f"num:{number}"})
    org = f"{d.pick('org', _ORG_NAMES)[0]} {rng.choice(('Payments', 'Cloud', 'Commerce', 'Digital', 'Software'))}"
    service, rc, *suspects = d.pick("service", _SERVICES, 4)
    others = d.pick("service", _SERVICES, 4)
    d.constants.update(org=org, service=service, rc=rc)
    d.set_lists(
        team=["platform", "payments", "reliability", "checkout", "data", "networking", "identity", "mobile"],
        city=d.pick("city", _CITIES, 3),
        system=[rc, *others],
        vendor=d.pick("vendor", _VENDORS, 3),
    )
    commander = d.person("Incident Commander")
    comms = d.person("Communications Lead", quiet=True)
    owners = [d.person("Senior Engineer"), d.person("Staff Engineer")]
    for role in ("On-call Engineer", "Engineering Manager", "Database Engineer", "Support Lead", "Site Reliability Engineer"):
        d.person(role)
    symptom = rng.choice(_SYMPTOMS)
    p = _Plan(f"Incident report INC-{number}: {symptom} in {service}", d, _INCIDENT_SECTIONS, _INCIDENT_CORE, (3400, 4400))

    began = start.isoformat()
    d.reserved.add(f"date:{began}")
    previous = d.reserve_date(start - dt.timedelta(days=400), 300)
    p.add(
        Fact("Date the incident began", began, ["began", "start", "occurred"], f"The incident began on {began}.", "summary", [previous]),
        ("The incident began on {value} and affected {service}.", "On {value}, customers began to see {symptom} in {service}."),
        (("related", "A similar incident on {d} was traced to a different cause.", {"d": previous}),),
        {"symptom": symptom},
    )
    minutes = lambda k: count(k, "minutes")  # noqa: E731
    duration, n = d.reserve_int(minutes, 64, 290, avoid_round=0)
    mitigated = d.reserve_int(minutes, max(20, n // 3), n - 12, avoid_round=0)[0]
    earlier = d.reserve_near(minutes, n, 0.1, 0.4, avoid_round=0)
    p.add(
        Fact(
            "Duration of the incident",
            duration,
            ["lasted", "duration", "resolved", "resolution"],
            f"The incident lasted {duration} in total.",
            "impact",
            [mitigated, earlier],
        ),
        (
            "In total the incident lasted {value} from first impact to full resolution.",
            "Service was fully restored after {value}, which is the duration of the incident.",
        ),
        (
            (
                "detection",
                "Customer impact was mitigated after {d}, when traffic was shifted away from the worst-affected zone.",
                {"d": mitigated},
            ),
            ("related", "That earlier incident lasted {d}.", {"d": earlier}),
        ),
    )
    detect, n = d.reserve_int(minutes, 6, 45, avoid_round=0)
    acknowledged = d.reserve_int(minutes, 3, 30, avoid_round=0)[0]
    p.add(
        Fact(
            "Time to detect the incident",
            detect,
            ["detect", "alert", "noticed"],
            f"Monitoring detected the problem after {detect}.",
            "detection",
            [acknowledged],
        ),
        ("Monitoring detected the problem after {value}.", "It took {value} for the alerting to detect the problem."),
        (("detection", "The page was acknowledged {d} after it was sent.", {"d": acknowledged}),),
    )
    affected, n = d.reserve_int(count, 1200, 180000)
    contacted = d.reserve_near(count, n, 0.05, 0.3)
    p.add(
        Fact("Customers affected", affected, ["affected", "impacted"], f"{affected} customers were affected.", "impact", [contacted]),
        ("In all, {value} customers were affected.", "The incident affected {value} customers."),
        (("comms", "Follow-up emails were sent to {d} accounts.", {"d": contacted}),),
    )
    failed, n = d.reserve_int(count, 20000, 4000000)
    retried = d.reserve_near(count, n, 0.2, 0.6)
    p.add(
        Fact("Requests that failed", failed, ["request"], f"{failed} requests failed during the incident.", "impact", [retried]),
        ("{value} requests failed during the incident.", "Logs show that {value} requests failed."),
        (("impact", "A further {d} requests succeeded only after client retries.", {"d": retried}),),
    )
    cause = rng.choice(_CAUSES).format(rc=rc)
    p.add(
        Fact("Component at the root cause", rc, ["cause"], f"The root cause was {cause}.", "root_cause", suspects),
        ("The root cause was {cause}.", "The investigation found that the root cause was {cause}."),
        (("root_cause", "Responders first suspected {d1} and then {d2}, but both were healthy.", {"d1": suspects[0], "d2": suspects[1]}),),
        {"cause": cause},
    )
    p.add(
        Fact(
            "Incident commander",
            commander.name,
            ["commander", "coordinated"],
            f"{commander.name} was the incident commander.",
            "detection",
            [comms.name],
            [commander.last],
        ),
        ("{value} acted as incident commander.", "The response was coordinated by {value}, who was the incident commander."),
        (("comms", "{d} handled external communication as communications lead.", {"d": comms.name}),),
    )
    credits, n = d.reserve_int(lambda k: money(k * 1000), 20, 900)
    cap = d.reserve_near(lambda k: money(k * 1000), n, 0.2, 0.6, direction=1)
    p.add(
        Fact(
            "Service credits paid to customers",
            credits,
            ["credit"],
            f"{credits} in service credits will be paid to affected customers.",
            "impact",
            [cap],
        ),
        ("{value} in service credits will be paid to affected customers.", "Service credits of {value} have been approved."),
        (("impact", "Contracts would have allowed credits of up to {d}.", {"d": cap}),),
    )
    key_actions, minor_actions = _sample_pairs(rng, _INCIDENT_ACTIONS, 2, 2)
    for owner, (action, noun, subject) in zip(owners, key_actions, strict=True):
        due = d.reserve_date(start + dt.timedelta(days=14), 90)
        _action_pair(p, "actions", owner.name, owner.last, due, d.fill(action, sentence=False), noun, subject)
    for action, _, _ in minor_actions:
        p.line("actions", "{person} will also " + action + " by {date}.")
    p.line("summary", "The root cause was {cause}.", {"cause": cause}, lead=True)
    return p


def _sample_pairs(rng: random.Random, items: tuple, first: int, second: int) -> tuple[list, list]:
    chosen = rng.sample(items, first + second)
    return chosen[:first], chosen[first:]


# -- meeting minutes ---------------------------------------------------------------------------------

_MINUTES_SECTIONS: dict[str, SectionSpec] = {
    "attendance": _spec(
        0,
        ("Attendance", "Present and apologies"),
        ("Present: {present}.", "Members present: {present}."),
        (
            "The chair welcomed members and thanked them for attending at short notice.",
            "Two observers from the internal audit team attended for the budget item only.",
            "No conflicts of interest were declared.",
            "The secretary confirmed that papers had been circulated a week in advance.",
            "One member joined by video link.",
            "The meeting started on time and finished slightly late.",
            "Apologies were received from {few} members, who had sent comments on the papers in advance.",
            "A new member was welcomed and introduced themselves briefly.",
            "The chair reminded members that the meeting was being minuted for publication in summary form.",
            "Members confirmed that they had read the papers.",
            "The secretary reported that the register of interests had been updated on {date}.",
            "Guests from the {team} team joined for the items that concerned them.",
        ),
        weight=0.6,
    ),
    "opening": _spec(
        1,
        ("Opening and previous minutes", "Minutes of the last meeting"),
        (
            "The minutes of the previous meeting were approved as an accurate record.",
            "The chair opened the meeting and reviewed the agenda.",
        ),
        (
            "One correction to the previous minutes was noted regarding the date of the audit review.",
            "The chair reminded members that papers should be read in advance.",
            "The agenda was reordered so that the budget could be discussed while the finance lead was present.",
            "Members agreed to keep discussion of each item to the time allotted.",
            "The secretary noted that {small} actions from previous meetings remain open.",
            "{person} asked that future papers include an executive summary.",
            "The chair summarised the correspondence received since the last meeting.",
            "A member asked for the action log to be circulated with the minutes in future.",
            "The minutes were signed by the chair after the meeting.",
            "The chair noted that the terms of reference are due for review later in the year.",
            "Members agreed that items for noting would be taken without discussion.",
            "{person} gave a short update on the staff consultation, which closed on {date}.",
        ),
    ),
    "arising": _spec(
        2,
        ("Matters arising", "Updates on previous actions"),
        ("Members reviewed actions carried over from previous meetings.", "Several matters arising were discussed briefly."),
        (
            "The review of meeting room bookings has been completed and the new rules take effect next month.",
            "The survey of {team} staff closed with a response rate of {pct}.",
            "The external review of governance is under way and will report in the autumn.",
            "{person} reported that the office move in {city} is on schedule.",
            "The data-sharing agreement with {vendor} has been signed.",
            "The question of parking allocation was deferred again.",
            "Training on the new expenses system reached {pct} of staff.",
            "The refreshed whistleblowing policy has been published on the intranet.",
            "A response to the auditors' management letter was sent on {date}.",
            "The pilot of hybrid working arrangements has been extended by {days}.",
            "{person} confirmed that the supplier dispute reported last time has been settled.",
            "The review of delegated authorities is complete and the new limits apply immediately.",
            "The energy contract was renewed at a price {pct} higher than before.",
        ),
    ),
    "budget": _spec(
        3,
        ("Budget for {project}", "Annual budget"),
        ("The committee considered the budget paper for {project}.", "The finance lead presented the budget proposal."),
        (
            "Members asked for more detail on contingency, which is held centrally.",
            "The paper compared three funding scenarios.",
            "Inflation assumptions were discussed at length.",
            "It was noted that staff costs make up the largest share of spending.",
            "{person} asked whether the phasing of spending could be smoothed across the year.",
            "The finance team will provide quarterly variance reports.",
            "Some members felt the savings targets were optimistic.",
            "The budget includes {money} for external assurance.",
            "{person} asked how the budget compared with similar programmes elsewhere; {person2} said it was in the middle of the range.",
            "The committee asked for a clear statement of what would be cut if costs rose.",
            "Members noted that the programme will be reviewed at each stage gate.",
            "The treatment of licence costs after the first year was clarified.",
            "It was confirmed that the budget excludes the cost of the office move.",
            "{person2} cautioned that exchange-rate movements could add to costs.",
        ),
    ),
    "vendor": _spec(
        4,
        ("Vendor selection", "Choice of delivery partner"),
        (
            "The committee discussed the procurement of a delivery partner for {project}.",
            "The evaluation panel presented its findings on the vendor shortlist.",
        ),
        (
            "The evaluation covered price, technical quality, references and financial stability.",
            "Reference calls were made to {few} existing clients of each bidder.",
            "The panel scored bids independently before meeting to agree final scores.",
            "Members asked about exit arrangements and data ownership.",
            "Legal advice on the contract terms was summarised for the committee.",
            "{person} chaired the evaluation panel.",
            "A standstill period will apply before the contract is signed.",
            "The tender attracted {small} expressions of interest, of which three were shortlisted.",
            "Bidders gave presentations to the panel in {city}.",
            "{person2} asked whether the winning bid relied on subcontractors; it does for one small part of the work.",
            "Members discussed the risk of dependence on a single supplier.",
            "The contract will include service credits for missed milestones.",
            "Data protection terms were reviewed by the legal team.",
            "Members thanked the panel for a thorough and well-documented process.",
        ),
    ),
    "launch": _spec(
        5,
        ("Launch readiness", "Launch plan"),
        ("The committee reviewed the launch plan for {project}.", "The programme manager presented the readiness assessment."),
        (
            "Readiness was assessed against {small} criteria, most of which are met.",
            "User acceptance testing is due to finish before the launch.",
            "A communications plan for staff and customers has been drafted.",
            "Members discussed whether a phased launch would reduce risk.",
            "Support teams will receive training in the weeks before launch.",
            "{person} noted that the launch date leaves little room for slippage.",
            "A go or no-go meeting will be held a week before launch.",
            "A rollback plan has been written and rehearsed.",
            "{few} defects remain open, none of them critical.",
            "The launch will be supported by extended helpdesk hours for the first fortnight.",
            "{person2} asked how success would be measured after launch.",
            "A post-launch review is planned after {days}.",
            "Members asked for a one-page summary of launch risks for the board.",
        ),
    ),
    "staffing": _spec(
        6,
        ("Staffing plan", "Resourcing"),
        ("The committee considered the resourcing plan.", "The people lead presented the staffing proposal."),
        (
            "Recruitment will start with the most critical skills.",
            "Members asked how the plan would affect existing teams.",
            "The time to hire for specialist roles is currently about {days}.",
            "Contractors will cover gaps while permanent staff are recruited.",
            "{person} stressed the need to retain existing experts.",
            "The plan includes a graduate intake in {city}.",
            "Salary benchmarks were provided by an external adviser.",
            "Members discussed the balance between permanent and fixed-term contracts.",
            "{person2} asked for the diversity of the shortlists to be reported.",
            "The cost of recruitment agencies is expected to be about {money}.",
            "Some roles could be filled by internal transfers.",
            "The plan will be reviewed if the launch date moves.",
        ),
    ),
    "pricing": _spec(
        7,
        ("Pricing review", "Prices for the coming year"),
        ("The committee reviewed prices for the coming year.", "The commercial lead presented the pricing paper."),
        (
            "Competitor prices were compared across {small} products.",
            "Members discussed the likely effect on customer retention.",
            "Customers will be given notice of the change.",
            "Discounts for long-standing customers will continue.",
            "{person} asked for an analysis of price sensitivity by segment.",
            "The change will be reviewed after six months.",
            "Customer research suggested most customers expect a rise this year.",
            "The impact on the lowest-income customers was discussed.",
            "{person2} noted that input costs have risen faster than prices over the past {few} years.",
            "The new prices will be published on the website a month before they apply.",
            "Members asked for a report on complaints after the change.",
        ),
    ),
    "finance_update": _spec(
        8,
        ("Finance update", "Management accounts"),
        ("The finance lead presented the management accounts.", "The committee noted the latest financial position."),
        (
            "Income for the year to date is {moneym}.",
            "Spending is {pct} below the profile for the year to date.",
            "Cash reserves stand at {moneym}.",
            "Debtors over ninety days amount to {money}.",
            "The audit fee for the year has been agreed at {money}.",
            "{person} asked for a forecast of the year-end position.",
            "Capital spending to date is {moneym}.",
            "Investment income was {money}, slightly above forecast.",
            "The pension deficit has narrowed following the latest valuation.",
            "Members noted a one-off cost of {money} for the office refurbishment.",
            "The finance team has closed the books within {few} working days each month.",
        ),
    ),
    "risk": _spec(
        9,
        ("Risk and compliance update", "Risk register"),
        ("The committee reviewed the risk register.", "The compliance lead gave an update on risks and regulatory matters."),
        (
            "No new high-rated risks were added since the last meeting.",
            "A data protection incident was reported to the regulator within the required time.",
            "The cyber security risk remains rated high.",
            "{few} policies are due for review this year.",
            "{person} reported on the business continuity test held on {date}.",
            "Members asked for a deep dive on supplier risk at a future meeting.",
            "The regulator's annual return was submitted on time.",
            "Mandatory compliance training has been completed by {pct} of staff.",
            "A minor health and safety incident in {city} was investigated and closed.",
            "The risk appetite statement will be refreshed next quarter.",
        ),
    ),
    "feedback": _spec(
        10,
        ("Customer feedback", "Voice of the customer"),
        ("The committee heard a summary of recent customer feedback.", "Customer feedback was presented by the service team."),
        (
            "Satisfaction scores were stable at {pct}.",
            "The most frequent complaint concerned response times.",
            "Compliments outnumbered complaints for the first time this year.",
            "A customer panel of {small} members met in {city}.",
            "{person} will circulate verbatim comments to members.",
            "Online reviews have improved since the new booking system went live.",
            "Complaints about billing fell by {pct}.",
            "Members asked for feedback to be broken down by region.",
            "A mystery shopping exercise found staff knowledgeable but sometimes slow to respond.",
        ),
    ),
    "operations": _spec(
        11,
        ("Operations update",),
        ("The operations lead presented an update.", "Members noted the operations report."),
        (
            "Service levels were met in most weeks.",
            "The backlog of requests fell to {count}.",
            "A new shift pattern in {city} has improved cover.",
            "Systems availability was {pct}.",
            "{person} highlighted pressure on the {team} team.",
            "A fault in {system} caused a short disruption, which was resolved the same day.",
            "Sickness absence was {pct}, close to the seasonal norm.",
            "Work to consolidate the two warehouses is ahead of schedule.",
            "Members asked for a breakdown of overtime costs.",
        ),
    ),
    "aob": _spec(
        12,
        ("Any other business", "Other business"),
        ("There were a few items of other business.", "Members raised the following other business."),
        (
            "{person} thanked the secretariat for organising the away day.",
            "The date of the annual general meeting was noted.",
            "A member asked about the timetable for the strategy refresh.",
            "The chair noted that this was the last meeting for one long-serving member.",
            "Members were reminded to complete the annual effectiveness survey.",
            "{person2} mentioned the charity fundraising event in {city}.",
            "The chair asked members to send agenda items for the next meeting a fortnight in advance.",
        ),
    ),
    "decisions": _spec(
        13,
        ("Summary of decisions", "Decisions"),
        ("The decisions taken at the meeting are summarised below.", "For ease of reference, the main decisions are restated here."),
        (
            "Decisions are recorded in the decision log maintained by the secretary.",
            "All decisions were taken by consensus.",
            "The minutes of the previous meeting were approved.",
            "The risk register was noted.",
            "The management accounts were noted.",
        ),
        weight=0.5,
    ),
    "actions": _spec(
        14,
        ("Action items", "Actions"),
        ("The following actions were agreed.", "Actions arising from the meeting are listed below."),
        (
            "Owners will report progress at the next meeting.",
            "The secretary will circulate the action log within two days.",
            "Actions carried over from earlier meetings remain on the log until closed.",
            "Any action that cannot be met should be flagged to the chair in advance.",
        ),
        weight=0.5,
    ),
    "next": _spec(
        15,
        ("Date of next meeting", "Next meeting"),
        ("The chair closed the meeting.", "The meeting closed after the remaining items were noted."),
        (
            "Papers for the next meeting are due a week in advance.",
            "The chair thanked everyone for their contributions.",
            "The next meeting will be held in person where possible.",
        ),
        weight=0.3,
    ),
}
_MINUTES_CORE = ("attendance", "budget", "vendor", "launch", "staffing", "pricing", "actions", "next")
_COMMITTEES = ("Steering Committee", "Operations Committee", "Executive Board", "Programme Board", "Investment Committee")
_MINUTES_ACTIONS = (
    ("circulate the revised data retention policy", "the data retention policy", ["retention"]),
    ("prepare the migration plan for {project}", "the migration plan", ["migration"]),
    ("brief the regional leads on the changes", "the regional briefing", ["regional"]),
    ("draft the tender documents for the next phase", "the tender documents", ["tender"]),
    ("review the insurance renewal", "the insurance review", ["insurance"]),
    ("update the risk register", "the risk register update", ["risk register"]),
    ("complete the security assessment", "the security assessment", ["security"]),
)


def _meeting_minutes(rng: random.Random, split: str) -> _Plan:
    meeting = dt.date(rng.randint(2023, 2027), rng.randint(1, 12), rng.randint(1, 28))
    d = Draft(rng, split, meeting, {}, taken={f"date:{meeting.isoformat()}"})
    org = f"{d.pick('org', _ORG_NAMES)[0]} {rng.choice(('Group', 'Holdings', 'Trust', 'Partners', 'Co-operative'))}"
    committee = rng.choice(_COMMITTEES)
    project = f"the {d.pick('codename', _CODENAMES)[0]} programme"
    chosen, *shortlist = d.pick("vendor", _VENDORS, 3)
    d.constants.update(org=org, project=project)
    d.set_lists(
        team=["finance", "operations", "people", "commercial", "technology", "legal", "customer service"],
        city=d.pick("city", _CITIES, 3),
        system=["the finance system", "the case management system", "the intranet"],
        vendor=d.pick("vendor", _VENDORS, 3),
    )
    chair = d.person("Chair")
    secretary = d.person("Secretary")
    owners = [d.person("Director of Operations"), d.person("Head of Technology")]
    for role in (
        "Finance Director",
        "People Director",
        "Commercial Director",
        "Programme Manager",
        "Compliance Lead",
        "Non-executive Member",
    ):
        d.person(role)
    proposer = d.person("Programme Sponsor", quiet=True)
    p = _Plan(f"Minutes of the {org} {committee} meeting, {meeting.isoformat()}", d, _MINUTES_SECTIONS, _MINUTES_CORE, (4400, 5200))
    d.constants["present"] = ", ".join(f"{x.name} ({x.role})" for x in d.people if x is not proposer)
    p.line(
        "attendance", "{chair} chaired the meeting and {secretary} took the minutes.", {"chair": chair.name, "secretary": secretary.name}
    )

    budget, tenths = d.reserve_int(money_m, 12, 450)
    proposed, last_year = d.reserve_near(money_m, tenths, 0.08, 0.3, direction=1), d.reserve_near(money_m, tenths, 0.05, 0.2)
    p.add(
        Fact(
            "Budget approved",
            budget,
            ["budget"],
            f"The committee approved a budget of {budget} for {project}.",
            "budget",
            [proposed, last_year],
            [_short_m(budget)],
        ),
        ("The committee approved a budget of {value} for {project}.", "After discussion, a budget of {value} was approved."),
        (
            ("budget", "The paper had proposed {d}, which members considered too high.", {"d": proposed}),
            ("budget", "Last year's budget had been {d}.", {"d": last_year}),
        ),
    )
    p.add(
        Fact(
            "Vendor selected",
            chosen,
            ["vendor", "selected", "supplier"],
            f"{chosen} was selected as the vendor for {project}.",
            "vendor",
            shortlist,
        ),
        ("The committee agreed to appoint {value} as the delivery partner, subject to contract.", "{value} was selected as the vendor."),
        (("vendor", "{d1} and {d2} were also shortlisted but scored lower overall.", {"d1": shortlist[0], "d2": shortlist[1]}),),
    )
    launch = d.reserve_date(meeting + dt.timedelta(days=90), 240)
    proposed_launch = d.reserve_date(meeting + dt.timedelta(days=45), 200)
    p.add(
        Fact(
            "Launch date",
            launch,
            ["launch", "go-live"],
            f"{project[0].upper() + project[1:]} will launch on {launch}.",
            "launch",
            [proposed_launch],
        ),
        ("Members agreed that {project} will launch on {value}.", "The launch date was set for {value}."),
        (("launch", "The programme team had originally proposed {d}.", {"d": proposed_launch}),),
    )
    roles, n = d.reserve_int(count, 12, 85, avoid_round=0)
    requested = d.reserve_int(count, n + 3, n + 30, avoid_round=0)[0]
    p.add(
        Fact(
            "New roles approved",
            roles,
            ["role", "position", "hire", "headcount"],
            f"{roles} new roles were approved.",
            "staffing",
            [requested],
        ),
        ("The committee approved {value} new roles.", "Funding for {value} new roles was approved."),
        (("staffing", "The original request had been for {d} roles.", {"d": requested}),),
    )
    price, tenths = d.reserve_int(percent, 25, 125)
    alternative = d.reserve_near(percent, tenths, 0.2, 0.5)
    p.add(
        Fact("Price increase agreed", price, ["price"], f"Prices will rise by {price}.", "pricing", [alternative]),
        ("Members agreed a price increase of {value} from the start of the next financial year.", "Prices will rise by {value}."),
        (("pricing", "An alternative proposal of {d} was rejected.", {"d": alternative}),),
    )
    key_actions, minor_actions = _sample_pairs(rng, _MINUTES_ACTIONS, 2, 3)
    for owner, (action, noun, subject) in zip(owners, key_actions, strict=True):
        due = d.reserve_date(meeting + dt.timedelta(days=10), 60)
        _action_pair(p, "actions", owner.name, owner.last, due, d.fill(action, sentence=False), noun, subject)
    for action, _, _ in minor_actions:
        p.line("actions", "{person} will " + action + " by {date}.")
    next_meeting = d.reserve_date(meeting + dt.timedelta(days=21), 50)
    p.add(
        Fact("Date of the next meeting", next_meeting, ["next meeting"], f"The next meeting is on {next_meeting}.", "next", []),
        ("The next meeting will be held on {value}.", "The date of the next meeting was confirmed as {value}."),
    )
    p.line("budget", "{d}, the {role}, argued for the higher figure.", {"d": proposer.name, "role": proposer.role})
    p.line("decisions", "A budget of {value} was approved.", {"value": budget}, lead=True)
    p.line("decisions", "{value} will be the delivery partner.", {"value": chosen}, lead=True)
    return p


# -- product specification ---------------------------------------------------------------------------

_SPEC_SECTIONS: dict[str, SectionSpec] = {
    "overview": _spec(
        0,
        ("Overview", "Introduction"),
        (
            "This document specifies {product}, the next release of the {org} collaboration platform.",
            "{product} is the next major release of our platform for team workspaces.",
        ),
        (
            "The specification is a living document and will be updated as decisions are made.",
            "Sections marked as draft are still under discussion.",
            "This version of the document supersedes the one circulated on {date}.",
            "Feedback should be sent to the product team through the usual channel.",
            "The release is the largest since the platform launched in {year}.",
            "Engineering estimates in this document are indicative.",
            "The release focuses on large workspaces, administration and search.",
            "Readers short of time should read the goals, the performance targets and the release plan.",
            "Decisions recorded here were agreed at the product review on {date}.",
            "The platform currently serves about {count} paying teams.",
            "Where this document conflicts with older design notes, this document wins.",
            "{person} is the editor of this document.",
        ),
    ),
    "market": _spec(
        1,
        ("Background: market research", "Background"),
        (
            "This background section summarises the market research behind the release.",
            "Research for this release drew on interviews, surveys and usage data.",
        ),
        (
            "Interviews were held with {small} customers in {city} and elsewhere.",
            "A survey of {count} users found that search and sharing are the most requested improvements.",
            "The market for team collaboration tools grew by {pct} last year.",
            "Larger customers increasingly require single sign-on and audit logs.",
            "Smaller teams care most about price and ease of setup.",
            "Usage data shows that {pct} of active users open the mobile app each week.",
            "Analysts expect consolidation among smaller vendors.",
            "Churn interviews pointed to slow performance in large workspaces as the main reason for leaving.",
            "Win-loss analysis of {small} recent deals found that permissions were often decisive.",
            "Education and non-profit customers asked for simpler billing.",
            "Regulated industries now make up {pct} of new revenue.",
            "Customers in {city} were the most likely to request data residency.",
        ),
    ),
    "problem": _spec(
        2,
        ("Problem statement", "Why this release"),
        ("This section explains the problems the release addresses.", "Customers have told us clearly what holds them back."),
        (
            "Workspaces slow down noticeably as they grow.",
            "Administrators lack the controls they need to manage large organisations.",
            "Search results are often incomplete.",
            "Integrations with other tools are fragile.",
            "Churn among mid-sized customers is concentrated in the first year.",
            "{person} summarised the top complaints from the customer advisory board.",
            "Support tickets about permissions have doubled over the past {few} quarters.",
            "Onboarding a new team takes too many steps.",
            "Exporting data for audits is manual and slow.",
            "Notifications are too noisy for large teams, so people switch them off.",
            "The architecture behind search has not changed since {year}.",
        ),
    ),
    "goals": _spec(
        3,
        ("Goals and non-goals", "Goals"),
        (
            "The goals of the release are listed below, followed by explicit non-goals.",
            "This section sets out what the release will and will not do.",
        ),
        (
            "The first goal is to make large workspaces fast.",
            "The second goal is to give administrators fine-grained permissions.",
            "The third goal is to improve search relevance and coverage.",
            "Offline editing is a non-goal for this release.",
            "A redesign of the mobile app is out of scope.",
            "Support for on-premises deployment is not planned.",
            "Success will be measured by retention and by workspace growth.",
            "Reducing onboarding steps is a secondary goal.",
            "Changing the visual design of the web app is not a goal.",
            "New integrations beyond the existing catalogue are out of scope.",
            "The release should not increase the cost of serving a customer.",
        ),
    ),
    "users": _spec(
        4,
        ("Target users", "Users and personas"),
        ("This section describes the people the release is for.", "Three personas guided the design."),
        (
            "Workspace administrators manage access and billing.",
            "Team leads organise projects and invite members.",
            "Contributors create and edit content daily.",
            "Compliance officers need audit trails.",
            "A typical customer has around {count} members.",
            "The largest customers have several thousand members across many workspaces.",
            "External guests, such as contractors, need limited access.",
            "Administrators often manage access for several departments at once.",
            "Contributors care most about speed and reliable search.",
            "Persona research was carried out with {few} customer organisations.",
        ),
    ),
    "requirements": _spec(
        5,
        ("Functional requirements", "Requirements"),
        ("The functional requirements are grouped by area.", "This section lists what the release must do."),
        (
            "Administrators must be able to assign roles to groups.",
            "Search must cover comments and attachments.",
            "Users must be able to export a workspace.",
            "Audit logs must be retained for at least {days}.",
            "The API must support bulk operations.",
            "Notifications must be configurable per workspace.",
            "Single sign-on must support the common identity providers.",
            "{person} owns the requirements backlog.",
            "Guests must be restricted to the projects they are invited to.",
            "Administrators must be able to see who has access to any project.",
            "Search must rank recent and frequently used items higher.",
            "Deleted content must be recoverable for {days}.",
            "Every permission change must be recorded in the audit log.",
            "Bulk invitations must accept a spreadsheet upload.",
        ),
    ),
    "performance": _spec(
        6,
        ("Performance and reliability", "Non-functional requirements"),
        ("This section sets the performance and reliability targets.", "The release must meet the non-functional targets below."),
        (
            "Targets apply to the production environment under normal load.",
            "Load tests will be run against a copy of production data.",
            "Background jobs must not degrade interactive performance.",
            "The recovery point objective is {minutes}.",
            "Capacity planning assumes growth of {pct} a year.",
            "Performance will be tracked on a public status page.",
            "Search indexing must keep up with edits within a few seconds.",
            "Large exports may run in the background and notify the user when done.",
            "Performance budgets will be enforced in continuous integration.",
            "The mobile app must remain usable on slow connections.",
            "Scheduled maintenance does not count against the reliability targets.",
        ),
    ),
    "pricing": _spec(
        7,
        ("Pricing and packaging", "Pricing"),
        ("This section describes how the release will be priced and packaged.", "Pricing was agreed with the commercial team."),
        (
            "Annual billing will carry a discount.",
            "Existing customers will keep their current price for a year.",
            "Enterprise plans will be priced individually.",
            "A free tier will remain for small teams.",
            "{person} led the pricing research.",
            "Add-ons for advanced security will be sold separately.",
            "Storage beyond the included amount will be billed monthly.",
            "Non-profit organisations will keep their discount.",
            "Seats are counted monthly based on active members.",
            "Pricing pages will be updated a month before launch.",
            "Sales teams may offer introductory discounts within agreed limits.",
        ),
    ),
    "release": _spec(
        8,
        ("Release plan", "Launch plan"),
        ("This section sets out the release plan.", "The release will roll out in stages."),
        (
            "A private beta will come first, followed by a public beta.",
            "Feature flags will allow gradual rollout.",
            "Documentation will be published on launch day.",
            "Sales and support will be trained in advance.",
            "The release may be delayed if the beta reveals serious issues.",
            "Marketing will announce the release at the annual customer conference.",
            "Beta participants will get a dedicated support channel.",
            "Workspaces will be migrated in batches, largest last.",
            "A launch review will decide whether to widen the rollout.",
            "Customers will be able to opt out of the beta at any time.",
            "The release notes will be drafted by {person}.",
        ),
    ),
    "team": _spec(
        9,
        ("Team and ownership", "Ownership"),
        ("This section lists who is responsible for the release.", "The release is owned jointly by product and engineering."),
        (
            "Design is shared across the product teams.",
            "Quality assurance is embedded in each squad.",
            "The team has {few} squads working in parallel.",
            "{person} coordinates with the platform team.",
            "Decisions are recorded in the product decision log.",
            "Each squad has a named contact for support escalations.",
            "The team meets weekly to review progress against the plan.",
            "Hiring for two open engineering roles is under way in {city}.",
            "Spending is reported monthly to the finance team.",
        ),
    ),
    "dependencies": _spec(
        10,
        ("Dependencies", "External dependencies"),
        ("The release depends on other teams and on third parties.", "This section lists dependencies."),
        (
            "The new search index depends on work by the data platform team.",
            "Single sign-on relies on {vendor}.",
            "The billing changes require updates to the finance system.",
            "Mobile changes depend on app store review times.",
            "{person} tracks dependencies weekly.",
            "The analytics changes depend on a new event pipeline.",
            "Email notifications are sent through {vendor}.",
            "Legal review of the new terms must finish before launch.",
            "The migration tooling is shared with the platform team.",
        ),
    ),
    "security": _spec(
        11,
        ("Security and compliance", "Security"),
        ("This section covers security and compliance requirements.", "Security requirements were reviewed by the security team."),
        (
            "Data will be encrypted at rest and in transit.",
            "A penetration test will be carried out before launch.",
            "The release must keep the existing compliance certifications.",
            "Customer data will stay in the region the customer chooses.",
            "Access to production data is limited to {few} engineers.",
            "Security reviews are required for every new endpoint.",
            "Administrators will be able to enforce two-factor authentication.",
            "Audit logs will be tamper-evident.",
            "Third-party libraries will be scanned for known vulnerabilities.",
        ),
    ),
    "competition": _spec(
        12,
        ("Competitive landscape", "Competitors"),
        ("This section compares the release with competing products.", "Competitors have moved quickly over the past year."),
        (
            "Most competitors now offer granular permissions.",
            "One competitor recently raised prices by {pct}.",
            "Competitors' mobile apps are rated slightly higher than ours.",
            "Our integrations catalogue is larger than any competitor's.",
            "A new entrant is competing mainly on price.",
            "Two competitors announced data residency options this year.",
            "Analysts rate our search below the market leader's.",
            "Competitors are bundling video calls into their plans.",
            "Our onboarding is shorter than most competitors'.",
        ),
    ),
    "risks": _spec(
        13,
        ("Risks and open questions", "Open questions"),
        ("The main risks and open questions are listed below.", "Some questions remain open."),
        (
            "The migration of large workspaces may take longer than planned.",
            "The new search index may raise infrastructure costs.",
            "Beta feedback may require changes to the permissions model.",
            "It is not yet decided whether to support custom roles.",
            "{person} will decide on the data retention defaults.",
            "Hiring delays could slow the second half of the work.",
            "Changes to app store rules could delay the mobile release.",
            "It is unclear whether guests should count as seats.",
            "The cost of storage may rise if customers use more than expected.",
        ),
    ),
    "support_plan": _spec(
        14,
        ("Support and documentation", "Customer support plan"),
        ("This section covers how customers will be supported.", "Support readiness is part of the release criteria."),
        (
            "Support staff will receive training before the beta.",
            "Help articles will be updated for every changed feature.",
            "A dedicated queue will handle migration questions.",
            "Response-time targets for enterprise customers remain unchanged.",
            "{person} leads support readiness.",
            "Video walkthroughs will be recorded for administrators.",
            "Support will have access to a migration status dashboard.",
            "Common questions from the beta will seed the help centre.",
        ),
    ),
    "glossary": _spec(
        20,
        ("Appendix: glossary", "Glossary"),
        ("Terms used in this specification are defined below.", "This glossary explains terms used in the document."),
        (
            "A workspace is a shared space for a team's content.",
            "A seat is one named user on a paid plan.",
            "Latency is the time between a request and its response.",
            "Uptime is the share of time the service is available.",
            "A feature flag turns a feature on or off without a deployment.",
            "Single sign-on lets users log in with their company account.",
            "A guest is a user from outside the customer's organisation.",
            "An audit log records who did what and when.",
            "Data residency means storing data in a chosen region.",
        ),
    ),
}
_SPEC_CORE = ("overview", "performance", "pricing", "release", "team")
_AVAILABILITY = ("99.5", "99.8", "99.9", "99.95", "99.99")


def _product_spec(rng: random.Random, split: str) -> _Plan:
    written = dt.date(rng.randint(2023, 2027), rng.randint(1, 12), rng.randint(1, 28))
    version = rng.randint(2, 9)
    d = Draft(rng, split, written, {}, taken={f"num:{version}"})
    org = f"{d.pick('org', _ORG_NAMES)[0]} {rng.choice(('Software', 'Labs', 'Technologies', 'Cloud'))}"
    product = f"{d.pick('codename', _CODENAMES)[0]} {version}"
    d.constants.update(org=org, product=product)
    d.set_lists(
        team=["product", "design", "platform", "search", "mobile", "security", "billing"],
        city=d.pick("city", _CITIES, 3),
        system=["the search index", "the permissions service", "the billing system"],
        vendor=d.pick("vendor", _VENDORS, 3),
    )
    owner = d.person("Product Owner")
    engineering = d.person("Engineering Lead")
    previous_pm = d.person("Former Product Manager", quiet=True)
    architect = d.person("Principal Architect", quiet=True)
    for role in ("Design Lead", "Head of Customer Success", "Security Lead", "Data Scientist", "Commercial Manager"):
        d.person(role)
    p = _Plan(f"Product specification: {product}", d, _SPEC_SECTIONS, _SPEC_CORE, (3400, 4400))

    ga = d.reserve_date(written + dt.timedelta(days=120), 300)
    beta_start = d.reserve_date(written + dt.timedelta(days=30), 150)
    p.add(
        Fact(
            "General availability date",
            ga,
            ["general availability", "launch", "release date"],
            f"{product} is scheduled for general availability on {ga}.",
            "release",
            [beta_start],
        ),
        ("{product} is scheduled for general availability on {value}.", "General availability is planned for {value}."),
        (("release", "The private beta starts on {d}.", {"d": beta_start}),),
    )
    price, n = d.reserve_int(money, 12, 240, avoid_round=0)
    competitor, current = d.reserve_near(money, n, 0.1, 0.35), d.reserve_near(money, n, 0.08, 0.3)
    p.add(
        Fact(
            "List price per seat per month",
            price,
            ["price", "pricing", "per seat"],
            f"The list price will be {price} per seat per month.",
            "pricing",
            [competitor, current],
        ),
        ("The list price will be {value} per seat per month.", "{product} will be priced at {value} per seat per month."),
        (
            ("competition", "The closest competitor charges {d} per seat.", {"d": competitor}),
            ("pricing", "The current release costs {d} per seat per month.", {"d": current}),
        ),
    )
    ms = lambda k: count(k, "ms")  # noqa: E731
    latency, n = d.reserve_int(ms, 80, 950)
    measured, stretch = d.reserve_near(ms, n, 0.3, 0.8, direction=1), d.reserve_near(ms, n, 0.15, 0.4, direction=-1)
    p.add(
        Fact(
            "Latency target for interactive requests",
            latency,
            ["latency"],
            f"The latency target for interactive requests is {latency}.",
            "performance",
            [measured, stretch],
        ),
        ("The latency target for interactive requests is {value}.", "Interactive requests must complete within a latency of {value}."),
        (
            ("performance", "Today's measured figure is {d}.", {"d": measured}),
            ("performance", "A stretch goal of {d} was discussed but not adopted.", {"d": stretch}),
        ),
    )
    options = list(_AVAILABILITY)
    rng.shuffle(options)
    uptime = d.reserve(lambda: (f"{options[-1]}%", f"num:{options.pop()}"))
    achieved = d.reserve(lambda: (f"{options[-1]}%", f"num:{options.pop()}"))
    p.add(
        Fact(
            "Uptime target", uptime, ["uptime", "availability target", "sla"], f"The uptime target is {uptime}.", "performance", [achieved]
        ),
        ("The uptime target is {value}.", "The service must meet an uptime target of {value}."),
        (("performance", "Over the last year the platform achieved {d}.", {"d": achieved}),),
    )
    hundreds = lambda k: count(k * 100)  # noqa: E731
    users, n = d.reserve_int(hundreds, 50, 4000)
    today = d.reserve_near(hundreds, n, 0.3, 0.7, direction=-1)
    p.add(
        Fact("Concurrent users supported", users, ["concurrent"], f"It must support {users} concurrent users.", "performance", [today]),
        ("The platform must support {value} concurrent users.", "Capacity must reach {value} concurrent users."),
        (("performance", "The current release handles about {d} concurrent users.", {"d": today}),),
    )
    gb = lambda k: count(k, "GB")  # noqa: E731
    storage, n = d.reserve_int(gb, 30, 2000)
    rival = d.reserve_near(gb, n, 0.2, 0.6)
    p.add(
        Fact("Storage per workspace", storage, ["storage"], f"Each workspace includes {storage} of storage.", "pricing", [rival]),
        ("Each workspace includes {value} of storage.", "Storage per workspace is set at {value}."),
        (("competition", "The leading competitor offers {d} of storage.", {"d": rival}),),
    )
    p.add(
        Fact(
            "Product owner",
            owner.name,
            ["product owner", "product manager"],
            f"{owner.name} is the product owner.",
            "team",
            [previous_pm.name],
            [owner.last],
        ),
        ("{value} is the product owner.", "The product owner is {value}."),
        (("team", "{d} managed the previous release and has moved to another product.", {"d": previous_pm.name}),),
    )
    p.add(
        Fact(
            "Engineering lead",
            engineering.name,
            ["engineering lead", "engineering"],
            f"{engineering.name} is the engineering lead.",
            "team",
            [architect.name],
            [engineering.last],
        ),
        ("{value} is the engineering lead.", "Engineering is led by {value}."),
        (("team", "{d} advises on architecture.", {"d": architect.name}),),
    )
    budget, tenths = d.reserve_int(money_m, 8, 250)
    requested = d.reserve_near(money_m, tenths, 0.1, 0.3, direction=1)
    p.add(
        Fact("Development budget", budget, ["budget"], f"The development budget is {budget}.", "team", [requested], [_short_m(budget)]),
        ("The development budget is {value}.", "A budget of {value} has been approved for the release."),
        (("team", "The original request was {d}.", {"d": requested}),),
    )
    beta, n = d.reserve_int(count, 12, 140, avoid_round=0)
    waitlist = d.reserve_near(count, n, 0.5, 2.0, direction=1, avoid_round=0)
    p.add(
        Fact("Beta customers", beta, ["beta", "pilot"], f"{beta} customers will take part in the beta.", "release", [waitlist]),
        ("{value} customers will take part in the beta.", "The beta will include {value} customers."),
        (("release", "A further {d} customers are on the waiting list.", {"d": waitlist}),),
    )
    p.line("overview", "{product} will be generally available on {value}.", {"value": ga}, lead=True)
    return p


# -- generation --------------------------------------------------------------------------------------

_SECTION_WORDS = 470  # typical length of a full-weight section; the document gets enough of them for its length
_KIND_PLANS: dict[str, Callable[[random.Random, str], _Plan]] = {
    "operations_review": _operations_review,
    "incident_report": _incident_report,
    "meeting_minutes": _meeting_minutes,
    "product_spec": _product_spec,
}


def natural_kind(split: str, seed: int) -> str:
    """The kind seed `seed` of `split` plays when no kind is forced."""
    return random.Random(f"summarize/{split}/kind/{seed}").choice(KINDS)


def generate_scenario(split: str, seed: int, kind: str | None = None) -> SummaryScenario:
    """The document for (`split`, `kind`, `seed`) with its key facts; the same arguments give
    the same scenario. `kind` defaults to the seed's natural kind. The id is
    ``"{split}-{kind}-{seed}"``."""
    kind = kind or natural_kind(split, seed)
    if kind not in _KIND_PLANS:
        raise ValueError(f"unknown document kind {kind!r}; choose from {list(KINDS)}")
    rng = random.Random(f"summarize/{split}/{kind}/{seed}")
    plan = _KIND_PLANS[kind](rng, split)
    d = plan.draft
    total = rng.randint(*plan.words)
    keys = list(dict.fromkeys([*plan.core, *(line.section for line in plan.lines)]))
    optional = [k for k in plan.sections if k not in keys]
    rng.shuffle(optional)
    while optional and (len(keys) <= len(plan.core) or sum(plan.sections[k].weight for k in keys) * _SECTION_WORDS < total):
        keys.append(optional.pop())
    sections, ids = d.write_sections(plan.sections, keys, plan.lines, total, GENERIC)
    words = sum(section.words for section in sections)
    scenario = SummaryScenario(
        id=f"{split}-{kind}-{seed}",
        title=plan.title,
        kind=kind,
        sections=sections,
        key_facts=d.key_facts(plan.facts, ids),
        word_limit=min(250, max(150, 10 * round(words / 200))),
        people=[person.name for person in d.people],
    )
    scenario._figures = frozenset(d.figures | extract_entities(plan.title))
    return scenario


__all__ = ["GENERIC", "KINDS", "KIND_LABELS", "generate_scenario", "natural_kind"]
