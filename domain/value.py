"""Values that compare equal by their fields and print them, at no start-up cost."""

from __future__ import annotations


class Value:
    """A mixin for classes with `__slots__`: equality field by field and a readable repr,
    so that a test asserts `next_step(...) == Retry(delay=0.2)` and a failure shows values."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        fields: tuple[str, ...] = self.__slots__
        return all(getattr(self, field) == getattr(other, field) for field in fields)

    __hash__ = None  # type: ignore[assignment]  # values that may change are not keys

    def __repr__(self) -> str:
        names: tuple[str, ...] = self.__slots__
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({shown})"
