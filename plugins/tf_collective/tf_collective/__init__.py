"""TensorForge workload plugin: collectives over several devices."""
