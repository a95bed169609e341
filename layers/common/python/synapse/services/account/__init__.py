"""Accounts: who calls (auth), minds, provider keys, a user as a whole (privacy)."""
