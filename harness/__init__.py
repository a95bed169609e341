"""What the tests and the benchmarks share, outside the service: the Gemini REST double (`gemini`) and
the handlers run in-process (`lambdas`: functions loaded as new containers, API Gateway events,
callers, a Lambda context, moto's tables from template.yaml). It imports the service and `local`
(the template reader), never `tests` or `bench`; the local run does not import it."""
