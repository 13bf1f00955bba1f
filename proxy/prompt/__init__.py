"""Prompts: reading a request body as a prompt and rewriting it, in one package.

- `segment/`: finds the retrieved documents and the question in a prompt (framework
  templates, tags, patterns) and splices new document texts back in. It imports
  nothing from the rest of ragtrim: a library about prompts.
- `prefix/`: the static prefix (system prompt, tools) made byte-stable and keyed.
- `body.py`: the `Prompt` adapters (chat, completion), the one place a body is rewritten.

Why one package: docs/decisions/0020-prompt-recognition.md.
"""
