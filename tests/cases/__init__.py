"""Conformance cases, one module per metric family: each defines ``CASES``."""
