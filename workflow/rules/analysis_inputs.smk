# Input and param functions of hotspots jobs and of the dispatch list. What decides re-runs
# (kerneltrace/pipeline/rerun.py, imported by common.smk; docs/pipeline.md, "Rerun behaviour")
# and the in-process hotspots job.


def tree_param(wildcards):
    """dir runs: signature of the searched tree (dispatch dirs, code.json, CSVs), a rerun trigger
    of the dispatches checkpoint; cmd runs: "" (their decode manifests are its inputs).
    """
    spec = run_spec(wildcards.run)
    return rerun.tree_signature(spec.dir) if spec.mode == "dir" else ""


def capture_tree_param(wildcards):
    """Signature of a kernel's raw capture folder (evaluated after att_capture, a checkpoint)."""
    return rerun.tree_signature(f"results/{wildcards.run}/captures/{wildcards.kernel}")


def dispatch_inputs(wildcards):
    """Declared inputs of a hotspots job: code.json, snapshots.json and the CSVs found for it."""
    row = dispatch_row(wildcards.run, wildcards.dispatch)
    directory = row["dispatch_dir"]
    files = [os.path.join(directory, "code.json")]
    if os.path.exists(os.path.join(directory, "snapshots.json")):
        files.append(os.path.join(directory, "snapshots.json"))
    return files + [
        row[key] for key in ("kernel_trace_csv", "agent_info_csv") if row[key]
    ]


def dispatch_signature(wildcards):
    """(size, mtime, name) of EVERY file of the dispatch dir (wave files, source copies, ...) and
    of its CSVs: any change, even to an older copy, re-runs this dispatch's job (params trigger).
    Not a function of `input`: Snakemake ignores params derived from inputs when comparing.
    """
    row = dispatch_row(wildcards.run, wildcards.dispatch)
    csvs = [row[key] for key in ("kernel_trace_csv", "agent_info_csv") if row[key]]
    return rerun.files_signature(rerun.dispatch_files(row["dispatch_dir"]) + csvs)


def dispatch_waves(wildcards):
    return has_wave_files(dispatch_row(wildcards.run, wildcards.dispatch))


def capture_report(wildcards):
    """cmd runs: the kernel's decode report (says whether the capture was truncated), else ""."""
    row = dispatch_row(wildcards.run, wildcards.dispatch)
    if row.get("source") == "capture" and row.get("kernel_id"):
        return f"results/{wildcards.run}/att/{row['kernel_id']}/decode.json"
    return ""


def capture_state(wildcards):
    """What the analysis uses of the decode report (truncated, finding codes): a params trigger.
    Not the report's mtime: decode re-runs when a dir is added, the other dirs' results stand.
    """
    path = capture_report(wildcards)
    return rerun.capture_state(path) if path else ""


def run_hotspots_job(params, output, log):
    """Body of the hotspots rule: the analysis in this process; bad input -> one-line error."""
    from kerneltrace.pipeline.hotspots_job import hotspots_job

    try:
        hotspots_job(
            params.dispatch_dir,
            json_path=output.json,
            text_path=output.text,
            kept_path=output.kept,
            log_path=log[0],
            topk=params.topk,
            waves=params.waves,
            arch=params.arch,
            capture_report=params.capture_report,
        )
    except InputError as err:
        raise WorkflowError(f"error: {err} (log: {log[0]})") from None
