"""Logging, tracing and metrics: one Logger, Tracer and Metrics for the whole package.

Services log through `logger` here; only `http.entrypoint` wires them to a Lambda handler.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
# only botocore: patch_all would also import and patch requests, httplib, sqlite3 and more at init
tracer = Tracer(patch_modules=("botocore",))
metrics = Metrics(namespace="Synapse")
