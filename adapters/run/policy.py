"""The job machine's policy under a run's settings: the run's, the dry run's from a checkpoint
(`adapters.run.dryrun_plan`) and the streamed dry run's (`adapters.run.streamed`) alike. Its own module
so that a dry run of a new job, planned as its file is read, imports neither the job's planning nor
its lanes' clients."""

from __future__ import annotations

from adapters.run.settings import JobSettings
from judgecore.decide.routing import Lane
from judgecore.run.job._machine import JobPolicy


def job_policy(
    settings: JobSettings, *, all_sync: str | None = None, lanes: tuple[Lane, ...] = ()
) -> JobPolicy:
    """The job machine's policy under `settings` (`lanes`: a panel across providers',
    `adapters.run.dryrun_plan.machine_of`)."""
    return JobPolicy(
        force=settings.force,
        otpm=settings.otpm,
        route_policy=settings.route_policy,
        all_sync=all_sync,
        lanes=lanes,
    )
