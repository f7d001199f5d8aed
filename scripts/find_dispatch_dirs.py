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
from kerneltrace.pipeline import manifest  # noqa: E402


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
    return manifest.manifest_rows(kept), found.notes


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


def main_from_snakemake(snakemake) -> None:  # noqa: ANN001
    from kerneltrace.pipeline.smk import run_job

    def job(smk) -> None:  # noqa: ANN001
        if smk.params.mode == "dir":
            rows, notes = from_folder(Path(smk.params.search_dir), smk.params.kernel)
            searched = f"searched {smk.params.search_dir}"
        else:
            rows, notes = from_manifests([Path(p) for p in smk.input.decoded]), []
            searched = "captured by this run"
        for note in notes:
            print(note, file=sys.stderr)
        atomic.write_text(smk.output.manifest, manifest.manifest_tsv(rows))
        atomic.write_text(smk.output.notes, notes_markdown(rows, notes, searched))

    run_job(snakemake, job)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", type=Path, help="folder searched recursively (may itself be a dispatch dir)")
    parser.add_argument("--kernel", help="regex: keep dispatch dirs whose kernel name matches")
    parser.add_argument("-o", "--output", type=Path, help="manifest TSV (default stdout); never under PATH")
    args = parser.parse_args(argv)
    rows, notes = from_folder(args.path, args.kernel)
    text = manifest.manifest_tsv(rows)
    if args.output:
        atomic.refuse_input_overwrite((args.output,), (args.path,))
        atomic.write_text(args.output, text)
    else:
        sys.stdout.write(text)
    for note in notes:
        print(note, file=sys.stderr)
    return 0


if "snakemake" in globals():
    main_from_snakemake(snakemake)  # noqa: F821
elif __name__ == "__main__":
    sys.exit(run_cli(main))
