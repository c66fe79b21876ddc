"""The Anthropic Messages and Message Batches APIs through the anthropic SDK.

May import: `adapters.checkpoint`, `adapters.usage`, `judgecore`, the SDK.

Modules: `batch_api` (the batch port: create, retrieve, list, cancel, results), `sync_api` (the sync
port: one request, one plain answer), `sdk_results` (what the SDK hands back, as the core's values),
`count_tokens` (`--dry-run --count-tokens`), `connect` (the client and the ports built when a run
connects: the one module that loads `sync_api` and `batch_api`, and so the SDK).
"""
