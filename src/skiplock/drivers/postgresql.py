"""PostgreSQL drivers: psycopg 3 and psycopg 2 (JSON read as text, our own cursor)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from .._core.ops import Tuples
from .base import Adapter

__all__ = ["Psycopg2Adapter", "PsycopgAdapter", "bound"]

#: SQLSTATE: the server's own error code
_JSON_OIDS = {"json": 114, "jsonb": 3802}


_INT = frozenset({int})
_NONE = frozenset({type(None)})


def bound(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """*params* with a list of ints or of None as one array literal (faster in psycopg 3)."""
    out: dict[str, Any] | None = None
    for key, value in params.items():
        if type(value) is not list or not value:
            continue
        types = set(map(type, value))
        if types <= _INT:
            literal = "{" + ",".join(map(str, value)) + "}"
        elif types <= _NONE:
            literal = "{" + ",".join(["NULL"] * len(value)) + "}"
        else:
            continue
        if out is None:
            out = dict(params)
        out[key] = literal
    return params if out is None else out


class PsycopgAdapter(Adapter):
    """psycopg 3 (``psycopg.Connection``), any row factory or autocommit."""

    database: ClassVar[str] = "postgresql"
    driver: ClassVar[str] = "psycopg"
    can_copy: ClassVar[bool] = True

    def cursor(self) -> Any:
        from psycopg.rows import dict_row

        cur = self.connection.cursor(row_factory=dict_row)
        if not self.owned:  # our own connections read json as text already
            from psycopg.types.string import TextLoader

            cur.adapters.register_loader("json", TextLoader)
            cur.adapters.register_loader("jsonb", TextLoader)
        return cur

    def rows(self, cur: Any) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = cur.fetchall() if cur.description is not None else []
        return rows

    def tuples(self, cur: Any) -> Tuples:
        if cur.description is None:
            return Tuples((), [])
        from psycopg.rows import tuple_row

        cur.row_factory = tuple_row  # this result's rows too (psycopg's setter)
        return Tuples(tuple(c.name for c in cur.description), cur.fetchall())

    def bound(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        return bound(params)

    def copy(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        cur = self.connection.cursor()
        try:
            with cur.copy(sql) as copy:
                write = copy.write_row
                for row in rows:
                    write(row)
        finally:
            cur.close()

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        state = getattr(exc, "sqlstate", None)
        return frozenset({state}) if state else frozenset()

    def autocommit(self) -> bool:
        return bool(self.connection.autocommit)


class Psycopg2Adapter(Adapter):
    """psycopg 2 (``psycopg2.extensions.connection``, any ``cursor_factory``)."""

    database: ClassVar[str] = "postgresql"
    driver: ClassVar[str] = "psycopg2"

    _casters: ClassVar[list[Any]] = []

    def __init__(self, connection: Any, module: Any, *, owned: bool = False) -> None:
        super().__init__(connection, module, owned=owned)
        ext = self._ext = module.extensions
        if not Psycopg2Adapter._casters:
            Psycopg2Adapter._casters = [
                ext.new_type((oid,), f"SKIPLOCK_{name.upper()}_TEXT", lambda v, cur: v)
                for name, oid in _JSON_OIDS.items()
            ]

    def cursor(self) -> Any:
        # A plain cursor whatever the connection's cursor_factory (RealDictCursor rows
        # would iterate over their keys).
        cur = self.connection.cursor(cursor_factory=self._ext.cursor)
        for caster in self._casters:
            self._ext.register_type(caster, cur)
        return cur

    def error_codes(self, exc: BaseException) -> frozenset[int | str]:
        state = getattr(exc, "pgcode", None)
        return frozenset({state}) if state else frozenset()
