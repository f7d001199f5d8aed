"""Analyses over parsed captures: hotspots, occupancy, costs, loops, regions, spills, waves, L2."""
