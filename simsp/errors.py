"""The one error type for bad user input."""


class InputError(Exception):
    """Bad user input: names the file, the key, the value and the rule broken."""

    def __init__(self, file, key, value, rule):
        self.file, self.key, self.value, self.rule = str(file), key, value, rule
        super().__init__(f"{self.file}: {key}={value!r}: {rule}")
