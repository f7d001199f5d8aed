# Kernel discovery (cmd runs): one rocprofv3 --kernel-trace --stats run, then the kernel choice.


checkpoint discover_kernels:
    output:
        table="results/{run}/discover/kernels.tsv",
        markdown="results/{run}/discover/kernels.md",
    log:
        "logs/{run}/discover_kernels.log",
    benchmark:
        "benchmarks/{run}/discover_kernels.tsv"
    resources:
        gpu=1,
    params:
        cmd=run_param("cmd"),
        env=run_env,
        timeout=run_param("timeout"),
        rocprofv3=rocprofv3_path(),
        kernel=run_param("kernel"),
        top_kernels=run_param("top_kernels"),
    run:
        run_script("discover_kernels.py", input, output, params, wildcards, log)
