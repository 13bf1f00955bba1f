"""The HTTP edge: the route table, path normalisation, and the uvicorn protocol that
bounds request heads and bodies (issue 23)."""
