"""The user's files: input readers, inspect logs, items in, messages kept, output writers and the output file, path checks."""
