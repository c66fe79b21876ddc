"""`python -m adapters`: the `judgecore` command, for an environment where the script is not on PATH."""

from adapters.launch import command

command()
