#!/usr/bin/env python3
"""List a run's dispatch dirs: search a folder recursively (dir= mode; nothing is written there) or
merge the per-kernel decode manifests (cmd= mode) → dispatches.tsv + a Markdown note."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from kerneltrace import atomic
from kerneltrace.errors import InputError, run_cli
from kerneltrace.pipeline import manifest
from kerneltrace.pipeline.dispatches import from_folder, from_manifests, notes_markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", type=Path, nargs="?",
                        help="folder searched recursively (may itself be a dispatch dir)")
    parser.add_argument("--from-manifests", type=Path, nargs="+", metavar="TSV",
                        help="merge these per-kernel decode manifests instead of searching (cmd runs)")
    parser.add_argument("--kernel", help="regex: keep dispatch dirs whose kernel name matches")
    parser.add_argument("-o", "--output", type=Path, help="manifest TSV (default stdout); never under PATH")
    parser.add_argument("--notes", type=Path, help="also write the Markdown list (kept and skipped entries)")
    args = parser.parse_args(argv)
    if (args.path is None) == (args.from_manifests is None):
        raise InputError("give a folder to search or --from-manifests, not both or neither",
                         "command line", "find_dispatch_dirs.py PATH  or  --from-manifests M.tsv ...")
    if args.path is not None:
        rows, notes = from_folder(args.path, args.kernel)
        searched = f"searched {args.path}"
        atomic.refuse_input_overwrite((args.output, args.notes), (args.path,))
    else:
        rows, notes, searched = from_manifests(args.from_manifests), [], "captured by this run"
    text = manifest.manifest_tsv(rows)
    if args.output:
        atomic.write_text(args.output, text)
    else:
        sys.stdout.write(text)
    if args.notes:
        atomic.write_text(args.notes, notes_markdown(rows, notes, searched))
    for note in notes:
        print(note, file=sys.stderr)
    return 0


def snakemake_argv(smk) -> list[str]:
    """The command line of the dispatches checkpoint (dir runs search, cmd runs merge manifests)."""
    if smk.params.mode == "dir":
        argv = [smk.params.search_dir] + ([f"--kernel={smk.params.kernel}"] if smk.params.kernel else [])
    else:
        argv = ["--from-manifests", *smk.input.decoded]
    return [*argv, "-o", smk.output.manifest, "--notes", smk.output.notes]


if __name__ == "__main__":
    sys.exit(run_cli(main))
