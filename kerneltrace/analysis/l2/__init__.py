"""L2/HBM analysis over PMC runs (entry point: document.analyze)."""
