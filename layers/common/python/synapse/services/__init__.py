"""The behaviour of the routes, by domain: `memory`, `chat`, `account`."""
