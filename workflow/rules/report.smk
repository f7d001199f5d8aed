# People-facing outputs: the optimization plan of each run.


rule plan:
    # scripts/render_plan.py's main(argv), in this process (kerneltrace/pipeline/jobs.py)
    input:
        dispatches="results/{run}/dispatches.tsv",
        discovery="results/{run}/discovery.json",
        hotspots=plan_hotspots,
        l2=plan_l2,
        # copies kept beside the plan so reports/{run}/ alone is a complete baseline
        kept=kept_documents,
        # the plan links each dispatch's timeline (only those with wave files have one)
        timelines=plan_timelines,
    output:
        md=report(
            "reports/{run}/plan.md",
            caption="../report/plan.rst",
            category="Plan",
            labels={"run": "{run}", "format": "Markdown"},
        ),
        html=report(
            "reports/{run}/plan.html",
            caption="../report/plan.rst",
            category="Plan",
            labels={"run": "{run}", "format": "HTML"},
        ),
        summary=report(
            "reports/{run}/summary.json",
            caption="../report/summary.rst",
            category="Plan",
            labels={"run": "{run}", "format": "JSON"},
        ),
        # every dispatch dir of the run: kept, dropped at discovery or by its analysis (and why)
        dispatches_md="reports/{run}/dispatches.md",
        charts=report(
            directory("reports/{run}/charts"),
            patterns=["{name}.svg"],
            caption="../report/charts.rst",
            category="Charts",
            labels={"run": "{run}", "chart": "{name}"},
        ),
    log:
        "logs/{run}/plan.log",
    localrule: True
    params:
        out_dir=plan_dir,
        code=code_param("render_plan.py"),
        # plan.thresholds but the structure's (the hotspots rule's), and the gate's for summary.json
        thresholds=configcheck.stage_thresholds(config, "plan"),
    run:
        run_script("render_plan.py", input, output, params, wildcards, log)


# reports/{run}/ is self-contained for later comparisons (baseline, compare.py): it keeps the
# L2 documents beside summary.json (the hotspots rule keeps the per-dispatch copies itself).
rule keep_l2:
    input:
        "results/{run}/l2/{kernel}.json",
    output:
        "reports/{run}/l2/{kernel}.json",
    log:
        "logs/{run}/keep_l2/{kernel}.log",
    localrule: True
    run:
        copy_atomically(input[0], output[0], log[0])
