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
    """Declared inputs of a hotspots job: code.json, snapshots.json, the CSVs found for it and (cmd
    runs) the decode report."""
    row = dispatch_row(wildcards.run, wildcards.dispatch)
    directory = row["dispatch_dir"]
    files = [os.path.join(directory, "code.json")]
    if os.path.exists(os.path.join(directory, "snapshots.json")):
        files.append(os.path.join(directory, "snapshots.json"))
    decode_report = capture_report(wildcards)
    if decode_report:
        # cmd runs: the analysis reads decode.json, so it runs after decode; ancient(): decode
        # re-runs whenever a dir is added to the capture, the `capture_state` param says when
        # what the analysis uses of it changed
        files.append(ancient(decode_report))
    return files + dispatch_csvs(row)


def dispatch_csvs(row):
    """The kernel_trace / agent_info CSVs found for a dispatch row (either may be absent)."""
    return [row[key] for key in ("kernel_trace_csv", "agent_info_csv") if row[key]]


def dispatch_signature(wildcards):
    """(size, mtime, name) of EVERY file of the dispatch dir (wave files, source copies, ...) and
    of its CSVs: any change, even to an older copy, re-runs this dispatch's job (params trigger).
    Not a function of `input`: Snakemake ignores params derived from inputs when comparing.
    """
    row = dispatch_row(wildcards.run, wildcards.dispatch)
    return rerun.files_signature(
        rerun.dispatch_files(row["dispatch_dir"]) + dispatch_csvs(row)
    )


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


def hotspot_args(wildcards):
    """Optional analyzer arguments. The CSV metadata is not passed: the analyzer finds it in the
    capture bundle with the same lookup as on the command line (model.metadata).
    """
    row = dispatch_row(wildcards.run, wildcards.dispatch)
    # one bad capture is one dropped capture: the plan lists it with the reason
    args = ["--drop-on-error"]
    if has_wave_files(row):
        # wave-level analysis (hotspots/2 `waves`): the plan attributes waits to their loads
        args.append("--waves")
    arch = run_spec(wildcards.run).arch
    if arch:
        args += ["--arch", arch]
    decode_report = capture_report(wildcards)
    if decode_report:
        # the decode report says whether the capture was truncated (buffer full, data lost)
        args += ["--capture-report", decode_report]
    structure = configcheck.stage_thresholds(config, "hotspots")
    if structure:
        # plan.thresholds.structure: changing it changes this param, so the hotspots are redone
        args += ["--thresholds", json.dumps(structure, sort_keys=True)]
    return args
