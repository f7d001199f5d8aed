"""Labels that tell dispatches apart when they share a kernel name and dispatch id (from their paths)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any


def _identity(doc: Mapping[str, Any]) -> tuple[str, object]:
    dispatch = doc.get("dispatch") if isinstance(doc.get("dispatch"), Mapping) else {}
    return str(doc.get("kernel") or ""), dispatch.get("id")


def dispatch_labels(docs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One label per document: the dir-name label (``…_dispatch_7_after_fix`` → ``_after_fix``) when
    set, else, for dispatches that share kernel and id with another, the shortest trailing part of
    their parent path that differs (``iter1`` vs ``iter2``); "" when a dispatch is unambiguous."""
    labels = []
    groups: dict[tuple[str, object], list[int]] = {}
    for index, doc in enumerate(docs):
        groups.setdefault(_identity(doc), []).append(index)
    for index, doc in enumerate(docs):
        dispatch = doc.get("dispatch") if isinstance(doc.get("dispatch"), Mapping) else {}
        own = str(dispatch.get("label") or "")
        group = groups[_identity(doc)]
        if len(group) == 1:
            labels.append(own)
            continue
        labels.append(_distinguishing(docs, index, group) or own)
    return labels


def _distinguishing(docs: Sequence[Mapping[str, Any]], index: int, group: list[int]) -> str:
    parents = {i: PurePath(str(docs[i].get("dispatch_dir") or "")).parent.parts for i in group}
    mine = parents[index]
    for depth in range(1, len(mine) + 1):
        suffix = mine[-depth:]
        if all(parents[i][-depth:] != suffix for i in group if i != index):
            return "/".join(suffix)
    return str(docs[index].get("dispatch_dir") or "")
