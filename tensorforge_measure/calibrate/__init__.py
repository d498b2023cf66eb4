"""CALIBRATED: the probes that measure a device's ceilings, and the per-fingerprint store that reuses them."""
