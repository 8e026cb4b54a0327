"""Shared fixtures (small RagSupport envs, a tiny random model saved once per session as a
transformers folder, one torch thread for tiny-model tests) and the two tiers of the suite.

The tiers: `pytest` runs the fast tier (pyproject's addopts deselect tests marked `slow`);
`pytest -m slow` runs the slow tier and `pytest -m ""` runs both. A test is marked `slow` when
its own seconds (setup, call and teardown, less the setup of module- or session-scoped fixtures
it happened to be first to need: those are shared, paid once whichever test comes first) were
over `SLOW_SECONDS` in the last recorded run: `pytest -m "" --record-durations` writes every
test's seconds to tests/durations.json, and tests/test_repo.py fails while a test over the
threshold there is unmarked."""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before anything imports litellm

import gymnasium as gym  # noqa: E402
import litellm  # noqa: E402, F401  (about 3 s: paid once with the session's imports, not by whichever test first uses it)
import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import settings  # noqa: E402
from strategies import PROFILES  # noqa: E402

import judgegym  # noqa: E402, F401  (registers the envs)
from judgegym.testing.tiny_models import save_tiny_model  # noqa: E402

SLOW_SECONDS = 3.0
TIER_BUDGETS = {"fast": 150.0, "slow": 600.0}
"""Seconds each tier's tests may add up to in DURATIONS (tests/test_repo.py holds them): the fast
tier stays within the README's 3 minutes with collection, and CI well inside its limit."""
DURATIONS = Path(__file__).with_name("durations.json")
MARKED_SLOW = pytest.StashKey[dict[str, bool]]()

# ci where CI runs (the CI variable is set), dev on a developer's machine; tests/strategies.py
# says what each runs. Loaded before the test modules are imported, so `examples()` sees it.
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--list-tiers", metavar="FILE", help="write {test id: marked slow} of every collected test to FILE")
    parser.addoption(
        "--record-durations",
        action="store_true",
        help=f"write each test's seconds (setup + call + teardown) into {DURATIONS.name}, replacing the tests this run ran",
    )


def pytest_report_header(config: pytest.Config) -> list[str]:
    profile = settings.get_current_profile_name()
    tier = {"not slow": "the fast tier (-m slow: the slow one; -m '': both)", "slow": "the slow tier", "": "both tiers"}
    return [
        f"tier: {tier.get(config.option.markexpr, repr(config.option.markexpr))}",
        f"hypothesis: profile {profile!r}, {settings.default.max_examples} examples where a property states none ({', '.join(PROFILES)})",
    ]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Remember, for every collected test, whether it is marked slow (before `-m` deselects any)."""
    config.stash[MARKED_SLOW] = {item.nodeid: item.get_closest_marker("slow") is not None for item in items}
    if config.getoption("--list-tiers"):
        Path(config.getoption("--list-tiers")).write_text(json.dumps(config.stash[MARKED_SLOW]))


SHARED_SETUP = "shared_fixture_setup_s"
"""The user property (on a test's setup report) with the seconds its setup spent on fixtures of
module, class, package or session scope."""
_SHARED_SECONDS = pytest.StashKey[float]()
_SETTING_UP: list[pytest.Item] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    _SETTING_UP.append(item)
    try:
        yield
    finally:
        _SETTING_UP.pop()
        item.user_properties.append((SHARED_SETUP, item.stash.get(_SHARED_SECONDS, 0.0)))


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):
    # A fixture's own dependencies are set up before this hook runs for it, so nothing nests.
    start = time.perf_counter()
    yield
    if fixturedef.scope != "function" and _SETTING_UP:
        item = _SETTING_UP[-1]
        item.stash[_SHARED_SECONDS] = item.stash.get(_SHARED_SECONDS, 0.0) + time.perf_counter() - start


class _DurationRecorder:
    """Adds up each test's own seconds (setup, call and teardown, less its shared fixtures'
    setup) and merges them into DURATIONS at the end (tests not run keep their old figures;
    tests whose file is gone are dropped). Registered on the controlling process only: under
    xdist every report, with its user properties, reaches it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        shared = sum(value for name, value in report.user_properties if name == SHARED_SETUP) if report.when == "setup" else 0.0
        self.seconds[report.nodeid] += max(0.0, report.duration - shared)

    def pytest_sessionfinish(self) -> None:
        old = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
        kept = {k: v for k, v in old.items() if (self.root / k.split("::")[0]).exists()}
        kept.update({k: round(v, 2) for k, v in self.seconds.items()})
        DURATIONS.write_text(json.dumps(dict(sorted(kept.items())), indent=0) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--record-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_DurationRecorder(Path(str(config.rootpath))), "record-durations")


@pytest.fixture
def rag_env():
    env = gym.make("RagSupport-v0", split="test", n_products=20, n_worlds=2)
    yield env
    env.close()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """The folder of a tiny random Llama and its tokenizer (judgegym/testing/tiny_models.py)."""
    return str(save_tiny_model(tmp_path_factory.mktemp("tiny-llama")))


@pytest.fixture
def one_thread():
    """A 32-wide model runs fastest on one thread (and is not slowed by a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
