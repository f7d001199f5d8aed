"""The L2/HBM metrics of a kerneltrace.l2/1 document for one kernel, as the plan reads them."""

from __future__ import annotations


def _same_kernel(a: str | None, b: str | None) -> bool:
    """Counter CSVs may carry the full signature where ATT carries the short name, or vice versa."""
    return bool(a and b and (a == b or a in b or b in a))


def l2_metrics(l2: dict | None, kernel: str | None) -> dict:
    """Aggregate metrics (fractions) of a kerneltrace.l2/1 document when it is about `kernel`.

    Ratio-of-sums bandwidth values override the aggregate (docs/pmc-counters.md §3.6); the document's
    decision-tree verdicts are carried along under `verdicts`.
    """
    if not l2 or not (_same_kernel(l2.get("kernel"), kernel) or kernel is None):
        return {}
    metrics = dict(l2.get("aggregate") or {})
    metrics.update({k: v for k, v in (l2.get("ratio_of_sums") or {}).items() if v is not None})
    metrics = {key: value for key, value in metrics.items() if value is not None}
    if metrics and l2.get("verdicts"):
        metrics["verdicts"] = list(l2["verdicts"])
    return metrics
