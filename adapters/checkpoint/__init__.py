"""A state dir: the checkpoint store, the job key, the run lock, the finished-job record."""
