# Config validation, the runs of this invocation, run/config helpers and cached manifest reads.
import functools
import json
import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

sys.path.insert(0, os.path.abspath(os.path.join(workflow.basedir)))

from kerneltrace.errors import InputError  # noqa: E402
from kerneltrace.readers.wavefile.reader import wave_files  # noqa: E402
from kerneltrace.rocprof import jobfile  # noqa: E402
from kerneltrace.rocprof.discover import read_tsv  # noqa: E402
from kerneltrace.pipeline import codesig, configcheck, jobs, rerun  # noqa: E402
from kerneltrace.pipeline.manifest import read_manifest  # noqa: E402
from kerneltrace.pipeline.runs import build_runs  # noqa: E402

REPO = workflow.basedir
SCHEMA = os.path.join(REPO, "workflow", "schemas", "config.schema.yaml")
EXAMPLE_DIR = os.path.join(REPO, "examples", "synthetic_gemm")


# Every rule's run: job runs its script through run_script (below); most execute in threads of
# this process (force-use-threads): output per thread to its rule log; the wave reader must not fork
jobs.install()
os.environ.update(KERNELTRACE_WAVE_WORKERS="1")


def _validate(config):
    """The schema checks every key and value (defaults filled in; the schema is read once: this
    runs at every start, a no-op re-run included); an unknown key gets the list of valid ones.
    """
    schema = configcheck.load_schema(SCHEMA)
    unknown = configcheck.unknown_keys(config, schema)
    if unknown:
        raise WorkflowError(
            f"unknown config key(s): {', '.join(unknown)}. Valid keys: "
            f"{', '.join(sorted(schema['properties']))} (see config/README.md)"
        )
    invalid = configcheck.validate_config(config, schema, configcheck.CACHE)
    if invalid:
        raise WorkflowError(
            f"Error validating config: {invalid} (see config/README.md)"
        )


_validate(config)

try:
    RUNS, _note = build_runs(config, Path(EXAMPLE_DIR), Path.cwd(), (Path(REPO),))
except InputError as err:
    raise WorkflowError(f"config: {err}")
# job processes parse this file too: say it once per invocation
if workflow.is_main_process:
    # stop signals never hang the run and never leave its locks, from here on (onstart re-wraps
    # Snakemake's own SIGTERM handler once its scheduler installs it)
    from kerneltrace.pipeline.stopping import stop_on_signals

    stop_on_signals(unlock=lambda: workflow.persistence.unlock())
    print(f"kernel-trace-analysis: {_note}", file=sys.stderr)
    if config.get("baseline"):
        # a baseline without this run's summary is an error before any job, never a silent pass
        from kerneltrace.compare.regression import require_baseline_summary

        try:
            for _run in RUNS:
                require_baseline_summary(Path(config["baseline"]), _run)
        except InputError as err:
            raise WorkflowError(f"config: {err}")

JOB_SUFFIX = jobfile.job_suffix(config["job_format"])

RUN_PATTERN = "|".join(re.escape(name) for name in RUNS)


def run_spec(run):
    if run not in RUNS:
        raise WorkflowError(f"unknown run {run!r}; runs: {', '.join(RUNS)}")
    return RUNS[run]


def rocprofv3_path():
    return config["rocprofv3"]


def capture_env(run):
    """Extra environment for the profiled command of this run (config env + run env)."""
    return dict(run_spec(run).env)


def selected_kernels(run):
    """Ids (k000, ...) of the kernels chosen by discovery; waits for the discover checkpoint."""
    table = checkpoints.discover_kernels.get(run=run).output.table
    return [row.id for row in read_tsv(table) if row.selected]


def kernel_name(run, kernel):
    table = f"results/{run}/discover/kernels.tsv"
    for row in read_tsv(table):
        if row.id == kernel:
            return row.name
    raise WorkflowError(f"{kernel} not in {table}")


@functools.lru_cache(maxsize=64)
def _manifest(path, stamp):
    return {row["id"]: row for row in read_manifest(path)}


def manifest_by_id(path):
    """dispatches.tsv rows by id, read once per file version (param functions ask per job)."""
    info = os.stat(path)
    return _manifest(str(path), (info.st_mtime_ns, info.st_size))


def dispatch_rows(run):
    """Rows of results/{run}/dispatches.tsv; waits for the dispatches checkpoint."""
    manifest = checkpoints.dispatches.get(run=run).output.manifest
    return list(manifest_by_id(manifest).values())


def dispatch_row(run, dispatch):
    rows = manifest_by_id(f"results/{run}/dispatches.tsv")
    if dispatch not in rows:
        raise WorkflowError(f"dispatch {dispatch} not in results/{run}/dispatches.tsv")
    return rows[dispatch]


def kept_documents(wildcards):
    """reports/{run}/hotspots/*.json and reports/{run}/l2/*.json (copies of the stage documents)."""
    run = wildcards.run
    kept = [f"reports/{run}/hotspots/{row['id']}.json" for row in dispatch_rows(run)]
    kept += [
        os.path.join("reports", run, "l2", os.path.basename(path))
        for path in pmc_l2_files(run)  # pmc.smk
    ]
    return kept


def run_script(script, input, output, params, wildcards, log):
    """Body of every rule: scripts/<script>'s main(argv), built by its snakemake_argv, in a thread
    of this process or, for the capture scripts, as its own process (kerneltrace/pipeline/jobs.py);
    bad input -> the script's one-line error.
    """
    code, message = jobs.run_job(
        os.path.join(REPO, "scripts", script),
        log[0],
        input=input,
        output=output,
        params=params,
        wildcards=wildcards,
        log=log,
    )
    if code:
        raise WorkflowError(f"{message} (log: {log[0]})")


def copy_atomically(source, target, log):
    """A rule body copying one file; a failure (a full disk) is one error line, also in the log."""
    message = jobs.copy_file(source, target, log)
    if message:
        raise WorkflowError(f"{message} (log: {log})")


def all_targets(wildcards):
    targets = []
    for run in RUNS:
        targets += [f"reports/{run}/plan.md", f"reports/{run}/plan.html"]
    targets.append("reports/index.html")  # regression.smk: batch_index
    if config.get("baseline"):
        targets += expand("results/{run}/regression.gate.json", run=list(RUNS))
    return targets


def run_param(field):
    """Params function: one RunSpec field of the job's run (e.g. run_param("cmd"))."""

    def value(wildcards):
        return getattr(run_spec(wildcards.run), field)

    return value


def code_param(script):
    """Params function: signature of the code scripts/<script> runs (the script and every package
    module and template it can load): an edit re-runs exactly the rules running that code
    (kerneltrace/pipeline/codesig.py; every rule body is the same run_script call, so Snakemake's
    own code trigger never sees it)."""

    def value(wildcards):
        return codesig.code_signature(os.path.join(REPO, "scripts", script))

    return value


def other_runs_param(wildcards):
    """Signature of reports/*/summary.json of the runs NOT in this invocation (theirs are inputs)."""
    others = sorted(
        path
        for path in Path("reports").glob("*/summary.json")
        if path.parent.name not in RUNS
    )
    return rerun.files_signature(others)


def run_env(wildcards):
    return capture_env(wildcards.run)


def kernel_name_param(wildcards):
    return kernel_name(wildcards.run, wildcards.kernel)


def att_settings(wildcards):
    """ATT job values for write_input_yaml (config, with per-run overrides)."""
    spec = run_spec(wildcards.run)
    return {
        "kernel_iteration_range": spec.iterations,
        "att_target_cu": spec.att_target_cu,
        "att_shader_engine_mask": config["att_shader_engine_mask"],
        "att_simd_select": config["att_simd_select"],
        "att_buffer_size": config["att_buffer_size"],
        "truncate_kernels": config["truncate_kernels"],
        "att_library_path": list(config["att_library_path"]),
    }


def decoded_manifests(wildcards):
    """Per-kernel decode manifests of a cmd run; nothing for a dir run.

    Waits for every att_capture (a checkpoint): the decode jobs are then created after their
    capture exists, so decode's `tree` param (the raw capture's signature) is computed on it and
    a dispatch dir added to or removed from a cached capture re-runs decode.
    """
    if run_spec(wildcards.run).mode != "cmd":
        return []
    kernels = selected_kernels(wildcards.run)
    for kernel in kernels:
        checkpoints.att_capture.get(run=wildcards.run, kernel=kernel)
    return expand(
        "results/{run}/att/{kernel}/dispatches.tsv", run=wildcards.run, kernel=kernels
    )


def dispatch_param(field):
    def value(wildcards):
        return dispatch_row(wildcards.run, wildcards.dispatch)[field]

    return value


def has_wave_files(row):
    """True when the dispatch dir holds per-wave files (manifest column; older manifests: look)."""
    count = row.get("wave_files")
    if count not in (None, ""):
        return int(count) > 0
    return bool(wave_files(Path(row["dispatch_dir"])))


def timeline_targets(run):
    """reports/{run}/timeline/{id}.pftrace of the dispatches with wave files (none when the
    config's `timeline` is false); waits for the dispatches checkpoint."""
    if not config["timeline"]:
        return []
    return [
        f"reports/{run}/timeline/{row['id']}.pftrace"
        for row in dispatch_rows(run)
        if has_wave_files(row)
    ]


def plan_timelines(wildcards):
    return timeline_targets(wildcards.run)


def timeline_args(wildcards):
    """Optional export_timeline.py arguments: the run's --arch (its clock converts cycles)."""
    arch = run_spec(wildcards.run).arch
    return ["--arch", arch] if arch else []


def plan_hotspots(wildcards):
    return expand(
        "results/{run}/hotspots/{dispatch}.json",
        run=wildcards.run,
        dispatch=[row["id"] for row in dispatch_rows(wildcards.run)],
    )


def plan_l2(wildcards):
    return pmc_l2_files(wildcards.run)  # pmc.smk


def plan_dir(wildcards, output):
    return os.path.dirname(output.md)
