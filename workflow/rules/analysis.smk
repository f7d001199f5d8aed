# Analysis: the dispatch dirs of a run (checkpoint, both modes) and one hotspot report per dir.


checkpoint dispatches:
    input:
        decoded=decoded_manifests,
    output:
        manifest="results/{run}/dispatches.tsv",
        notes="results/{run}/dispatches.md",
        # the entries dropped at discovery, for the plan and reports/{run}/dispatches.md
        discovery="results/{run}/discovery.json",
    log:
        "logs/{run}/dispatches.log",
    localrule: True
    params:
        # dir runs: adding/removing a dispatch dir, re-capturing its code.json or a CSV appearing
        # changes this signature, so the list is redone (a params rerun trigger)
        tree=tree_param,
        mode=run_param("mode"),
        search_dir=run_param("dir"),
        kernel=run_param("kernel"),
    run:
        run_script("find_dispatch_dirs.py", input, output, params, wildcards, log)


# One job per dispatch dir; its inputs and its `signature` param cover every file the analysis reads
# (docs/pipeline.md, "Rerun behaviour"). It runs scripts/hotspot_analyzer.py's main in the Snakemake
# process (run: + the default profile's force-use-threads) and writes the copy under reports/ too
# (--keep: a failing write is the job's one error line in its log).
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
    params:
        dispatch_dir=dispatch_param("dispatch_dir"),
        extra=hotspot_args,
        capture_state=capture_state,
        topk=config["topk"],
        signature=dispatch_signature,
        code=code_param("hotspot_analyzer.py"),
    run:
        run_script("hotspot_analyzer.py", input, output, params, wildcards, log)
