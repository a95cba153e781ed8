"""The runner's tables in one schema of a PostgreSQL server: statements run there, and the
tables created (serialized across hosts) the first time a statement misses them."""

from __future__ import annotations

from adapters.postgres import sql
from adapters.postgres.session import QueryError
from domain.errors import StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from adapters.postgres.session import Session


class Tables:
    """The schema's tables, created (serialized across hosts) when a statement misses them."""

    def __init__(self, session: Session, schema: str) -> None:
        self.session = session
        self.schema = schema

    def ensure(self) -> None:
        statements: list[tuple[str, tuple[object, ...]]] = [
            (text, (self.schema,) if "$1" in text else ()) for text in sql.create(self.schema)
        ]
        try:
            self.session.run(statements)
        except QueryError as error:
            raise StateError(self.refusal(error)) from None

    def refusal(self, error: QueryError) -> str:
        """What to do when the tables cannot be created, by the server's reason."""
        reason = str(error).rpartition(" said: ")[2]
        if error.sqlstate == sql.READ_ONLY:
            return (
                f"cannot use {self.session.url.shown}: it is a read-only standby ({reason}); "
                "point --state at the primary (a multi-host URL with "
                "target_session_attrs=read-write)"
            )
        return (
            f"cannot create the state tables in schema {self.schema!r}: {reason} (run `runner"
            " setup --state URL --grant ROLE` once with a role that may, or choose --schema)"
        )

    def call(
        self,
        text: str,
        params: tuple[object, ...],
        *,
        until: float | None = None,
        create: bool = True,
    ) -> list[tuple[str | None, ...]]:
        """Run a statement; when the tables are missing, create them first (or, for a
        statement that only reads or removes, `create` False: no rows)."""
        return self.run([(text, params)], until=until, create=create)[-1]

    def run(
        self,
        statements: list[tuple[str, tuple[object, ...]]],
        *,
        until: float | None = None,
        create: bool = True,
    ) -> list[list[tuple[str | None, ...]]]:
        """`call` for several statements in one transaction: the rows of each."""
        try:
            return self.session.run(statements, until=until)
        except QueryError as error:
            if error.sqlstate == sql.READ_ONLY:
                raise StateError(self.refusal(error)) from None
            if error.sqlstate != sql.UNDEFINED_TABLE:
                raise
        if not create:  # nothing there yet, unless the schema itself is not (a typo'd --schema)
            if not self.session.query(sql.SCHEMA_EXISTS, (self.schema,), until=until):
                raise StateError(
                    f"there is no schema {self.schema!r} on the server: check --schema "
                    "(runner setup, or a first apply or run --lock, creates it)"
                )
            return [[] for _ in statements]
        self.ensure()
        return self.session.run(statements, until=until)
