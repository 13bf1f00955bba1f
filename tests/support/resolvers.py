"""A DNS resolver double for discovery tests: answers from a script."""


class ScriptedResolver:
    """Answers from `answer` (a list, or an exception to raise)."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = 0

    async def resolve(self, host: str, port: int) -> list[str]:
        self.calls += 1
        if isinstance(self.answer, BaseException):
            raise self.answer
        return list(self.answer)
