"""The providers: each package holds every byte of one provider's wire and SDK, behind the ports the
run's interpreters call.

May import: `adapters.checkpoint`, `adapters.usage`, `judgecore`. Packages: `anthropic`, `openai`; module
`registry` (each provider by name: its client from the environment, its ports, its request template).
"""
