#!/usr/bin/env bash
# Regenerate docs/leaderboard.md, docs/leaderboard.png and docs/leaderboard.json (the rows'
# summaries): every agent that runs on a CPU, on the test split of every env. With
# KEEP=docs/leaderboard.json, the rows of runs this regeneration does not play (the trained
# adapters' rows when their runs/ folders are gone) are kept from the page as it was. Runs are
# resumable: rerunning skips the episodes already in runs/leaderboard/*.jsonl, so an
# interrupted regeneration picks up where it stopped.
# About 75 minutes from scratch on 2 CPU cores, most of it SmolLM2-135M generating (2026-12-05: the baselines
# and zero-shot rows about 25, the tools demo's four adapters 15, the support demo's three 34; 2026-12-06,
# with KEEP for the tools demo's rows: 32 minutes; the four tools-learned-v9 adapters about 5 minutes each).
set -euo pipefail
cd "$(dirname "$0")/.."
JUDGEGYM=${JUDGEGYM:-.venv/bin/judgegym}
RUNS=${RUNS:-runs/leaderboard}
N=${EPISODES:-100}          # scenarios per scripted baseline
M=${MODEL_EPISODES:-30}     # scenarios per SmolLM2 run
SMOL="hf:smollm2-135m?max_tokens=128"
KEEP=${KEEP:-}              # a summaries JSON of an earlier page (docs/leaderboard.json): its rows that this run does not replay are kept

$JUDGEGYM eval --env RagSupport-v0 --split test --episodes "$N" --out "$RUNS/rag.jsonl" \
    --agent oracle --agent search-quote --agent unhelpful
$JUDGEGYM eval --env RagSupport-v0 --split test --episodes "$M" --out "$RUNS/rag.jsonl" --agent "$SMOL" --env-arg max_turns=4
$JUDGEGYM eval --env RagSupport-v0 --split test --episodes "$M" --out "$RUNS/rag.jsonl" --agent "$SMOL" --env-arg max_turns=4 \
    --env-arg prefetch_k=2

# Trained agents: the adapters of the tools demo (`judgegym demo --task tools --steps 15 --eval-episodes 64
# --output-dir runs/demo-tools-64`, and --compare-judge learned), where they exist.
TRAINED=${TRAINED:-runs/demo-tools-64}
for stage in sft grpo grpo-learned sft-more; do
    if [ -d "$TRAINED/$stage/last" ]; then
        $JUDGEGYM eval --env RagSupport-v0 --split test --episodes "$M" --out "$RUNS/rag_trained.jsonl" \
            --agent "hf:smollm2-135m+$TRAINED/$stage/last?max_tokens=128" --env-arg max_turns=4
    fi
done

# The adapters of docs/trainer.md's runs from one SFT adapter (`tools-learned-v9`: `sft`; `grpo`, 12 GRPO
# steps rewarded by the learned judge alone; `grpo-verifier`, 24 steps rewarded by the verifier;
# `grpo-verifier-36`, the same run continued to 36), where they exist.
TRAINED_V9=${TRAINED_V9:-runs/tools-learned-v9}
for stage in sft grpo grpo-verifier grpo-verifier-36; do
    if [ -d "$TRAINED_V9/$stage/last" ]; then
        $JUDGEGYM eval --env RagSupport-v0 --split test --episodes "$M" --out "$RUNS/rag_trained_v9.jsonl" \
            --agent "hf:smollm2-135m+$TRAINED_V9/$stage/last?max_tokens=128" --env-arg max_turns=4
    fi
done

$JUDGEGYM eval --env CustomerSupport-v0 --split test --episodes "$N" --out "$RUNS/support.jsonl" \
    --agent oracle --agent policy --agent unhelpful
$JUDGEGYM eval --env CustomerSupport-v0 --split test --episodes "$M" --out "$RUNS/support.jsonl" --agent "$SMOL" --env-arg max_turns=6

# The support demo's adapters (`judgegym demo --task support --steps 8 --eval-episodes 24 --sft-episodes 48
# --oversample 2 --output-dir runs/demo-support-24`), where they exist; max_turns as in the demo.
TRAINED_SUPPORT=${TRAINED_SUPPORT:-runs/demo-support-24}
for stage in sft grpo sft-more; do
    if [ -d "$TRAINED_SUPPORT/$stage/last" ]; then
        $JUDGEGYM eval --env CustomerSupport-v0 --split test --episodes "$M" --out "$RUNS/support_trained.jsonl" \
            --agent "hf:smollm2-135m+$TRAINED_SUPPORT/$stage/last?max_tokens=128" --env-arg max_turns=10
    fi
done

$JUDGEGYM eval --env Summarize-v0 --split test --episodes "$N" --out "$RUNS/summarize.jsonl" \
    --agent oracle --agent lead --agent unhelpful
$JUDGEGYM eval --env Summarize-v0 --split test --episodes "$M" --out "$RUNS/summarize_smol.jsonl" --agent "$SMOL" --env-arg max_turns=6

# --rejudge: the stored episodes are graded again by the verifiers as they are now (they read only the
# stored trajectory), so a change of a verifier reaches every row without playing the episodes again.
$JUDGEGYM leaderboard "$RUNS"/*.jsonl --rejudge ${KEEP:+--keep "$KEEP"} --out docs/leaderboard.md --title "judgegym leaderboard (test splits)" \
    --preamble "Regenerate with \`scripts/leaderboard.sh\` (resumable; about 75 minutes from scratch on 2 CPU cores; stored episodes are graded again by the verifiers as they are now). Scripted baselines: $N scenarios each; \
SmolLM2-135M-Instruct zero-shot (greedy, 128 new tokens per turn, fewer turns allowed to bound CPU time): $M scenarios. \
Success means reward >= 0.8; the figures are defined in [agents.md](agents.md#evaluation-runs). \
The 135M model does not call tools zero-shot: it replies without calling them, so it scores near 0 everywhere, \
a little above 0 on RagSupport when the articles are put in its prompt (prefetch_k=2). It is the starting point for GRPO training. \
The \`+$TRAINED/...\` rows are the same model with the tools demo's LoRA adapters ([trainer.md](trainer.md#the-tools-demo)): \
\`sft\` (SFT on oracle episodes), \`grpo\` (then 15 GRPO steps rewarded by 0.8*verifier+0.2*grounding), \`grpo-learned\` \
(the same GRPO steps rewarded by the gold-free learned judge), \`sft-more\` (the control: SFT continued for GRPO's time); \
the \`+$TRAINED_V9/...\` rows are later runs from one SFT adapter ([trainer.md](trainer.md#64-held-out-scenarios-15-grpo-steps-and-the-control), \
[their episodes](tools-v9-episodes.md)): \`sft\`, \`grpo\` (12 GRPO steps rewarded by the gold-free learned judge alone), \
\`grpo-verifier\` (24 steps rewarded by the verifier) and \`grpo-verifier-36\` (the same run at 36 steps); \
the \`+$TRAINED_SUPPORT/...\` rows are the support demo's (SFT on the policy agent's verified episodes, then 8 GRPO steps \
rewarded by the graded verifier, and its control; [trainer.md](trainer.md#the-support-demo)); \
$M scenarios, the same first ones of the test split as every SmolLM2 row."
