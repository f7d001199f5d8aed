# Wave timelines: one Perfetto trace per dispatch dir that has wave files (docs/timeline.md).
# Only requested for such dispatches (timeline_targets in common.smk, after the dispatches
# checkpoint), so a capture without wave files never has a timeline job that could fail.
# A local rule: an export takes seconds, and on SLURM a cluster job per dispatch (or a place in the
# analysis group, whose runtime request it would lengthen) costs more than it saves.


rule timeline:
    input:
        files=dispatch_inputs,
    output:
        trace="reports/{run}/timeline/{dispatch}.pftrace",
    log:
        "logs/{run}/timeline/{dispatch}.log",
    localrule: True
    params:
        dispatch_dir=dispatch_param("dispatch_dir"),
        extra=timeline_args,
        # any change to a wave file (or another file of the dir) re-runs the export
        signature=dispatch_signature,
        # an edit of the exporter's code re-exports (kerneltrace/pipeline/codesig.py)
        code=code_param("export_timeline.py"),
    run:
        run_script("export_timeline.py", input, output, params, wildcards, log)
