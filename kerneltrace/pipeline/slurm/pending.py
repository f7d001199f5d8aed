"""Jobs pending for a reason that does not clear by itself: which reasons, and when to give up on them.

`squeue -h -u USER -t PENDING,RUNNING -o SQUEUE_FORMAT` gives id, state, reason and partition.
Reasons (squeue(1), "JOB REASON CODES"; SLURM 22.05 shows ReqNodeNotAvail as its long text) fall in
three kinds: a request the partition or the account can never meet (`PartitionConfig`,
`PartitionTimeLimit`, `BadConstraints`, a `...PerJob...` limit, an invalid account or QOS); a
cluster state only an admin changes (partition down, held by an admin, or every node of the
partition down or drained); a count limit of the user (`AssocMaxJobsLimit`, `QOSMaxJobsPerUserLimit`)
while none of the user's jobs runs, so nothing will free a slot. Anything else (Resources, Priority,
Dependency, Grp limits shared with others, ...) is ordinary waiting. `PendingWatch` remembers when
each job was first seen stuck: reported once per reason, cancelled after the timeout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SQUEUE_FORMAT = "%i|%T|%r|%P"

NEVER_MET = frozenset({
    "PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints",
    "InvalidAccount", "InvalidQOS", "AccountNotAllowed", "QOSNotAllowed", "PartitionInactive",
})
NEEDS_ADMIN = frozenset({"PartitionDown", "JobHeldAdmin", "NodeDown", "FrontEndDown"})
NODE_NOT_AVAILABLE = ("ReqNodeNotAvail", "Nodes_required_for_job_are_DOWN")
USER_COUNT_LIMITS = re.compile(r"^(Assoc|QOS)Max(Jobs|SubmitJob|.*PerUser|.*PerAccount)")


@dataclass(frozen=True)
class QueuedJob:
    job_id: str
    state: str
    reason: str
    partition: str


def parse_squeue(text: str) -> list[QueuedJob]:
    jobs = []
    for line in text.splitlines():
        cells = line.strip().split("|")
        if len(cells) >= 4 and cells[0]:
            jobs.append(QueuedJob(cells[0], cells[1].upper(), cells[2].strip(), cells[3].strip()))
    return jobs


def reason_code(reason: str) -> str:
    """`Nodes required for job are DOWN, ...` and `ReqNodeNotAvail, UnavailableNodes:n1` -> a comparable code."""
    return re.sub(r"\s+", "_", reason.strip()).split(",", 1)[0]


def stuck_because(job: QueuedJob, partition_usable: bool, user_has_running: bool) -> str | None:
    """Why this pending job cannot start by itself (a short phrase), or None for ordinary waiting."""
    if job.state != "PENDING":
        return None
    code = reason_code(job.reason)
    if code in NEVER_MET or "PerJob" in code or code.startswith(("QOSMin", "AssocMin")):
        return "the partition or account can never meet the request"
    if code in NEEDS_ADMIN:
        return "only an admin can change this"
    if code.startswith(NODE_NOT_AVAILABLE) and not partition_usable:
        return f"every node of partition '{job.partition}' is down or drained"
    if USER_COUNT_LIMITS.match(code) and not user_has_running:
        return "none of your jobs runs, so no slot will free up"
    return None


@dataclass
class PendingWatch:
    """First sighting and last reported reason of each stuck job; who is due for cancelling."""

    timeout_s: float
    first_seen: dict[str, float] = field(default_factory=dict)
    reported: dict[str, str] = field(default_factory=dict)

    def observe(self, now: float, stuck: dict[str, str]) -> tuple[list[str], list[str]]:
        """stuck: job id -> its reason now. Returns (ids to report now, ids due for cancelling).

        A job that starts or waits for an ordinary reason again is forgotten (its clock restarts
        if it gets stuck later).
        """
        for job_id in list(self.first_seen):
            if job_id not in stuck:
                del self.first_seen[job_id]
                self.reported.pop(job_id, None)
        report, due = [], []
        for job_id, reason in stuck.items():
            self.first_seen.setdefault(job_id, now)
            if self.reported.get(job_id) != reason:
                self.reported[job_id] = reason
                report.append(job_id)
            if now - self.first_seen[job_id] >= self.timeout_s:
                due.append(job_id)
        return report, due

    def remaining(self, now: float) -> float | None:
        """Seconds until the next stuck job is due (None when none is stuck)."""
        if not self.first_seen:
            return None
        return max(0.0, min(self.first_seen.values()) + self.timeout_s - now)

    def forget(self, job_id: str) -> None:
        self.first_seen.pop(job_id, None)
        self.reported.pop(job_id, None)
