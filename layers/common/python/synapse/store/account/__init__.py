"""The account's items of the table: API and provider keys, minds, webhooks, a user as a whole."""
