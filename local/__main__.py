"""`python -m local`: serve the API on 127.0.0.1:$PORT with no AWS account and no Docker."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from local.runtime import Banner, LocalRuntime, StartError


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m local", description=__doc__)
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 3000))
    parser.add_argument("--data-dir", default=os.environ.get("DATA_DIR") or ".local")
    parser.add_argument("--template", default="template.yaml")
    parser.add_argument(
        "--sweep-interval",
        type=float,
        default=float(os.environ.get("LOCAL_TTL_SWEEP_SECONDS") or 60),
        help="seconds between TTL sweeps (moto never deletes expired items)",
    )
    parser.add_argument("--log-level", default=os.environ.get("LOCAL_LOG_LEVEL", "INFO"))
    return parser.parse_args(argv)


def _print_banner(b: Banner) -> None:
    lines = [
        "",
        f"Synapse local API: {b.url}   (data in {b.data_dir}; embedded AWS at {b.aws_endpoint})",
    ]
    if b.jwt_secret_generated:
        lines.append(f"JWT_SECRET: generated a dev secret, kept in {b.data_dir}/jwt_secret:")
        lines.append(f"  {os.environ.get('JWT_SECRET', '')}")
    elif os.environ.get("JWT_SECRET"):
        lines.append("JWT_SECRET: from the environment, or the dev secret kept in DATA_DIR/jwt_secret")
    lines.append(f"User JWT ({b.user}, valid 30 days):")
    lines.append(f"  {b.jwt}")
    if b.api_key:
        lines.append(f"Agent API key ({b.user}; memory:read, memory:write):")
        lines.append(f"  {b.api_key}")
    else:
        lines.append("Agent API key: none was made (see the log above)")
    # the token in the fragment: browsers never send it to the server, and the page removes it
    lines.append("Memory console (signs in with the JWT above):")
    lines.append(f"  {b.url}/console#token={b.jwt}")
    lines.append("Try:")
    lines.append(
        f"  curl -s -H \"Authorization: Bearer {b.jwt}\" -H 'content-type: application/json' "
        f'-d \'{{"category":"preference","key":"ui_theme","content":"Prefers dark theme"}}\' '
        f"{b.url}/memory"
    )
    lines.append(f"(also written to {b.data_dir}/local.json)")
    print("\n".join(lines), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("botocore", "urllib3", "werkzeug"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    os.environ["PORT"] = str(args.port)
    os.environ["DATA_DIR"] = args.data_dir
    runtime = LocalRuntime(
        Path(args.template), Path(args.data_dir), port=args.port, sweep_interval=args.sweep_interval
    )
    stop = threading.Event()

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()
        runtime.cancel.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        banner = runtime.start()
    except StartError as exc:
        runtime.stop()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception:
        runtime.stop()
        raise
    _print_banner(banner)
    stop.wait()
    logging.getLogger("local").info("shutting down")
    runtime.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
