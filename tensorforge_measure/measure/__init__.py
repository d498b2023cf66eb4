"""MEASURED: how workloads are timed (device-neutral rule and statistics, precision flags) and the torch-cuda backend."""
