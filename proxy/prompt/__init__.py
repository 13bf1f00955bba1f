"""Prompts: reading a request body as a prompt and rewriting it, in one package.

- `segment/`: finds the retrieved documents and the question in a prompt (framework
  templates, tags, patterns) and splices new document texts back in. It imports
  nothing from the rest of ragtrim: a library about prompts.
- `prefix/`: the static prefix (system prompt, tools) made byte-stable and keyed.
- `body.py`: the `Prompt` adapters (chat, completion), the one place a body is rewritten.

Before issue 21 segmentation sat under `compressors/`, though the compressors never
see a prompt (only documents) and `proxy/prefix` needed it to read chat messages.
"""
