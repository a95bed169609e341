"""The local run: template.yaml's routes and rules served in-process, with moto as the embedded AWS.

`python -m local` (or `make run`) — see docs/local-run.md.
"""
