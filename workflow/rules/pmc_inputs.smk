# Input and param functions of the PMC stage (rules in pmc.smk): job ids, counter files, kernels.


PMC = config.get("pmc") or {}


def pmc_enabled():
    return bool(PMC.get("enabled"))


def pmc_arch(wildcards):
    """pmc: {arch} when set, else the run's arch key, else "" (found from the captures)."""
    return PMC.get("arch") or run_spec(wildcards.run).arch or ""


def pmc_job_ids(run, kernel):
    """Planned job ids (pmc_job1, ...); waits for the pmc_plan checkpoint."""
    jobs_dir = checkpoints.pmc_plan.get(run=run, kernel=kernel).output.jobs
    return sorted(
        glob_wildcards(os.path.join(jobs_dir, f"{{job}}{JOB_SUFFIX}")).job,
        key=lambda name: int(name[len("pmc_job") :]),
    )


def pmc_dir_kernels(run):
    """dir runs: {kernel key: manifest rows with counter files}; key = kernel_id, else k000.. by name."""
    groups = {}
    names = []
    for row in dispatch_rows(run):
        if not row.get("pmc_files"):
            continue
        if row["kernel"] not in names:
            names.append(row["kernel"])
        key = row["kernel_id"] or "k{:03d}".format(names.index(row["kernel"]))
        groups.setdefault(key, []).append(row)
    return groups


def pmc_dir_rows(run, kernel):
    return pmc_dir_kernels(run).get(kernel, [])


def l2_inputs(wildcards):
    if run_spec(wildcards.run).mode == "cmd":
        return expand(
            "results/{run}/pmc/{kernel}/captures/{job}.json",
            run=wildcards.run,
            kernel=wildcards.kernel,
            job=pmc_job_ids(wildcards.run, wildcards.kernel),
        )
    return ["results/{run}/dispatches.tsv".format(run=wildcards.run)]


def l2_counter_paths(wildcards, input):
    """Counter files: the promoted capture dirs (cmd) or the files beside the dispatch dirs (dir)."""
    if run_spec(wildcards.run).mode == "cmd":
        return [
            f"results/{wildcards.run}/pmc/{wildcards.kernel}/raw/{job}"
            for job in pmc_job_ids(wildcards.run, wildcards.kernel)
        ]
    paths = []
    for row in pmc_dir_rows(wildcards.run, wildcards.kernel):
        paths += [p for p in row["pmc_files"].split(";") if p and p not in paths]
    return paths


def l2_kernel_name(wildcards):
    if run_spec(wildcards.run).mode == "cmd":
        return kernel_name(wildcards.run, wildcards.kernel)
    rows = pmc_dir_rows(wildcards.run, wildcards.kernel)
    return rows[0]["kernel"] if rows else ""


def pmc_l2_files(run):
    """Plan hook: the L2 documents of this run (none when the PMC stage is off)."""
    if not pmc_enabled():
        return []
    if run_spec(run).mode == "cmd":
        kernels = selected_kernels(run)
        # Resolve the pmc_plan checkpoints in the plan's own input function: Snakemake re-evaluates
        # only direct dependents of a checkpoint, so on a re-run l2_analysis would keep unresolved
        # (<TBD>) inputs and a missing pmc_capture would never be scheduled.
        for kernel in kernels:
            pmc_job_ids(run, kernel)
    else:
        kernels = sorted(pmc_dir_kernels(run))
    return [f"results/{run}/l2/{kernel}.json" for kernel in kernels]
