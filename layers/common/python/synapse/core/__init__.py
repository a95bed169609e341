"""Foundation: errors, settings, per-container state, observability, the caller, the models."""
