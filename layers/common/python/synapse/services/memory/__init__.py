"""Memories: the memory model, recall, context, the identity line."""
