# Config validation, the runs of this invocation, and helpers shared by every rule file.
import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

sys.path.insert(0, os.path.abspath(os.path.join(workflow.basedir)))

from kerneltrace.errors import InputError  # noqa: E402
from kerneltrace.readers.wavefile.reader import wave_files  # noqa: E402
from kerneltrace.rocprof import jobfile  # noqa: E402
from kerneltrace.rocprof.discover import read_tsv  # noqa: E402
from kerneltrace.pipeline.manifest import read_manifest  # noqa: E402
from kerneltrace.pipeline.runs import build_runs  # noqa: E402

REPO = workflow.basedir
SCHEMA = os.path.join(REPO, "workflow", "schemas", "config.schema.yaml")
EXAMPLE_DIR = os.path.join(REPO, "examples", "synthetic_gemm")



def _known_keys():
    import yaml

    with open(SCHEMA, encoding="utf-8") as handle:
        return set(yaml.safe_load(handle)["properties"])


_unknown = sorted(set(config) - _known_keys())
if _unknown:
    raise WorkflowError(
        f"unknown config key(s): {', '.join(_unknown)}. Valid keys: "
        f"{', '.join(sorted(_known_keys()))} (see config/README.md)"
    )
validate(config, schema=SCHEMA)

try:
    RUNS, _note = build_runs(config, Path(EXAMPLE_DIR), Path.cwd(), (Path(REPO),))
except InputError as err:
    raise WorkflowError(f"config: {err}")
print(f"kernel-trace-analysis: {_note}", file=sys.stderr)

JOB_SUFFIX = jobfile.job_suffix(config["job_format"])

# Hooks for the optional stage files pmc.smk and regression.smk (append functions; docs/pipeline.md).
PLAN_L2_INPUTS = []  # f(run) -> list of L2 JSON paths for the plan
ALL_EXTRA_TARGETS = []  # f() -> list of extra targets of the default target

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


def dispatch_rows(run):
    """Rows of results/{run}/dispatches.tsv; waits for the dispatches checkpoint."""
    manifest = checkpoints.dispatches.get(run=run).output.manifest
    return read_manifest(manifest)


def dispatch_row(run, dispatch):
    for row in read_manifest(f"results/{run}/dispatches.tsv"):
        if row["id"] == dispatch:
            return row
    raise WorkflowError(f"dispatch {dispatch} not in results/{run}/dispatches.tsv")


def kept_documents(wildcards):
    """reports/{run}/hotspots/*.json and reports/{run}/l2/*.json (copies of the stage documents)."""
    run = wildcards.run
    kept = [f"reports/{run}/hotspots/{row['id']}.json" for row in dispatch_rows(run)]
    for provider in PLAN_L2_INPUTS:
        kept += [
            os.path.join("reports", run, "l2", os.path.basename(path))
            for path in provider(run)
        ]
    return kept


def copy_atomically(source, target):
    from kerneltrace.atomic import write_bytes

    write_bytes(Path(target), Path(source).read_bytes())


def all_targets(wildcards):
    targets = []
    for run in RUNS:
        targets += [f"reports/{run}/plan.md", f"reports/{run}/plan.html"]
    for extra in ALL_EXTRA_TARGETS:
        targets += list(extra())
    return targets


def run_param(field):
    """Params function: one RunSpec field of the job's run (e.g. run_param("cmd"))."""

    def value(wildcards):
        return getattr(run_spec(wildcards.run), field)

    return value


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
    """Per-kernel decode manifests of a cmd run; nothing for a dir run."""
    if run_spec(wildcards.run).mode != "cmd":
        return []
    return expand(
        "results/{run}/att/{kernel}/dispatches.tsv",
        run=wildcards.run,
        kernel=selected_kernels(wildcards.run),
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


def hotspot_args(wildcards):
    """Optional analyzer arguments. The CSV metadata is not passed: the analyzer finds it in the
    capture bundle with the same lookup as on the command line (model.metadata).
    """
    row = dispatch_row(wildcards.run, wildcards.dispatch)
    args = []
    if has_wave_files(row):
        # wave-level analysis (hotspots/2 `waves`): the plan attributes waits to their loads
        args.append("--waves")
    arch = run_spec(wildcards.run).arch
    if arch:
        args += ["--arch", arch]
    if row.get("source") == "capture" and row.get("kernel_id"):
        # the decode report says whether the capture was truncated (buffer full, data lost)
        args += [
            "--capture-report",
            f"results/{wildcards.run}/att/{row['kernel_id']}/decode.json",
        ]
    return args


def plan_hotspots(wildcards):
    return expand(
        "results/{run}/hotspots/{dispatch}.json",
        run=wildcards.run,
        dispatch=[row["id"] for row in dispatch_rows(wildcards.run)],
    )


def plan_l2(wildcards):
    files = []
    for provider in PLAN_L2_INPUTS:
        files += list(provider(wildcards.run))
    return files


def plan_dir(wildcards, output):
    return os.path.dirname(output.md)


# --- PMC stage helpers (rules in pmc.smk; they only run when that file is included) ---

PMC = config.get("pmc") or {}


def pmc_enabled():
    return bool(PMC.get("enabled"))


def pmc_arch(wildcards):
    """pmc: {arch} when set, else the run's arch key, else "" (found from the captures)."""
    return PMC.get("arch") or run_spec(wildcards.run).arch or ""


def pmc_job_ids(run, kernel):
    """Planned job ids (pmc_job1, ...); waits for the pmc_plan checkpoint."""
    jobs_dir = checkpoints.pmc_plan.get(run=run, kernel=kernel).output.jobs
    return sorted(
        glob_wildcards(os.path.join(jobs_dir, f"{{job}}{JOB_SUFFIX}")).job,
        key=lambda name: int(name[len("pmc_job") :]),
    )


def pmc_dir_kernels(run):
    """dir runs: {kernel key: manifest rows with counter files}; key = kernel_id, else k000.. by name."""
    groups = {}
    names = []
    for row in dispatch_rows(run):
        if not row.get("pmc_files"):
            continue
        if row["kernel"] not in names:
            names.append(row["kernel"])
        key = row["kernel_id"] or "k{:03d}".format(names.index(row["kernel"]))
        groups.setdefault(key, []).append(row)
    return groups


def pmc_dir_rows(run, kernel):
    return pmc_dir_kernels(run).get(kernel, [])


def l2_inputs(wildcards):
    if run_spec(wildcards.run).mode == "cmd":
        return expand(
            "results/{run}/pmc/{kernel}/captures/{job}.json",
            run=wildcards.run,
            kernel=wildcards.kernel,
            job=pmc_job_ids(wildcards.run, wildcards.kernel),
        )
    return ["results/{run}/dispatches.tsv".format(run=wildcards.run)]


def l2_counter_paths(wildcards, input):
    """Counter files: the promoted capture dirs (cmd) or the files beside the dispatch dirs (dir)."""
    if run_spec(wildcards.run).mode == "cmd":
        return [
            f"results/{wildcards.run}/pmc/{wildcards.kernel}/raw/{job}"
            for job in pmc_job_ids(wildcards.run, wildcards.kernel)
        ]
    paths = []
    for row in pmc_dir_rows(wildcards.run, wildcards.kernel):
        paths += [p for p in row["pmc_files"].split(";") if p and p not in paths]
    return paths


def l2_kernel_name(wildcards):
    if run_spec(wildcards.run).mode == "cmd":
        return kernel_name(wildcards.run, wildcards.kernel)
    rows = pmc_dir_rows(wildcards.run, wildcards.kernel)
    return rows[0]["kernel"] if rows else ""


def pmc_l2_files(run):
    """Plan hook: the L2 documents of this run (none when the PMC stage is off)."""
    if not pmc_enabled():
        return []
    if run_spec(run).mode == "cmd":
        kernels = selected_kernels(run)
        # Resolve the pmc_plan checkpoints in the plan's own input function: Snakemake re-evaluates
        # only direct dependents of a checkpoint, so on a re-run l2_analysis would keep unresolved
        # (<TBD>) inputs and a missing pmc_capture would never be scheduled.
        for kernel in kernels:
            pmc_job_ids(run, kernel)
    else:
        kernels = sorted(pmc_dir_kernels(run))
    return [f"results/{run}/l2/{kernel}.json" for kernel in kernels]
