"""Tests of the API simulator (adapters/simulator)."""
