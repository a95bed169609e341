"""Language models and their offline stand-ins: embedders, extraction, summaries, rules."""
