"""A model-level answer (`predict --model`): one generative model's prefill and decode steps at a
batch and context, composed into time to first token, time per output token, tokens per second,
joules per token and a memory budget (summary.py), and its short table (render.py)."""
