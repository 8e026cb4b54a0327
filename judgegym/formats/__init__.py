"""The text each env writes and its readers parse, one module per env, so that a writer and
its readers cannot drift apart: change a format here and every reader follows.

- `rag`: RagSupport-v0's ``[doc-id]`` citations and the article headers its tools write;
- `support`: CustomerSupport-v0's policy prompt and its facts (`SupportPolicy`: today's date,
  the refund window, the dispute threshold), published by the env as ``info["facts"]``;
- `summarize`: Summarize-v0's request (its word limit), section listing and section headers.
- `chat`: what every env writes (format-error and tool-error prefixes), an assistant turn of
  tool calls (`tool_call_turn`) and calls paired with their results (`tool_exchanges`).

The formats sit in the lowest import layer (they import nothing of judgegym): the envs, their
verifiers, the gold-free judges and the scripted baselines all read them. The facts a judge or
baseline needs come from the env as data (reset ``info["facts"]``, ``Trajectory.info["facts"]``); parsing them
back from prompt text (`SupportPolicy.from_prompt`, `summarize.word_limit_of`) is only the
fallback for conversations stored without them, and is tested against the writer.
"""
