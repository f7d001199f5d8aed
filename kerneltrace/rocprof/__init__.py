"""rocprofv3 integration: command lines, job files, discovery tables, log scanning, decoder lookup."""
