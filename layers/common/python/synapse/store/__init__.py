"""The only package that builds keys or calls DynamoDB: one module per item family.

- `keys`: every key of the table (and `Space`, one mind of one user); `codec`: attribute values,
  vectors, cursors; `db`: the client, paged queries, batched writes, optimistic transactions.
- `nuggets`: the memory codec and its one write path; `changelog`: each mind's version and change
  log; `conversations`: sessions, raw messages, summaries, the identity line; `credentials`: API keys
  and provider keys; `minds`: the minds of a user; `users`: a user as a whole.

Import the module you need (`from synapse.store import nuggets`): this file imports nothing, so a
function loads only the item families it uses.
"""
