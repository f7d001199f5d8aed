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
        mode=run_param("mode"),
        search_dir=run_param("dir"),
        kernel=run_param("kernel"),
    script:
        "../../scripts/find_dispatch_dirs.py"


rule hotspots:
    input:
        manifest="results/{run}/dispatches.tsv",
    output:
        json="results/{run}/hotspots/{dispatch}.json",
        text="results/{run}/hotspots/{dispatch}.txt",
    log:
        "logs/{run}/hotspots/{dispatch}.log",
    benchmark:
        "benchmarks/{run}/hotspots/{dispatch}.tsv"
    # On a cluster, profiles/slurm packs a run's hotspot jobs into a few group jobs
    # (group-components); one group per run, as groups spanning runs break on Snakemake 9's
    # checkpoint updates. Local runs ignore groups.
    group:
        "analysis_{run}"
    conda:
        "../envs/analysis.yaml"
    params:
        dispatch_dir=dispatch_param("dispatch_dir"),
        extra=hotspot_args,
        topk=config["topk"],
    script:
        "../../scripts/hotspot_analyzer.py"
