"""Storage and keys: KVStore (memory, Redis), memo keys, the prefix registry.
No FastAPI, no environment reading; never imports proxy or compressors."""
