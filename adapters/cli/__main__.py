"""`python -m adapters.cli`: the `judgecore` command."""

from adapters.cli import command

command()
