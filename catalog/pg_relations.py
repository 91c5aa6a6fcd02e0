"""The pg_catalog / information_schema relations tidegate mirrors, and their rows.

Each relation is declared once with PostgreSQL column types (``oid``, ``name``, ``char``, ...):
the declaration yields the DuckDB DDL of the mirror *and* the PostgreSQL type each column is
reported as, so a client sees ``relname`` as ``name`` (19) and ``relkind`` as ``"char"`` (18)
exactly as PostgreSQL describes them. Rows come from :class:`catalog.store.Catalog` plus a fixed
set of built-in objects (namespaces, types, roles, access methods).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from catalog.roles import PRIVILEGES, RoleDef
from catalog.store import Catalog, TableDef
from tidegate.pgtypes import TYPES_BY_OID, ColumnType

# PostgreSQL type name -> (DuckDB column type, PostgreSQL type OID reported to clients).
# Domains of information_schema are reported as their base types.
PG_COLUMN_TYPES: dict[str, tuple[str, int]] = {
    "oid": ("BIGINT", 26),
    "regproc": ("VARCHAR", 24),
    "name": ("VARCHAR", 19),
    "char": ("VARCHAR", 18),
    "bool": ("BOOLEAN", 16),
    "int2": ("SMALLINT", 21),
    "int4": ("INTEGER", 23),
    "int8": ("BIGINT", 20),
    "xid": ("BIGINT", 20),
    "float4": ("REAL", 700),
    "float8": ("DOUBLE", 701),
    "text": ("VARCHAR", 25),
    "varchar": ("VARCHAR", 1043),
    "timestamptz": ("TIMESTAMPTZ", 1184),
    "interval": ("INTERVAL", 1186),
    "oid[]": ("BIGINT[]", 1028),
    "oidvector": ("BIGINT[]", 30),
    "int2[]": ("SMALLINT[]", 1005),
    "int2vector": ("SMALLINT[]", 22),
    "text[]": ("VARCHAR[]", 1009),
    "name[]": ("VARCHAR[]", 1003),
    "char[]": ("VARCHAR[]", 1002),
    "aclitem[]": ("VARCHAR[]", 1009),
    "pg_node_tree": ("VARCHAR", 25),
    # information_schema domains
    "sql_identifier": ("VARCHAR", 19),
    "cardinal_number": ("INTEGER", 23),
    "character_data": ("VARCHAR", 1043),
    "yes_or_no": ("VARCHAR", 1043),
    "time_stamp": ("TIMESTAMPTZ", 1184),
}

# relation -> "col type, col type, ..." (PostgreSQL 16 column order).
_PG_CATALOG: dict[str, str] = {
    "pg_namespace": "oid oid, nspname name, nspowner oid, nspacl aclitem[]",
    "pg_class": (
        "oid oid, relname name, relnamespace oid, reltype oid, reloftype oid, relowner oid, relam oid, "
        "relfilenode oid, reltablespace oid, relpages int4, reltuples float4, relallvisible int4, "
        "reltoastrelid oid, relhasindex bool, relisshared bool, relpersistence char, relkind char, "
        "relnatts int2, relchecks int2, relhasrules bool, relhastriggers bool, relhassubclass bool, "
        "relrowsecurity bool, relforcerowsecurity bool, relispopulated bool, relreplident char, "
        "relispartition bool, relrewrite oid, relfrozenxid xid, relminmxid xid, relacl aclitem[], "
        "reloptions text[], relpartbound pg_node_tree"),
    "pg_attribute": (
        "attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, "
        "attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attalign char, attstorage char, "
        "attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, "
        "attgenerated char, attisdropped bool, attislocal bool, attinhcount int4, attcollation oid, "
        "attacl aclitem[], attoptions text[], attfdwoptions text[], attmissingval text"),
    "pg_type": (
        "oid oid, typname name, typnamespace oid, typowner oid, typlen int2, typbyval bool, typtype char, "
        "typcategory char, typispreferred bool, typisdefined bool, typdelim char, typrelid oid, "
        "typsubscript regproc, typelem oid, typarray oid, typinput regproc, typoutput regproc, "
        "typreceive regproc, typsend regproc, typmodin regproc, typmodout regproc, typanalyze regproc, "
        "typalign char, typstorage char, typnotnull bool, typbasetype oid, typtypmod int4, typndims int4, "
        "typcollation oid, typdefaultbin pg_node_tree, typdefault text, typacl aclitem[]"),
    "pg_index": (
        "indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, "
        "indnullsnotdistinct bool, indisprimary bool, indisexclusion bool, indimmediate bool, "
        "indisclustered bool, indisvalid bool, indcheckxmin bool, indisready bool, indislive bool, "
        "indisreplident bool, indkey int2vector, indcollation oidvector, indclass oidvector, "
        "indoption int2vector, indexprs pg_node_tree, indpred pg_node_tree"),
    "pg_constraint": (
        "oid oid, conname name, connamespace oid, contype char, condeferrable bool, condeferred bool, "
        "convalidated bool, conrelid oid, contypid oid, conindid oid, conparentid oid, confrelid oid, "
        "confupdtype char, confdeltype char, confmatchtype char, conislocal bool, coninhcount int4, "
        "connoinherit bool, conkey int2[], confkey int2[], conpfeqop oid[], conppeqop oid[], "
        "conffeqop oid[], confdelsetcols int2[], conexclop oid[], conbin pg_node_tree"),
    "pg_attrdef": "oid oid, adrelid oid, adnum int2, adbin pg_node_tree",
    "pg_description": "objoid oid, classoid oid, objsubid int4, description text",
    "pg_shdescription": "objoid oid, classoid oid, description text",
    "pg_database": (
        "oid oid, datname name, datdba oid, encoding int4, datlocprovider char, datistemplate bool, "
        "datallowconn bool, datconnlimit int4, datfrozenxid xid, datminmxid xid, dattablespace oid, "
        "datcollate text, datctype text, daticulocale text, daticurules text, datcollversion text, "
        "datacl aclitem[]"),
    "pg_roles": (
        "rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, "
        "rolcanlogin bool, rolreplication bool, rolconnlimit int4, rolpassword text, "
        "rolvaliduntil timestamptz, rolbypassrls bool, rolconfig text[], oid oid"),
    "pg_authid": (
        "oid oid, rolname name, rolsuper bool, rolinherit bool, rolcreaterole bool, rolcreatedb bool, "
        "rolcanlogin bool, rolreplication bool, rolbypassrls bool, rolconnlimit int4, rolpassword text, "
        "rolvaliduntil timestamptz"),
    "pg_user": (
        "usename name, usesysid oid, usecreatedb bool, usesuper bool, userepl bool, usebypassrls bool, "
        "passwd text, valuntil timestamptz, useconfig text[]"),
    "pg_auth_members": "oid oid, roleid oid, member oid, grantor oid, admin_option bool",
    "pg_am": "oid oid, amname name, amhandler regproc, amtype char",
    "pg_proc": (
        "oid oid, proname name, pronamespace oid, proowner oid, prolang oid, procost float4, "
        "prorows float4, provariadic oid, prosupport regproc, prokind char, prosecdef bool, "
        "proleakproof bool, proisstrict bool, proretset bool, provolatile char, proparallel char, "
        "pronargs int2, pronargdefaults int2, prorettype oid, proargtypes oidvector, "
        "proallargtypes oid[], proargmodes char[], proargnames text[], proargdefaults pg_node_tree, "
        "protrftypes oid[], prosrc text, probin text, prosqlbody pg_node_tree, proconfig text[], "
        "proacl aclitem[]"),
    "pg_settings": (
        "name text, setting text, unit text, category text, short_desc text, extra_desc text, "
        "context text, vartype text, source text, min_val text, max_val text, enumvals text[], "
        "boot_val text, reset_val text, sourcefile text, sourceline int4, pending_restart bool"),
    "pg_tablespace": "oid oid, spcname name, spcowner oid, spcacl aclitem[], spcoptions text[]",
    "pg_inherits": "inhrelid oid, inhparent oid, inhseqno int4, inhdetachpending bool",
    "pg_collation": (
        "oid oid, collname name, collnamespace oid, collowner oid, collprovider char, "
        "collisdeterministic bool, collencoding int4, collcollate text, collctype text, "
        "colliculocale text, collicurules text, collversion text"),
    "pg_extension": (
        "oid oid, extname name, extowner oid, extnamespace oid, extrelocatable bool, extversion text, "
        "extconfig oid[], extcondition text[]"),
    "pg_available_extensions": "name name, default_version text, installed_version text, comment text",
    "pg_enum": "oid oid, enumtypid oid, enumsortorder float4, enumlabel name",
    "pg_range": (
        "rngtypid oid, rngsubtype oid, rngmultitypid oid, rngcollation oid, rngsubopc oid, "
        "rngcanonical regproc, rngsubdiff regproc"),
    "pg_views": "schemaname name, viewname name, viewowner name, definition text",
    "pg_tables": (
        "schemaname name, tablename name, tableowner name, tablespace name, hasindexes bool, "
        "hasrules bool, hastriggers bool, rowsecurity bool"),
    "pg_matviews": (
        "schemaname name, matviewname name, matviewowner name, tablespace name, hasindexes bool, "
        "ispopulated bool, definition text"),
    "pg_indexes": "schemaname name, tablename name, indexname name, tablespace name, indexdef text",
    "pg_sequence": (
        "seqrelid oid, seqtypid oid, seqstart int8, seqincrement int8, seqmax int8, seqmin int8, "
        "seqcache int8, seqcycle bool"),
    "pg_sequences": (
        "schemaname name, sequencename name, sequenceowner name, data_type text, start_value int8, "
        "min_value int8, max_value int8, increment_by int8, cycle bool, cache_size int8, last_value int8"),
    "pg_trigger": (
        "oid oid, tgrelid oid, tgparentid oid, tgname name, tgfoid oid, tgtype int2, tgenabled char, "
        "tgisinternal bool, tgconstrrelid oid, tgconstrindid oid, tgconstraint oid, tgdeferrable bool, "
        "tginitdeferred bool, tgnargs int2, tgattr int2vector, tgargs text, tgqual pg_node_tree, "
        "tgoldtable name, tgnewtable name"),
    "pg_rewrite": (
        "oid oid, rulename name, ev_class oid, ev_type char, ev_enabled char, is_instead bool, "
        "ev_qual pg_node_tree, ev_action pg_node_tree"),
    "pg_policy": (
        "oid oid, polname name, polrelid oid, polcmd char, polpermissive bool, polroles oid[], "
        "polqual pg_node_tree, polwithcheck pg_node_tree"),
    "pg_foreign_table": "ftrelid oid, ftserver oid, ftoptions text[]",
    "pg_foreign_server": (
        "oid oid, srvname name, srvowner oid, srvfdw oid, srvtype text, srvversion text, "
        "srvacl aclitem[], srvoptions text[]"),
    "pg_foreign_data_wrapper": (
        "oid oid, fdwname name, fdwowner oid, fdwhandler oid, fdwvalidator oid, fdwacl aclitem[], "
        "fdwoptions text[]"),
    "pg_partitioned_table": (
        "partrelid oid, partstrat char, partnatts int2, partdefid oid, partattrs int2vector, "
        "partclass oidvector, partcollation oidvector, partexprs pg_node_tree"),
    "pg_statistic_ext": (
        "oid oid, stxrelid oid, stxname name, stxnamespace oid, stxowner oid, stxstattarget int4, "
        "stxkeys int2vector, stxkind char[], stxexprs pg_node_tree"),
    "pg_publication": (
        "oid oid, pubname name, pubowner oid, puballtables bool, pubinsert bool, pubupdate bool, "
        "pubdelete bool, pubtruncate bool, pubviaroot bool"),
    "pg_publication_rel": "oid oid, prpubid oid, prrelid oid, prqual pg_node_tree, prattrs int2vector",
    "pg_publication_namespace": "oid oid, pnpubid oid, pnnspid oid",
    "pg_publication_tables": "pubname name, schemaname name, tablename name, attnames name[], rowfilter text",
    "pg_subscription": "oid oid, subdbid oid, subname name, subowner oid, subenabled bool",
    "pg_event_trigger": (
        "oid oid, evtname name, evtevent name, evtowner oid, evtfoid oid, evtenabled char, evttags text[]"),
    "pg_stat_activity": (
        "datid oid, datname name, pid int4, leader_pid int4, usesysid oid, usename name, "
        "application_name text, client_addr text, client_hostname text, client_port int4, "
        "backend_start timestamptz, xact_start timestamptz, query_start timestamptz, "
        "state_change timestamptz, wait_event_type text, wait_event text, state text, backend_xid xid, "
        "backend_xmin xid, query_id int8, query text, backend_type text"),
    "pg_stat_user_tables": (
        "relid oid, schemaname name, relname name, seq_scan int8, seq_tup_read int8, idx_scan int8, "
        "idx_tup_fetch int8, n_tup_ins int8, n_tup_upd int8, n_tup_del int8, n_tup_hot_upd int8, "
        "n_live_tup int8, n_dead_tup int8"),
    "pg_depend": (
        "classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid, refobjsubid int4, deptype char"),
    "pg_shdepend": (
        "dbid oid, classid oid, objid oid, objsubid int4, refclassid oid, refobjid oid, deptype char"),
    "pg_opclass": (
        "oid oid, opcmethod oid, opcname name, opcnamespace oid, opcowner oid, opcfamily oid, "
        "opcintype oid, opcdefault bool, opckeytype oid"),
    "pg_language": (
        "oid oid, lanname name, lanowner oid, lanispl bool, lanpltrusted bool, lanplcallfoid oid, "
        "laninline oid, lanvalidator oid, lanacl aclitem[]"),
    "pg_operator": (
        "oid oid, oprname name, oprnamespace oid, oprowner oid, oprkind char, oprcanmerge bool, "
        "oprcanhash bool, oprleft oid, oprright oid, oprresult oid, oprcom oid, oprnegate oid, "
        "oprcode regproc, oprrest regproc, oprjoin regproc"),
    "pg_cast": "oid oid, castsource oid, casttarget oid, castfunc oid, castcontext char, castmethod char",
    "pg_aggregate": "aggfnoid regproc, aggkind char, aggnumdirectargs int2",
    "pg_conversion": "oid oid, conname name, connamespace oid, conowner oid, conforencoding int4, contoencoding int4, conproc regproc, condefault bool",
    "pg_init_privs": "objoid oid, classoid oid, objsubid int4, privtype char, initprivs aclitem[]",
    "pg_db_role_setting": "setdatabase oid, setrole oid, setconfig text[]",
    "pg_default_acl": "oid oid, defaclrole oid, defaclnamespace oid, defaclobjtype char, defaclacl aclitem[]",
    "pg_locks": "locktype text, database oid, relation oid, pid int4, mode text, granted bool",
    "pg_timezone_names": "name text, abbrev text, utc_offset interval, is_dst bool",
    "pg_prepared_xacts": "transaction xid, gid text, prepared timestamptz, owner name, database name",
    "pg_ts_config": "oid oid, cfgname name, cfgnamespace oid, cfgowner oid, cfgparser oid",
}

_INFORMATION_SCHEMA: dict[str, str] = {
    "schemata": (
        "catalog_name sql_identifier, schema_name sql_identifier, schema_owner sql_identifier, "
        "default_character_set_catalog sql_identifier, default_character_set_schema sql_identifier, "
        "default_character_set_name sql_identifier, sql_path character_data"),
    "tables": (
        "table_catalog sql_identifier, table_schema sql_identifier, table_name sql_identifier, "
        "table_type character_data, self_referencing_column_name sql_identifier, "
        "reference_generation character_data, user_defined_type_catalog sql_identifier, "
        "user_defined_type_schema sql_identifier, user_defined_type_name sql_identifier, "
        "is_insertable_into yes_or_no, is_typed yes_or_no, commit_action character_data"),
    "columns": (
        "table_catalog sql_identifier, table_schema sql_identifier, table_name sql_identifier, "
        "column_name sql_identifier, ordinal_position cardinal_number, column_default character_data, "
        "is_nullable yes_or_no, data_type character_data, character_maximum_length cardinal_number, "
        "character_octet_length cardinal_number, numeric_precision cardinal_number, "
        "numeric_precision_radix cardinal_number, numeric_scale cardinal_number, "
        "datetime_precision cardinal_number, interval_type character_data, "
        "interval_precision cardinal_number, character_set_catalog sql_identifier, "
        "character_set_schema sql_identifier, character_set_name sql_identifier, "
        "collation_catalog sql_identifier, collation_schema sql_identifier, "
        "collation_name sql_identifier, domain_catalog sql_identifier, domain_schema sql_identifier, "
        "domain_name sql_identifier, udt_catalog sql_identifier, udt_schema sql_identifier, "
        "udt_name sql_identifier, scope_catalog sql_identifier, scope_schema sql_identifier, "
        "scope_name sql_identifier, maximum_cardinality cardinal_number, dtd_identifier sql_identifier, "
        "is_self_referencing yes_or_no, is_identity yes_or_no, identity_generation character_data, "
        "identity_start character_data, identity_increment character_data, "
        "identity_maximum character_data, identity_minimum character_data, identity_cycle yes_or_no, "
        "is_generated character_data, generation_expression character_data, is_updatable yes_or_no"),
    "views": (
        "table_catalog sql_identifier, table_schema sql_identifier, table_name sql_identifier, "
        "view_definition character_data, check_option character_data, is_updatable yes_or_no, "
        "is_insertable_into yes_or_no, is_trigger_updatable yes_or_no, "
        "is_trigger_deletable yes_or_no, is_trigger_insertable_into yes_or_no"),
    "table_constraints": (
        "constraint_catalog sql_identifier, constraint_schema sql_identifier, "
        "constraint_name sql_identifier, table_catalog sql_identifier, table_schema sql_identifier, "
        "table_name sql_identifier, constraint_type character_data, is_deferrable yes_or_no, "
        "initially_deferred yes_or_no, enforced yes_or_no, nulls_distinct yes_or_no"),
    "key_column_usage": (
        "constraint_catalog sql_identifier, constraint_schema sql_identifier, "
        "constraint_name sql_identifier, table_catalog sql_identifier, table_schema sql_identifier, "
        "table_name sql_identifier, column_name sql_identifier, ordinal_position cardinal_number, "
        "position_in_unique_constraint cardinal_number"),
    "referential_constraints": (
        "constraint_catalog sql_identifier, constraint_schema sql_identifier, "
        "constraint_name sql_identifier, unique_constraint_catalog sql_identifier, "
        "unique_constraint_schema sql_identifier, unique_constraint_name sql_identifier, "
        "match_option character_data, update_rule character_data, delete_rule character_data"),
    "constraint_column_usage": (
        "table_catalog sql_identifier, table_schema sql_identifier, table_name sql_identifier, "
        "column_name sql_identifier, constraint_catalog sql_identifier, "
        "constraint_schema sql_identifier, constraint_name sql_identifier"),
    "constraint_table_usage": (
        "table_catalog sql_identifier, table_schema sql_identifier, table_name sql_identifier, "
        "constraint_catalog sql_identifier, constraint_schema sql_identifier, "
        "constraint_name sql_identifier"),
    "check_constraints": (
        "constraint_catalog sql_identifier, constraint_schema sql_identifier, "
        "constraint_name sql_identifier, check_clause character_data"),
    "routines": (
        "specific_catalog sql_identifier, specific_schema sql_identifier, specific_name sql_identifier, "
        "routine_catalog sql_identifier, routine_schema sql_identifier, routine_name sql_identifier, "
        "routine_type character_data, data_type character_data, type_udt_name sql_identifier, "
        "routine_body character_data, routine_definition character_data, external_language character_data"),
    "parameters": (
        "specific_catalog sql_identifier, specific_schema sql_identifier, specific_name sql_identifier, "
        "ordinal_position cardinal_number, parameter_mode character_data, parameter_name sql_identifier, "
        "data_type character_data, udt_name sql_identifier"),
    "character_sets": (
        "character_set_catalog sql_identifier, character_set_schema sql_identifier, "
        "character_set_name sql_identifier, character_repertoire sql_identifier, "
        "form_of_use sql_identifier, default_collate_catalog sql_identifier, "
        "default_collate_schema sql_identifier, default_collate_name sql_identifier"),
    "sequences": (
        "sequence_catalog sql_identifier, sequence_schema sql_identifier, sequence_name sql_identifier, "
        "data_type character_data, numeric_precision cardinal_number, "
        "numeric_precision_radix cardinal_number, numeric_scale cardinal_number, "
        "start_value character_data, minimum_value character_data, maximum_value character_data, "
        "increment character_data, cycle_option yes_or_no"),
    "triggers": (
        "trigger_catalog sql_identifier, trigger_schema sql_identifier, trigger_name sql_identifier, "
        "event_manipulation character_data, event_object_catalog sql_identifier, "
        "event_object_schema sql_identifier, event_object_table sql_identifier, "
        "action_order cardinal_number, action_condition character_data, "
        "action_statement character_data, action_orientation character_data, "
        "action_timing character_data"),
    "table_privileges": (
        "grantor sql_identifier, grantee sql_identifier, table_catalog sql_identifier, "
        "table_schema sql_identifier, table_name sql_identifier, privilege_type character_data, "
        "is_grantable yes_or_no, with_hierarchy yes_or_no"),
    "column_privileges": (
        "grantor sql_identifier, grantee sql_identifier, table_catalog sql_identifier, "
        "table_schema sql_identifier, table_name sql_identifier, column_name sql_identifier, "
        "privilege_type character_data, is_grantable yes_or_no"),
    "element_types": (
        "object_catalog sql_identifier, object_schema sql_identifier, object_name sql_identifier, "
        "object_type character_data, collection_type_identifier sql_identifier, "
        "data_type character_data, udt_name sql_identifier"),
    "domains": (
        "domain_catalog sql_identifier, domain_schema sql_identifier, domain_name sql_identifier, "
        "data_type character_data"),
    "enabled_roles": "role_name sql_identifier",
    "applicable_roles": "grantee sql_identifier, role_name sql_identifier, is_grantable yes_or_no",
}

# Fixed OIDs PostgreSQL gives its own objects (so ``'pg_class'::regclass`` etc. match clients' constants).
PG_CATALOG_NS = 11
PUBLIC_NS = 2200
INFORMATION_SCHEMA_NS = 13000
PG_TOAST_NS = 99
BOOTSTRAP_ROLE = 10
DATABASE_OID = 16384 - 1  # below user OIDs; PostgreSQL's first user database is similar
_WELL_KNOWN_RELS = {
    "pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_class": 1259, "pg_authid": 1260,
    "pg_database": 1262, "pg_namespace": 2615, "pg_constraint": 2606, "pg_index": 2610,
    "pg_description": 2609, "pg_attrdef": 2604, "pg_am": 2601, "pg_trigger": 2620, "pg_rewrite": 2618,
    "pg_inherits": 2611, "pg_tablespace": 1213, "pg_collation": 3456, "pg_extension": 3079,
    "pg_enum": 3501, "pg_operator": 2617, "pg_depend": 2608, "pg_language": 2612, "pg_cast": 2605,
    "pg_shdescription": 2396, "pg_opclass": 2616, "pg_event_trigger": 3466, "pg_policy": 3256,
    "pg_publication": 6104, "pg_statistic_ext": 3381, "pg_sequence": 2224, "pg_range": 3541,
    "pg_foreign_table": 3118, "pg_partitioned_table": 3350, "pg_foreign_server": 1417,
    "pg_foreign_data_wrapper": 2328, "pg_auth_members": 1261, "pg_aggregate": 2600,
}
# Extra OIDs for objects tidegate synthesises from a table (its PK index and constraint).
SYNTHETIC_BASE = 1_000_000_000


def index_oid(table: TableDef) -> int:
    return SYNTHETIC_BASE + table.oid * 4


def constraint_oid(table: TableDef) -> int:
    return SYNTHETIC_BASE + table.oid * 4 + 1


def pk_name(table: TableDef) -> str:
    return f"{table.name}_pkey"


@dataclass(frozen=True)
class Relation:
    schema: str  # "pg_catalog" | "information_schema"
    name: str
    columns: list[tuple[str, str]]  # (column, PostgreSQL type name)

    @property
    def duck_name(self) -> str:
        """Where the mirror keeps it: pg_catalog in DuckDB's main schema, the rest in ``isx``."""
        return self.name if self.schema == "pg_catalog" else f"isx.{self.name}"


def _parse(decl: str) -> list[tuple[str, str]]:
    out = []
    for part in decl.split(","):
        col, typ = part.strip().split(" ", 1)
        out.append((col, typ.strip()))
    return out


RELATIONS: dict[tuple[str, str], Relation] = {}
for _n, _d in _PG_CATALOG.items():
    RELATIONS[("pg_catalog", _n)] = Relation("pg_catalog", _n, _parse(_d))
for _n, _d in _INFORMATION_SCHEMA.items():
    RELATIONS[("information_schema", _n)] = Relation("information_schema", _n, _parse(_d))

PG_CATALOG_NAMES = frozenset(n for s, n in RELATIONS if s == "pg_catalog")
INFORMATION_SCHEMA_NAMES = frozenset(n for s, n in RELATIONS if s == "information_schema")


def system_rel_oid(name: str) -> int:
    """The OID a mirrored system relation has in pg_class (PostgreSQL's where it is fixed)."""
    if name in _WELL_KNOWN_RELS:
        return _WELL_KNOWN_RELS[name]
    names = sorted(n for _, n in RELATIONS)
    return 12000 + names.index(name)


def column_pg_types() -> dict[str, int]:
    """Column name -> reported type OID, for result columns that are plain catalog columns.

    Names that carry different types in different relations are left out (the Arrow type decides).
    """
    seen: dict[str, int] = {}
    clash: set[str] = set()
    for rel in RELATIONS.values():
        for col, typ in rel.columns:
            oid = PG_COLUMN_TYPES[typ][1]
            if col in seen and seen[col] != oid:
                clash.add(col)
            seen.setdefault(col, oid)
    return {k: v for k, v in seen.items() if k not in clash}


def ddl(rel: Relation) -> str:
    cols = ", ".join(f'"{c}" {PG_COLUMN_TYPES[t][0]}' for c, t in rel.columns)
    return f"CREATE TABLE {rel.duck_name} ({cols})"


# ---------------------------------------------------------------------------------------------
# rows


def _typ_rows() -> list[dict[str, Any]]:
    rows = []
    for t in sorted(TYPES_BY_OID.values(), key=lambda t: t.oid):
        elem = TYPES_BY_OID.get(t.element_oid)
        pseudo = t.category == "P" or t.name == "unknown" or (elem is not None and elem.category == "P")
        byval = t.typlen in (1, 2, 4, 8) and t.name not in ("name",)
        align = {1: "c", 2: "s", 4: "i", 8: "d"}.get(t.typlen, "i")
        rows.append({
            "oid": t.oid, "typname": t.name, "typnamespace": PG_CATALOG_NS, "typowner": BOOTSTRAP_ROLE,
            "typlen": t.typlen, "typbyval": byval, "typtype": "p" if pseudo else "b",
            "typcategory": t.category, "typispreferred": t.name in ("text", "float8", "bool", "oid", "timestamptz", "interval"),
            "typisdefined": True, "typdelim": ",", "typrelid": 0,
            "typsubscript": "array_subscript_handler" if t.element_oid else "-",
            "typelem": t.element_oid or {"name": 18, "int2vector": 21, "oidvector": 26}.get(t.name, 0),
            "typarray": t.array_oid,
            "typinput": ("array_in" if t.element_oid else f"{t.name}in"),
            "typoutput": ("array_out" if t.element_oid else f"{t.name}out"),
            "typreceive": ("array_recv" if t.element_oid else f"{t.name}recv"),
            "typsend": ("array_send" if t.element_oid else f"{t.name}send"),
            "typmodin": "-", "typmodout": "-", "typanalyze": "-", "typalign": "d" if t.element_oid and t.typlen == 8 else align,
            "typstorage": "x" if t.typlen == -1 else "p", "typnotnull": False, "typbasetype": 0,
            "typtypmod": -1, "typndims": 0, "typcollation": 100 if t.category == "S" and t.name != "char" and t.name != "name" else (950 if t.name == "name" else 0),
            "typdefaultbin": None, "typdefault": None, "typacl": None,
        })
    return rows


def _storage(ct: ColumnType) -> str:
    """pg_type.typstorage of a column's type (psql \\d+ shows it)."""
    if ct.pg.typlen != -1:
        return "p"
    return "m" if ct.pg.name == "numeric" else "x"


def information_schema_column(table: TableDef, db: str, attnum: int) -> dict[str, Any]:
    """One information_schema.columns row, computed as PostgreSQL's view does."""
    col = table.columns[attnum - 1]
    ct = col.type
    base = ct.element if ct.is_array else ct
    bn = base.pg.name
    data_type = "ARRAY" if ct.is_array else ct.pg.sql_name
    char_len = base.length if (not ct.is_array and bn in ("varchar", "bpchar")) else None
    octet = None
    if not ct.is_array and bn in ("varchar", "bpchar", "text"):
        octet = char_len * 4 if char_len is not None else 1073741824
    num_prec = num_radix = num_scale = None
    if not ct.is_array:
        if bn in ("int2", "int4", "int8"):
            num_prec, num_radix, num_scale = {"int2": 16, "int4": 32, "int8": 64}[bn], 2, 0
        elif bn in ("float4", "float8"):
            num_prec, num_radix = {"float4": 24, "float8": 53}[bn], 2
        elif bn == "numeric":
            num_radix = 10
            if base.precision is not None:
                num_prec, num_scale = base.precision, base.scale or 0
    dt_prec = None
    if not ct.is_array:
        if bn == "date":
            dt_prec = 0
        elif bn in ("time", "timestamp", "timestamptz", "interval"):
            dt_prec = base.precision if base.precision is not None else 6
    return {
        "table_catalog": db, "table_schema": table.schema, "table_name": table.name,
        "column_name": col.name, "ordinal_position": attnum, "column_default": col.default,
        "is_nullable": "NO" if (col.not_null or col.name in table.primary_key) else "YES",
        "data_type": data_type, "character_maximum_length": char_len, "character_octet_length": octet,
        "numeric_precision": num_prec, "numeric_precision_radix": num_radix, "numeric_scale": num_scale,
        "datetime_precision": dt_prec, "interval_type": None, "interval_precision": None,
        "character_set_catalog": None, "character_set_schema": None, "character_set_name": None,
        "collation_catalog": None, "collation_schema": None, "collation_name": None,
        "domain_catalog": None, "domain_schema": None, "domain_name": None,
        "udt_catalog": db, "udt_schema": "pg_catalog", "udt_name": ct.pg.name,
        "scope_catalog": None, "scope_schema": None, "scope_name": None, "maximum_cardinality": None,
        "dtd_identifier": str(attnum), "is_self_referencing": "NO", "is_identity": "NO",
        "identity_generation": None, "identity_start": None, "identity_increment": None,
        "identity_maximum": None, "identity_minimum": None, "identity_cycle": "NO",
        "is_generated": "NEVER", "generation_expression": None, "is_updatable": "YES",
    }


def role_oids(catalog: Catalog, bootstrap: str = "tidegate") -> dict[str, int]:
    """Role name -> oid; the bootstrap superuser (owner of objects older than roles) is oid 10."""
    oids = {r.name: r.oid for r in catalog.roles.list()}
    oids.setdefault(bootstrap, BOOTSTRAP_ROLE)
    return oids


def build_rows(catalog: Catalog, owner: str = "tidegate") -> dict[tuple[str, str], list[dict[str, Any]]]:
    """All rows of the mirror, keyed like :data:`RELATIONS` (relations absent here stay empty)."""
    db = catalog.database
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {k: [] for k in RELATIONS}

    def add(rel: str, schema: str = "pg_catalog", **values: Any) -> None:
        rows[(schema, rel)].append(values)

    schemas = catalog.list_schemas()
    role_oid = role_oids(catalog, owner)
    acl = catalog.roles.acl
    ns_oid = {s.name: s.oid for s in schemas}
    ns_oid.update({"pg_catalog": PG_CATALOG_NS, "information_schema": INFORMATION_SCHEMA_NS, "pg_toast": PG_TOAST_NS})
    add("pg_namespace", oid=PG_TOAST_NS, nspname="pg_toast", nspowner=BOOTSTRAP_ROLE)
    add("pg_namespace", oid=PG_CATALOG_NS, nspname="pg_catalog", nspowner=BOOTSTRAP_ROLE)
    add("pg_namespace", oid=INFORMATION_SCHEMA_NS, nspname="information_schema", nspowner=BOOTSTRAP_ROLE)
    for s in schemas:
        add("pg_namespace", oid=s.oid, nspname=s.name, nspowner=role_oid.get(s.owner, BOOTSTRAP_ROLE),
            nspacl=acl("n", s.oid, s.owner))
        if s.comment is not None:
            add("pg_description", objoid=s.oid, classoid=2615, objsubid=0, description=s.comment)
    for s in ["pg_catalog", "information_schema"]:
        add("schemata", "information_schema", catalog_name=db, schema_name=s, schema_owner=owner)
    for s in schemas:
        add("schemata", "information_schema", catalog_name=db, schema_name=s.name, schema_owner=s.owner or owner)

    add("pg_database", oid=DATABASE_OID, datname=db, datdba=BOOTSTRAP_ROLE, encoding=6, datlocprovider="c",
        datistemplate=False, datallowconn=True, datconnlimit=-1, datfrozenxid=0, datminmxid=1,
        dattablespace=1663, datcollate="C.UTF-8", datctype="C.UTF-8")
    add("pg_tablespace", oid=1663, spcname="pg_default", spcowner=BOOTSTRAP_ROLE)
    add("pg_tablespace", oid=1664, spcname="pg_global", spcowner=BOOTSTRAP_ROLE)
    defined = {r.name: r for r in catalog.roles.list()}
    if owner not in defined:
        defined[owner] = RoleDef(owner, BOOTSTRAP_ROLE, superuser=True, login=True, createrole=True, createdb=True)
    for r in defined.values():
        role = dict(rolname=r.name, rolsuper=r.superuser, rolinherit=r.inherit, rolcreaterole=r.createrole,
                    rolcreatedb=r.createdb, rolcanlogin=r.login, rolreplication=r.superuser, rolconnlimit=-1,
                    rolbypassrls=r.superuser)
        add("pg_roles", **role, rolpassword="********", oid=r.oid)
        add("pg_authid", **role, oid=r.oid)  # rolpassword stays NULL: verifiers are not shown
        if r.login:
            add("pg_user", usename=r.name, usesysid=r.oid, usecreatedb=r.createdb, usesuper=r.superuser,
                userepl=r.superuser, usebypassrls=r.superuser, passwd="********")
        add("enabled_roles", "information_schema", role_name=r.name)
    for k, (parent, member) in enumerate(catalog.roles.memberships(), start=1):
        if parent in role_oid and member in role_oid:
            add("pg_auth_members", oid=SYNTHETIC_BASE + k, roleid=role_oid[parent], member=role_oid[member],
                grantor=BOOTSTRAP_ROLE, admin_option=False)
            add("applicable_roles", "information_schema", grantee=member, role_name=parent, is_grantable="NO")
    add("pg_am", oid=2, amname="heap", amhandler="heap_tableam_handler", amtype="t")
    add("pg_am", oid=403, amname="btree", amhandler="bthandler", amtype="i")
    add("pg_language", oid=12, lanname="internal", lanowner=BOOTSTRAP_ROLE, lanispl=False, lanpltrusted=False)
    add("pg_language", oid=13, lanname="c", lanowner=BOOTSTRAP_ROLE, lanispl=False, lanpltrusted=False)
    add("pg_language", oid=14, lanname="sql", lanowner=BOOTSTRAP_ROLE, lanispl=False, lanpltrusted=True)
    add("pg_collation", oid=100, collname="default", collnamespace=PG_CATALOG_NS, collowner=BOOTSTRAP_ROLE,
        collprovider="d", collisdeterministic=True, collencoding=-1)
    add("pg_collation", oid=950, collname="C", collnamespace=PG_CATALOG_NS, collowner=BOOTSTRAP_ROLE,
        collprovider="c", collisdeterministic=True, collencoding=-1, collcollate="C", collctype="C")
    add("character_sets", "information_schema", character_set_name="UTF8", character_repertoire="UCS",
        form_of_use="UTF8", default_collate_catalog=db, default_collate_schema="pg_catalog",
        default_collate_name="C.UTF-8")
    rows[("pg_catalog", "pg_type")] = _typ_rows()

    for (schema, name), rel in sorted(RELATIONS.items()):
        kind = "r" if schema == "pg_catalog" and name in _WELL_KNOWN_RELS else "v"
        add("pg_class", oid=system_rel_oid(name), relname=name, relnamespace=ns_oid[schema], reltype=0,
            reloftype=0, relowner=BOOTSTRAP_ROLE, relam=2 if kind == "r" else 0, relfilenode=0,
            reltablespace=0, relpages=0, reltuples=-1.0, relallvisible=0, reltoastrelid=0,
            relhasindex=False, relisshared=False, relpersistence="p", relkind=kind,
            relnatts=len(rel.columns), relchecks=0, relhasrules=kind == "v", relhastriggers=False,
            relhassubclass=False, relrowsecurity=False, relforcerowsecurity=False, relispopulated=True,
            relreplident="n", relispartition=False, relrewrite=0, relfrozenxid=0, relminmxid=0)

    for t in catalog.list_tables():
        is_view = t.kind == "view"
        has_pk = bool(t.primary_key) and not is_view
        nsp = ns_oid.get(t.schema, PUBLIC_NS)
        t_owner = t.owner or owner
        add("pg_class", oid=t.oid, relname=t.name, relnamespace=nsp, reltype=0, reloftype=0,
            relowner=role_oid.get(t_owner, BOOTSTRAP_ROLE), relacl=acl("r", t.oid, t.owner),
            relam=0 if is_view else 2, relfilenode=0 if is_view else t.oid,
            reltablespace=0, relpages=0, reltuples=-1.0, relallvisible=0, reltoastrelid=0,
            relhasindex=has_pk, relisshared=False, relpersistence="p", relkind="v" if is_view else "r",
            relnatts=len(t.columns), relchecks=0, relhasrules=is_view, relhastriggers=False,
            relhassubclass=False, relrowsecurity=False, relforcerowsecurity=False, relispopulated=True,
            relreplident="n" if is_view else "d", relispartition=False, relrewrite=0, relfrozenxid=0,
            relminmxid=0)
        if t.comment is not None:
            add("pg_description", objoid=t.oid, classoid=1259, objsubid=0, description=t.comment)
        for i, c in enumerate(t.columns, start=1):
            ct: ColumnType = c.type
            add("pg_attribute", attrelid=t.oid, attname=c.name, atttypid=ct.pg.oid, attstattarget=-1,
                attlen=ct.pg.typlen, attnum=i, attndims=1 if ct.is_array else 0, attcacheoff=-1,
                atttypmod=ct.typmod, attbyval=ct.pg.typlen in (1, 2, 4, 8), attalign="i",
                attstorage=_storage(ct), attcompression="",
                attnotnull=(c.not_null or c.name in t.primary_key) and not is_view,
                atthasdef=c.default is not None, atthasmissing=False, attidentity="", attgenerated="",
                attisdropped=False, attislocal=True, attinhcount=0,
                attcollation=100 if ct.pg.category == "S" and not ct.is_array else 0)
            if c.default is not None:
                add("pg_attrdef", oid=2 * SYNTHETIC_BASE + t.oid * 1000 + i,
                    adrelid=t.oid, adnum=i, adbin=c.default)
            if c.comment is not None:
                add("pg_description", objoid=t.oid, classoid=1259, objsubid=i, description=c.comment)
            add("columns", "information_schema", **information_schema_column(t, db, i))
        add("tables", "information_schema", table_catalog=db, table_schema=t.schema, table_name=t.name,
            table_type="VIEW" if is_view else "BASE TABLE", is_insertable_into="NO" if is_view else "YES",
            is_typed="NO")
        privileges = {t_owner: {p: t_owner for p in PRIVILEGES["r"]}}
        for grantee, privs in catalog.roles.grants_on("r", t.oid).items():
            privileges.setdefault(grantee or "PUBLIC", {}).update(privs)
        for grantee, privs in privileges.items():
            for p, grantor in privs.items():
                add("table_privileges", "information_schema", grantor=grantor or t_owner, grantee=grantee,
                    table_catalog=db, table_schema=t.schema, table_name=t.name, privilege_type=p,
                    is_grantable="YES" if grantee == t_owner else "NO",
                    with_hierarchy="YES" if p == "SELECT" else "NO")
        if is_view:
            add("pg_views", schemaname=t.schema, viewname=t.name, viewowner=t_owner, definition=t.view_sql)
            add("views", "information_schema", table_catalog=db, table_schema=t.schema, table_name=t.name,
                view_definition=t.view_sql, check_option="NONE", is_updatable="NO", is_insertable_into="NO",
                is_trigger_updatable="NO", is_trigger_deletable="NO", is_trigger_insertable_into="NO")
            continue
        add("pg_tables", schemaname=t.schema, tablename=t.name, tableowner=t_owner, hasindexes=has_pk,
            hasrules=False, hastriggers=False, rowsecurity=False)
        add("pg_stat_user_tables", relid=t.oid, schemaname=t.schema, relname=t.name, seq_scan=0,
            n_live_tup=0, n_dead_tup=0)
        if has_pk:
            idx, con, pkn = index_oid(t), constraint_oid(t), pk_name(t)
            keys = [next(i for i, c in enumerate(t.columns, 1) if c.name == k) for k in t.primary_key
                    if t.column(k) is not None]
            add("pg_class", oid=idx, relname=pkn, relnamespace=nsp, reltype=0, reloftype=0,
                relowner=BOOTSTRAP_ROLE, relam=403, relfilenode=idx, reltablespace=0, relpages=1,
                reltuples=0.0, relallvisible=0, reltoastrelid=0, relhasindex=False, relisshared=False,
                relpersistence="p", relkind="i", relnatts=len(keys), relchecks=0, relhasrules=False,
                relhastriggers=False, relhassubclass=False, relrowsecurity=False,
                relforcerowsecurity=False, relispopulated=True, relreplident="n", relispartition=False,
                relrewrite=0, relfrozenxid=0, relminmxid=0)
            for j, k in enumerate(keys, start=1):
                kc = t.columns[k - 1]
                add("pg_attribute", attrelid=idx, attname=kc.name, atttypid=kc.type.pg.oid, attstattarget=-1,
                    attlen=kc.type.pg.typlen, attnum=j, attndims=0, attcacheoff=-1, atttypmod=kc.type.typmod,
                    attbyval=kc.type.pg.typlen in (1, 2, 4, 8), attalign="i", attstorage="p",
                    attcompression="", attnotnull=False, atthasdef=False, atthasmissing=False,
                    attidentity="", attgenerated="", attisdropped=False, attislocal=True, attinhcount=0,
                    attcollation=0)
            add("pg_index", indexrelid=idx, indrelid=t.oid, indnatts=len(keys), indnkeyatts=len(keys),
                indisunique=True, indnullsnotdistinct=False, indisprimary=True, indisexclusion=False,
                indimmediate=True, indisclustered=False, indisvalid=True, indcheckxmin=False,
                indisready=True, indislive=True, indisreplident=False, indkey=keys,
                indcollation=[0] * len(keys), indclass=[1978] * len(keys), indoption=[0] * len(keys))
            add("pg_constraint", oid=con, conname=pkn, connamespace=nsp, contype="p", condeferrable=False,
                condeferred=False, convalidated=True, conrelid=t.oid, contypid=0, conindid=idx,
                conparentid=0, confrelid=0, confupdtype=" ", confdeltype=" ", confmatchtype=" ",
                conislocal=True, coninhcount=0, connoinherit=True, conkey=keys)
            add("pg_indexes", schemaname=t.schema, tablename=t.name, indexname=pkn,
                indexdef=index_definition(t, qualify=True))
            add("table_constraints", "information_schema", constraint_catalog=db, constraint_schema=t.schema,
                constraint_name=pkn, table_catalog=db, table_schema=t.schema, table_name=t.name,
                constraint_type="PRIMARY KEY", is_deferrable="NO", initially_deferred="NO", enforced="YES",
                nulls_distinct="YES")
            for j, k in enumerate(t.primary_key, start=1):
                add("key_column_usage", "information_schema", constraint_catalog=db, constraint_schema=t.schema,
                    constraint_name=pkn, table_catalog=db, table_schema=t.schema, table_name=t.name,
                    column_name=k, ordinal_position=j)
                add("constraint_column_usage", "information_schema", table_catalog=db, table_schema=t.schema,
                    table_name=t.name, column_name=k, constraint_catalog=db, constraint_schema=t.schema,
                    constraint_name=pkn)
            add("constraint_table_usage", "information_schema", table_catalog=db, table_schema=t.schema,
                table_name=t.name, constraint_catalog=db, constraint_schema=t.schema, constraint_name=pkn)
        for c in t.columns:
            if c.not_null or c.name in t.primary_key:
                cname = f"{nsp}_{t.oid}_{t.columns.index(c) + 1}_not_null"
                add("table_constraints", "information_schema", constraint_catalog=db,
                    constraint_schema=t.schema, constraint_name=cname, table_catalog=db,
                    table_schema=t.schema, table_name=t.name, constraint_type="CHECK", is_deferrable="NO",
                    initially_deferred="NO", enforced="YES", nulls_distinct=None)
                add("check_constraints", "information_schema", constraint_catalog=db,
                    constraint_schema=t.schema, constraint_name=cname,
                    check_clause=f"{quote_ident(c.name)} IS NOT NULL")
    return rows


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")

# duckdb_keywords() category -> pg_get_keywords() (catcode, catdesc); DuckDB's grammar is PostgreSQL's.
KEYWORD_CATEGORIES = {
    "unreserved": ("U", "unreserved"),
    "column_name": ("C", "unreserved (cannot be function or type name)"),
    "type_function": ("T", "reserved (can be function or type name)"),
    "reserved": ("R", "reserved"),
}


@functools.cache
def keywords() -> list[tuple[str, str]]:
    """(word, duckdb category) for every SQL keyword of the PostgreSQL-derived grammar."""
    import duckdb

    with duckdb.connect(":memory:") as con:
        return sorted(con.execute("SELECT keyword_name, keyword_category FROM duckdb_keywords()").fetchall())


@functools.cache
def quoted_keywords() -> frozenset[str]:
    """Keywords quote_ident must quote: every category but unreserved."""
    return frozenset(w for w, cat in keywords() if cat != "unreserved")


def quote_ident(name: str) -> str:
    """PostgreSQL's quote_ident: quote unless all lower-case letters, digits, underscores."""
    if name and (name[0].isalpha() or name[0] == "_") and all(ch in _SAFE for ch in name) and name not in quoted_keywords():
        return name
    return '"' + name.replace('"', '""') + '"'


def index_definition(t: TableDef, column: int = 0, qualify: bool = True) -> str:
    """pg_get_indexdef of a table's primary-key index (``column`` > 0: that key column's name).

    Like PostgreSQL, the table is schema-qualified only when it is not visible on search_path."""
    if column > 0:
        return quote_ident(t.primary_key[column - 1]) if column <= len(t.primary_key) else ""
    cols = ", ".join(quote_ident(k) for k in t.primary_key)
    table = f"{quote_ident(t.schema)}.{quote_ident(t.name)}" if qualify else quote_ident(t.name)
    return f"CREATE UNIQUE INDEX {quote_ident(pk_name(t))} ON {table} USING btree ({cols})"


def constraint_definition(t: TableDef) -> str:
    return "PRIMARY KEY (" + ", ".join(quote_ident(k) for k in t.primary_key) + ")"
