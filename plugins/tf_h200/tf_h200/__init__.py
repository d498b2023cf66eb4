"""TensorForge target plugin: NVIDIA H200 SXM."""
