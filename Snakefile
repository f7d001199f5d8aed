# Entry point: kernel-trace-analysis (rocprofv3 ATT/PMC captures -> optimization plan).
# Uses: see docs/pipeline.md. Stage rules live in workflow/rules/*.smk.
import os
import sys

from snakemake.utils import min_version

min_version("9.1.0")


configfile: os.path.join(workflow.basedir, "config", "config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/analysis_inputs.smk"
include: "workflow/rules/pmc_inputs.smk"


wildcard_constraints:
    run=RUN_PATTERN,
    kernel=r"k\d{3}",
    dispatch=r"[A-Za-z0-9_-]+",


include: "workflow/rules/discover.smk"
include: "workflow/rules/capture.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/timeline.smk"
include: "workflow/rules/pmc.smk"
include: "workflow/rules/regression.smk"


rule all:
    default_target: True
    input:
        all_targets,


onstart:
    # Snakemake has installed its SIGTERM handler by now: wrap it (never blocking in the handler;
    # captures must not outlive a stop; a stopped run ends within seconds, locks removed).
    from kerneltrace.pipeline.stopping import stop_captures_on_sigterm
    from kerneltrace.pipeline.slurm.hook import cluster_rules, install_slurm_checks

    stop_captures_on_sigterm()
    # On SLURM: the preflight before the first submission, the pending watch (docs/scale-out.md)
    install_slurm_checks(
        workflow,
        cluster_rules(
            {spec.mode for spec in RUNS.values()}, config["pmc"]["enabled"]
        ),
        config["slurm_pending_timeout"],
    )


onsuccess:
    # The regression gate's outcome (recorded by its job): one block per run, exit 1 on failure.
    if config.get("baseline"):
        from kerneltrace.pipeline.gate import finish

        if finish(RUNS):
            sys.exit(1)
