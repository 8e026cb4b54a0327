"""Procedurally generated company worlds for RagSupport-v0: a help-centre knowledge base per seed.

`build_world` writes a fictional electronics maker's products, shipping, policies, contacts and
filler articles as documents; `World.sample_scenario` draws a customer question with its gold facts.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...judges.facts import extract_entities
from .scenario import Document, RagScenario

QUESTION_KINDS: tuple[str, ...] = ("single_fact", "multi_hop", "comparison", "unanswerable")
_KIND_WEIGHTS = (0.4, 0.25, 0.2, 0.15)
_MAX_DRAWS = 50  # redraws of a question that gives its answer away; only degenerate tiny worlds come near

# --------------------------------------------------------------------------------------
# Static world data
# --------------------------------------------------------------------------------------

_COMPANY_PREFIXES = (
    "Northwind",
    "Bluepeak",
    "Lumen",
    "Harbor",
    "Cobalt",
    "Juniper",
    "Kestrel",
    "Marlow",
    "Onyx",
    "Pinecrest",
    "Redwood",
    "Solstice",
    "Tidewater",
    "Vantage",
    "Wrenfield",
    "Alder",
    "Brightwell",
    "Cedarline",
    "Driftwood",
    "Evergreen",
    "Foxglove",
    "Greystone",
    "Highmoor",
    "Ironbark",
    "Larkspur",
    "Meridian",
    "Oakhurst",
    "Pebblebrook",
    "Riverside",
    "Silverline",
    "Stonebridge",
    "Thistle",
    "Upland",
    "Westerly",
    "Yarrow",
    "Ashgrove",
    "Copperfield",
    "Fernhill",
    "Halcyon",
    "Moorland",
)
_COMPANY_SUFFIXES = ("Devices", "Electronics", "Home", "Labs", "Goods", "Technologies", "Living", "Audio & Home")

_FAMILY_NAMES = (
    "Aurora",
    "Nimbus",
    "Vela",
    "Orion",
    "Halo",
    "Drift",
    "Tempo",
    "Echo",
    "Solace",
    "Zephyr",
    "Cascade",
    "Summit",
    "Ember",
    "Nova",
    "Atlas",
    "Pulse",
    "Strata",
    "Quill",
    "Ripple",
    "Cirrus",
    "Sierra",
    "Juno",
    "Vesper",
    "Arlo",
    "Breeze",
    "Comet",
    "Fjord",
    "Glint",
    "Haven",
    "Iris",
    "Kite",
    "Lyra",
    "Mira",
    "Nomad",
    "Opal",
    "Pico",
    "Quasar",
    "Rhea",
    "Sable",
    "Talon",
    "Umbra",
    "Vireo",
    "Willow",
    "Xenon",
    "Yonder",
    "Zenith",
    "Aria",
    "Beacon",
    "Cobble",
    "Dune",
    "Eclipse",
    "Flare",
    "Gale",
    "Harmony",
    "Indigo",
    "Jasper",
    "Kinetic",
    "Lagoon",
    "Meadow",
    "Nexus",
    "Oasis",
    "Prism",
    "Radiant",
    "Spruce",
    "Tundra",
    "Vista",
    "Wave",
    "Aspen",
    "Boreal",
    "Canyon",
    "Delphi",
    "Everest",
    "Falcon",
    "Granite",
    "Horizon",
    "Isla",
    "Jetstream",
    "Kodiak",
    "Lumina",
    "Mistral",
    "Nebula",
    "Osprey",
    "Polaris",
    "Rover",
    "Solis",
    "Terra",
    "Vortex",
    "Wisp",
    "Alto",
    "Brio",
    "Cadence",
    "Dash",
    "Elara",
    "Fable",
    "Gemma",
    "Hush",
    "Ivy",
    "Jolt",
    "Koa",
    "Loom",
    "Mosaic",
    "Nook",
    "Orbit",
    "Petal",
    "Roam",
    "Sonnet",
    "Tide",
    "Verve",
    "Zest",
    "Arbor",
    "Bloom",
    "Crest",
    "Dawn",
    "Emberly",
    "Fern",
    "Grove",
    "Helix",
    "Lark",
    "Maple",
    "Quartz",
)

# suffix, direction of the attributes it changes (+1 bigger/longer), price factor, marketing tier
_VARIANTS = (
    ("Pro", 1, 1.35, "professional-grade"),
    ("Lite", -1, 0.75, "entry-level"),
    ("Max", 1, 1.6, "top-of-the-range"),
    ("Mini", -1, 0.7, "compact"),
    ("Plus", 1, 1.18, "upgraded"),
    ("SE", -1, 0.85, "great-value"),
    ("Air", -1, 1.12, "featherweight"),
    ("Ultra", 1, 1.8, "flagship"),
)
_BASE_TIERS = ("signature", "all-round", "best-selling", "everyday")
_RETURN_STEPS = (14, 30, 45, 60, 90)

_REGIONS = (
    "the United States",
    "Canada",
    "the United Kingdom",
    "Ireland",
    "Germany",
    "France",
    "the Netherlands",
    "Belgium",
    "Spain",
    "Portugal",
    "Italy",
    "Austria",
    "Switzerland",
    "Poland",
    "the Nordic countries",
    "Australia",
    "New Zealand",
    "Japan",
    "Singapore",
    "South Korea",
    "Mexico",
    "Brazil",
    "India",
    "South Africa",
    "the United Arab Emirates",
    "Chile",
)
_CITIES = (
    "Rotterdam",
    "Austin",
    "Leeds",
    "Lyon",
    "Osaka",
    "Melbourne",
    "Toronto",
    "Porto",
    "Denver",
    "Gothenburg",
    "Dublin",
    "Valencia",
)
_TOLL_FREE = ("800", "833", "844", "855", "866", "877", "888")
_TEAM_STYLES = (("{area} Support", "support"), ("{area} Care", "care"), ("{area} Help Desk", "help"))
_TEAM_HOURS = (
    "Monday to Friday, 8 am to 6 pm Eastern Time",
    "Monday to Saturday, 9 am to 5 pm Eastern Time",
    "every day from 7 am to 9 pm Eastern Time",
    "Monday to Friday, 9 am to 7 pm Eastern Time",
)
# (how the account-security article phrases it, the gold fact)
_TWO_FACTOR = (
    ("an authenticator app", "authenticator app"),
    ("SMS text messages", "SMS"),
    ("a hardware security key", "security key"),
    ("one-time email codes", "email code"),
    ("passkeys", "passkey"),
)
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@dataclass(frozen=True)
class _Category:
    """Everything the generator knows about one product category."""

    key: str
    singular: str  # "pair of wireless headphones": follows an adjective ("our compact ...")
    short: str  # "headphones": "my {short}"
    plural: str
    area: str  # support team area
    price: tuple[int, int]  # dollars
    warranty: tuple[int, ...]  # months
    returns: tuple[int, ...]  # days
    battery: tuple[int, int, str] | None  # low, high, unit
    weight: tuple[int, int]  # grams
    kg: bool  # weights shown in kg
    bulky: float  # share of families shipped as bulky
    reset: tuple[int, ...]  # factory-reset hold seconds
    buttons: tuple[str, ...]
    colours: tuple[str, ...]
    pitches: tuple[str, ...]
    specs: tuple[tuple[str, tuple[str, ...]], ...]
    in_box: tuple[str, ...]
    issues: tuple[tuple[str, str], ...]
    faqs: tuple[tuple[str, str], ...]
    guides: tuple[tuple[str, str], ...]


_CATEGORIES = (
    _Category(
        "headphones",
        "pair of wireless headphones",
        "headphones",
        "headphones",
        "Audio",
        (59, 349),
        (12, 24),
        (30, 45, 60),
        (20, 60, "hour"),
        (180, 320),
        False,
        0.0,
        (5, 6, 8, 10, 12),
        ("the power and volume-down buttons", "the multifunction button"),
        ("Midnight Black", "Glacier White", "Sage Green", "Sandstone", "Navy Blue", "Rose Gold"),
        (
            "Adaptive noise cancellation quiets trains, offices and busy cafés without pressure on your ears.",
            "Memory-foam cushions and a light headband keep it comfortable through long listening sessions.",
            "Multipoint Bluetooth lets you switch between your laptop and phone without re-pairing.",
        ),
        (
            ("Bluetooth", ("5.2", "5.3", "5.4")),
            ("Drivers", ("40 mm dynamic", "35 mm graphene", "30 mm dynamic")),
            ("Noise cancellation", ("Hybrid active", "Adaptive", "Passive isolation")),
            ("Charging port", ("USB-C",)),
            ("Microphones", ("4 beamforming mics", "6 beamforming mics", "2 mics")),
        ),
        ("the headphones", "a USB-C charging cable", "a 3.5 mm audio cable", "a travel case", "a quick-start guide"),
        (
            (
                "One ear cup sounds quieter than the other",
                "Check the balance slider in your device's audio settings and clean the ear-cup mesh with a dry, soft brush.",
            ),
            (
                "The headphones won't pair",
                "Forget the headphones in your phone's Bluetooth menu, switch them off, then "
                "hold the power button until the light flashes blue.",
            ),
            ("Audio drops out", "Keep your phone within 10 metres and away from microwaves and busy Wi-Fi routers."),
            (
                "The microphone sounds muffled on calls",
                "Make sure the microphone openings aren't covered and select the headphones as the input device in your call app.",
            ),
        ),
        (
            (
                "Can I connect the {name} to two devices at once?",
                "Yes. Multipoint pairing keeps two devices connected and switches audio to whichever one starts playing.",
            ),
            (
                "Do the ear cushions come off?",
                "Yes, they twist off, and replacement cushions are sold in our online store.",
            ),
            (
                "Will the {name} work with my laptop?",
                "Any computer with Bluetooth audio works; on Windows and macOS the {name} appears as a standard headset.",
            ),
            (
                "Can I use the {name} with a cable?",
                "Yes. Plug in the included audio cable and the headphones play even when the battery is flat.",
            ),
        ),
        (
            (
                "How to pair your headphones with a new phone",
                "Switch the headphones off, then press and hold the power "
                "button until the status light flashes blue. Open the "
                "Bluetooth settings on your phone and choose the headphones "
                "from the list. If your phone asks for a PIN, enter 0000. "
                "The headphones remember up to 8 devices; the oldest "
                "pairing is dropped when you add a ninth.",
            ),
            (
                "Getting a better fit from over-ear headphones",
                "A good seal makes a bigger difference to bass than any "
                "equaliser setting. Slide the ear cups down until the "
                "cushions sit around, not on, your ears. If you wear "
                "glasses, thin frames seal best. Most people find the "
                "right headband size within 2 or 3 clicks of the middle "
                "position.",
            ),
        ),
    ),
    _Category(
        "speakers",
        "wireless speaker",
        "speaker",
        "speakers",
        "Audio",
        (49, 499),
        (12, 24),
        (30, 60),
        (8, 24, "hour"),
        (500, 3200),
        True,
        0.1,
        (5, 8, 10),
        ("the power and Bluetooth buttons", "the play/pause button"),
        ("Charcoal", "Chalk White", "Ocean Blue", "Terracotta", "Forest Green"),
        (
            "Room-filling 360-degree sound from a speaker small enough to carry between rooms.",
            "A rugged fabric shell and a built-in handle make it an easy companion for the garden or the beach.",
            "Pair two speakers for true stereo, or group several across the house with the app.",
        ),
        (
            ("Output", ("20 W", "30 W", "40 W", "60 W")),
            ("Bluetooth", ("5.1", "5.3")),
            ("Drivers", ("1 woofer, 2 tweeters", "2 full-range drivers", "1 woofer, 1 tweeter, 2 passive radiators")),
            ("Stereo pairing", ("Yes",)),
            ("Charging port", ("USB-C", "DC barrel")),
        ),
        ("the speaker", "a charging cable", "a carry strap", "a quick-start guide"),
        (
            (
                "The speaker turns off by itself",
                "Auto-off kicks in after 20 minutes without audio; you can change this in the app under Power.",
            ),
            (
                "Stereo pairing fails",
                "Update both speakers to the same firmware, place them within 3 metres of each other and start pairing from the app.",
            ),
            (
                "Sound is distorted at high volume",
                "Lower the volume on your phone and raise it on the speaker instead, and turn off any bass boost in your music app.",
            ),
        ),
        (
            (
                "Can I group the {name} with other speakers?",
                "Yes. The app lets you group up to 10 speakers and play the same music in every room.",
            ),
            ("Does the {name} have a microphone?", "Yes, for hands-free calls and your phone's voice assistant."),
            ("Can I charge my phone from the {name}?", "No, the charging port is input only."),
        ),
        (
            (
                "How to set up stereo pairing",
                "Stereo pairing splits the left and right channels across two identical "
                "speakers. Place them 2 to 3 metres apart at ear height, open the app, "
                "choose one speaker and tap Stereo pair. The second speaker chimes once "
                "when it joins.",
            ),
            (
                "Where to place a speaker for the best sound",
                "Bass gets louder near walls and strongest in corners. Start "
                "with the speaker 30 cm from a wall and move it closer if "
                "you want more low end. Avoid putting it inside cabinets, "
                "which muffle the high notes.",
            ),
        ),
    ),
    _Category(
        "lamps",
        "smart lamp",
        "smart lamp",
        "smart lamps",
        "Smart Home",
        (29, 179),
        (24, 36),
        (30, 45),
        None,
        (300, 1800),
        False,
        0.05,
        (5, 8, 10, 15),
        ("the button on the base", "the touch panel"),
        ("Warm White", "Matte Black", "Brushed Brass", "Pale Oak", "Slate Grey"),
        (
            "Sixteen million colours and tunable white light, from a candle-like glow to crisp daylight.",
            "Schedules and sunrise alarms make mornings gentler and evenings calmer.",
            "Works with the major voice assistants, so you can dim it without getting up.",
        ),
        (
            ("Brightness", ("800 lumens", "1,100 lumens", "1,600 lumens")),
            ("Colour temperature", ("2,200-6,500 K", "2,700-6,000 K")),
            ("Connectivity", ("Wi-Fi 2.4 GHz", "Wi-Fi 2.4 GHz and Bluetooth", "Zigbee")),
            ("Power", ("USB-C, 18 W adapter", "Mains, 12 W")),
            ("Lifetime of LEDs", ("25,000 hours rated", "30,000 hours rated")),
        ),
        ("the lamp", "a power adapter", "a quick-start guide"),
        (
            (
                "The lamp won't connect to Wi-Fi",
                "The lamp needs a 2.4 GHz network. If your router combines bands under "
                "one name, temporarily turn off 5 GHz while you set up.",
            ),
            (
                "The lamp flickers when dimmed",
                "Update the firmware from the app; if you use a wall dimmer, set it to full and dim from the app instead.",
            ),
            (
                "Schedules run at the wrong time",
                "Check that the time zone in the app matches your home and that the lamp shows as online.",
            ),
        ),
        (
            (
                "Does the {name} work without internet?",
                "Yes. Physical controls and Bluetooth control from the app work offline; schedules need a connection to sync.",
            ),
            (
                "Can I control the {name} with my voice?",
                'Yes, link it in your voice assistant\'s app and say "turn on the lamp".',
            ),
            ("Can several people control the {name}?", "Yes, invite household members from the app's Home settings."),
        ),
        (
            (
                "How to create a sunrise alarm",
                "Open the app, choose your lamp and tap Routines, then Sunrise. Pick a "
                "wake-up time and a fade length; 30 minutes suits most people. The lamp "
                "starts at the warmest, dimmest setting and ends at bright daylight white.",
            ),
            (
                "Choosing the right colour temperature",
                "Warm light around 2,700 K helps you wind down in the evening, "
                "while 5,000 K and above feels like daylight and suits desks and "
                "kitchens. You can set different scenes for different times of "
                "day.",
            ),
        ),
    ),
    _Category(
        "routers",
        "Wi-Fi router",
        "router",
        "routers",
        "Connectivity",
        (79, 449),
        (24, 36),
        (30,),
        None,
        (400, 1400),
        False,
        0.0,
        (10, 15, 20, 30),
        ("the recessed reset button (use a paperclip)", "the reset pinhole on the back"),
        ("White", "Graphite"),
        (
            "Mesh-ready Wi-Fi that keeps video calls smooth from the kitchen to the garden office.",
            "Built-in parental controls and automatic security updates, managed from one simple app.",
            "Tri-band radios keep smart-home gadgets off the band your laptop and TV use.",
        ),
        (
            ("Wi-Fi standard", ("Wi-Fi 6", "Wi-Fi 6E", "Wi-Fi 7")),
            ("Ethernet ports", ("2 gigabit", "3 gigabit", "1 x 2.5 gigabit and 3 gigabit")),
            ("Bands", ("Dual-band 2.4/5 GHz", "Tri-band 2.4/5/6 GHz")),
            ("Coverage", ("up to 150 square metres", "up to 230 square metres")),
            ("Security", ("WPA3", "WPA3 and automatic updates")),
        ),
        ("the router", "a power adapter", "an Ethernet cable", "a quick-start guide"),
        (
            (
                "Internet is slow in some rooms",
                "Run the placement check in the app. Routers work best raised off the floor and away from thick walls and fish tanks.",
            ),
            (
                "The status light is red",
                "Restart your modem first, wait until it is fully online, then restart the router.",
            ),
            (
                "A device can't see the network",
                "Older devices may not support WPA3; turn on WPA2/WPA3 compatibility mode in the app's Security settings.",
            ),
        ),
        (
            (
                "Can I add the {name} to an existing mesh?",
                "Yes, any of our mesh-ready routers can join as a satellite from the app.",
            ),
            (
                "Does the {name} replace my modem?",
                "No. Connect it to your internet provider's modem or fibre box with the included Ethernet cable.",
            ),
            ("Can I set up a guest network on the {name}?", "Yes, in the app under Wi-Fi, Guest network."),
        ),
        (
            (
                "How to pick the best spot for your router",
                "Put the router in the middle of your home, at least 1 metre "
                "off the floor and in the open. Every wall the signal passes "
                "through weakens it, and mirrors, metal shelving and aquariums "
                "are the worst offenders.",
            ),
            (
                "Setting up parental controls",
                "Create a profile for each family member in the app and assign their "
                "devices. You can pause the internet for a profile, set a bedtime, and "
                "filter content by age group.",
            ),
        ),
    ),
    _Category(
        "ebikes",
        "electric bike",
        "e-bike",
        "e-bikes",
        "Mobility",
        (1299, 3999),
        (24, 36, 48),
        (14, 30),
        None,
        (18000, 28000),
        True,
        1.0,
        (5, 8, 10),
        ("the mode and light buttons on the handlebar display", "the power button on the display"),
        ("Stone Grey", "Midnight Blue", "Olive", "Pearl White"),
        (
            "A mid-drive motor and torque sensor give a natural push that feels like riding with a tailwind.",
            "Integrated lights, mudguards and a rear rack make it ready for the daily commute straight out of the box.",
            "A removable, lockable battery charges at your desk while the bike stays downstairs.",
        ),
        (
            ("Motor", ("250 W mid-drive", "250 W rear hub")),
            ("Range", ("up to 80 km", "up to 100 km", "up to 120 km")),
            ("Gears", ("8-speed", "Belt drive with 5-speed hub", "10-speed")),
            ("Frame sizes", ("S, M, L", "M, L")),
            ("Brakes", ("Hydraulic disc",)),
        ),
        (
            "the bike (pedals and handlebar to fit)",
            "a battery charger",
            "two battery keys",
            "a multi-tool",
            "an owner's manual",
        ),
        (
            (
                "The motor doesn't assist",
                "Check that the battery is clicked fully into its cradle and that the display shows an assist level above zero.",
            ),
            (
                "The display shows error E12",
                "Error E12 means the speed sensor can't see the wheel magnet. Align the magnet within 5 mm of the sensor.",
            ),
            (
                "The brakes squeal",
                "Clean the discs with isopropyl alcohol; avoid touching the disc surface with your fingers.",
            ),
        ),
        (
            (
                "Can I fit a child seat to the {name}?",
                "Yes, rear child seats approved for e-bikes fit the integrated rack.",
            ),
            (
                "Do I need a licence for the {name}?",
                "No. The motor assist stops at 25 km/h, so it is treated as a regular bicycle in most places.",
            ),
            (
                "Can I take the battery on a train?",
                "Yes, most rail operators allow e-bike batteries; check your operator's rules.",
            ),
        ),
        (
            (
                "Caring for your e-bike battery",
                "Store the battery indoors between 10 and 20 °C and keep it between 30% "
                "and 80% charged if you won't ride for a few weeks. Charge it with the "
                "supplied charger only.",
            ),
            (
                "Fitting the pedals and handlebar",
                "Your e-bike arrives mostly assembled. Turn the handlebar straight, "
                "tighten the four stem bolts to 5 Nm in a cross pattern, then fit the "
                "pedals: the left pedal has a reverse thread.",
            ),
        ),
    ),
    _Category(
        "coffee",
        "coffee machine",
        "coffee machine",
        "coffee machines",
        "Kitchen",
        (149, 1199),
        (12, 24, 36),
        (30,),
        None,
        (3000, 12000),
        True,
        0.8,
        (5, 8, 10),
        ("the two cup buttons together", "the steam and power buttons together"),
        ("Stainless Steel", "Black", "Cream", "Cherry Red"),
        (
            "Barista-style espresso at the touch of a button, with a steam wand for silky milk.",
            "A built-in conical burr grinder doses fresh beans for every cup.",
            "Save your favourite recipes and start brewing from your phone before you get out of bed.",
        ),
        (
            ("Pump pressure", ("15 bar", "19 bar")),
            ("Water tank", ("1.5 litres", "1.8 litres", "2 litres")),
            ("Grinder", ("Conical burr, 18 settings", "Conical burr, 30 settings", "None (ground coffee or pods)")),
            ("Power", ("1,350 W", "1,450 W", "1,600 W")),
            ("Milk system", ("Steam wand", "Automatic frother")),
        ),
        (
            "the coffee machine",
            "a portafilter with single and double baskets",
            "a milk jug",
            "a cleaning brush",
            "a quick-start guide",
        ),
        (
            ("Coffee runs too fast and tastes sour", "Grind finer by 2 settings and tamp more firmly."),
            (
                "No water comes out",
                "Check that the tank is seated properly, then run the descaling programme if you haven't in a while.",
            ),
            (
                "The steam wand sputters",
                "Purge the wand for 2 seconds before and after steaming, and wipe it with a damp cloth.",
            ),
        ),
        (
            (
                "How often should I descale the {name}?",
                "The machine reminds you when it's time; with hard water that's roughly every month.",
            ),
            ("Can I use pre-ground coffee in the {name}?", "Yes, use the bypass doser and skip the grinder."),
            ("Is the drip tray dishwasher safe?", "Yes, the drip tray and grid can go in the dishwasher."),
        ),
        (
            (
                "Dialling in your espresso",
                "Aim for about 36 g of coffee in the cup from 18 g of ground coffee in 25 to "
                "30 seconds. If the shot runs faster, grind finer; if slower, grind coarser. "
                "Change one thing at a time.",
            ),
            (
                "How to descale your coffee machine",
                "Fill the tank with descaling solution mixed as the bottle instructs, "
                "place a large container under the group head and steam wand, and "
                "start the descaling programme from the menu. It takes about 25 "
                "minutes and rinses itself at the end.",
            ),
        ),
    ),
    _Category(
        "vacuums",
        "robot vacuum",
        "robot vacuum",
        "robot vacuums",
        "Smart Home",
        (199, 999),
        (12, 24),
        (30, 45),
        (90, 180, "minute"),
        (2500, 4500),
        True,
        0.6,
        (5, 8, 10),
        ("the home and power buttons together", "the spot-clean button"),
        ("Black", "White", "Space Grey"),
        (
            "LiDAR mapping plans tidy, efficient rows and remembers every room.",
            "A self-emptying dock holds weeks of dust so you hardly think about it.",
            "Mops and vacuums in one pass, lifting the mop automatically on rugs.",
        ),
        (
            ("Suction", ("4,000 Pa", "5,500 Pa", "7,000 Pa")),
            ("Navigation", ("LiDAR", "Camera and LiDAR", "Gyroscope")),
            ("Dustbin", ("400 ml", "450 ml")),
            ("Dock", ("Charging dock", "Self-emptying dock")),
            ("Noise", ("62 dB", "65 dB")),
        ),
        ("the robot", "a charging dock", "a side brush", "a spare filter", "a quick-start guide"),
        (
            (
                "The robot can't find its dock",
                "Leave 0.5 metres clear on each side of the dock and 1.5 metres in front of it.",
            ),
            ("The map is missing rooms", "Open doors before a mapping run and let the robot finish without moving it."),
            ("Suction seems weak", "Empty the bin, clean the filter and remove hair wrapped around the main brush."),
        ),
        (
            ("Can the {name} climb over thresholds?", "Yes, it crosses thresholds and rug edges up to 2 cm high."),
            ("Can I set no-go zones for the {name}?", "Yes, draw no-go zones and virtual walls on the map in the app."),
            (
                "Does the {name} work on dark carpets?",
                "Yes, although some very dark rugs can look like a drop; you can turn on carpet mode in the app.",
            ),
        ),
        (
            (
                "Preparing your home for a robot vacuum",
                "Pick up cables, socks and small toys before the first run. Move "
                "light chairs so the robot can reach under tables, and check that "
                "rug tassels are tucked under.",
            ),
            (
                "Replacing brushes and filters",
                "Clean the filter weekly and replace it about every 3 months. Side brushes "
                "last roughly 6 months and the main brush about 12 months, depending on "
                "pets and floor type.",
            ),
        ),
    ),
    _Category(
        "cameras",
        "mirrorless camera",
        "camera",
        "cameras",
        "Imaging",
        (399, 1899),
        (12, 24),
        (14, 30),
        None,
        (300, 900),
        False,
        0.0,
        (5, 8, 10),
        ("the menu and delete buttons together", "the function and playback buttons"),
        ("Black", "Silver", "Graphite"),
        (
            "A 26-megapixel sensor and fast autofocus capture sharp shots of kids, pets and sport.",
            "In-body stabilisation keeps handheld video steady on the move.",
            "A flip screen and a clean microphone input make it a favourite with video creators.",
        ),
        (
            ("Sensor", ("24 MP APS-C", "26 MP APS-C", "33 MP full-frame")),
            ("Video", ("4K at 30 fps", "4K at 60 fps", "6K at 30 fps")),
            ("Autofocus points", ("425", "693", "759")),
            ("Screen", ("3-inch vari-angle touchscreen", "3-inch tilting touchscreen")),
            ("Card slot", ("1 x SD UHS-II", "2 x SD UHS-II")),
        ),
        ("the camera body", "a rechargeable battery", "a USB-C cable", "a shoulder strap", "a body cap"),
        (
            (
                "The camera won't turn on",
                "Charge the battery in the camera with the lid closed, and make sure the battery door is fully shut.",
            ),
            (
                "Photos are blurry",
                "Check that stabilisation is on and raise the shutter speed to at least 1/125 second for moving subjects.",
            ),
            (
                "The card shows an error",
                "Back up your photos, then format the card in the camera rather than on a computer.",
            ),
        ),
        (
            (
                "Does the {name} work with my old lenses?",
                "Yes, with our mount adapter; autofocus works with most recent lenses.",
            ),
            (
                "Can I use the {name} as a webcam?",
                "Yes, connect it over USB-C and select it as the camera in your video-call app.",
            ),
            ("Can I charge the {name} over USB-C?", "Yes, from a laptop or any USB-C power delivery charger."),
        ),
        (
            (
                "Shooting sharper photos in low light",
                "Open the aperture as wide as your lens allows, raise ISO to 3200 "
                "or 6400 and use stabilisation. For still subjects, a shutter speed "
                "of 1/30 second is usually safe handheld.",
            ),
            (
                "Transferring photos to your phone",
                "Turn on the wireless connection in the camera's Network menu, open "
                "the app and follow the prompts. Photos transfer as full-size JPEGs; "
                "RAW files stay on the card.",
            ),
        ),
    ),
    _Category(
        "watches",
        "smartwatch",
        "smartwatch",
        "smartwatches",
        "Wearables",
        (99, 499),
        (12, 24),
        (30, 60),
        (24, 120, "hour"),
        (30, 70),
        False,
        0.0,
        (5, 8, 10, 15),
        ("the side button", "the crown and the side button together"),
        ("Obsidian", "Silver", "Blush", "Moss Green", "Ocean Blue"),
        (
            "Heart-rate, sleep and workout tracking in a light aluminium case you'll forget you're wearing.",
            "Built-in GPS maps your runs and rides without your phone.",
            "Contactless payments, notifications and a bright always-on display.",
        ),
        (
            ("Display", ("1.4-inch AMOLED", "1.6-inch AMOLED", "1.2-inch memory-in-pixel")),
            ("Case", ("40 mm aluminium", "44 mm aluminium", "42 mm titanium")),
            ("Sensors", ("Heart rate, SpO2, accelerometer", "Heart rate, SpO2, skin temperature, barometer")),
            ("GPS", ("Built-in, dual-band", "Built-in")),
            ("Strap", ("20 mm quick-release", "22 mm quick-release")),
        ),
        ("the watch", "a magnetic charging cable", "a second strap size", "a quick-start guide"),
        (
            (
                "Notifications stop arriving",
                "Make sure the companion app is allowed to run in the background on your "
                "phone and that Do Not Disturb is off on the watch.",
            ),
            (
                "Heart-rate readings look wrong",
                "Wear the watch a finger's width above your wrist bone and tighten the strap during workouts.",
            ),
            (
                "The watch won't charge",
                "Clean the charging contacts on the back with a dry cloth and check the magnetic cable is seated.",
            ),
        ),
        (
            ("Does the {name} work with iPhone and Android?", "Yes, with the companion app on both."),
            (
                "Can I reply to messages from the {name}?",
                "Yes, with quick replies on Android; on iPhone you can read and dismiss notifications.",
            ),
            ("Can I change the strap on the {name}?", "Yes, it uses standard quick-release straps."),
        ),
        (
            (
                "Getting accurate sleep tracking",
                "Wear the watch snugly at night and keep Sleep mode on a schedule. It "
                "takes about 7 nights before your sleep score settles into your normal "
                "range.",
            ),
            (
                "Setting up contactless payments",
                "Add a card in the companion app's Wallet section and set a 4-digit PIN "
                "on the watch. You'll be asked for the PIN again each time you put the "
                "watch back on.",
            ),
        ),
    ),
    _Category(
        "keyboards",
        "wireless keyboard",
        "keyboard",
        "keyboards",
        "Connectivity",
        (39, 229),
        (12, 24),
        (30, 60),
        (80, 400, "hour"),
        (400, 1100),
        False,
        0.0,
        (5, 8, 10),
        ("the Fn and Esc keys together", "the Fn, Ctrl and R keys together"),
        ("Graphite", "Pale Grey", "Lilac", "Mint"),
        (
            "Quiet, low-profile keys with a satisfying, precise feel for long writing days.",
            "Switch between three paired devices with a single key.",
            "Backlit keys that brighten automatically as the room gets darker.",
        ),
        (
            ("Layout", ("Full size", "Tenkeyless", "Compact 75%")),
            ("Connection", ("Bluetooth and USB receiver", "Bluetooth")),
            ("Paired devices", ("Up to 3",)),
            ("Switches", ("Low-profile scissor", "Low-profile tactile", "Low-profile linear")),
            ("Backlight", ("White, adaptive", "None")),
        ),
        ("the keyboard", "a USB receiver", "a USB-C charging cable", "a quick-start guide"),
        (
            (
                "Keys repeat or lag",
                "Move the USB receiver to a port on the front of your computer or use the extension adapter.",
            ),
            (
                "The keyboard won't connect to a second device",
                "Press and hold a device key until it blinks quickly, then pair from your computer's Bluetooth settings.",
            ),
            (
                "Some keys type the wrong characters",
                "Check the keyboard layout in your operating system's language settings.",
            ),
        ),
        (
            (
                "Does the {name} work with Mac and Windows?",
                "Yes, it swaps the modifier keys automatically based on the connected computer.",
            ),
            ("Can I remap keys on the {name}?", "Yes, with the desktop app."),
            ("Can I use the {name} while it charges?", "Yes, it keeps working while plugged in."),
        ),
        (
            (
                "Switching between paired devices",
                "Press one of the three device keys to switch. A quick blink means the "
                "device is connected; a slow blink means the keyboard is searching. "
                "Each key remembers one device.",
            ),
            (
                "Setting up your ergonomic workspace",
                "Keep your elbows at roughly 90 degrees and your wrists straight. "
                "Fold the keyboard's feet down if you find yourself bending your "
                "wrists upwards.",
            ),
        ),
    ),
)

# --------------------------------------------------------------------------------------
# Document templates
# --------------------------------------------------------------------------------------

_OVERVIEW_TITLES = ("{name}", "{name} overview", "Introducing the {name}")
_OVERVIEW_TEMPLATES = (
    "The {name} is {companys} {tier} {singular}. {pitch}\n\nIt comes in {colours} and retails for {price}.\n\nSKU: "
    "{sku}. Questions about the {name} are handled by our {team} team.",
    "Meet the {name}, a {tier} {singular} from {company}. {pitch}\n\nPrice: {price}\nColours: {colours}\nSKU: "
    "{sku}\n\nNeed help? The {name} is supported by the {team} team.",
    "{pitch} That's the idea behind the {name}, our {tier} {singular}.\n\nYou can buy the {name} for {price} in "
    "{colours} (product code {sku}). For setup help, repairs or warranty questions, the {team} team looks after the "
    "{name}.",
)
_SPECS_TITLES = ("{name} technical specifications", "{name}: specs at a glance", "Full specifications for the {name}")
_BATTERY_LINES = (
    "Battery life: up to {battery}",
    "Battery: up to {battery} per charge",
    "Runtime: up to {battery} on a full charge",
)
_WEIGHT_LINES = ("Weight: {weight}", "Weight (product only): {weight}")
_SHIPPING_LINES = ("Shipping class: {shipping}", "Shipping class: {shipping} (see the shipping page for your region)")
_WARRANTY_TITLES = (
    "{name}: warranty and returns",
    "Warranty and returns for the {name}",
    "{name} warranty & return policy",
)
_WARRANTY_TEMPLATES = (
    "Every {name} is covered by a limited warranty for {warranty} from the date of delivery. The warranty covers "
    "manufacturing defects and hardware failures under normal use; accidental damage and normal wear are not "
    "covered.\n\nReturns: you can return the {name} within {returns} of delivery for a refund. Include all "
    "accessories and the original packaging. Opened items may be subject to a restocking fee, as described in our "
    "refund policy.",
    "Warranty: {warranty}, starting on the day your {name} is delivered. If a defect appears in that time we'll "
    "repair or replace it free of charge. To start a claim, see our warranty claims article.\n\nChanged your mind? "
    "The return window for the {name} is {returns} from delivery. Opened items may carry a restocking fee under our "
    "refund policy.",
    "We stand behind the {name} with a limited warranty for {warranty} from the date of delivery, covering faults in "
    "materials and workmanship.\n\nIf it isn't right for you, return the {name} within {returns} of delivery. "
    "Unopened items are refunded in full; opened items may carry a restocking fee (see the refund policy).",
)
_TROUBLE_TITLES = (
    "Troubleshooting the {name}",
    "{name}: troubleshooting and factory reset",
    "Fixing common {name} problems",
)
_RESTART_LINES = (
    "To restart the {name} without losing your settings, hold the power button for {restart}.",
    "A quick restart fixes most glitches: hold the power button for {restart}. Your settings are kept.",
)
_RESET_LINES = (
    "Factory reset: press and hold {button} for {reset} until the status light blinks. This erases all settings.",
    "If nothing else helps, restore factory settings by pressing and holding {button} for {reset}. All your settings will be erased.",
    "To factory reset the {name}, press and hold {button} for {reset}. The status light blinks when the reset starts.",
)
_FIRMWARE_LINES = (
    "The current firmware version is {firmware}. Updates install automatically through the {company} app.",
    "Make sure you're on the latest firmware, version {firmware}; check under Settings > About in the {company} app.",
)
_FAQ_TITLES = ("{name} FAQ", "{name}: frequently asked questions", "Common questions about the {name}")
_FAQ_GENERIC = (
    ("Where can I find the warranty terms for the {name}?", "See the warranty and returns article for the {name}."),
    ("Does the {name} work with the {company} app?", "Yes. Download the {company} app, sign in and tap Add device."),
    (
        "Where can I buy accessories for the {name}?",
        "Accessories are sold in our online store and through selected retailers.",
    ),
    (
        "Who do I contact if my {name} needs a repair?",
        "Contact the {team} team; their details are on the team's contact page.",
    ),
)
_SETUP_TITLES = ("Getting started with the {name}", "{name} setup guide", "Setting up your {name}")
_SETUP_TEMPLATES = (
    "In the box: {in_box}.\n\n1. Unpack the {name} and remove all protective film.\n2. Download the {company} app and "
    "create an account or sign in.\n3. Tap Add device and follow the on-screen steps.\n4. Install any firmware update "
    "the app offers.\n\n{tip}",
    "What's included: {in_box}.\n\nSetting up the {name} takes a few minutes. Open the {company} app, tap the plus "
    "icon and choose the {name} from the list. The app walks you through connecting it and checks for updates. {tip}",
)
_SETUP_TIPS = (
    "Tip: register your product in the app so warranty claims go faster.",
    "Tip: keep your receipt or order confirmation, you'll need it for warranty claims.",
    "Tip: name your device in the app, which helps if you own more than one.",
)
_REGION_TEMPLATES = (
    "We deliver to {region} with two services. Standard shipping arrives within {std_days} and express shipping "
    "within {exp_days} of dispatch.\n\nRates by shipping class:\n- Parcel items: standard {p_std}, express {p_exp}\n- "
    "Bulky items: standard {b_std}, express {b_exp}\n\nEach product's shipping class is listed on its specifications "
    "page. {note}",
    "Shipping rates for {region}\n\nParcel items cost {p_std} with standard shipping and {p_exp} with express "
    "shipping. Bulky items cost {b_std} standard or {b_exp} express.\n\nDelivery times: standard within {std_days}, "
    "express within {exp_days}. {note}",
    "Orders to {region} ship from our regional warehouse. Choose standard shipping (within {std_days}) or express "
    "shipping (within {exp_days}).\n\n| Shipping class | Standard | Express |\n| Parcel | {p_std} | {p_exp} |\n| "
    "Bulky | {b_std} | {b_exp} |\n\n{note}",
)
_REGION_NOTES = (
    "Orders placed after 2 pm local time are dispatched the next business day.",
    "You'll get a tracking link by email as soon as your order leaves the warehouse.",
    "Bulky items are delivered to the ground floor by a two-person team; please make sure someone is home.",
    "Delivery times are counted from dispatch and exclude public holidays.",
)
_TEAM_TEMPLATES = (
    "The {team} team helps with {plurals}.\n\nPhone: {phone} ({hours})\nEmail: {email} (we reply within "
    "{reply})\n\nHave your order number or serial number ready so we can help faster.",
    "Need help with {plurals}? Our {team} team is here for you. Call {phone}, {hours}, or write to {email}; we aim to "
    "answer emails within {reply}.",
    "Contact details for the {team} team, which supports {plurals}:\n- Phone: {phone}\n- Email: {email}\n- Opening "
    "hours: {hours}\n\nEmails are answered within {reply}.",
)
_RELEASE_FIXES = (
    "Improves Bluetooth connection stability",
    "Fixes a rare issue where the device wouldn't wake from standby",
    "Improves battery life by up to {pct}%",
    "Adds {lang} as a display and voice-prompt language",
    "Reduces start-up time by about {pct}%",
    "Fixes incorrect status-light colours after a restart",
    "Improves app pairing on older phones",
    "Security improvements",
)
_LANGUAGES = ("Polish", "Korean", "Portuguese", "Dutch", "Turkish", "Czech", "Swedish")
_BLOGS = (
    (
        "{company} opens a new repair centre in {city}",
        "Our newest repair centre opened in {city} this {month}. The {n}-person workshop can turn around most repairs in "
        "a single visit, and it doubles as a drop-off point for recycling old electronics. We fixed our first {m} "
        "devices in the opening week.",
    ),
    (
        "Behind the design of the {family}",
        "The {family} started as a sketch on a café napkin. Over {n} prototypes the design team chased one goal: make it "
        "disappear into everyday life. Early versions were {m}% heavier than the final design, and the lead engineer "
        "still keeps one on her desk as a reminder.",
    ),
    (
        "{n} ways to get more from your {plural}",
        "Most people use only a fraction of what their {plural} can do. Our support teams answer the same questions "
        "every week, so we collected the {n} tips they share most often, from app shortcuts to simple cleaning routines.",
    ),
    (
        "Our packaging is now {pct}% plastic-free",
        "Since {month} every new product ships in packaging that is {pct}% plastic-free, using moulded pulp instead of "
        "foam. Over a year that saves around {m} tonnes of plastic.",
    ),
    (
        "Customer story: a café in {city} runs on {company} gear",
        "When a small café in {city} refitted its kitchen, the owners chose {company} products throughout. They now "
        "serve about {m} customers a day and say the biggest change was how quiet the back of house became.",
    ),
    (
        "What's new in the {company} app this {month}",
        "This month's app update brings a redesigned home screen, faster device setup and dark mode. Early testers set "
        "up new devices about {pct}% faster. The update rolls out gradually over the next {n} days.",
    ),
    (
        "Meet the team: {area} support in {city}",
        "Our {area} support specialists in {city} handle around {m} conversations a month. We asked three of them about "
        "the question they hear most and the fix that surprises customers every time.",
    ),
    (
        "A year of repairs: what we learned",
        "Last year our technicians repaired {m} devices. The most common fix was a worn charging port, followed by "
        "cracked casings. Here is what we changed in our designs as a result, and {n} habits that keep your devices "
        "healthy.",
    ),
)

# --------------------------------------------------------------------------------------
# Question and answer templates
# --------------------------------------------------------------------------------------

_PREAMBLES = ("Hi!", "Hello there.", "Hi, hoping you can help.", "Good morning!", "Quick question.", "Hey,")

_SINGLE_Q: dict[str, tuple[str, ...]] = {
    "price": (
        "How much does the {p} cost?",
        "What's the price of the {p}?",
        "I'm thinking about getting the {p}. What does it sell for?",
        "Can you tell me the current price of the {p}?",
        "How much would I pay for the {p}?",
    ),
    "warranty": (
        "How long is the warranty on the {p}?",
        "Hi, I bought the {p} last month. How long is it covered under warranty?",
        "What warranty period comes with the {p}?",
        "My {p} started acting up. How long does the warranty last on it?",
        "Is the {p} covered by a warranty, and for how long?",
    ),
    "returns": (
        "How many days do I have to return the {p}?",
        "What's the return window for the {p}?",
        "I ordered the {p} but I'm not sure I'll keep it. How long do I have to send it back?",
        "If I change my mind about the {p}, how long can I wait before returning it?",
    ),
    "battery": (
        "How long does the battery last on the {p}?",
        "What battery life should I expect from the {p}?",
        "How long does the {p} run on a full charge?",
        "Is the battery on the {p} any good? How long does a charge last?",
    ),
    "weight": (
        "How much does the {p} weigh?",
        "What's the weight of the {p}?",
        "I need something light. How heavy is the {p}?",
    ),
    "reset": (
        "How long do I hold the button to factory reset the {p}?",
        "My {p} is frozen. How long do I press the button for a factory reset?",
        "I want to wipe my {p} before giving it away. How long do I hold the reset buttons?",
        "What's the factory reset procedure for the {p}? How long should I hold the button?",
    ),
    "firmware": (
        "What's the latest firmware version for the {p}?",
        "Which firmware version should my {p} be running?",
        "Is my {p} up to date? What's the current firmware version?",
    ),
    "colours": (
        "What colours does the {p} come in?",
        "Which colour options are there for the {p}?",
        "Is the {p} available in different colours?",
    ),
    "std_days": (
        "How long does standard shipping to {r} take?",
        "If I order with standard delivery to {r}, how long until it arrives?",
        "I live in {r}. How long will standard shipping take?",
    ),
    "exp_days": (
        "How fast is express shipping to {r}?",
        "If I pay for express delivery to {r}, how long will it take?",
        "I'm in {r} and need my order quickly. How long does express shipping take?",
    ),
    "team_email": (
        "What email address can I use to contact support about my {short}?",
        "Who do I email about a problem with my {short}?",
        "Which email address handles support for {plural}?",
    ),
    "team_phone": (
        "What number do I call for help with my {short}?",
        "Is there a phone line for {plural} support?",
        "I'd rather talk to someone about my {short}. What's the phone number?",
    ),
    "restock_pct": (
        "What's the restocking fee if I return an opened item?",
        "Do you charge a restocking fee on returns? How much is it?",
        "I opened the box and used it once. Is there a restocking fee if I send it back?",
    ),
    "refund_days": (
        "Once you receive my return, how long does the refund take?",
        "How long do refunds take to reach my card after a return?",
        "I sent a return back last week. How soon will I get my money back once it arrives?",
    ),
    "link_minutes": (
        "How long is the password reset link valid?",
        "The password reset link you sent me doesn't work any more. How long do those links last?",
        "How much time do I have to use a password reset email?",
    ),
    "tfa": (
        "What two-factor authentication options do you support?",
        "Which methods can I use for two-step verification on my account?",
        "I want to make my account more secure. What two-factor options are there?",
    ),
    "deletion_days": (
        "If I delete my account, how long until my data is erased?",
        "How long does it take for my personal data to be deleted after I close my account?",
        "I've requested account deletion. When will my data actually be gone?",
    ),
    "claim_days": (
        "After I file a warranty claim, how soon will I hear back?",
        "How long does it take you to respond to a warranty claim?",
        "I just submitted a warranty claim. When can I expect a reply?",
    ),
    "cancel_hours": (
        "How long after ordering can I still cancel?",
        "I placed an order by mistake. How long do I have to cancel it?",
        "What's the cancellation window for an order?",
    ),
}
_SINGLE_A: dict[str, tuple[str, ...]] = {
    "price": (
        "The {p} costs {v} [{d}].",
        "The {p} retails for {v} [{d}].",
        "You can get the {p} for {v} [{d}].",
    ),
    "warranty": (
        "The {p} is covered by a limited warranty for {v} from the date of delivery [{d}].",
        "The {p} comes with a warranty of {v}, counted from delivery [{d}].",
    ),
    "returns": (
        "You can return the {p} within {v} of delivery [{d}].",
        "The return window for the {p} is {v} from delivery [{d}].",
    ),
    "battery": (
        "The {p} lasts up to {v} on a full charge [{d}].",
        "Battery life on the {p} is up to {v} [{d}].",
    ),
    "weight": (
        "The {p} weighs {v} [{d}].",
        "According to its specifications, the {p} weighs {v} [{d}].",
    ),
    "reset": (
        "To factory reset the {p}, press and hold {button} for {v} [{d}].",
        "Hold {button} for {v} and the {p} will restore its factory settings [{d}].",
    ),
    "firmware": (
        "The current firmware for the {p} is version {v} [{d}].",
        "Your {p} should be on firmware {v}, the latest version [{d}].",
    ),
    "colours": (
        "The {p} comes in {v} [{d}].",
        "You can choose the {p} in {v} [{d}].",
    ),
    "std_days": (
        "Standard shipping to {r} arrives within {v} [{d}].",
        "With standard shipping, orders to {r} arrive within {v} [{d}].",
    ),
    "exp_days": (
        "Express shipping to {r} arrives within {v} [{d}].",
        "With express shipping, orders to {r} arrive within {v} [{d}].",
    ),
    "team_email": (
        "Support for {plural} is handled by the {team} team, which you can email at {v} [{d}].",
        "Please email the {team} team at {v}; they look after {plural} [{d}].",
    ),
    "team_phone": (
        "The {team} team supports {plural} and can be reached on {v} [{d}].",
        "Call the {team} team on {v}; they handle {plural} [{d}].",
    ),
    "restock_pct": (
        "Opened items returned to us carry a {v} restocking fee [{d}].",
        "We charge a {v} restocking fee on opened items [{d}].",
    ),
    "refund_days": (
        "Once we receive your return, refunds to your original payment method are issued within {v} [{d}].",
        "Refunds to your original payment method are processed within {v} of your return arriving [{d}].",
    ),
    "link_minutes": (
        "Password reset links are valid for {v} [{d}].",
        "A password reset link expires after {v}, so request a new one if yours has lapsed [{d}].",
    ),
    "tfa": (
        "You can use {v} for two-factor authentication [{d}].",
        "Two-factor authentication is available with {v} [{d}].",
    ),
    "deletion_days": (
        "After you request deletion, your account data is permanently erased within {v} [{d}].",
        "Your personal data is deleted within {v} of your deletion request [{d}].",
    ),
    "claim_days": (
        "Our team responds to warranty claims within {v} [{d}].",
        "You should hear back about your warranty claim within {v} [{d}].",
    ),
    "cancel_hours": (
        "You can cancel an order within {v} of placing it [{d}].",
        "Orders can be cancelled up to {v} after you place them [{d}].",
    ),
}
_SHIP_Q = (
    "How much does {speed} shipping cost for the {p} to {r}?",
    "I'm ordering the {p} from {r}. What's the {speed} shipping charge?",
    "What would I pay for {speed} delivery of the {p} to {r}?",
    "Hi, I'd like the {p} sent to {r} with {speed} shipping. How much is shipping?",
)
_SHIP_A = (
    "The {p} ships as a {cls} item [{d1}], and {speed} shipping for {cls} items to {r} costs {v} [{d2}].",
    "The {p} is in the {cls} shipping class [{d1}]; {speed} shipping to {r} for that class is {v} [{d2}].",
)
_CONTACT_Q: dict[str, tuple[str, ...]] = {
    "phone": (
        "What's the phone number for help with my {p}?",
        "I need to call someone about my {p}. Which number should I use?",
        "My {p} has a problem and I'd like to speak to a person. Who do I call?",
    ),
    "email": (
        "Which email address should I write to about my {p}?",
        "Who can I email about a problem with my {p}?",
        "I have a question about the {p}. What's the right support email?",
    ),
}
_CONTACT_A = (
    "The {p} is supported by the {team} team [{d1}], which you can reach at {v} [{d2}].",
    "Your {p} is looked after by our {team} team [{d1}]; contact them at {v} [{d2}].",
)
_RESTOCK_Q = (
    "If I return my opened {p}, how much will the restocking fee be in dollars?",
    "I opened my {p} but want to return it. How much restocking fee would I pay?",
    "What's the dollar amount of the restocking fee on an opened {p}?",
)
_RESTOCK_A = (
    "The {p} costs {price} [{d1}] and opened returns carry a {pct} restocking fee [{d2}], so the fee would be {v}.",
    "With a {pct} restocking fee on opened items [{d2}] and a price of {price} for the {p} [{d1}], you would pay {v}.",
)
_TOTAL_Q = (
    "What's the total for the {p} with {speed} shipping to {r}?",
    "How much will I pay altogether for the {p} delivered to {r} by {speed} shipping?",
    "I want to order the {p} to {r} with {speed} delivery. What's the total cost including shipping?",
)
_TOTAL_A = (
    "The {p} costs {price} [{d1}]; it ships as a {cls} item [{d2}] and {speed} shipping for {cls} items to {r} is "
    "{ship} [{d3}], so the total comes to {v}.",
)
_COMPARE_Q: dict[str, tuple[str, ...]] = {
    "price": (
        "Which is cheaper, the {a} or the {b}, and by how much?",
        "What's the price difference between the {a} and the {b}?",
        "I'm deciding between the {a} and the {b}. Which costs less, and how big is the gap?",
    ),
    "warranty": (
        "Which has the longer warranty, the {a} or the {b}, and by how much?",
        "Is the warranty on the {a} longer than on the {b}? What's the difference?",
        "Comparing the {a} and the {b}: which one is covered longer under warranty, and how much longer?",
    ),
    "battery": (
        "Which lasts longer on a charge, the {a} or the {b}, and by how much?",
        "How does battery life on the {a} compare with the {b}?",
        "I care most about battery. Should I get the {a} or the {b}, and how much longer does it last?",
    ),
    "returns": (
        "Which gives me longer to return it, the {a} or the {b}? How much longer?",
        "Do the {a} and the {b} have the same return window? If not, what's the difference?",
    ),
    "weight": (
        "Which is lighter, the {a} or the {b}, and by how much?",
        "What's the weight difference between the {a} and the {b}, and which is lighter?",
        "I want the lightest option. Is the {a} or the {b} lighter, and by how much?",
    ),
}
_COMPARE_A: dict[str, tuple[str, ...]] = {
    "price": (
        "The {a} costs {va} [{da}] and the {b} costs {vb} [{db}], so the {w} is cheaper by {diff}.",
        "The {a} is {va} [{da}] and the {b} is {vb} [{db}]: the {w} costs {diff} less.",
    ),
    "warranty": (
        "The {a} has a warranty of {va} [{da}] and the {b} has {vb} [{db}], so the {w} is covered for {diff} longer.",
        "The {w} has the longer warranty: {a} {va} [{da}] versus {b} {vb} [{db}], a difference of {diff}.",
    ),
    "battery": (
        "The {a} runs for up to {va} on a charge [{da}] and the {b} for up to {vb} [{db}], so the {w} lasts {diff} longer.",
        "Battery life is up to {va} for the {a} [{da}] and up to {vb} for the {b} [{db}]; the {w} lasts {diff} longer.",
    ),
    "returns": (
        "You have {va} to return the {a} [{da}] and {vb} for the {b} [{db}], so the {w} gives you {diff} more.",
        "The return window is {va} for the {a} [{da}] and {vb} for the {b} [{db}], {diff} longer for the {w}.",
    ),
    "weight": (
        "The {a} weighs {va} [{da}] and the {b} weighs {vb} [{db}], so the {w} is lighter by {diff}.",
        "The {w} is lighter: {a} {va} [{da}] versus {b} {vb} [{db}], a difference of {diff}.",
    ),
}
# (what the knowledge base never covers, customer questions about it)
_UNCOVERED = (
    (
        "the water-resistance (IP) rating of the {p}",
        (
            "What's the IP rating of the {p}? Can it handle rain?",
            "Is the {p} waterproof? What water-resistance rating does it have?",
        ),
    ),
    (
        "where the {p} is manufactured",
        (
            "Which country is the {p} made in?",
            "Where is the {p} manufactured?",
        ),
    ),
    (
        "a trade-in value for the {p}",
        (
            "How much trade-in credit would I get for my old {p}?",
            "Do you do trade-ins? What's my {p} worth?",
        ),
    ),
    (
        "a student discount on the {p}",
        (
            "Is there a student discount on the {p}?",
            "I'm at university. Do you offer education pricing on the {p}?",
        ),
    ),
    (
        "how long spare parts for the {p} will be available",
        (
            "How many years will you keep selling spare parts for the {p}?",
            "If my {p} breaks in a few years, will spare parts still be available, and for how long?",
        ),
    ),
)
_NO_REGION_Q = (
    "How long does shipping to {r} take?",
    "Do you ship to {r}? What would express shipping cost?",
    "I'm in {r}. How much is standard delivery of the {p}?",
)
_UNANSWERABLE_A = (
    "I'm sorry, I couldn't find {topic} in our knowledge base, so I can't give you a reliable answer. I can escalate "
    "this to a human support agent who can help.",
    "Our knowledge base doesn't cover {topic}, so I don't want to guess. Would you like me to escalate this to a human support agent?",
    "I wasn't able to find {topic} in our help articles. Let me escalate your question to a human support agent who "
    "can confirm it for you.",
)
_FAKE_A = (
    "I couldn't find a product called the {p} in our knowledge base, so I can't confirm {topic}. I can escalate this "
    "to a human support agent if you'd like.",
    "I'm sorry, there's no information about the {p} in our help centre, and I don't want to guess {topic}. Shall I "
    "escalate this to a human support agent?",
)
_FAKE_TOPICS = {
    "price": "the price",
    "warranty": "the warranty",
    "returns": "the return window",
    "weight": "the weight",
    "reset": "the factory reset steps",
    "battery": "the battery life",
}

# --------------------------------------------------------------------------------------
# Formatting helpers
# --------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _money(cents: int) -> str:
    return f"${cents // 100:,}.{cents % 100:02d}"


def _qty(n: int, unit: str) -> str:
    return f"{n:,} {unit}" + ("" if n == 1 else "s")


def _join(items: list[str] | tuple[str, ...]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# --------------------------------------------------------------------------------------
# World model
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Team:
    name: str
    email: str
    phone: str
    doc_id: str
    categories: tuple[_Category, ...]

    @property
    def plurals(self) -> str:
        return _join([c.plural for c in self.categories])


@dataclass(frozen=True)
class _Region:
    name: str
    doc_id: str
    std_days: int
    exp_days: int
    rates: dict[tuple[str, str], int]  # (shipping class, speed) -> cents


@dataclass
class _Product:
    name: str
    slug: str
    category: _Category
    team: _Team
    variant: str
    price: int  # cents
    warranty: int  # months
    returns: int  # days
    battery: int | None
    weight: int  # grams
    shipping: str  # "parcel" | "bulky"
    reset: int  # seconds
    restart: int  # seconds
    firmware: str
    colours: tuple[str, ...]
    button: str
    tier: str
    sku: str
    pitch: str
    specs: tuple[tuple[str, str], ...]
    siblings: list[_Product] = field(default_factory=list, repr=False)  # the whole family, self included

    def doc_id(self, kind: str) -> str:
        return f"{self.slug}-{kind}"

    def value(self, attr: str) -> int:
        """The numeric value behind a comparable attribute."""
        return getattr(self, attr)

    def fmt(self, attr: str, value: int | None = None) -> str:
        """An attribute (or a difference of it) in the surface form the documents use."""
        v = self.value(attr) if value is None else value
        if attr == "price":
            return _money(v)
        if attr == "weight":
            return f"{v / 1000:.1f} kg" if self.category.kg else f"{v:,} g"
        if attr == "battery":
            assert self.category.battery is not None
            return _qty(v, self.category.battery[2])
        return _qty(v, {"warranty": "month", "returns": "day", "reset": "second", "restart": "second"}[attr])


# attr -> the product document that states it
_PRODUCT_FACT_DOCS = {
    "price": "overview",
    "colours": "overview",
    "warranty": "warranty",
    "returns": "warranty",
    "battery": "specs",
    "weight": "specs",
    "reset": "troubleshooting",
    "firmware": "troubleshooting",
}
# comparable attr -> whether the lower value wins ("cheaper", "lighter")
_COMPARE_LOWER_WINS = {"price": True, "warranty": False, "battery": False, "returns": False, "weight": True}


@dataclass(frozen=True)
class _Policies:
    restock_pct: int
    refund_days: int
    credit_days: int
    link_minutes: int
    lockout_minutes: int
    lockout_attempts: int
    two_factor: tuple[tuple[str, str], ...]  # (phrase, gold fact)
    deletion_days: int
    export_days: int
    claim_days: int
    repair_days: int
    cancel_hours: int
    address_hours: int


# policy fact -> (doc id, gold formatter, distractor formatter)
_POLICY_FACTS: dict[str, tuple[str, Callable[[_Policies], list[str]], Callable[[_Policies], list[str]]]] = {
    "restock_pct": ("refund-policy", lambda p: [f"{p.restock_pct}%"], lambda p: []),
    "refund_days": (
        "refund-policy",
        lambda p: [_qty(p.refund_days, "business day")],
        lambda p: [_qty(p.credit_days, "business day")],
    ),
    "link_minutes": (
        "account-security",
        lambda p: [_qty(p.link_minutes, "minute")],
        lambda p: [_qty(p.lockout_minutes, "minute")],
    ),
    "tfa": ("account-security", lambda p: [gold for _, gold in p.two_factor], lambda p: []),
    "deletion_days": (
        "account-deletion",
        lambda p: [_qty(p.deletion_days, "day")],
        lambda p: [_qty(p.export_days, "day")],
    ),
    "claim_days": (
        "warranty-claims",
        lambda p: [_qty(p.claim_days, "business day")],
        lambda p: [_qty(p.repair_days, "business day")],
    ),
    "cancel_hours": (
        "order-changes-and-cancellations",
        lambda p: [_qty(p.cancel_hours, "hour")],
        lambda p: [_qty(p.address_hours, "hour")],
    ),
}


class World:
    """One generated company: its knowledge base and the structured facts it was written from."""

    def __init__(
        self,
        seed: int,
        company: str,
        documents: list[Document],
        products: list[_Product],
        regions: list[_Region],
        unserved_regions: list[str],
        teams: list[_Team],
        policies: _Policies,
        release_versions: dict[str, str],
        fakes: list[tuple[str, _Product]],
    ):
        self.seed = seed
        self.company = company
        self.documents = documents
        self._by_id = {doc.id: doc for doc in documents}
        self._products = products
        self._with_siblings = [p for p in products if len(p.siblings) > 1]
        self._by_category: dict[str, list[_Product]] = {}
        for p in products:
            self._by_category.setdefault(p.category.key, []).append(p)
        self._multi_categories = [ps for ps in self._by_category.values() if len(ps) > 1]
        self._regions = regions
        self._unserved = unserved_regions
        self._teams = teams
        self._policies = policies
        self._release_versions = release_versions  # product slug -> an older firmware in the release notes
        self._fakes = fakes

    def doc(self, doc_id: str) -> Document | None:
        """The document with this id, or None."""
        return self._by_id.get(doc_id)

    def sample_scenario(self, rng: random.Random, scenario_id: str, kind: str | None = None) -> RagScenario:
        """Draw a question of `kind` (weighted at random when None) using only `rng`.

        Questions whose gold facts could be "answered" by echoing numbers from the question
        (e.g. "2 seconds" for the Aurora 2) are redrawn, and such distractors are dropped.
        """
        if kind is None:
            kind = rng.choices(QUESTION_KINDS, weights=_KIND_WEIGHTS)[0]
        if kind not in QUESTION_KINDS:
            raise ValueError(f"unknown question kind {kind!r}; choose from {list(QUESTION_KINDS)}")
        build = {
            "single_fact": self._single_fact,
            "multi_hop": self._multi_hop,
            "comparison": self._comparison,
            "unanswerable": self._unanswerable,
        }[kind]
        for _ in range(_MAX_DRAWS):
            question, gold, answer, support, distractors = build(rng)
            asked = extract_entities(question)
            if not any(_echoes(fact, asked) for fact in gold):
                break
        known = asked.union(*map(extract_entities, gold))
        distractors = [d for d in dict.fromkeys(distractors) if d not in gold and not _echoes(d, known)]
        if rng.random() < 0.25:
            question = f"{rng.choice(_PREAMBLES)} {question}"
        return RagScenario(
            id=scenario_id,
            question=question,
            gold_facts=gold,
            reference_answer=answer,
            answerable=kind != "unanswerable",
            supporting_doc_ids=support,
            distractor_facts=distractors,
            kind=kind,
        )

    # -- scenario builders: each returns (question, gold facts, answer, supporting ids, distractors)

    def _single_fact(self, rng: random.Random) -> tuple[str, list[str], str, list[str], list[str]]:
        topic = rng.choices(("product", "region", "team", "policy"), weights=(0.6, 0.12, 0.1, 0.18))[0]
        if topic == "product":
            p = rng.choice(self._products)
            attrs = [a for a in _PRODUCT_FACT_DOCS if a != "battery" or p.battery is not None]
            attr = rng.choice(attrs)
            doc_id = p.doc_id(_PRODUCT_FACT_DOCS[attr])
            if attr == "colours":
                gold = list(p.colours)
                distractors = [c for s in p.siblings for c in s.colours if c not in p.colours]
                value = _join(p.colours)
            elif attr == "firmware":
                gold, value = [p.firmware], p.firmware
                distractors = [self._release_versions[p.slug]]
            else:
                value = p.fmt(attr)
                gold = [value]
                distractors = [s.fmt(attr) for s in p.siblings if s.value(attr) != p.value(attr)]
                if attr == "reset":
                    distractors.append(p.fmt("restart"))
            fields = {"p": p.name, "v": value, "d": doc_id, "button": p.button}
        elif topic == "region":
            region = rng.choice(self._regions)
            attr = rng.choice(("std_days", "exp_days"))
            days = region.std_days if attr == "std_days" else region.exp_days
            other = region.exp_days if attr == "std_days" else region.std_days
            value = _qty(days, "business day")
            gold, distractors = [value], [_qty(other, "business day")]
            fields = {"r": region.name, "v": value, "d": region.doc_id}
        elif topic == "team":
            team = rng.choice(self._teams)
            attr = rng.choice(("team_email", "team_phone"))
            category = rng.choice(team.categories)
            key = "email" if attr == "team_email" else "phone"
            value = getattr(team, key)
            gold = [value]
            distractors = [getattr(t, key) for t in self._teams if t is not team][:2]
            fields = {
                "short": category.short,
                "plural": category.plural,
                "team": team.name,
                "v": value,
                "d": team.doc_id,
            }
        else:
            attr = rng.choice(tuple(_POLICY_FACTS))
            doc_id, gold_of, distractors_of = _POLICY_FACTS[attr]
            gold, distractors = gold_of(self._policies), distractors_of(self._policies)
            value = _join([phrase for phrase, _ in self._policies.two_factor]) if attr == "tfa" else gold[0]
            fields = {"v": value, "d": doc_id}
        question = rng.choice(_SINGLE_Q[attr]).format(**fields)
        answer = rng.choice(_SINGLE_A[attr]).format(**fields)
        return question, gold, answer, [fields["d"]], distractors

    def _multi_hop(self, rng: random.Random) -> tuple[str, list[str], str, list[str], list[str]]:
        p = rng.choice(self._products)
        hop = rng.choice(("shipping", "contact", "restock", "total"))
        if hop == "restock" and p.price * self._policies.restock_pct % 100 == 50:
            hop = "total"  # a fee of exactly half a cent would round ambiguously
        fields: dict[str, str] = {"p": p.name, "d1": p.doc_id("overview")}
        templates: tuple[str, ...]
        answers: tuple[str, ...]
        if hop == "contact":
            key = rng.choice(("phone", "email"))
            value = getattr(p.team, key)
            fields.update(team=p.team.name, v=value, d2=p.team.doc_id)
            distractors = [getattr(t, key) for t in self._teams if t is not p.team][:2]
            templates, answers, support = _CONTACT_Q[key], _CONTACT_A, [fields["d1"], fields["d2"]]
        elif hop == "restock":
            pct = self._policies.restock_pct
            value = _money(_restocking_fee(p.price, pct))
            fields.update(price=_money(p.price), pct=f"{pct}%", v=value, d2="refund-policy")
            distractors = [_money(_restocking_fee(s.price, pct)) for s in p.siblings if s is not p]
            templates, answers, support = _RESTOCK_Q, _RESTOCK_A, [fields["d1"], fields["d2"]]
        else:
            region = rng.choice(self._regions)
            speed = rng.choice(("standard", "express"))
            other_class = "bulky" if p.shipping == "parcel" else "parcel"
            other_speed = "express" if speed == "standard" else "standard"
            cost = region.rates[(p.shipping, speed)]
            wrong = (region.rates[(other_class, speed)], region.rates[(p.shipping, other_speed)])
            fields.update(r=region.name, speed=speed, cls=p.shipping)
            if hop == "shipping":
                value = _money(cost)
                fields.update(v=value, d1=p.doc_id("specs"), d2=region.doc_id)
                distractors = [_money(c) for c in wrong]
                templates, answers, support = _SHIP_Q, _SHIP_A, [fields["d1"], fields["d2"]]
            else:
                value = _money(p.price + cost)
                fields.update(price=_money(p.price), ship=_money(cost), v=value, d2=p.doc_id("specs"), d3=region.doc_id)
                distractors = [_money(p.price + c) for c in wrong]
                templates, answers, support = _TOTAL_Q, _TOTAL_A, [fields["d1"], fields["d2"], fields["d3"]]
        question = rng.choice(templates).format(**fields)
        return question, [value], rng.choice(answers).format(**fields), support, distractors

    def _comparison(self, rng: random.Random) -> tuple[str, list[str], str, list[str], list[str]]:
        while True:
            if rng.random() < 0.75 or not self._multi_categories:
                a = rng.choice(self._with_siblings)
                b = rng.choice([s for s in a.siblings if s is not a])
            else:
                a, b = rng.sample(rng.choice(self._multi_categories), 2)
            attrs = [x for x in _COMPARE_LOWER_WINS if (x != "battery" or a.battery is not None) and a.value(x) != b.value(x)]
            if attrs:
                break
        attr = rng.choice(attrs)
        lower_wins = _COMPARE_LOWER_WINS[attr]
        winner = a if (a.value(attr) < b.value(attr)) == lower_wins else b
        doc_kind = _PRODUCT_FACT_DOCS[attr]
        fields = {
            "a": a.name,
            "b": b.name,
            "va": a.fmt(attr),
            "vb": b.fmt(attr),
            "da": a.doc_id(doc_kind),
            "db": b.doc_id(doc_kind),
            "w": winner.name,
            "diff": a.fmt(attr, abs(a.value(attr) - b.value(attr))),
        }
        gold = list(dict.fromkeys((fields["va"], fields["vb"], fields["diff"])))
        distractors = [s.fmt(attr) for s in a.siblings if s is not a and s is not b]
        question = rng.choice(_COMPARE_Q[attr]).format(**fields)
        answer = rng.choice(_COMPARE_A[attr]).format(**fields)
        return question, gold, answer, [fields["da"], fields["db"]], distractors

    def _unanswerable(self, rng: random.Random) -> tuple[str, list[str], str, list[str], list[str]]:
        mode = rng.choices(("product", "attribute", "region"), weights=(0.45, 0.4, 0.15))[0]
        if mode == "product" and self._fakes:
            fake, real = rng.choice(self._fakes)
            attr = rng.choice([a for a in _FAKE_TOPICS if a != "battery" or real.battery is not None])
            question = rng.choice(_SINGLE_Q[attr]).format(p=fake)
            answer = rng.choice(_FAKE_A).format(p=fake, topic=_FAKE_TOPICS[attr])
            return question, [], answer, [], [real.fmt(attr)]
        p = rng.choice(self._products)
        if mode == "attribute":
            topic, questions = rng.choice(_UNCOVERED)
            question, topic = rng.choice(questions).format(p=p.name), topic.format(p=p.name)
        else:
            region = rng.choice(self._unserved)
            question = rng.choice(_NO_REGION_Q).format(r=region, p=p.name)
            topic = f"shipping rates or delivery times for {region}"
        return question, [], rng.choice(_UNANSWERABLE_A).format(topic=topic), [], []


def _echoes(fact: str, entities: set[str]) -> bool:
    """Whether an answer that merely repeats `entities` would already "state" `fact` to the verifier."""
    own = extract_entities(fact)
    return bool(own) and own <= entities


def _restocking_fee(price_cents: int, pct: int) -> int:
    return (price_cents * pct + 50) // 100  # half-up to the cent


# --------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------


def build_world(seed: int, n_products: int = 80) -> World:
    """Generate the world for `seed` with `n_products` products (about 6 documents each, plus
    shipping, contact, policy and filler articles). Same arguments, same world."""
    if n_products < 2:
        raise ValueError(f"n_products must be at least 2, got {n_products}")
    rng = random.Random(seed)
    prefix, suffix = rng.choice(_COMPANY_PREFIXES), rng.choice(_COMPANY_SUFFIXES)
    company = f"{prefix} {suffix}"
    chosen = set(rng.sample(range(len(_CATEGORIES)), rng.randint(6, len(_CATEGORIES))))
    categories = [c for i, c in enumerate(_CATEGORIES) if i in chosen]
    teams = _make_teams(rng, categories, _slug(company).replace("-", "") + ".com")
    families = _make_families(rng, categories, teams, n_products, prefix[:2].upper())
    products = [p for family in families for p in family]
    region_names = rng.sample(_REGIONS, rng.randint(8, 12))
    regions = [_make_region(rng, name) for name in region_names]
    policies = _make_policies(rng)

    docs: list[_Doc] = []
    release_versions: dict[str, str] = {}
    for family in families:
        for p in family:
            docs.extend(_product_docs(rng, p, company))
        older = _older_version(family[0].firmware)
        docs.append(_release_notes(rng, family, older))
        release_versions.update((p.slug, older) for p in family)
    docs.extend(_region_doc(rng, r) for r in regions)
    docs.extend(_team_doc(rng, t) for t in teams.values())
    docs.extend(_policy_docs(rng, policies, company))
    docs.extend(_guides(categories))
    docs.extend(_blogs(rng, company, families, categories, max(6, n_products // 8)))
    documents = _unique_documents(docs)
    unserved = [r for r in _REGIONS if r not in region_names]
    return World(
        seed,
        company,
        documents,
        products,
        regions,
        unserved,
        list(teams.values()),
        policies,
        release_versions,
        _make_fakes(rng, families),
    )


def _make_teams(rng: random.Random, categories: list[_Category], domain: str) -> dict[str, _Team]:
    style, local = rng.choice(_TEAM_STYLES)
    areas = list(dict.fromkeys(c.area for c in categories))
    endings = rng.sample(range(100), len(areas))
    teams = {}
    for area, ending in zip(areas, endings, strict=True):
        name = style.format(area=area)
        teams[area] = _Team(
            name,
            f"{_slug(area)}-{local}@{domain}",
            f"+1 ({rng.choice(_TOLL_FREE)}) 555-01{ending:02d}",
            f"contact-{_slug(name)}",
            tuple(c for c in categories if c.area == area),
        )
    return teams


def _make_families(rng: random.Random, categories: list[_Category], teams: dict[str, _Team], n: int, initials: str) -> list[list[_Product]]:
    top = max(9, math.ceil(n / len(_FAMILY_NAMES)) + 1)
    names = [(base, k) for base in _FAMILY_NAMES for k in range(1, top + 1)]
    rng.shuffle(names)
    line_category: dict[str, _Category] = {}  # a product line keeps its category across generations
    families: list[list[_Product]] = []
    count = 0
    for base, number in names:
        if count >= n:
            break
        category = line_category.setdefault(base, rng.choice(categories))
        size = rng.choices((1, 2, 3, 4), weights=(25, 35, 30, 10))[0]
        size = min(max(size, 2 if not families else 1), n - count)
        families.append(_make_family(rng, base, number, category, teams[category.area], size, initials))
        count += size
    return families


def _make_family(rng: random.Random, base: str, number: int, cat: _Category, team: _Team, size: int, initials: str) -> list[_Product]:
    tens = rng.randint(cat.price[0] // 10 + 1, cat.price[1] // 10 + 1)
    ending = rng.choice((99, 99, 99, 0, 49, 95))

    def price_of(t: int) -> int:
        return t * 1000 if ending == 0 else (t * 10 - 1) * 100 + ending

    weight_step = 100 if cat.kg else 5
    battery = None
    if cat.battery is not None:
        battery = rng.randint(cat.battery[0], cat.battery[1])
        battery -= battery % (10 if cat.battery[2] == "minute" else 1)
    major, minor, patch = rng.randint(1, 6), rng.randint(0, 9), rng.randint(1, 9)
    shared: dict[str, Any] = {
        "category": cat,
        "team": team,
        "warranty": rng.choice(cat.warranty),
        "returns": rng.choice(cat.returns),
        "battery": battery,
        "weight": rng.randint(cat.weight[0], cat.weight[1]) // weight_step * weight_step,
        "shipping": "bulky" if rng.random() < cat.bulky else "parcel",
        "reset": rng.choice(cat.reset),
        "restart": rng.choice((2, 3)),
        "firmware": f"{major}.{minor}.{patch}",
        "button": rng.choice(cat.buttons),
        "pitch": rng.choice(cat.pitches),
        "specs": tuple((label, rng.choice(options)) for label, options in cat.specs),
    }
    colours = tuple(rng.sample(cat.colours, rng.randint(min(2, len(cat.colours)), min(4, len(cat.colours)))))
    family_name = f"{base} {number}"
    code = f"{initials}-{base[:3].upper()}{number}"
    base_product = _Product(
        name=family_name,
        slug=_slug(family_name),
        variant="",
        price=price_of(tens),
        colours=colours,
        tier=rng.choice(_BASE_TIERS),
        sku=f"{code}-{rng.randint(1000, 9999)}",
        **shared,
    )
    family = [base_product]
    prices = {base_product.price}
    for suffix, direction, factor, tier in rng.sample(_VARIANTS, size - 1):
        t = max(1, round(tens * factor))
        while price_of(t) in prices:
            t += 1
        prices.add(price_of(t))
        changes = _variant_changes(rng, base_product, direction, weight_step)
        if rng.random() < 0.3:
            extra = [c for c in cat.colours if c not in colours]
            changes["colours"] = (*colours[:-1], rng.choice(extra)) if extra else colours
        name = f"{family_name} {suffix}"
        sku = f"{code}{suffix[0]}-{rng.randint(1000, 9999)}"
        family.append(
            _Product(
                **{
                    **shared,
                    "name": name,
                    "slug": _slug(name),
                    "variant": suffix,
                    "price": price_of(t),
                    "colours": colours,
                    "tier": tier,
                    "sku": sku,
                    **changes,
                }
            )
        )
    for p in family:
        p.siblings = family
    return family


def _variant_changes(rng: random.Random, base: _Product, direction: int, weight_step: int) -> dict[str, Any]:
    """One or two attributes (besides price) in which a variant differs from its base model."""
    options = ["warranty", "returns", "weight"] + (["battery"] if base.battery is not None else [])
    changes: dict[str, Any] = {}
    for attr in rng.sample(options, rng.randint(1, 2)):
        if attr == "warranty":
            changes[attr] = _shift(base.warranty, 12 * direction, 12, 48)
        elif attr == "returns":
            i = _RETURN_STEPS.index(base.returns)
            changes[attr] = _RETURN_STEPS[_shift(i, direction, 0, len(_RETURN_STEPS) - 1)]
        elif attr == "weight":
            delta = max(weight_step, round(base.weight * rng.uniform(0.1, 0.3) / weight_step) * weight_step)
            changes[attr] = _shift(base.weight, direction * delta, weight_step, 10**6)
        else:
            assert base.battery is not None and base.category.battery is not None
            step = 10 if base.category.battery[2] == "minute" else 1
            delta = max(2 * step, round(base.battery * rng.uniform(0.15, 0.4) / step) * step)
            changes[attr] = _shift(base.battery, direction * delta, step, 10**6)
    return changes


def _shift(value: int, delta: int, low: int, high: int) -> int:
    """`value + delta`, or `value - delta` when that leaves [low, high]."""
    return value + delta if low <= value + delta <= high else value - delta


def _older_version(version: str) -> str:
    major, minor, patch = version.split(".")
    return f"{major}.{minor}.{int(patch) - 1}"


def _make_region(rng: random.Random, name: str) -> _Region:
    std_days, exp_days = rng.randint(3, 8), rng.randint(1, 2)
    rates = {
        ("parcel", "standard"): rng.randint(4, 10) * 100 - 1,
        ("parcel", "express"): rng.randint(13, 30) * 100 - 1,
        ("bulky", "standard"): rng.randint(29, 69) * 100,
        ("bulky", "express"): rng.randint(79, 149) * 100,
    }
    return _Region(name, "shipping-" + _slug(name.removeprefix("the ")), std_days, exp_days, rates)


def _make_policies(rng: random.Random) -> _Policies:
    factors = rng.sample(_TWO_FACTOR, rng.randint(2, 3))
    return _Policies(
        restock_pct=rng.choice((10, 12, 15, 20)),
        refund_days=rng.choice((5, 7, 10)),
        credit_days=rng.choice((1, 2, 3)),
        link_minutes=rng.choice((20, 30, 45, 60)),
        lockout_minutes=rng.choice((5, 10, 15)),
        lockout_attempts=rng.choice((5, 8, 10)),
        two_factor=tuple(f for f in _TWO_FACTOR if f in factors),
        deletion_days=rng.choice((14, 30, 45, 60, 90)),
        export_days=rng.choice((3, 5, 7)),
        claim_days=rng.choice((2, 3, 5)),
        repair_days=rng.choice((7, 10, 14)),
        cancel_hours=rng.choice((1, 2, 4, 12)),
        address_hours=rng.choice((24, 48)),
    )


def _make_fakes(rng: random.Random, families: list[list[_Product]]) -> list[tuple[str, _Product]]:
    """Lookalike product names that exist nowhere in the world, each with the real product it imitates."""
    taken = {p.name for family in families for p in family}
    fakes = []
    for family in families:
        real = rng.choice(family)
        base, number = family[0].name.rsplit(" ", 1)
        if rng.random() < 0.5:
            missing = [s for s, *_ in _VARIANTS if f"{family[0].name} {s}" not in taken]
            fake = f"{family[0].name} {rng.choice(missing)}" if missing else ""
        else:
            numbers = [k for k in (int(number) + 1, int(number) + 2, int(number) - 1, int(number) + 3) if k > 0]
            fake = f"{base} {rng.choice(numbers)}" + (f" {real.variant}" if real.variant else "")
        if fake and fake not in taken:
            fakes.append((fake, real))
    return fakes


# --------------------------------------------------------------------------------------
# Document writers: each returns (id, title, text) triples
# --------------------------------------------------------------------------------------

_Doc = tuple[str, str, str]


def _product_docs(rng: random.Random, p: _Product, company: str) -> list[_Doc]:
    name, cat = p.name, p.category
    common = {"name": name, "company": company, "team": p.team.name}
    possessive = company + ("'" if company.endswith("s") else "'s")
    overview = rng.choice(_OVERVIEW_TEMPLATES).format(
        tier=p.tier,
        singular=cat.singular,
        companys=possessive,
        pitch=p.pitch,
        colours=_join(p.colours),
        price=_money(p.price),
        sku=p.sku,
        **common,
    )
    lines = [f"{label}: {value}" for label, value in p.specs]
    lines.append(rng.choice(_WEIGHT_LINES).format(weight=p.fmt("weight")))
    if p.battery is not None:
        lines.append(rng.choice(_BATTERY_LINES).format(battery=p.fmt("battery")))
    lines.append(rng.choice(_SHIPPING_LINES).format(shipping=p.shipping.capitalize()))
    specs = f"Specifications for the {name}:\n\n" + "\n".join(f"- {line}" for line in lines)
    warranty = rng.choice(_WARRANTY_TEMPLATES).format(warranty=p.fmt("warranty"), returns=p.fmt("returns"), **common)
    issues = rng.sample(cat.issues, 2)
    trouble = [f"Try these steps before contacting the {p.team.name} team."]
    trouble += [f"{symptom}\n{fix}" for symptom, fix in issues]
    if rng.random() < 0.6:
        trouble.append(rng.choice(_RESTART_LINES).format(restart=p.fmt("restart"), **common))
    trouble.append(rng.choice(_RESET_LINES).format(button=p.button, reset=p.fmt("reset"), **common))
    trouble.append(rng.choice(_FIRMWARE_LINES).format(firmware=p.firmware, **common))
    faqs = rng.sample(cat.faqs, 2) + rng.sample(_FAQ_GENERIC, 2)
    faq = "\n\n".join(f"Q: {q}\nA: {a}" for q, a in faqs).format(**common)
    setup = rng.choice(_SETUP_TEMPLATES).format(in_box=_join(cat.in_box), tip=rng.choice(_SETUP_TIPS), **common)
    return [
        (p.doc_id("overview"), rng.choice(_OVERVIEW_TITLES).format(name=name), overview),
        (p.doc_id("specs"), rng.choice(_SPECS_TITLES).format(name=name), specs),
        (p.doc_id("warranty"), rng.choice(_WARRANTY_TITLES).format(name=name), warranty),
        (p.doc_id("troubleshooting"), rng.choice(_TROUBLE_TITLES).format(name=name), "\n\n".join(trouble)),
        (p.doc_id("faq"), rng.choice(_FAQ_TITLES).format(name=name), faq),
        (p.doc_id("setup"), rng.choice(_SETUP_TITLES).format(name=name), setup),
    ]


def _release_notes(rng: random.Random, family: list[_Product], version: str) -> _Doc:
    series = family[0].name
    fixes = [f for f in _RELEASE_FIXES if family[0].battery is not None or "battery" not in f]
    notes = [n.format(pct=rng.randint(5, 25), lang=rng.choice(_LANGUAGES)) for n in rng.sample(fixes, 3)]
    text = (
        f"Firmware {version} is rolling out to the {series} series ({_join([p.name for p in family])}) in stages "
        f"over {rng.randint(2, 4)} weeks.\n\nWhat's new:\n"
        + "\n".join(f"- {n}" for n in notes)
        + "\n\nYour device installs updates automatically overnight when it's connected and idle."
    )
    return f"{_slug(series)}-release-notes-{_slug(version)}", f"{series} series: firmware {version} release notes", text


def _region_doc(rng: random.Random, r: _Region) -> _Doc:
    text = rng.choice(_REGION_TEMPLATES).format(
        region=r.name,
        std_days=_qty(r.std_days, "business day"),
        exp_days=_qty(r.exp_days, "business day"),
        p_std=_money(r.rates[("parcel", "standard")]),
        p_exp=_money(r.rates[("parcel", "express")]),
        b_std=_money(r.rates[("bulky", "standard")]),
        b_exp=_money(r.rates[("bulky", "express")]),
        note=rng.choice(_REGION_NOTES),
    )
    return r.doc_id, f"Shipping to {r.name}: rates and delivery times", text


def _team_doc(rng: random.Random, t: _Team) -> _Doc:
    reply = _qty(rng.choice((12, 24, 48)), "hour")
    text = rng.choice(_TEAM_TEMPLATES).format(
        team=t.name, plurals=t.plurals, phone=t.phone, email=t.email, hours=rng.choice(_TEAM_HOURS), reply=reply
    )
    return t.doc_id, f"Contact the {t.name} team", text


def _policy_docs(rng: random.Random, pol: _Policies, company: str) -> list[_Doc]:
    updated = f"Last updated: {rng.choice(_MONTHS)} {rng.randint(2022, 2025)}."
    day, bday, hour, minute = "day", "business day", "hour", "minute"
    refund = (
        f"{updated}\n\nYou can return any product within its return window, which is listed on the product's "
        f"warranty and returns page. Unopened items are refunded in full. Opened items are subject to a "
        f"{pol.restock_pct}% restocking fee, calculated on the price you paid and deducted from your refund. Faulty "
        f"items are never charged a restocking fee.\n\nOnce your return arrives at our warehouse, refunds to your "
        f"original payment method are issued within {_qty(pol.refund_days, bday)}. If you choose store credit "
        f"instead, it is added to your account within {_qty(pol.credit_days, bday)}."
    )
    claims = (
        f"{updated}\n\nTo make a warranty claim:\n1. Sign in to your {company} account and open Orders.\n"
        f"2. Choose the product and select Report a problem.\n3. Describe the fault and attach a photo or video if "
        f"you can.\n\nWe respond to every claim within {_qty(pol.claim_days, bday)}. If we need to repair your "
        f"product, we send a prepaid shipping label; most repairs are completed within "
        f"{_qty(pol.repair_days, bday)} of the product reaching our repair centre. Keep your proof of purchase, as "
        f"we may ask for it."
    )
    factors = _join([phrase for phrase, _ in pol.two_factor])
    security = (
        f"{updated}\n\nForgot your password? Choose Forgot password on the sign-in page and we'll email you a reset "
        f"link. Password reset links are valid for {_qty(pol.link_minutes, minute)}; after that, request a new "
        f"one.\n\nAfter {pol.lockout_attempts} failed sign-in attempts your account is locked for "
        f"{_qty(pol.lockout_minutes, minute)} to protect it.\n\nTwo-factor authentication adds a second step when "
        f"you sign in. You can use {factors}. Turn it on under Account > Security."
    )
    deletion = (
        f"{updated}\n\nYou can delete your {company} account at any time under Account > Privacy. After you "
        f"confirm, your personal data is permanently deleted within {_qty(pol.deletion_days, day)}, except records "
        f"we must keep by law, such as invoices.\n\nWant a copy first? Request a data export; it is ready to "
        f"download within {_qty(pol.export_days, day)}."
    )
    orders = (
        f"{updated}\n\nChanged your mind? You can cancel an order within {_qty(pol.cancel_hours, hour)} of placing "
        f"it from the Orders page. After that, the order is already being packed and you'll need to return it "
        f"instead.\n\nYou can change the delivery address up to {_qty(pol.address_hours, hour)} after ordering, as "
        f"long as the order hasn't shipped."
    )
    payments = (
        f"We accept Visa, Mastercard, American Express, PayPal, Apple Pay and Google Pay. Orders over "
        f"{_money(rng.choice((150, 200, 250)) * 100)} can be split into {rng.choice((3, 4))} interest-free payments "
        f"at checkout. Your card is charged when your order ships, not when you place it."
    )
    classes = (
        "Every product has a shipping class, parcel or bulky, listed on its specifications page. Parcel items travel "
        "by regular courier; bulky items such as large appliances and e-bikes travel by freight and are delivered by "
        "a two-person team. Shipping rates depend on the class and on the region you ship to: see the shipping page "
        "for your region. Orders with items of both classes are charged the bulky rate once."
    )
    return [
        ("refund-policy", "Refund policy and restocking fees", refund),
        ("warranty-claims", "How to make a warranty claim", claims),
        ("account-security", "Account security: passwords and two-factor authentication", security),
        ("account-deletion", "Deleting your account and your data", deletion),
        ("order-changes-and-cancellations", "Changing or cancelling an order", orders),
        ("payment-methods", "Payment methods", payments),
        ("shipping-classes", "How shipping classes work", classes),
    ]


def _guides(categories: list[_Category]) -> list[_Doc]:
    return [(f"guide-{_slug(title)}", title, text) for c in categories for title, text in c.guides]


def _blogs(rng: random.Random, company: str, families: list[list[_Product]], categories: list[_Category], count: int) -> list[_Doc]:
    posts = []
    for _ in range(count):
        title, body = rng.choice(_BLOGS)
        fields = {
            "company": company,
            "city": rng.choice(_CITIES),
            "month": rng.choice(_MONTHS),
            "n": rng.randint(3, 12),
            "m": rng.randint(40, 900),
            "pct": rng.randint(15, 95),
            "family": rng.choice(families)[0].name,
            "plural": rng.choice(categories).plural,
            "area": rng.choice(categories).area,
        }
        title = title.format(**fields)
        posts.append((f"blog-{_slug(title)}", title, body.format(**fields)))
    return posts


def _unique_documents(docs: list[_Doc]) -> list[Document]:
    """Documents in order; a repeated filler id (two blog posts with one title) gets a numeric suffix."""
    seen: set[str] = set()
    out = []
    for doc_id, title, text in docs:
        unique, n = doc_id, 2
        while unique in seen:
            unique, n = f"{doc_id}-{n}", n + 1
        seen.add(unique)
        out.append(Document(id=unique, title=title, text=text))
    return out
