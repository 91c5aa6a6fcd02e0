"""CREATE / ALTER / DROP SEQUENCE and the sequence functions (nextval, currval, setval),
and the sequences serial and identity columns own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any



from catalog.store import ColumnDef, is_temp_schema, relation_word, sequence_named, SequenceParams, TableDef
from engine import ddl
from tidegate import sqllex
from tidegate.errors import SqlError
from tidegate.results import CommandResult
from tidegate.session import SessionInfo


class SequenceStatements:
    """The sequences statements of :class:`engine.executor.EngineSession` (a mixin: ``self`` is the session)."""

    def _sequence_statement(self, sql: str, info: SessionInfo) -> CommandResult:
        """CREATE / ALTER / DROP SEQUENCE: the definition is a catalog relation (kind "sequence",
        transactional in a block); the value lives in ``catalog.sequences`` (not transactional)."""
        st = ddl.parse_sequence_statement(sql)
        if st.action == "drop":
            return self._drop_sequences(st, info)
        parts = st.names[0]
        if len(parts) > 3:
            raise SqlError("42601", f"improper qualified name (too many dotted names): {'.'.join(parts)}")
        if len(parts) == 3 and parts[0] != self.catalog.database:
            raise SqlError("0A000", f'cross-database references are not implemented: "{".".join(parts)}"')
        name = parts[-1]
        if st.action == "create":
            schema = parts[-2] if len(parts) > 1 else self._current_schema(info)
            if schema == "pg_temp" or schema == info.temp_schema:
                raise SqlError("0A000", "temporary sequences are not supported",
                               hint="Create the sequence in an ordinary schema, or use a serial column of a temporary table.")
            refuse_other_temp_schema(schema)
            if self.catalog.get_schema(schema) is None:
                raise SqlError("3F000", f'schema "{schema}" does not exist')
            self.catalog.roles.check_schema(info, schema, "CREATE")
            if self.catalog.get_table(schema, name) is not None:
                if st.if_exists:
                    return CommandResult("CREATE SEQUENCE", notices=[f'relation "{name}" already exists, skipping'])
                raise SqlError("42P07", f'relation "{name}" already exists')
            params = ddl.sequence_params(st.options)
            if "owned_by" in st.options:
                params = replace(params, owned_by=self._sequence_owner(st.options["owned_by"], schema, info))
            self.catalog.create_table(TableDef(schema, name, [], kind="sequence", options=params.to_options(),
                                               oid=self.catalog.next_oid(), owner=None if info.internal else info.user))
            return CommandResult("CREATE SEQUENCE")
        try:
            seq = self._resolve_sequence_parts(parts, info)
        except SqlError as e:
            if st.if_exists and e.sqlstate == "42P01":
                return CommandResult("ALTER SEQUENCE", notices=[f'relation "{name}" does not exist, skipping'])
            raise
        self.catalog.roles.check_owner(info, "sequence", seq.name, seq.owner)
        old = SequenceParams.of(seq)
        params = ddl.sequence_params(st.options, old)
        if "owned_by" in st.options:
            params = replace(params, owned_by=self._sequence_owner(st.options["owned_by"], seq.schema, info))
        if params != old:
            kept = {k: v for k, v in seq.options.items() if not k.startswith("seq.")}
            self.catalog.replace_table(replace(seq, options={**kept, **params.to_options()}))
        restart = st.options.get("restart")
        if restart is not None:  # as setval: takes effect at once, whatever the block does
            self.engine.catalog.sequences.restart(seq, params.start if restart == "start" else restart)
        return CommandResult("ALTER SEQUENCE")

    def _sequence_owner(self, target: list[str] | None, schema: str, info: SessionInfo) -> tuple[int, str] | None:
        """OWNED BY table.column (NONE: None): the table must be in the sequence's schema."""
        if target is None:
            return None
        tparts, col = target[:-1], target[-1]
        t = self.catalog.resolve_table(tparts[-1], tparts[-2] if len(tparts) > 1 else None, info.search_path)
        if t.kind != "table":
            raise SqlError("42809", f'sequence cannot be owned by relation "{t.name}"',
                           detail=f'This operation is not supported for {relation_word(t)}s.')
        if t.schema != schema:
            raise SqlError("55000", "sequence must be in same schema as table it is linked to")
        if t.column(col) is None:
            raise SqlError("42703", f'column "{col}" of relation "{t.name}" does not exist')
        self.catalog.roles.check_owner(info, "table", t.name, t.owner, schema=t.schema)
        return (t.oid, col)

    def _resolve_sequence_parts(self, parts: list[str], info: SessionInfo) -> TableDef:
        t = self.catalog.resolve_table(parts[-1], parts[-2] if len(parts) > 1 else None, info.search_path)
        if t.kind != "sequence":
            raise SqlError("42809", f'"{t.name}" is not a sequence')
        return t

    def _sequence_users(self, seq: TableDef, info: SessionInfo) -> list[tuple[TableDef, ColumnDef]]:
        """Columns whose DEFAULT calls nextval of ``seq``."""
        out = []
        for t in self.catalog.list_tables(kind="table"):
            for c in t.columns:
                if sequence_default(c.default) is not None:
                    try:
                        if getattr(self._default_sequence(c, info), "oid", None) == seq.oid:
                            out.append((t, c))
                    except SqlError:
                        continue
        return out

    def _drop_sequences(self, st: ddl.SequenceStatement, info: SessionInfo) -> CommandResult:
        notices: list[str] = []
        targets: list[TableDef] = []
        for parts in st.names:
            try:
                seq = self.catalog.resolve_table(parts[-1], parts[-2] if len(parts) > 1 else None, info.search_path)
            except SqlError:
                if st.if_exists:
                    notices.append(f'sequence "{parts[-1]}" does not exist, skipping')
                    continue
                raise SqlError("42P01", f'sequence "{parts[-1]}" does not exist') from None
            if seq.kind != "sequence":
                word = relation_word(seq)
                raise SqlError("42809", f'"{seq.name}" is not a sequence', hint=f"Use DROP {word.upper()} to remove a {word}.")
            self.catalog.roles.check_owner(info, "sequence", seq.name, seq.owner)
            targets.append(seq)
        for seq in targets:
            owner = SequenceParams.of(seq).owned_by
            if owner is not None:
                t = next((x for x in self.catalog.list_tables(kind="table") if x.oid == owner[0]), None)
                c = t.column(owner[1]) if t is not None else None
                if c is not None and c.identity is not None:
                    raise SqlError("2BP01", f"cannot drop sequence {seq.name} because column {c.name} of table {t.name} requires it",
                                   hint=f"You can drop column {c.name} of table {t.name} instead.")
            users = self._sequence_users(seq, info)
            if users and not st.cascade:
                raise SqlError("2BP01", f"cannot drop sequence {seq.name} because other objects depend on it",
                               detail="\n".join(f"default value for column {c.name} of table {t.name} depends on sequence {seq.name}"
                                                for t, c in users),
                               hint="Use DROP ... CASCADE to drop the dependent objects too.")
            for t, c in users:  # CASCADE drops the column defaults
                notices.append(f"drop cascades to default value for column {c.name} of table {t.name}")
                current = self.catalog.get_table(t.schema, t.name)
                if current is not None:
                    self.catalog.replace_table(replace(current, columns=[replace(x, default=None) if x.name == c.name else x
                                                                         for x in current.columns]))
            self.catalog.drop_table(seq.schema, seq.name)
            self._forget_relation(seq)
        return CommandResult("DROP SEQUENCE", notices=notices)

    def _drop_owned_sequences(self, table_oids: set[int]) -> None:
        """DROP TABLE drops the sequences its columns own (SERIAL, identity, OWNED BY)."""
        if not table_oids:
            return
        for seq in self.catalog.list_tables(kind="sequence"):
            owner = SequenceParams.of(seq).owned_by
            if owner is not None and owner[0] in table_oids and self.catalog.get_table(seq.schema, seq.name) is not None:
                self.catalog.drop_table(seq.schema, seq.name)
                self._forget_relation(seq)

    def _default_sequence(self, c: ColumnDef, info: SessionInfo) -> TableDef | None:
        """The sequence of a ``nextval('name'[::regclass])`` DEFAULT (None: another default)."""
        if c.default is None:
            return None
        name = sequence_default(c.default)
        if name is None:
            return None
        return self._sequence_named(name, info)

    def _sequence_named(self, text: str, info: SessionInfo) -> TableDef:
        return sequence_named(self.catalog, text, info.search_path)

    def _next_values(self, seq: TableDef, n: int, info: SessionInfo) -> list[int]:
        return self.engine.catalog.sequences.next_values(seq, n, info.backend_pid)

    def sequence_call(self, fn: str, args: list[Any], info: SessionInfo) -> Any:
        """nextval / currval / setval / lastval (catalog.store.Sequences.call)."""
        return self.engine.catalog.sequences.call(self.catalog, fn, args, info.search_path, info.backend_pid)


def refuse_other_temp_schema(schema: str) -> None:
    """A relation cannot be created in a temporary schema unless as a temporary one of this session
    (callers have already turned ``pg_temp`` / the session's own schema into CREATE TEMP)."""
    if is_temp_schema(schema):
        raise SqlError("0A000", "cannot create relations in temporary schemas of other sessions")


# A DEFAULT that draws from a sequence: nextval('name') / nextval('name'::regclass)
def sequence_default(default: str | None) -> str | None:
    """The sequence a DEFAULT draws from: ``nextval('name')`` / ``nextval('name'::regclass)``."""
    if not default or "nextval" not in default.lower():
        return None
    try:
        toks = sqllex.scan(default)
    except SqlError:
        return None
    shape = [t.upper if t.kind != "str" else "'" for t in toks]
    if shape in (["NEXTVAL", "(", "'", ")"], ["NEXTVAL", "(", "'", "::", "REGCLASS", ")"]) and toks[2].value:
        return toks[2].value
    return None
