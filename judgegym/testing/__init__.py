"""Test doubles that judgegym's tests and benchmarks share; nothing in the library imports them.

- `vllm_offline`: a stand-in for the parts of vLLM's offline API judgegym uses (`vllm.LLM`,
  `SamplingParams`, `LoRARequest`, ...), installed into ``sys.modules`` as ``vllm``.
- `vllm_server`: a stand-in for vLLM's OpenAI-compatible server over real HTTP, sampling a real
  transformers model, with fault injection (``python -m judgegym.testing.vllm_server``).
- `tiny_models`: tiny, randomly initialised Llama models and a word-level tokenizer with a
  chat template, for tests that need a real transformers model but not a good one.
"""
