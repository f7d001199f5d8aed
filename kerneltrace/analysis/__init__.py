"""Analyses over parsed captures: hotspots, occupancy, waves, L2, comparisons."""
