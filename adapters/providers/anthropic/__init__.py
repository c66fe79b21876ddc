"""The Anthropic Messages and Message Batches APIs: the batch and sync ports, result-line translation, token counting."""
