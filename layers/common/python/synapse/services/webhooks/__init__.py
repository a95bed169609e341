"""Webhooks: registrations, the URL guard, and delivery (signed, retried, logged)."""
