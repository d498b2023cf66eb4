"""TensorForge Conv2D workload plugin."""
