"""The imperative shell."""
