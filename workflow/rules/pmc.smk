# PMC stage: plan single-pass counter jobs per kernel, capture each job in its own run, analyse L2/HBM.
# cmd runs: pmc_plan -> pmc_capture (one per planned job) -> l2_analysis.
# dir runs: l2_analysis reads the counter files found beside the dispatch dirs (dispatches.tsv).


wildcard_constraints:
    job=r"pmc_job\d+",


checkpoint pmc_plan:
    input:
        table="results/{run}/discover/kernels.tsv",
    output:
        jobs=directory("results/{run}/pmc/{kernel}/jobs"),
    log:
        "logs/{run}/pmc_plan/{kernel}.log",
    localrule: True
    params:
        kernel_name=kernel_name_param,
        arch=pmc_arch,
        metrics=list(PMC.get("metrics") or []),
        job_format=config["job_format"],
        # discovery output (agent_info.csv names the GPU) lives beside kernels.tsv
        discover_dir=lambda wildcards, input: os.path.dirname(input.table),
    run:
        run_script("pmc_plan.py", input, output, params, wildcards, log)


rule pmc_capture:
    input:
        job=f"results/{{run}}/pmc/{{kernel}}/jobs/{{job}}{JOB_SUFFIX}",
    output:
        record="results/{run}/pmc/{kernel}/captures/{job}.json",
    log:
        "logs/{run}/pmc_capture/{kernel}/{job}.log",
    benchmark:
        "benchmarks/{run}/pmc_capture/{kernel}/{job}.tsv"
    resources:
        gpu=1,
    params:
        cmd=run_param("cmd"),
        env=run_env,
        timeout=run_param("timeout"),
        rocprofv3=rocprofv3_path(),
        # Raw counters live outside the declared outputs: a failed job never deletes a good capture.
        capture_dir="results/{run}/pmc/{kernel}/raw/{job}",
    run:
        run_script("pmc_capture.py", input, output, params, wildcards, log)


rule l2_analysis:
    input:
        l2_inputs,
    output:
        json="results/{run}/l2/{kernel}.json",
    log:
        "logs/{run}/l2_analysis/{kernel}.log",
    localrule: True
    params:
        inputs=l2_counter_paths,
        kernel=l2_kernel_name,
        arch=pmc_arch,
        ideal_gb=PMC.get("ideal_gb", 0),
        peak_gbps=PMC.get("peak_gbps", 0),
        code=code_param("pmc_l2_analyzer.py"),
    run:
        run_script("pmc_l2_analyzer.py", input, output, params, wildcards, log)
