"""The data model shared by CLI, pipeline and analyses: what a dispatch dir is."""
