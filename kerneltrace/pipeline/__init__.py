"""Snakemake glue: runs from the config, script-job wrapper, capture-script options."""
