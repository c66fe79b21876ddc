"""The providers judgecore speaks to besides Anthropic, one subpackage each (SDK imports stay inside)."""
