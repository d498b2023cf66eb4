"""The capture's sections as frozen attrs classes: one module per labelled section, plus
provenance and the comparison of PREDICTED with MEASURED."""
