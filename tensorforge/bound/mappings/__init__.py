"""Mapping strategies: how a problem is tiled onto a target's PE array and SRAM levels."""
