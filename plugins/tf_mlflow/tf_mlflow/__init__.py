"""TensorForge Ops plugin: captures as MLflow runs."""
