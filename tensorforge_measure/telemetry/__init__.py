"""DIAGNOSTIC: telemetry from a separate execution window (NVML on GPUs); context, never a verdict."""
