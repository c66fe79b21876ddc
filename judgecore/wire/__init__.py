"""What goes on the wire: the requests a job sends (holding no messages), the bytes of a create body, the
JSON Schema of structured outputs, sub-batches within the API's caps, and the model table.

Decides: each request's fields and size, the partition into sub-batches, what the API is told of a
model. May import: `judgecore.job`.

Modules: `requests` (`Request`, `Requests`, `RequestTemplate`), `encoding` (a create body's bytes),
`structured` (the schema a request carries), `chunking` (sub-batches), `models` (what judgecore
knows of each model before anything is sent), `providers` (judge names `PROVIDER:MODEL`, OpenAI's
model table and prices, a served model's price).
"""
