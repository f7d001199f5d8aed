# Analysis: the dispatch dirs of a run (checkpoint, both modes) and one hotspot report per dir.


checkpoint dispatches:
    input:
        decoded=decoded_manifests,
    output:
        manifest="results/{run}/dispatches.tsv",
        notes="results/{run}/dispatches.md",
    log:
        "logs/{run}/dispatches.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        # dir runs: adding/removing a dispatch dir, re-capturing its code.json or a CSV appearing
        # changes this signature, so the list is redone (a params rerun trigger)
        tree=tree_param,
        mode=run_param("mode"),
        search_dir=run_param("dir"),
        kernel=run_param("kernel"),
    script:
        "../../scripts/find_dispatch_dirs.py"


# One job per dispatch dir; its inputs and its `signature` param cover every file the analysis reads
# (docs/pipeline.md, "Rerun behaviour"). It runs in the Snakemake process (run: + the default
# profile's force-use-threads) and also writes the copy kept under reports/ (no extra job).
rule hotspots:
    input:
        files=dispatch_inputs,
    output:
        json="results/{run}/hotspots/{dispatch}.json",
        text="results/{run}/hotspots/{dispatch}.txt",
        # reports/{run}/ alone is a complete baseline (compare.py, regression gate)
        kept="reports/{run}/hotspots/{dispatch}.json",
    log:
        "logs/{run}/hotspots/{dispatch}.log",
    # On a cluster, profiles/slurm packs a run's hotspot jobs into a few group jobs
    # (group-components); one group per run, as groups spanning runs break on Snakemake 9's
    # checkpoint updates. Local runs ignore groups.
    group:
        "analysis_{run}"
    # no conda env here: a run: block executes in Snakemake's own interpreter, where it has no effect
    params:
        dispatch_dir=dispatch_param("dispatch_dir"),
        waves=dispatch_waves,
        arch=run_param("arch"),
        capture_report=capture_report,
        capture_state=capture_state,
        topk=config["topk"],
        signature=dispatch_signature,
    run:
        run_hotspots_job(params, output, log)
