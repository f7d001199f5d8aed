"""Renderers: text report, charts, plan documents."""
