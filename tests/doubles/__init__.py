"""Test and benchmark doubles: the fake backends and sinks ragtrim is measured and tested
against (a vLLM stub with a prefill law and a scheduler simulator, a raw-asyncio stub, a
hostile upstream, an OTLP sink). One home, reached one way: imported as
`tests.doubles.<name>`, or run as `python -m tests.doubles.<name>` from the repo root
where a separate process is needed (issue 21: they used to sit in deploy/local and
bench/, reached by a sys.path insert, by file path and as subprocesses by path)."""
