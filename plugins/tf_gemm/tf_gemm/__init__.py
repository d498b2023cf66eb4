"""TensorForge GEMM workload plugin."""
