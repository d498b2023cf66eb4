"""TensorForge Transformer workload plugin."""
