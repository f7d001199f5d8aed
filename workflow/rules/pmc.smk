# PMC stage: plan single-pass counter jobs per kernel, capture each job in its own run, analyse L2/HBM.
# cmd runs: pmc_plan -> pmc_capture (one per planned job) -> l2_analysis.
# dir runs: l2_analysis reads the counter files found beside the dispatch dirs (dispatches.tsv).


PMC = config.get("pmc") or {}


wildcard_constraints:
    job=r"pmc_job\d+",


def pmc_enabled():
    return bool(PMC.get("enabled"))


def pmc_job_ids(run, kernel):
    """Planned job ids (pmc_job1, ...); waits for the pmc_plan checkpoint."""
    jobs_dir = checkpoints.pmc_plan.get(run=run, kernel=kernel).output.jobs
    return sorted(
        glob_wildcards(os.path.join(jobs_dir, "{job}" + JOB_SUFFIX)).job,
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
    else:
        kernels = sorted(pmc_dir_kernels(run))
    return [f"results/{run}/l2/{kernel}.json" for kernel in kernels]


PLAN_L2_INPUTS.append(pmc_l2_files)


checkpoint pmc_plan:
    input:
        table="results/{run}/discover/kernels.tsv",
    output:
        jobs=directory("results/{run}/pmc/{kernel}/jobs"),
    log:
        "logs/{run}/pmc_plan/{kernel}.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        kernel_name=kernel_name_param,
        arch=PMC.get("arch", ""),
        metrics=list(PMC.get("metrics") or []),
        job_format=config["job_format"],
        discover_dir="results/{run}/discover",
    script:
        "../../scripts/pmc_plan.py"


rule pmc_capture:
    input:
        job="results/{run}/pmc/{kernel}/jobs/{job}" + JOB_SUFFIX,
    output:
        record="results/{run}/pmc/{kernel}/captures/{job}.json",
    log:
        "logs/{run}/pmc_capture/{kernel}/{job}.log",
    benchmark:
        "benchmarks/{run}/pmc_capture/{kernel}/{job}.tsv"
    conda:
        "../envs/analysis.yaml"
    resources:
        gpu=1,
    params:
        cmd=run_param("cmd"),
        env=run_env,
        timeout=run_param("timeout"),
        rocprofv3=rocprofv3_path(),
        # Raw counters live outside the declared outputs: a failed job never deletes a good capture.
        capture_dir="results/{run}/pmc/{kernel}/raw/{job}",
    script:
        "../../scripts/pmc_capture.py"


rule l2_analysis:
    input:
        l2_inputs,
    output:
        json="results/{run}/l2/{kernel}.json",
    log:
        "logs/{run}/l2_analysis/{kernel}.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        inputs=l2_counter_paths,
        kernel=l2_kernel_name,
        arch=PMC.get("arch", ""),
        ideal_gb=PMC.get("ideal_gb", 0),
        peak_gbps=PMC.get("peak_gbps", 0),
    script:
        "../../scripts/pmc_l2_analyzer.py"
