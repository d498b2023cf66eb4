"""Energy: the counter windows (MEASURED), the coefficient fit (CALIBRATED); docs/energy.md."""
