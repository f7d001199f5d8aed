"""SLURM: what the cluster can give a job, the preflight of a run's requests, jobs pending for good."""
