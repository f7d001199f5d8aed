# Per-kernel ATT capture (cmd runs): job file -> rocprofv3 --att run -> decoded dispatch dirs.
# Capture rules get only the params they need, so editing analysis code never re-runs a capture.


rule write_input_yaml:
    input:
        table="results/{run}/discover/kernels.tsv",
    output:
        job=f"results/{{run}}/jobs/{{kernel}}{JOB_SUFFIX}",
    log:
        "logs/{run}/write_input_yaml/{kernel}.log",
    localrule: True
    params:
        kernel_name=kernel_name_param,
        settings=att_settings,
        job_format=config["job_format"],
    run:
        run_script("write_input_yaml.py", input, output, params, wildcards, log)


# A checkpoint so that decode's `tree` param is computed after the capture exists
# (decoded_manifests in common.smk waits for it).
checkpoint att_capture:
    input:
        job=f"results/{{run}}/jobs/{{kernel}}{JOB_SUFFIX}",
    output:
        record="results/{run}/att/{kernel}/capture.json",
    log:
        "logs/{run}/att_capture/{kernel}.log",
    benchmark:
        "benchmarks/{run}/att_capture/{kernel}.tsv"
    resources:
        gpu=1,
    params:
        cmd=run_param("cmd"),
        env=run_env,
        timeout=run_param("timeout"),
        rocprofv3=rocprofv3_path(),
        retries=config["att_retries"],
        att_library_path=config["att_library_path"],
        job_format=config["job_format"],
        # Raw capture lives outside every declared output: a failed job never deletes it.
        capture_dir="results/{run}/captures/{kernel}",
    run:
        run_script("att_capture.py", input, output, params, wildcards, log)


rule decode:
    input:
        record="results/{run}/att/{kernel}/capture.json",
    output:
        manifest="results/{run}/att/{kernel}/dispatches.tsv",
        findings="results/{run}/att/{kernel}/decode.json",
    log:
        "logs/{run}/decode/{kernel}.log",
    localrule: True
    params:
        # a dispatch dir added to or removed from the raw capture (cached captures) redoes the list
        tree=capture_tree_param,
        capture_log="logs/{run}/att_capture/{kernel}.log",
        att_library_path=config["att_library_path"],
    run:
        run_script("decode.py", input, output, params, wildcards, log)
