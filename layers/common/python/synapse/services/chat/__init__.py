"""Conversations: ingest and session summaries."""
