"""A job's summary: statistics of its scores, reliability, group differences, the summary value and its text, number formats, the dry-run plan's text."""
