"""The hotspot document layer: readers + model + analyses → one kerneltrace.hotspots/N document."""
