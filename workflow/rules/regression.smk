# Batch index (reports/index.html) and the regression gate against config `baseline`.


rule batch_index:
    input:
        summaries=expand("reports/{run}/summary.json", run=list(RUNS)),
        plans=expand("reports/{run}/plan.html", run=list(RUNS)),
        regressions=(
            expand("reports/{run}/regression.json", run=list(RUNS))
            if config.get("baseline")
            else []
        ),
    output:
        html="reports/index.html",
    log:
        "logs/batch_index.log",
    localrule: True
    params:
        # the index lists every run under reports/: earlier invocations' runs are data it reads,
        # and their summaries' signature re-renders it when one of them changes or disappears
        others=other_runs_param,
        code=code_param("render_index.py"),
    run:
        run_script("render_index.py", input, output, params, wildcards, log)


if config.get("baseline"):

    # Writes the report; never fails on a regression, so its outputs survive a failing gate.
    rule regression_report:
        input:
            hotspots=plan_hotspots,
            summary="reports/{run}/summary.json",
            # the earlier run's reports/ folder is data this rule reads, so it is an input
            baseline=config["baseline"],
        output:
            json="reports/{run}/regression.json",
            md="reports/{run}/regression.md",
        log:
            "logs/{run}/regression_report.log",
        localrule: True
        params:
            thresholds=config.get("regression_thresholds") or {},
            compare_thresholds=configcheck.stage_thresholds(config, "compare"),
        run:
            run_script("regression_report.py", input, output, params, wildcards, log)

    # Records the gate's outcome; the Snakefile's onsuccess prints it and fails the invocation
    # (exit 1, one block, no traceback) when the run regressed or a baselined dispatch is missing.
    rule regression_gate:
        input:
            report="reports/{run}/regression.json",
        output:
            outcome="results/{run}/regression.gate.json",
        log:
            "logs/{run}/regression_gate.log",
        localrule: True
        params:
            allow_missing=config.get("allow_missing", False),
        run:
            run_script("regression_gate.py", input, output, params, wildcards, log)
