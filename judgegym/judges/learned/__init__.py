"""`LearnedJudge`: a gold-free pointwise judge learned from the verifiers.

It reads only what a trajectory holds without gold data (the instructions, the tool calls and
their results, the customer's words, the final answer), turns it into a few dozen features, and
scores them with a linear head per task family, trained on verifier-labelled episodes of the
envs' train splits. The weights ship with the package (`weights.json`, a few kB).

- `view`: what a trajectory shows, read once (`View`), and its task family (`family_of`);
- `text`: features of an answer's text against what the agent saw, for any task;
- `rag`, `support`, `summarize`: each task kind's own features (retrieval, actions, sections);
- `features`: the feature vector (`FEATURES`, `trajectory_features`) and each family's share;
- `head`: the linear heads, `LearnedJudge`, and explanations in words;
- `data` and `training`: the training data (episodes and their teacher labels) and the fit,
  behind ``judgegym learned-judge train`` / ``eval`` (they drive the envs, so they sit above them
  in the import layers; nothing in the judge imports them).
"""

from .features import FAMILIES, FAMILY_FEATURES, FEATURES, features_matrix, trajectory_features
from .head import FEATURE_WORDS, WEIGHTS_PATH, Head, LearnedJudge, explain, load_heads
from .rag import articles_shown, figures_off_question, figures_wrong_product, off_subject_articles
from .text import figures_fit_elsewhere, figures_misattached, listed_share, name_runs
from .view import family_of

__all__ = [
    "FAMILIES",
    "FAMILY_FEATURES",
    "FEATURES",
    "FEATURE_WORDS",
    "WEIGHTS_PATH",
    "Head",
    "LearnedJudge",
    "articles_shown",
    "explain",
    "family_of",
    "features_matrix",
    "figures_fit_elsewhere",
    "figures_misattached",
    "figures_off_question",
    "figures_wrong_product",
    "listed_share",
    "load_heads",
    "name_runs",
    "off_subject_articles",
    "trajectory_features",
]
