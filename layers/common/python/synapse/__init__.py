"""Synapse: long-term memory for LLM agents (the shared package of every function)."""
