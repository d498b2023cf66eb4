"""The capture: one document with the five labelled sections, how `run` builds it, and what reads it back."""
