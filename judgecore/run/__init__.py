"""The machines: the job, batch and sync runs, the sub-batch lifecycle, and the vocabulary they share."""
