# People-facing outputs: the optimization plan of each run.


rule plan:
    input:
        dispatches="results/{run}/dispatches.tsv",
        hotspots=plan_hotspots,
        l2=plan_l2,
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
        summary="reports/{run}/summary.json",
    log:
        "logs/{run}/plan.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        run="{run}",
    script:
        "../../scripts/render_plan.py"
