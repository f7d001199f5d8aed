"""PMC readers: counter_collection.csv by column name, pass_N layouts, rocpd (views, event_id join), pmc_perf."""

from __future__ import annotations

import sqlite3

import pytest

from kerneltrace.errors import InputError
from kerneltrace.readers.counter_csv import read_counter_csv
from kerneltrace.readers.pmc_inputs import load_pmc_inputs
from kerneltrace.readers.pmc_perf import read_workload
from kerneltrace.readers.rocpd import kernels_summary, read_rocpd

HEADER = ('"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size",'
          '"Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count",'
          '"Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"')


def counter_csv(path, rows, header=HEADER):
    lines = [header]
    for dispatch, kernel, counter, value, start, end in rows:
        lines.append(f'{dispatch},{dispatch},"Agent 2",1,9,9,1024,3,"{kernel}",256,0,0,8,0,16,'
                     f'"{counter}",{value},{start},{end}')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_csv_by_column_name_and_sum_normalisation(tmp_path):
    path = counter_csv(tmp_path / "pmc_counter_collection.csv", [
        (7, "k", "TCC_HIT_sum", "2.000000", 100, 400),
        (7, "k", "TCC_MISS", "0.00000000e+00", 100, 400),
        (5, "k", "TCC_HIT_sum", "1.5", 10, 20),
    ])
    run = read_counter_csv(path)
    assert [d.dispatch_id for d in run.dispatches] == [5, 7]  # dispatch order within the run
    assert run.dispatches[1].counters == {"TCC_HIT": 2.0, "TCC_MISS": 0.0}
    assert run.dispatches[1].duration_ns == 300
    # reordered columns: still read by name
    cols = HEADER.split(",")
    reordered = ",".join(reversed(cols))
    values = '400,100,3.0,"TCC_HIT",16,0,8,0,0,256,"k",3,1024,9,9,1,"Agent 2",1,1'
    other = tmp_path / "r" / "x_counter_collection.csv"
    other.parent.mkdir()
    other.write_text(reordered + "\n" + values + "\n")
    assert read_counter_csv(other).dispatches[0].counters == {"TCC_HIT": 3.0}


def test_csv_agent_info_gives_arch_and_product(tmp_path):
    path = counter_csv(tmp_path / "pmc_counter_collection.csv", [(1, "k", "TCC_HIT_sum", "1", 0, 1)])
    (tmp_path / "pmc_agent_info.csv").write_text(
        '"Node_Id","Logical_Node_Id","Agent_Type","Name","Product_Name"\n'
        '0,0,"CPU","AMD EPYC","AMD EPYC"\n2,2,"GPU","gfx942","AMD Instinct MI300X"\n')
    run = read_counter_csv(path)
    assert (run.arch, run.product) == ("gfx942", "AMD Instinct MI300X")


def test_non_numeric_value_names_file_and_line(tmp_path):
    path = counter_csv(tmp_path / "a_counter_collection.csv", [
        (1, "k", "TCC_HIT_sum", "1", 0, 1), (1, "k", "TCC_MISS_sum", "n/a", 0, 1)])
    with pytest.raises(InputError) as err:
        read_counter_csv(path)
    assert f"{path}:3" in str(err.value)


def test_empty_and_headerless_files(tmp_path):
    empty = tmp_path / "e_counter_collection.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        read_counter_csv(empty)
    header_only = counter_csv(tmp_path / "h_counter_collection.csv", [])
    with pytest.raises(InputError, match="no rows"):
        read_counter_csv(header_only)
    wrong = tmp_path / "w.csv"
    wrong.write_text('"a","b"\n1,2\n')
    with pytest.raises(InputError, match="missing columns"):
        read_counter_csv(wrong)


def test_pass_n_layout_gives_one_run_per_pass(tmp_path):
    for n in (1, 2, 10):
        counter_csv(tmp_path / "out" / f"pass_{n}" / "pmc_counter_collection.csv",
                    [(n, "k", f"TCC_C{n}_sum", "1", 0, 1)])
    runs = load_pmc_inputs([tmp_path / "out"])
    assert [r.dispatches[0].dispatch_id for r in runs] == [1, 2, 10]


UUID = "_0000ddb5_8903_7903"


def make_rocpd(path, runs):
    """A rocpd database per the documented schema: suffixed tables + un-suffixed views."""
    conn = sqlite3.connect(path)
    tables = {
        "rocpd_info_agent": "id INTEGER, guid TEXT, nid INTEGER, pid INTEGER, type TEXT, absolute_index INTEGER, "
                            "logical_index INTEGER, type_index INTEGER, uuid INTEGER, name TEXT, model_name TEXT, "
                            "vendor_name TEXT, product_name TEXT, user_name TEXT, extdata TEXT",
        "rocpd_info_kernel_symbol": "id INTEGER, guid TEXT, nid INTEGER, pid INTEGER, code_object_id INTEGER, "
                                    "kernel_name TEXT, display_name TEXT, kernel_object INTEGER, "
                                    "kernarg_segment_size INTEGER, kernarg_segment_alignment INTEGER, "
                                    "group_segment_size INTEGER, private_segment_size INTEGER, sgpr_count INTEGER, "
                                    "arch_vgpr_count INTEGER, accum_vgpr_count INTEGER, extdata TEXT",
        "rocpd_kernel_dispatch": "id INTEGER, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER, agent_id INTEGER, "
                                 "kernel_id INTEGER, dispatch_id INTEGER, queue_id INTEGER, stream_id INTEGER, "
                                 "start INTEGER, end INTEGER, private_segment_size INTEGER, group_segment_size INTEGER, "
                                 "workgroup_size_x INTEGER, workgroup_size_y INTEGER, workgroup_size_z INTEGER, "
                                 "grid_size_x INTEGER, grid_size_y INTEGER, grid_size_z INTEGER, region_name_id INTEGER, "
                                 "event_id INTEGER, extdata TEXT",
        "rocpd_info_pmc": "id INTEGER, guid TEXT, nid INTEGER, pid INTEGER, agent_id INTEGER, target_arch TEXT, "
                          "event_code INTEGER, instance_id INTEGER, name TEXT, symbol TEXT, description TEXT, "
                          "long_description TEXT, component TEXT, units TEXT, value_type TEXT, block TEXT, "
                          "expression TEXT, is_constant INTEGER, is_derived INTEGER, extdata TEXT",
        "rocpd_pmc_event": "id INTEGER, guid TEXT, event_id INTEGER, pmc_id INTEGER, value REAL, extdata TEXT",
    }
    for name, cols in tables.items():
        conn.execute(f"CREATE TABLE {name}{UUID} ({cols})")
        conn.execute(f"CREATE VIEW {name} AS SELECT * FROM {name}{UUID}")
    row_id = 1
    for guid, kernel, dispatches in runs:
        conn.execute(f"INSERT INTO rocpd_info_agent{UUID} (id, guid, type, name, product_name) VALUES (5, ?, 'GPU', 'gfx942', 'AMD Instinct MI300X')", (guid,))
        conn.execute(f"INSERT INTO rocpd_info_kernel_symbol{UUID} (id, guid, kernel_name, display_name) VALUES (3, ?, ?, ?)",
                     (guid, "_Z1kv", kernel))
        for pmc_id, counter in enumerate(("TCC_HIT_sum", "TCC_MISS_sum"), start=1):
            conn.execute(f"INSERT INTO rocpd_info_pmc{UUID} (id, guid, name) VALUES (?, ?, ?)", (pmc_id, guid, counter))
        for dispatch_id, start, end, hit_instances, miss in dispatches:
            event_id = 100 + row_id  # event ids differ from dispatch ids: the join must use event_id
            conn.execute(f"INSERT INTO rocpd_kernel_dispatch{UUID} (id, guid, agent_id, kernel_id, dispatch_id, start, end, event_id) "
                         "VALUES (?, ?, 5, 3, ?, ?, ?, ?)", (row_id, guid, dispatch_id, start, end, event_id))
            for value in hit_instances:  # per-instance rows are summed
                conn.execute(f"INSERT INTO rocpd_pmc_event{UUID} (guid, event_id, pmc_id, value) VALUES (?, ?, 1, ?)",
                             (guid, event_id, value))
            conn.execute(f"INSERT INTO rocpd_pmc_event{UUID} (guid, event_id, pmc_id, value) VALUES (?, ?, 2, ?)",
                         (guid, event_id, miss))
            row_id += 1
    conn.commit()
    conn.close()
    return path


def test_rocpd_reader_joins_by_event_id_and_keeps_runs_apart(tmp_path):
    db = make_rocpd(tmp_path / "x_results.db", [
        ("guid-a", "attn", [(1, 0, 1000, [3, 4], 93), (2, 2000, 2500, [1, 1], 98)]),
        ("guid-b", "attn", [(1, 0, 800, [50], 50)]),
    ])
    before = db.read_bytes()
    runs = read_rocpd(db)
    assert db.read_bytes() == before  # opened read-only
    assert [len(r.dispatches) for r in runs] == [2, 1]
    first = runs[0].dispatches[0]
    assert first.counters == {"TCC_HIT": 7.0, "TCC_MISS": 93.0}
    assert first.duration_ns == 1000 and first.kernel == "attn"
    assert runs[0].arch == "gfx942" and runs[0].product == "AMD Instinct MI300X"
    summary = kernels_summary(db)
    assert {(s.name, s.guid, s.calls) for s in summary} == {("attn", "guid-a", 2), ("attn", "guid-b", 1)}
    assert next(s for s in summary if s.guid == "guid-a").total_ns == 1500


def test_rocpd_errors(tmp_path):
    not_db = tmp_path / "bad.db"
    not_db.write_text("hello, not sqlite")
    with pytest.raises(InputError):
        read_rocpd(not_db)
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(InputError, match="not a rocpd database"):
        read_rocpd(empty)


WORKLOAD_HEADER = ("Dispatch_ID,Kernel_Name,GPU_ID,Grid_Size,wave_size,obj,TCC_HIT_sum,TCC_MISS_sum,"
                   "wave_size_1,obj_1,TCC_EA_RDREQ_sum,TCC_EA_RDREQ_32B_sum,Start_Timestamp,End_Timestamp")


def test_pmc_perf_wide_format(tmp_path):
    (tmp_path / "pmc_perf.csv").write_text(
        WORKLOAD_HEADER + "\n"
        '0,"vcopy(double*) [clone .kd]",2,1024,64,0x7f,10.0,90.0,64,0x7e,200.0,0.0,1000,3000\n'
        '1,"vcopy(double*) [clone .kd]",2,1024,64,0x7f,12.0,88.0,64,0x7e,,0.0,,\n')
    (tmp_path / "timestamps.csv").write_text("Dispatch_ID,Kernel_Name,Start_Timestamp,End_Timestamp\n1,k,5000,5500\n")
    (tmp_path / "sysinfo.csv").write_text("gpu_model,gpu_arch,hbm_bw\nMI200,gfx90a,1638.4\n")
    run = read_workload(tmp_path)
    assert run.arch == "gfx90a" and run.peak_gbps == pytest.approx(1638.4)
    assert run.dispatches[0].counters == {"TCC_HIT": 10.0, "TCC_MISS": 90.0, "TCC_EA_RDREQ": 200.0, "TCC_EA_RDREQ_32B": 0.0}
    assert "TCC_EA_RDREQ" not in run.dispatches[1].counters  # empty cell: absent, not 0
    assert run.dispatches[0].duration_ns == 2000
    assert run.dispatches[1].duration_ns == 500  # from timestamps.csv
