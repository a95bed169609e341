"""Review: what people decide about agents' changes (proposals) and consolidation of a mind."""
