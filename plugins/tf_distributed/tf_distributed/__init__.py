"""TensorForge measurement backend torch-distributed: several devices, one process each."""
