"""moto's server as the local run starts it (with its tap), in the test's own process, for unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import requests

from local.aws import start_moto
from local.journal import MotoTap


@contextmanager
def moto_server(tap: MotoTap | None = None) -> Iterator[str]:
    """The local run's moto server on a free loopback port (stock moto: no speed-ups); its endpoint.

    It shares moto's in-process backends with `mock_aws`: they are reset before and after.
    """
    server, endpoint = start_moto(tap, speedups=False)
    requests.post(f"{endpoint}/moto-api/reset", timeout=10)
    try:
        yield endpoint
    finally:
        requests.post(f"{endpoint}/moto-api/reset", timeout=10)
        server.stop()


def client(service: str, endpoint: str) -> Any:
    """A plain boto3 client of that endpoint (not a raw one: the tap sees its calls)."""
    return boto3.session.Session().client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
