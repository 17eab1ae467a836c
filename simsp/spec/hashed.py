"""Frozen specs that hash their fields once: every cost cache is keyed on a ModelSpec or a
ParallelSpec, each of dozens of fields, and a dataclass's own __hash__ hashes them all at every
lookup. A spec class inherits HashedOnce and sets `__hash__ = HashedOnce.__hash__` in its body
(dataclass keeps an explicitly set __hash__, not an inherited one)."""

from dataclasses import fields
from functools import cached_property


class HashedOnce:
    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash(tuple(getattr(self, f.name) for f in fields(self)))

    def __getstate__(self) -> dict:
        """Pickled without the cached hash: another process hashes strings with its own seed."""
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}
