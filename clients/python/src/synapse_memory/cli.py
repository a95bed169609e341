"""`synapse`: move memories in and out from the command line.

    synapse export > mine.jsonl                      # POST /me/exports, waited on, the file to stdout
    synapse import --format mem0 mem0.json           # batched, resumable, with a progress bar
    synapse import --format synapse mine.jsonl
    synapse import-chat conversations.json           # each conversation through ingest, with its times

The server and the token come from `--url`/`SYNAPSE_URL` and `--token`/`SYNAPSE_TOKEN`; `--mind`
names a mind. An import writes `<file>.progress` after each batch: run the same command again after a
failure and it goes on from there (`--restart` starts over; importing again is harmless anyway: a
record stored as given is skipped).
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from synapse_memory._core import EXPORT_WAIT, BinaryOut, jwt_subject
from synapse_memory._sync import Synapse
from synapse_memory.errors import NotFound, SynapseError
from synapse_memory.models import ExportJob

IMPORT_BATCH = 100  # records a request (the server takes up to 500, within its 256 KiB body limit)
MAX_REQUEST_BYTES = 200_000  # a request's records stay this far under the body limit
CHAT_BATCH = 50  # messages an ingest request


def read_records(path: Path) -> list[Any]:
    """A file's records: a JSON array, an object with `results` (mem0's get_all) or `memories` (a
    `GET /me/export` answer: its memories, each with its history), or JSON Lines (lines end at "\\n"
    only: JSON leaves U+2028 and the like unescaped in a record's text, where `splitlines` would cut)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.split("\n") if line.strip()]
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        return list(data["results"])
    if isinstance(data, dict) and isinstance(data.get("memories"), list):
        history = data.get("history") or {}
        return [{"type": "memory", **m, "history": history.get(m.get("id"), [])} for m in data["memories"]]
    return [data]


def export_lines(export: dict[str, Any], user_id: str | None) -> Iterator[dict[str, Any]]:
    """An export as JSON Lines records (API.md's export file): the header, then minds, memories
    (with their history, newest first), summaries and sessions."""
    yield {
        "format": "synapse-export",
        "version": 1,
        "user_id": user_id,
        "created_at": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
    }
    for mind in export.get("minds") or []:
        yield {"type": "mind", **mind}
    history = export.get("history") or {}
    for memory in export.get("memories") or []:
        yield {"type": "memory", **memory, "history": history.get(memory.get("id"), [])}
    for summary in export.get("summaries") or []:
        yield {"type": "summary", **summary}
    for session in export.get("sessions") or []:
        yield {"type": "session", **session}


def is_header(record: Any) -> bool:
    """The first line of an export file (`{"format": "synapse-export", ...}`): not a record."""
    return isinstance(record, dict) and record.get("format") == "synapse-export" and "type" not in record


def is_memory(record: Any) -> bool:
    """A record `POST /memory/import` (`synapse`) writes: a memory line (or anything not a dict, for
    the server to answer). Minds, sessions, messages, summaries, keys, providers and webhooks are not."""
    return not isinstance(record, dict) or (
        record.get("type", "memory") == "memory" and not is_header(record)
    )


class Progress:
    """A progress bar on stderr (a line per step when stderr is not a terminal)."""

    def __init__(self, total: int, out: TextIO, label: str) -> None:
        self.total, self.out, self.label = max(total, 1), out, label

    def show(self, done: int, note: str = "") -> None:
        width = 30
        filled = int(width * min(done, self.total) / self.total)
        bar = "#" * filled + "." * (width - filled)
        line = f"{self.label} [{bar}] {done}/{self.total} {note}".rstrip()
        if self.out.isatty():
            self.out.write("\r" + line + ("\n" if done >= self.total else ""))
        else:
            self.out.write(line + "\n")
        self.out.flush()


def _progress_file(path: Path) -> Path:
    return path.with_name(path.name + ".progress")


def run_import(
    client: Synapse,
    path: Path,
    fmt: str,
    *,
    batch: int = IMPORT_BATCH,
    restart: bool = False,
    err: TextIO = sys.stderr,
) -> dict[str, Any]:
    """Import a file in batches, resuming after the last batch a previous run finished.

    Of a Synapse export only the memory lines are sent: the server skips every other record ("not a
    memory"), so they are counted as skipped here, as it would count them, without a request for
    them (an account's messages can outnumber its memories many times). `errors[].index` is the
    record's place in the file (JSON Lines: its line, blank lines aside)."""
    found = read_records(path)
    places = list(range(len(found)))
    not_memories = 0
    if fmt == "synapse":
        places = [n for n in places if is_memory(found[n])]
        not_memories = sum(1 for r in found if not is_memory(r) and not is_header(r))
    records = [found[n] for n in places]
    state = _progress_file(path)
    done = 0
    if state.exists() and not restart:
        saved = json.loads(state.read_text(encoding="utf-8"))
        if saved.get("total") == len(records) and saved.get("format") == fmt:
            done = int(saved.get("done", 0))
    totals: dict[str, Any] = {"imported": 0, "updated": 0, "skipped": not_memories, "errors": []}
    bar = Progress(len(records), err, "import")
    bar.show(done, "(resumed)" if done else "")
    while done < len(records):
        chunk = _chunk(records, done, batch)
        answer = client.import_records(fmt, chunk)
        for name in ("imported", "updated", "skipped"):
            totals[name] += int(answer.get(name, 0))
        totals["errors"] += [{**e, "index": places[e["index"] + done]} for e in answer.get("errors", [])]
        done += len(chunk)
        state.write_text(json.dumps({"format": fmt, "total": len(records), "done": done}), encoding="utf-8")
        bar.show(done)
    state.unlink(missing_ok=True)
    return totals


def _chunk(records: list[Any], start: int, most: int) -> list[Any]:
    """The records from `start` one request carries: at most `most`, and at most MAX_REQUEST_BYTES of
    JSON (one record at least: a record too large alone is the server's to refuse)."""
    chunk: list[Any] = []
    size = 0
    for record in records[start : start + most]:
        size += len(json.dumps(record, ensure_ascii=False).encode()) + 1
        if chunk and size > MAX_REQUEST_BYTES:
            break
        chunk.append(record)
    return chunk


def conversations(path: Path) -> list[dict[str, Any]]:
    """A chat export's conversations: a list (or `{"conversations": [...]}`) of `{"id" | "session_id",
    "messages": [{"role", "content", "created_at"?}]}`; a bare list of messages is one conversation."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = data.get("conversations", [data])
    if data and all(isinstance(d, dict) and "role" in d for d in data):
        data = [{"id": path.stem, "messages": data}]
    return list(data)


def _session_id(conversation: dict[str, Any], n: int) -> str:
    raw = str(conversation.get("session_id") or conversation.get("id") or f"import-{n}")
    clean = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in raw)[:128]
    return clean or f"import-{n}"


def run_import_chat(client: Synapse, path: Path, *, err: TextIO = sys.stderr) -> dict[str, int]:
    """Each conversation through `POST /memory/ingest`, in chunks, each message with its time; a
    chunk's Idempotency-Key is made of the session and the chunk, so a run repeated is one ingest."""
    convs = conversations(path)
    totals = {"conversations": 0, "messages": 0, "nuggets_created": 0, "nuggets_updated": 0}
    bar = Progress(sum(len(c.get("messages", [])) for c in convs), err, "import-chat")
    for n, conv in enumerate(convs):
        session = _session_id(conv, n)
        messages = [m for m in conv.get("messages", []) if str(m.get("content", "")).strip()]
        for start in range(0, len(messages), CHAT_BATCH):
            chunk = messages[start : start + CHAT_BATCH]
            answer = client.ingest(session, chunk, idempotency_key=f"import-chat:{session}:{start}")
            totals["nuggets_created"] += answer.nuggets_created
            totals["nuggets_updated"] += answer.nuggets_updated
            totals["messages"] += len(chunk)
            bar.show(totals["messages"])
        totals["conversations"] += 1
    return totals


class Waiting:
    """The export's state on stderr while the server writes it (one line a state when stderr is not a
    terminal, a line kept up to date when it is)."""

    def __init__(self, err: TextIO) -> None:
        self.err, self.start, self.last = err, time.monotonic(), ""

    def show(self, job: ExportJob) -> None:
        took = f"{time.monotonic() - self.start:.0f} s"
        line = f"export: {job.status} ({took})"
        if job.status == "ready":
            line = f"export: ready, {job.records} records, {job.bytes} bytes ({took}); downloading"
        if self.err.isatty():
            self.err.write("\r" + line + ("" if job.status == "pending" else "\n"))
        elif job.status != self.last:
            self.err.write(line + "\n")
        self.last = job.status
        self.err.flush()


def run_export(
    client: Synapse, out: BinaryOut, *, timeout: float = EXPORT_WAIT, user_id: str | None, err: TextIO
) -> None:
    """Everything, as the export file: `POST /me/exports`, its state until ready, then the file from
    its URL into `out` byte for byte. A server without that route (404: an older one) is asked
    `GET /me/export` instead, its answer written as the same JSON Lines (`export_lines`)."""
    try:
        started = client.create_export()
    except NotFound:
        err.write("export: the server has no POST /me/exports (an older one); using GET /me/export\n")
        answer = client.export().model_dump(mode="json")
        for line in export_lines(answer, user_id):
            out.write((json.dumps(line, ensure_ascii=False) + "\n").encode())
        return
    job = client.wait_export(started.export_id, timeout=timeout, progress=Waiting(err).show)
    written = client.download_export(job, out)
    err.write(f"export: {written} bytes written\n")


class _TextOut:
    """Bytes written to a text stream that has no binary buffer under it (UTF-8, decoded as they come)."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.decode = out, codecs.getincrementaldecoder("utf-8")().decode

    def write(self, data: bytes) -> int:
        self.out.write(self.decode(data))
        return len(data)


def _binary(out: TextIO) -> BinaryOut:
    """stdout as bytes: the export file goes out as the server wrote it."""
    out.flush()
    buffer: BinaryOut | None = getattr(out, "buffer", None)
    return buffer if buffer is not None else _TextOut(out)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="synapse", description="Move memories in and out of Synapse.")
    parser.add_argument("--url", default=os.environ.get("SYNAPSE_URL", "http://127.0.0.1:3000"))
    parser.add_argument("--token", default=os.environ.get("SYNAPSE_TOKEN"))
    parser.add_argument("--mind", default=os.environ.get("SYNAPSE_MIND"), help="the mind to act in")
    commands = parser.add_subparsers(dest="command", required=True)
    exp = commands.add_parser("export", help="everything, as JSON Lines on stdout")
    exp.add_argument(
        "--timeout", type=float, default=EXPORT_WAIT, help="seconds to wait for the server to write it"
    )
    imp = commands.add_parser("import", help="import a Synapse export or a mem0 file")
    imp.add_argument("file", type=Path)
    imp.add_argument("--format", choices=["synapse", "mem0"], default="synapse")
    imp.add_argument("--batch", type=int, default=IMPORT_BATCH, help="records a request (1-500)")
    imp.add_argument("--restart", action="store_true", help="ignore a previous run's progress")
    chat = commands.add_parser("import-chat", help="replay conversations through ingest, with their times")
    chat.add_argument("file", type=Path)
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    args = _parser().parse_args(argv)
    out, err = out or sys.stdout, err or sys.stderr
    if not args.token:
        err.write("synapse: a token is needed (--token or SYNAPSE_TOKEN)\n")
        return 2
    with Synapse(args.url, token=args.token, mind_id=args.mind) as client:
        try:
            if args.command == "export":
                sink = _binary(out)
                run_export(client, sink, timeout=args.timeout, user_id=jwt_subject(args.token), err=err)
                if hasattr(sink, "flush"):
                    sink.flush()
                return 0
            if args.command == "import":
                if not 1 <= args.batch <= 500:
                    err.write("synapse: --batch must be between 1 and 500\n")
                    return 2
                totals = run_import(
                    client, args.file, args.format, batch=args.batch, restart=args.restart, err=err
                )
            else:
                totals = run_import_chat(client, args.file, err=err)
        except SynapseError as exc:
            err.write(f"synapse: {exc}\n")
            return 1
    out.write(json.dumps(totals, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
