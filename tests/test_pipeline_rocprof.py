"""Unit tests of kerneltrace.rocprof: command lines, job files, discovery, log scan, decoder lookup,
dispatch-dir discovery, run specs, and capture (against the rocprofv3 test double)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest
import yaml

from kerneltrace import synth
from kerneltrace.errors import InputError
from kerneltrace.model import dispatchdir
from kerneltrace.pipeline import manifest, runs
from kerneltrace.rocprof import (
    capture,
    commands,
    decoder,
    discover,
    jobfile,
    logscan,
)

DOUBLE_DIR = Path(__file__).resolve().parent / "rocprofv3_double"
DOUBLE = DOUBLE_DIR / "rocprofv3"


# ---- commands -------------------------------------------------------------------------------

def test_cmd_string_is_one_argv_element_after_separator():
    cmd = "python bench.py --name 'a b' \"$HOME\" ; echo done"
    argv = commands.att_argv("rocprofv3", "job.yaml", "out", commands.AppCommand(cmd))
    assert argv[:7] == ["rocprofv3", "-i", "job.yaml", "-d", "out", "-o", "att"]
    assert argv[7] == "--"
    assert argv[8:] == ["bash", "-c", cmd]


def test_discovery_argv_shape():
    argv = commands.discovery_argv("/opt/rocm/bin/rocprofv3", "d", commands.AppCommand("x"))
    assert argv[: argv.index("--")] == ["/opt/rocm/bin/rocprofv3", "--kernel-trace", "--stats", "-f", "csv",
                                        "-d", "d", "-o", "discover"]


def test_child_env_drops_output_vars_even_from_config_env():
    base = {"PATH": "/bin", "ROCPROF_OUTPUT_PATH": "/x", "ROCPROF_OUTPUT_FILE_NAME": "y"}
    env = commands.child_env(base, {"HIP_VISIBLE_DEVICES": 0, "ROCPROF_OUTPUT_PATH": "/z"})
    assert "ROCPROF_OUTPUT_PATH" not in env and "ROCPROF_OUTPUT_FILE_NAME" not in env
    assert env["FLYDSL_DEBUG_ENABLE_DEBUG_INFO"] == "1"
    assert env["HIP_VISIBLE_DEVICES"] == "0"
    assert base["ROCPROF_OUTPUT_PATH"] == "/x"  # input mapping untouched


# ---- job files ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["void at::native::kernel<float, 4>(int*, float const*)",
                                  "a.b+c?d|e^f$g{1}[x](y)\\z", "vec_add_float(float const*, int)"])
def test_exact_name_regex_matches_only_that_name(name):
    regex = jobfile.exact_name_regex(name)
    assert regex.startswith("^") and regex.endswith("$")
    assert re.search(regex, name)
    assert not re.search(regex, name + "x")
    assert not re.search(regex, "x" + name)
    assert "\\ " not in regex  # no identity escapes std::regex may reject


def test_att_job_defaults_and_yaml_roundtrip():
    job = jobfile.att_job(jobfile.exact_name_regex("k<1>"), jobfile.AttSettings())
    text = jobfile.dump_jobs([job], "yaml")
    loaded = yaml.safe_load(text)
    assert list(loaded) == ["jobs"] and len(loaded["jobs"]) == 1
    one = loaded["jobs"][0]
    assert one["advanced_thread_trace"] is True
    assert one["kernel_iteration_range"] == "[1, [3-4]]"
    assert one["att_target_cu"] == 1
    assert one["att_shader_engine_mask"] == "0xf" and one["att_simd_select"] == "0xf"
    assert one["att_buffer_size"] == "0x6000000"
    assert one["kernel_trace"] is True and one["output_format"] == ["csv"]
    assert "output_directory" not in one and "output_file" not in one  # location goes on the CLI
    assert all("-" not in key for key in one)  # hyphenated keys are ignored by rocprofv3
    assert json.loads(jobfile.dump_jobs([job], "json"))["jobs"][0] == one


def test_att_job_rejects_capital_hex():
    with pytest.raises(InputError, match="0x"):
        jobfile.att_job("^k$", jobfile.AttSettings(att_buffer_size="0X6000000"))


def test_load_jobs_reads_only_jobs_list():
    assert jobfile.load_jobs('{"jobs": [{"pmc": ["A"]}], "pmc": ["B"]}', ".json") == [{"pmc": ["A"]}]
    with pytest.raises(InputError):
        jobfile.load_jobs("pmc: [A]\n", ".yaml")


# ---- discovery ------------------------------------------------------------------------------

def _stats_csv(tmp_path: Path) -> Path:
    paths = synth.write_discovery_run(tmp_path, [synth.demo_gemm(), synth.demo_vec_add()])
    return paths["kernel_stats"]


def test_kernel_stats_ranked_with_safe_ids(tmp_path):
    rows = discover.read_kernel_stats_csv(_stats_csv(tmp_path))
    assert [r.id for r in rows] == ["k000", "k001"]
    assert rows[0].total_us >= rows[1].total_us
    assert abs(sum(r.pct_gpu_time for r in rows) - 100.0) < 1e-6
    assert rows[0].avg_us == pytest.approx(rows[0].total_us / rows[0].calls)


def test_kernel_stats_by_header_name_not_position(tmp_path):
    path = tmp_path / "x_kernel_stats.csv"
    path.write_text('"Calls","Percentage","Name","TotalDurationNs"\n3,10.0,"b",300\n1,90.0,"a",900\n')
    rows = discover.read_kernel_stats_csv(path)
    assert [(r.name, r.calls) for r in rows] == [("a", 1), ("b", 3)]


def test_kernel_stats_missing_column(tmp_path):
    path = tmp_path / "x_kernel_stats.csv"
    path.write_text('"Name","Calls"\n"a",1\n')
    with pytest.raises(InputError, match="TotalDurationNs"):
        discover.read_kernel_stats_csv(path)


def test_rocpd_kernels_view_and_tables(tmp_path):
    db = tmp_path / "run_results.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        'CREATE TABLE "rocpd_kernel_dispatch_ab" (id, guid, kernel_id, start, "end");'
        'CREATE TABLE "rocpd_info_kernel_symbol_ab" (id, guid, display_name);'
        'CREATE VIEW rocpd_kernel_dispatch AS SELECT * FROM "rocpd_kernel_dispatch_ab";'
        'CREATE VIEW rocpd_info_kernel_symbol AS SELECT * FROM "rocpd_info_kernel_symbol_ab";'
        "INSERT INTO rocpd_info_kernel_symbol_ab VALUES (1,'g','slow'),(2,'g','fast');"
        "INSERT INTO rocpd_kernel_dispatch_ab VALUES (1,'g',1,0,5000),(2,'g',1,0,5000),(3,'g',2,0,1000);")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    rows = discover.read_rocpd_kernel_stats(db)  # no `kernels` view: falls back to the real tables
    assert [(r.name, r.calls, r.total_us) for r in rows] == [("slow", 2, 10.0), ("fast", 1, 1.0)]
    assert db.read_bytes() == before  # opened read-only
    conn = sqlite3.connect(db)
    conn.execute('CREATE VIEW kernels AS SELECT S.display_name AS name, K.start, K."end" FROM '
                 "rocpd_kernel_dispatch K JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id")
    conn.commit()
    conn.close()
    assert [r.name for r in discover.read_rocpd_kernel_stats(db)] == ["slow", "fast"]
    assert discover.read_discovery(db)[0].calls == 2


def test_select_by_regex_and_top(tmp_path):
    rows = discover.read_kernel_stats_csv(_stats_csv(tmp_path))
    assert [r.selected for r in discover.select_kernels(rows, None, 1)] == [True, False]
    assert [r.selected for r in discover.select_kernels(rows, None, 5)] == [True, True]
    chosen = discover.select_kernels(rows, "vec_add", 1)
    assert [r.name for r in chosen if r.selected] == [rows[1].name]


def test_no_kernel_matches_lists_top_kernels(tmp_path):
    rows = discover.read_kernel_stats_csv(_stats_csv(tmp_path))
    with pytest.raises(InputError) as err:
        discover.select_kernels(rows, "^nothing$", 1)
    assert "top kernels found" in str(err.value) and rows[0].name in str(err.value)


def test_tsv_roundtrip_and_markdown_escapes(tmp_path):
    rows = discover.select_kernels(discover.read_kernel_stats_csv(_stats_csv(tmp_path)), None, 1)
    path = tmp_path / "k.tsv"
    path.write_text(discover.to_tsv(rows))
    back = discover.read_tsv(path)
    assert [(r.id, r.name, r.selected) for r in back] == [(r.id, r.name, r.selected) for r in rows]
    markdown = discover.to_markdown(discover._ranked([("f<a|b>", 1, 10.0)]))
    assert "`f<a\\|b>`" in markdown  # a code span (the renderer escapes <, >), pipe escaped for the table


# ---- log scan -------------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "code"), [
    ("[rocprofv3] Fatal error: rocprof-trace-decoder library path not found in ['', '/opt/rocm/lib']",
     "decoder-missing"),
    ("Callback failed with status 4: ROCPROFILER_THREAD_TRACE_DECODER_STATUS_ERROR_INVALID_SHADER_DATA",
     "invalid-shader-data"),
    ("W20250101 Thread trace buffer full!", "buffer-full"),
    ("info: Data Lost", "data-lost"),
    ("YAML package is not installed. Run 'python -m pip install pyyaml' or use JSON", "yaml-missing"),
    ("RuntimeError: conflicting value for output_directory : a vs b", "conflicting-value"),
    ("Option 'output_file' has conflicting values", "conflicting-value"),
    ("Could not construct profile cfg failed with error code 38", "pmc-multipass"),
])
def test_logscan_signatures(line, code):
    findings = logscan.scan_log(f"some noise\n{line}\nmore noise\n")
    assert [f.code for f in findings] == [code]
    assert findings[0].line_number == 2 and findings[0].fix


def test_logscan_clean_log_has_no_findings():
    assert logscan.scan_log("kernel ran\nall good\n") == []


# ---- decoder lookup -------------------------------------------------------------------------

def test_decoder_search_order(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b" / "deep"
    second.mkdir(parents=True)
    first.mkdir()
    (second / "librocprof-trace-decoder.so.0.1").write_text("")
    env = {"ROCPROF_ATT_LIBRARY_PATH": f"{first}:{tmp_path / 'b'}", "LD_LIBRARY_PATH": "/nonexistent"}
    found = decoder.find_decoder([], env)
    assert found.source == "ROCPROF_ATT_LIBRARY_PATH" and found.found == second / "librocprof-trace-decoder.so.0.1"
    explicit = decoder.find_decoder([str(first)], env)  # att_library_path wins, even when empty-handed
    assert explicit.found is None and explicit.searched == [str(first)]
    fallback = decoder.find_decoder([], {"LD_LIBRARY_PATH": str(tmp_path / "b"), "ROCM_PATH": "/nope"})
    assert fallback.found is not None and fallback.searched[-1] == "/nope/lib"


def test_decoder_install_instructions_name_rocm_version(tmp_path):
    version_file = tmp_path / "version"
    version_file.write_text("7.1.1-38\n")
    version = decoder.rocm_version(version_file)
    assert version == "7.1.1"
    text = decoder.missing_message(decoder.find_decoder([str(tmp_path)], {}), version)
    assert "ROCm 7.1.1" in text and "rocprof-trace-decoder" in text and str(tmp_path) in text
    assert "ships the decoder" in decoder.install_instructions("7.13.0")
    assert decoder.rocm_version(tmp_path / "missing") is None


# ---- dispatch dirs --------------------------------------------------------------------------

def test_find_dispatch_dirs_keeps_labels_drops_shells_and_finds_csvs(tmp_path):
    root = tmp_path / "cap"
    spec = synth.demo_vec_add()
    synth.write_att_run(root / "big", [spec], output_file="big", calls=2, traced_iteration=2)
    kept = next((root / "big").glob("ui_output_agent_*"))
    renamed = kept.with_name(kept.name + "_after_fix")
    kept.rename(renamed)
    synth.write_dispatch_dir(root / "big", spec, "empty", agent_handle=7, dispatch_id=9)
    before = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    found = dispatchdir.find_dispatch_dirs(root)
    assert [d.path.name for d in found.kept] == [renamed.name]
    item = found.kept[0]
    assert item.label == "_after_fix" and item.dispatch is not None  # as in the hotspot document
    assert item.kernel_trace_csv == root / "big" / "big_kernel_trace.csv"
    assert item.agent_info_csv == root / "big" / "big_agent_info.csv"
    assert len(found.notes) == 1 and "ui_output_agent_7_dispatch_9" in found.notes[0]
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == before  # read-only


def test_path_may_be_a_dispatch_dir(tmp_path):
    [one] = synth.write_att_run(tmp_path, [synth.demo_vec_add()], calls=1)
    found = dispatchdir.find_dispatch_dirs(one)
    assert [d.path for d in found.kept] == [one.resolve()]


def test_pcsampling_dir_is_not_an_empty_shell(tmp_path):
    path = synth.write_dispatch_dir(tmp_path, synth.demo_vec_add(), "pcsampling")
    assert dispatchdir.emptiness(path) is None


def test_no_dispatch_dirs_error_names_search_root(tmp_path):
    (tmp_path / "x.txt").write_text("nothing")
    found = dispatchdir.find_dispatch_dirs(tmp_path)
    err = dispatchdir.no_dispatch_dirs_error(tmp_path, found.notes)
    assert str(tmp_path) in str(err) and "recursively" in str(err)


def test_manifest_roundtrip(tmp_path):
    synth.write_att_run(tmp_path / "c", [synth.demo_gemm()], calls=1)
    rows = manifest.manifest_rows(dispatchdir.find_dispatch_dirs(tmp_path / "c").kept)
    path = tmp_path / "m.tsv"
    path.write_text(manifest.manifest_tsv(rows))
    assert manifest.read_manifest(path) == rows
    assert rows[0]["id"] == "d000" and rows[0]["kernel"] == synth.demo_gemm().display_name


# ---- runs -----------------------------------------------------------------------------------

def test_runs_use4_default_and_names(tmp_path):
    specs, note = runs.build_runs({}, tmp_path / "ex", tmp_path)
    assert list(specs) == ["example"] and specs["example"].mode == "dir" and "use 4" in note
    assert runs.derived_name("python bench_pa.py --x 1", None) == "bench_pa"
    assert runs.derived_name(None, "/a/b/vec_add/") == "vec_add"


def test_runs_batch_and_conflicts(tmp_path):
    config = {"top_kernels": 2, "env": {"A": "1"},
              "runs": {"one": {"cmd": "x", "env": {"B": 2}}, "two": {"dir": "d", "kernel": "k"}}}
    specs, _ = runs.build_runs(config, tmp_path, tmp_path)
    assert specs["one"].mode == "cmd" and specs["one"].env == {"A": "1", "B": "2"}
    assert specs["one"].top_kernels == 2 and specs["two"].kernel == "k"
    assert specs["two"].dir == str((tmp_path / "d").resolve())
    with pytest.raises(InputError, match="both"):
        runs.build_runs({"cmd": "x", "dir": "y"}, tmp_path, tmp_path)
    with pytest.raises(InputError):
        runs.build_runs({"runs": {"a": {"cmd": "x"}}, "cmd": "y"}, tmp_path, tmp_path)


# ---- capture (against the test double) ------------------------------------------------------

@pytest.fixture()
def double_env(tmp_path, monkeypatch):
    lib = tmp_path / "decoder"
    lib.mkdir()
    (lib / "librocprof-trace-decoder.so").write_text("")
    env = commands.child_env(os.environ, {"ROCPROF_ATT_LIBRARY_PATH": str(lib)})
    env["PATH"] = f"{DOUBLE_DIR}{os.pathsep}{env.get('PATH', '')}"
    for key in ("ROCPROF_DOUBLE_FAIL", "ROCPROF_DOUBLE_TRACE_CU", "ROCPROF_DOUBLE_KERNELS"):
        env.pop(key, None)
    return env


def _job(**overrides):
    values = {**jobfile.AttSettings().__dict__, **overrides}
    job = jobfile.att_job(jobfile.exact_name_regex(synth.demo_gemm().display_name), jobfile.AttSettings(**values))
    return job


def _capture(tmp_path, env, **kwargs):
    return capture.capture_att(rocprofv3=str(DOUBLE), job=kwargs.pop("job", _job()), job_format="yaml",
                               app=commands.AppCommand(kwargs.pop("cmd", "true")), env=env,
                               final_dir=tmp_path / "captures" / "k000", log_path=tmp_path / "att.log",
                               timeout=kwargs.pop("timeout", 60), retries=kwargs.pop("retries", 2))


def test_capture_success_traces_iteration_set(tmp_path, double_env):
    record = _capture(tmp_path, double_env)
    dirs = sorted((tmp_path / "captures" / "k000").glob("ui_output_agent_*"))
    assert len(dirs) == 3  # "[1, [3-4]]" is the set {1, 3, 4}
    assert len(record.attempts) == 1 and not record.truncated
    assert not list((tmp_path / "captures").glob(".*tmp"))  # temp dirs cleaned up


def test_empty_trace_retries_next_cu(tmp_path, double_env):
    double_env["ROCPROF_DOUBLE_TRACE_CU"] = "3"
    record = _capture(tmp_path, double_env, retries=2)
    assert [a.att_target_cu for a in record.attempts] == [1, 2, 3]
    with pytest.raises(capture.CaptureFailed, match="empty trace after 2 attempt"):
        _capture(tmp_path / "again", double_env, retries=1)


def test_buffer_full_retries_once_with_bigger_buffer(tmp_path, double_env):
    double_env["ROCPROF_DOUBLE_FAIL"] = "buffer-full"
    record = _capture(tmp_path, double_env)
    assert [a.att_buffer_size for a in record.attempts] == ["0x6000000", "0xC000000"]
    assert not record.truncated
    assert _capture(tmp_path / "big", double_env, job=_job(att_buffer_size="0xC000000")).attempts[0].findings == []
    double_env["ROCPROF_DOUBLE_FAIL"] = "buffer-full-persistent"
    persistent = _capture(tmp_path / "p", double_env)
    assert len(persistent.attempts) == 2 and persistent.truncated


@pytest.mark.parametrize("mode", ["decoder-missing", "invalid-shader-data", "yaml-missing"])
def test_fatal_signatures_fail_fast_with_fix(tmp_path, double_env, mode):
    double_env["ROCPROF_DOUBLE_FAIL"] = mode
    with pytest.raises(capture.CaptureFailed) as err:
        _capture(tmp_path, double_env)
    assert "fix:" in str(err.value) and str(tmp_path / "att.log") in str(err.value)


def test_failed_capture_keeps_earlier_good_one(tmp_path, double_env):
    _capture(tmp_path, double_env)
    final = tmp_path / "captures" / "k000"
    before = sorted(p.relative_to(final) for p in final.rglob("*"))
    double_env["ROCPROF_DOUBLE_FAIL"] = "crash"
    with pytest.raises(capture.CaptureFailed) as err:
        _capture(tmp_path, double_env)
    assert err.value.exit_code == 139
    assert sorted(p.relative_to(final) for p in final.rglob("*")) == before


def test_command_exit_code_propagates_with_log_path(tmp_path, double_env):
    with pytest.raises(capture.CaptureFailed) as err:
        _capture(tmp_path, double_env, cmd="echo failing >&2; exit 7")
    assert err.value.exit_code == 7 and "exit code 7" in str(err.value)
    assert "failing" in (tmp_path / "att.log").read_text()


def test_cmd_reaches_shell_exactly_once(tmp_path, double_env):
    marker = tmp_path / "argv.txt"
    cmd = f"printf '%s|' 'a b' \"$((1+2))\" '$HOME' > {marker}"
    _capture(tmp_path, double_env, cmd=cmd)
    assert marker.read_text() == "a b|3|$HOME|"  # one expansion by bash, none by anyone else


# ---- stage scripts as plain CLIs ------------------------------------------------------------

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _cli(*args: str, cwd: Path | None = None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, check=False)


def test_find_dispatch_dirs_cli_bad_input_is_one_line(tmp_path):
    result = _cli(str(SCRIPTS / "find_dispatch_dirs.py"), str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_find_dispatch_dirs_cli_refuses_writing_into_path(tmp_path):
    synth.write_att_run(tmp_path / "cap", [synth.demo_vec_add()], calls=1)
    result = _cli(str(SCRIPTS / "find_dispatch_dirs.py"), str(tmp_path / "cap"), "-o", str(tmp_path / "cap" / "m.tsv"))
    assert result.returncode == 2 and not (tmp_path / "cap" / "m.tsv").exists()


def test_discover_and_write_input_yaml_clis(tmp_path):
    stats = _stats_csv(tmp_path)
    result = _cli(str(SCRIPTS / "discover_kernels.py"), "--stats", str(stats), "--out-dir", str(tmp_path / "d"),
                  "--kernel", "vec_add")
    assert result.returncode == 0, result.stderr
    rows = discover.read_tsv(tmp_path / "d" / "kernels.tsv")
    [chosen] = [r for r in rows if r.selected]
    job = _cli(str(SCRIPTS / "write_input_yaml.py"), chosen.name, "--format", "json", "--att-target-cu", "3")
    assert job.returncode == 0, job.stderr
    [one] = json.loads(job.stdout)["jobs"]
    assert re.search(one["kernel_include_regex"], chosen.name) and one["att_target_cu"] == 3
