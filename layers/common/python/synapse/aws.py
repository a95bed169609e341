"""AWS clients from botocore directly: one session per container, the standard retry mode everywhere.

boto3 adds nothing the service code uses (no resources, no S3 transfers), and importing it also imports
s3transfer: a cold-start cost every function would pay for nothing.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import botocore.session
from botocore.config import Config


@cache
def session() -> botocore.session.Session:
    # region and credentials come from the Lambda environment, as boto3's default session would take them
    return botocore.session.get_session()


def client(service: str, **config: Any) -> Any:
    """A client with standard retries (which absorb throttling) and any other Config options."""
    return session().create_client(
        service, config=Config(retries={"mode": "standard", "max_attempts": 5}, **config)
    )


def reset() -> None:
    """Forget the session (tests switch between moto contexts and environments)."""
    session.cache_clear()
