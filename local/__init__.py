"""The local run: template.yaml's routes and rules served by worker processes, as Lambda runs them, with
moto's server as the embedded AWS.

`python -m local` (or `make run`) serves the API; `python -m local.invoke` (or `make invoke`) runs one
function once, like `sam local invoke`. See docs/local-run.md.
"""
