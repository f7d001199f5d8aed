#!/usr/bin/env python3
"""List a run's dispatch dirs: search a folder recursively (dir= mode; nothing is written there) or
merge the per-kernel decode manifests (cmd= mode) → dispatches.tsv + a Markdown note."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import re  # noqa: E402

from kerneltrace import atomic  # noqa: E402
from kerneltrace.errors import InputError, run_cli  # noqa: E402
from kerneltrace.model import dispatchdir  # noqa: E402
from kerneltrace.pipeline import manifest, rerun  # noqa: E402
from kerneltrace.pipeline.smk import run_rule  # noqa: E402


def from_folder(search_dir: Path, kernel: str | None = None) -> tuple[list[dict[str, str]], list[str]]:
    found = dispatchdir.find_dispatch_dirs(search_dir)
    if not found.kept:
        raise dispatchdir.no_dispatch_dirs_error(search_dir, found.notes)
    kept = found.kept
    if kernel:
        pattern = re.compile(kernel)
        kept = [item for item in found.kept if pattern.search(item.kernel)]
        if not kept:
            names = "; ".join(sorted({item.kernel or "?" for item in found.kept})[:10])
            raise InputError(f"no dispatch dir's kernel matches kernel={kernel!r}; kernels found: {names}",
                             str(search_dir), "set kernel to a regex matching one of these names, or drop it")
    rows = manifest.manifest_rows(kept)
    # ids from each dir's own path, so adding or removing a dir never renames (re-runs) another
    for row, stable in zip(rows, rerun.stable_ids([item.path for item in kept], search_dir), strict=True):
        row["id"] = stable
    return rows, found.notes


def from_manifests(manifests: list[Path]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in manifests:
        rows += manifest.read_manifest(path)
    if not rows:
        raise InputError("no decoded dispatch dir in any capture", ", ".join(map(str, manifests)) or "-",
                         "see the decode logs under logs/<run>/decode/")
    return rows


def notes_markdown(rows: list[dict[str, str]], notes: list[str], searched: str) -> str:
    from kerneltrace.render.markdown import md_code_cell, md_text, md_text_cell

    lines = [f"# Dispatch dirs ({md_text(searched)})", "", "| id | kernel | dispatch dir | label |",
             "|---|---|---|---|"]
    lines += [f"| {md_text_cell(r['id'])} | {md_code_cell(r['kernel'] or '?')} | {md_code_cell(r['dispatch_dir'])} "
              f"| {md_text_cell(r['label'])} |" for r in rows]
    if notes:
        lines += ["", "Dropped:", ""] + [f"- {md_text(note)}" for note in notes]
    return "\n".join(lines) + "\n"


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


if "snakemake" in globals():
    run_rule(snakemake, main, snakemake_argv)  # noqa: F821
elif __name__ == "__main__":
    sys.exit(run_cli(main))
