#!/usr/bin/env python3
"""Collect the decoded dispatch dirs of one ATT capture: scan the capture log for known failures,
drop empty shells, locate kernel-trace/agent-info CSVs beside them, write a manifest."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace import atomic
from kerneltrace.errors import InputError, run_cli
from kerneltrace.pipeline import manifest
from kerneltrace.pipeline.decode import decode
from kerneltrace.readers.regular import read_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("capture_dir", type=Path, nargs="?", help="rocprofv3 -d folder of one ATT capture")
    parser.add_argument("--record", type=Path,
                        help="the capture record (att_capture.py): capture dir and truncation from there")
    parser.add_argument("--log", type=Path, help="the capture's rocprofv3 log, scanned for failures")
    parser.add_argument("--kernel-id", default="k000")
    parser.add_argument("--att-library-path", action="append", default=[])
    parser.add_argument("--manifest", type=Path, help="write the TSV manifest here (default stdout)")
    parser.add_argument("--findings", type=Path, help="decode findings JSON (default MANIFEST.json)")
    args = parser.parse_args(argv)
    truncated = False
    if args.record is not None:
        record = read_json(args.record, "capture record", fix="re-run att_capture.py to write it again")
        if not isinstance(record, dict) or not isinstance(record.get("capture_dir"), str):
            raise InputError("capture record names no capture_dir", str(args.record),
                             "re-run att_capture.py to write it again")
        capture_dir, truncated = Path(record["capture_dir"]), bool(record.get("truncated"))
    elif args.capture_dir is not None:
        capture_dir = args.capture_dir
    else:
        raise InputError("no capture to decode", "command line", "pass CAPTURE_DIR or --record capture.json")
    findings = args.findings or (args.manifest.with_suffix(".json") if args.manifest else None)
    if args.manifest:
        atomic.refuse_input_overwrite((args.manifest, findings), (capture_dir, args.log))
    rows, report = decode(capture_dir=capture_dir, capture_log=args.log, kernel_id=args.kernel_id,
                          att_library_path=args.att_library_path, truncated=truncated)
    for note in report["dropped"]:
        print(note, file=sys.stderr)
    text = manifest.manifest_tsv(rows)
    if args.manifest:
        atomic.write_text(args.manifest, text)
    else:
        sys.stdout.write(text)
    if findings:
        atomic.write_json(findings, report)
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the decode rule."""
    argv = ["--record", smk.input.record, "--log", smk.params.capture_log,
            f"--kernel-id={smk.wildcards.kernel}", "--manifest", smk.output.manifest,
            "--findings", smk.output.findings]
    return argv + [f"--att-library-path={path}" for path in smk.params.att_library_path]


if __name__ == "__main__":
    sys.exit(run_cli(main))
