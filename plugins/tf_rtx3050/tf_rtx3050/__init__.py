"""TensorForge target plugin: NVIDIA GeForce RTX 3050 Laptop GPU."""
