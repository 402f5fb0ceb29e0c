"""Errors caused by the user's input (files, configs, arguments).

The CLI prints them as one line and exits with code 2; anything else is a bug.
"""


class InputError(ValueError):
    """Bad input from the user; str() is one line naming the file and the field."""

    def __init__(self, file, key: str, problem: str):
        self.file, self.key, self.problem = str(file), key, problem
        super().__init__(f"{file}: {key}: {problem}" if key else f"{file}: {problem}")
