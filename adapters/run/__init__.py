"""The interpreters of the machines: the job, its operations, the batch and sync paths, the dry run, settings, clock, events, progress."""
