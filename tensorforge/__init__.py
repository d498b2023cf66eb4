"""TensorForge Core: analytical lower bounds for ML workloads on hardware targets.

The Core is pure Python + numpy + attrs/cattrs + pluggy + click. It never imports torch,
pynvml, mlflow or tensorforge_measure (a test enforces this in a fresh interpreter).
"""

__version__ = "0.1.0"
