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

from tidegate import pg_keywords
from catalog.roles import PRIVILEGES, RoleDef
from catalog.store import SEQUENCE_TYPE_NAMES, SEQUENCE_TYPE_OIDS, Catalog, SequenceParams, TableDef, is_temp_schema
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


def column_pg_types_in(names: set[str]) -> dict[str, int]:
    """Like :func:`column_pg_types`, over the named relations only (a query's FROM): a column name
    two relations type differently is typed when only one of them is read."""
    seen: dict[str, set[int]] = {}
    for (_, name), rel in RELATIONS.items():
        if name in names:
            for col, typ in rel.columns:
                seen.setdefault(col, set()).add(PG_COLUMN_TYPES[typ][1])
    return {col: next(iter(oids)) for col, oids in seen.items() if len(oids) == 1}


def ddl(rel: Relation) -> str:
    cols = ", ".join(f'"{c}" {PG_COLUMN_TYPES[t][0]}' for c, t in rel.columns)
    return f"CREATE TABLE {rel.duck_name} ({cols})"


# ---------------------------------------------------------------------------------------------
# rows


def _typ_rows() -> list[dict[str, Any]]:
    rows = []
    io_columns = ("typinput", "typoutput", "typreceive", "typsend", "typmodin", "typmodout", "typanalyze",
                  "typsubscript")
    for t in sorted(TYPES_BY_OID.values(), key=lambda t: t.oid):
        elem = TYPES_BY_OID.get(t.element_oid)
        pseudo = t.category == "P" or t.name == "unknown" or (elem is not None and elem.category == "P")
        byval = t.typlen in (1, 2, 4, 8) and t.name not in ("name",)
        align = {1: "c", 2: "s", 4: "i", 8: "d"}.get(t.typlen, "i")
        io = type_io().get(t.oid) or (
            ("array_in", "array_out", "array_recv", "array_send", "-", "-", "array_typanalyze", "array_subscript_handler")
            if t.element_oid else (f"{t.name}in", f"{t.name}out", f"{t.name}recv", f"{t.name}send", "-", "-", "-", "-"))
        rows.append({
            "oid": t.oid, "typname": t.name, "typnamespace": PG_CATALOG_NS, "typowner": BOOTSTRAP_ROLE,
            "typlen": t.typlen, "typbyval": byval, "typtype": "p" if pseudo else "b",
            "typcategory": t.category, "typispreferred": t.name in ("text", "float8", "bool", "oid", "timestamptz", "interval"),
            "typisdefined": True, "typdelim": ",", "typrelid": 0,
            "typelem": t.element_oid or {"name": 18, "int2vector": 21, "oidvector": 26}.get(t.name, 0),
            "typarray": t.array_oid,
            **dict(zip(io_columns, io)),
            "typalign": "d" if t.element_oid and t.typlen == 8 else align,
            "typstorage": "x" if t.typlen == -1 else "p", "typnotnull": False, "typbasetype": 0,
            "typtypmod": -1, "typndims": 0, "typcollation": 100 if t.category == "S" and t.name != "char" and t.name != "name" else (950 if t.name == "name" else 0),
            "typdefaultbin": None, "typdefault": None, "typacl": None,
        })
    for oid, (name, typlen, byval, typtype, category, elem, array, align, storage, coll) in sorted(extra_types().items()):
        io = type_io().get(oid, ("-",) * 8)
        rows.append({
            "oid": oid, "typname": name, "typnamespace": PG_CATALOG_NS, "typowner": BOOTSTRAP_ROLE,
            "typlen": int(typlen), "typbyval": byval == "True", "typtype": typtype, "typcategory": category,
            "typispreferred": False, "typisdefined": True, "typdelim": ",", "typrelid": 0, "typelem": int(elem),
            "typarray": int(array), **dict(zip(io_columns, io)), "typalign": align, "typstorage": storage,
            "typnotnull": False, "typbasetype": 0, "typtypmod": -1, "typndims": 0, "typcollation": int(coll),
            "typdefaultbin": None, "typdefault": None, "typacl": None,
        })
    return rows


def _storage(ct: ColumnType) -> str:
    """pg_type.typstorage of a column's type (psql \\d+ shows it)."""
    if ct.pg.typlen != -1:
        return "p"
    return "m" if ct.pg.name == "numeric" else "x"


def information_schema_column(table: TableDef, db: str, attnum: int,
                              identity: SequenceParams | None = None) -> dict[str, Any]:
    """One information_schema.columns row, computed as PostgreSQL's view does (``identity``: the
    sequence of an identity column)."""
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
    ident = identity if col.identity is not None else None
    return {
        "table_catalog": db, "table_schema": table.schema, "table_name": table.name,
        "column_name": col.name, "ordinal_position": attnum,
        "column_default": None if col.identity is not None else col.default,
        "is_nullable": "NO" if (col.not_null or (col.name in table.primary_key and not table.time_index)) else "YES",
        "data_type": data_type, "character_maximum_length": char_len, "character_octet_length": octet,
        "numeric_precision": num_prec, "numeric_precision_radix": num_radix, "numeric_scale": num_scale,
        "datetime_precision": dt_prec, "interval_type": None, "interval_precision": None,
        "character_set_catalog": None, "character_set_schema": None, "character_set_name": None,
        "collation_catalog": None, "collation_schema": None, "collation_name": None,
        "domain_catalog": None, "domain_schema": None, "domain_name": None,
        "udt_catalog": db, "udt_schema": "pg_catalog", "udt_name": ct.pg.name,
        "scope_catalog": None, "scope_schema": None, "scope_name": None, "maximum_cardinality": None,
        "dtd_identifier": str(attnum), "is_self_referencing": "NO",
        "is_identity": "YES" if col.identity is not None else "NO",
        "identity_generation": {"a": "ALWAYS", "d": "BY DEFAULT"}.get(col.identity or ""),
        "identity_start": str(ident.start) if ident else None,
        "identity_increment": str(ident.increment) if ident else None,
        "identity_maximum": str(ident.max) if ident else None,
        "identity_minimum": str(ident.min) if ident else None,
        "identity_cycle": "YES" if ident and ident.cycle else "NO",
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
    rows[("pg_catalog", "pg_proc")] = [dict(r) for r in proc_rows()]

    for (schema, name), rel in sorted(RELATIONS.items()):
        kind = "r" if schema == "pg_catalog" and name in _WELL_KNOWN_RELS else "v"
        add("pg_class", oid=system_rel_oid(name), relname=name, relnamespace=ns_oid[schema], reltype=0,
            reloftype=0, relowner=BOOTSTRAP_ROLE, relam=2 if kind == "r" else 0, relfilenode=0,
            reltablespace=0, relpages=0, reltuples=-1.0, relallvisible=0, reltoastrelid=0,
            relhasindex=False, relisshared=False, relpersistence="p", relkind=kind,
            relnatts=len(rel.columns), relchecks=0, relhasrules=kind == "v", relhastriggers=False,
            relhassubclass=False, relrowsecurity=False, relforcerowsecurity=False, relispopulated=True,
            relreplident="n", relispartition=False, relrewrite=0, relfrozenxid=0, relminmxid=0)

    relations = catalog.list_tables()
    owned: dict[tuple[int, str], SequenceParams] = {}
    for t in relations:
        if t.kind == "sequence":
            p = SequenceParams.of(t)
            if p.owned_by is not None:
                owned[p.owned_by] = p
            _sequence_catalog_rows(t, p, {x.oid: x for x in relations}, ns_oid.get(t.schema, PUBLIC_NS),
                                   role_oid.get(t.owner or owner, BOOTSTRAP_ROLE), acl("r", t.oid, t.owner), db, add)
    for t in relations:
        if t.kind == "sequence":
            continue
        is_view = t.kind == "view"
        has_pk = bool(table_indexes(t)) and not is_view  # relhasindex, pg_tables.hasindexes
        nsp = ns_oid.get(t.schema, PUBLIC_NS)
        t_owner = t.owner or owner
        persistence = "t" if is_temp_schema(t.schema) else "p"  # a session's temporary relation
        add("pg_class", oid=t.oid, relname=t.name, relnamespace=nsp, reltype=0, reloftype=0,
            relowner=role_oid.get(t_owner, BOOTSTRAP_ROLE), relacl=acl("r", t.oid, t.owner),
            relam=0 if is_view else 2, relfilenode=0 if is_view else t.oid,
            reltablespace=0, relpages=0, reltuples=-1.0, relallvisible=0, reltoastrelid=0,
            relhasindex=has_pk, relisshared=False, relpersistence=persistence, relkind="v" if is_view else "r",
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
                attnotnull=(c.not_null or (c.name in t.primary_key and not t.time_index)) and not is_view,
                atthasdef=c.default is not None and c.identity is None, atthasmissing=False,
                attidentity=c.identity or "", attgenerated="",
                attisdropped=False, attislocal=True, attinhcount=0,
                attcollation=100 if ct.pg.category == "S" and not ct.is_array else 0)
            if c.default is not None and c.identity is None:
                add("pg_attrdef", oid=2 * SYNTHETIC_BASE + t.oid * 1000 + i,
                    adrelid=t.oid, adnum=i, adbin=c.default)
            if c.comment is not None:
                add("pg_description", objoid=t.oid, classoid=1259, objsubid=i, description=c.comment)
            add("columns", "information_schema", **information_schema_column(t, db, i, owned.get((t.oid, c.name))))
        add("tables", "information_schema", table_catalog=db, table_schema=t.schema, table_name=t.name,
            table_type="LOCAL TEMPORARY" if persistence == "t" else ("VIEW" if is_view else "BASE TABLE"), is_insertable_into="NO" if is_view else "YES",
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
        positions = {c.name: i for i, c in enumerate(t.columns, 1)}
        for ix in table_indexes(t):
            keys = [positions[k] for k in ix.columns if k in positions]
            add("pg_class", oid=ix.oid, relname=ix.name, relnamespace=nsp, reltype=0, reloftype=0,
                relowner=role_oid.get(t_owner, BOOTSTRAP_ROLE), relam=403, relfilenode=ix.oid, reltablespace=0,
                relpages=1, reltuples=0.0, relallvisible=0, reltoastrelid=0, relhasindex=False, relisshared=False,
                relpersistence=persistence, relkind="i", relnatts=len(keys), relchecks=0, relhasrules=False,
                relhastriggers=False, relhassubclass=False, relrowsecurity=False,
                relforcerowsecurity=False, relispopulated=True, relreplident="n", relispartition=False,
                relrewrite=0, relfrozenxid=0, relminmxid=0)
            for j, k in enumerate(keys, start=1):
                kc = t.columns[k - 1]
                add("pg_attribute", attrelid=ix.oid, attname=kc.name, atttypid=kc.type.pg.oid, attstattarget=-1,
                    attlen=kc.type.pg.typlen, attnum=j, attndims=0, attcacheoff=-1, atttypmod=kc.type.typmod,
                    attbyval=kc.type.pg.typlen in (1, 2, 4, 8), attalign="i", attstorage="p",
                    attcompression="", attnotnull=False, atthasdef=False, atthasmissing=False,
                    attidentity="", attgenerated="", attisdropped=False, attislocal=True, attinhcount=0,
                    attcollation=0)
            add("pg_index", indexrelid=ix.oid, indrelid=t.oid, indnatts=len(keys), indnkeyatts=len(keys),
                indisunique=ix.unique, indnullsnotdistinct=False, indisprimary=ix.primary, indisexclusion=False,
                indimmediate=True, indisclustered=False, indisvalid=True, indcheckxmin=False,
                indisready=True, indislive=True, indisreplident=False, indkey=keys,
                indcollation=[100 if t.columns[k - 1].type.pg.category == "S" else 0 for k in keys],
                indclass=[1978] * len(keys),
                indoption=[(1 if "DESC" in o else 0) + (2 if ("NULLS FIRST" in o or ("DESC" in o and "NULLS LAST" not in o)) else 0)
                           for o in ix.options[:len(keys)]])
            add("pg_indexes", schemaname=t.schema, tablename=t.name, indexname=ix.name,
                indexdef=index_definition(t, qualify=True, name=None if ix.primary else ix.name))
            if ix.constraint_oid is None:
                continue
            add("pg_constraint", oid=ix.constraint_oid, conname=ix.name, connamespace=nsp,
                contype="p" if ix.primary else "u", condeferrable=False,
                condeferred=False, convalidated=True, conrelid=t.oid, contypid=0, conindid=ix.oid,
                conparentid=0, confrelid=0, confupdtype=" ", confdeltype=" ", confmatchtype=" ",
                conislocal=True, coninhcount=0, connoinherit=True, conkey=keys)
            _constraint_usage_rows(add, db, t, ix.name, "PRIMARY KEY" if ix.primary else "UNIQUE", ix.columns)
        by_oid = {x.oid: x for x in relations}
        for con in t.constraints:
            if con["type"] != "f":
                continue
            parent = by_oid.get(con.get("ref_oid") or t.oid, t)
            ppos = {c.name: i for i, c in enumerate(parent.columns, 1)}
            pix = next((ix for ix in table_indexes(parent) if sorted(ix.columns) == sorted(con["ref_columns"])
                        and ix.unique), None)
            add("pg_constraint", oid=extra_oid(t, con["n"]) + 1, conname=con["name"], connamespace=nsp,
                contype="f", condeferrable=False, condeferred=False, convalidated=True, conrelid=t.oid,
                contypid=0, conindid=pix.oid if pix else 0, conparentid=0, confrelid=parent.oid,
                confupdtype=con.get("on_update", "a"), confdeltype=con.get("on_delete", "a"), confmatchtype="s",
                conislocal=True, coninhcount=0, connoinherit=True,
                conkey=[positions[k] for k in con["columns"] if k in positions],
                confkey=[ppos[k] for k in con["ref_columns"] if k in ppos],
                conpfeqop=[96] * len(con["columns"]), conppeqop=[96] * len(con["columns"]),
                conffeqop=[96] * len(con["columns"]))
            _constraint_usage_rows(add, db, t, con["name"], "FOREIGN KEY", con["columns"], parent, con["ref_columns"])
            rules = {"a": "NO ACTION", "r": "RESTRICT"}
            add("referential_constraints", "information_schema", constraint_catalog=db, constraint_schema=t.schema,
                constraint_name=con["name"], unique_constraint_catalog=db if pix else None,
                unique_constraint_schema=parent.schema if pix else None,
                unique_constraint_name=pix.name if pix else None, match_option="NONE",
                update_rule=rules.get(con.get("on_update", "a")), delete_rule=rules.get(con.get("on_delete", "a")))
        for c in t.columns:
            if c.not_null or (c.name in t.primary_key and not t.time_index):  # time-series tags may be NULL
                cname = f"{nsp}_{t.oid}_{t.columns.index(c) + 1}_not_null"
                add("table_constraints", "information_schema", constraint_catalog=db,
                    constraint_schema=t.schema, constraint_name=cname, table_catalog=db,
                    table_schema=t.schema, table_name=t.name, constraint_type="CHECK", is_deferrable="NO",
                    initially_deferred="NO", enforced="YES", nulls_distinct=None)
                add("check_constraints", "information_schema", constraint_catalog=db,
                    constraint_schema=t.schema, constraint_name=cname,
                    check_clause=f"{quote_ident(c.name)} IS NOT NULL")
    rows[("pg_catalog", "pg_sequences")] = pg_sequences_rows(catalog, owner)
    return rows


def _constraint_usage_rows(add: Any, db: str, t: TableDef, name: str, kind: str, columns: list[str],
                           parent: TableDef | None = None, ref_columns: list[str] | None = None) -> None:
    """information_schema rows of a PRIMARY KEY / UNIQUE / FOREIGN KEY constraint."""
    add("table_constraints", "information_schema", constraint_catalog=db, constraint_schema=t.schema,
        constraint_name=name, table_catalog=db, table_schema=t.schema, table_name=t.name,
        constraint_type=kind, is_deferrable="NO", initially_deferred="NO", enforced="YES",
        nulls_distinct="YES" if kind != "FOREIGN KEY" else None)
    for j, k in enumerate(columns, start=1):
        position = None
        if parent is not None and ref_columns:
            pk_cols = ref_columns
            position = pk_cols.index(ref_columns[j - 1]) + 1 if j <= len(ref_columns) else None
        add("key_column_usage", "information_schema", constraint_catalog=db, constraint_schema=t.schema,
            constraint_name=name, table_catalog=db, table_schema=t.schema, table_name=t.name,
            column_name=k, ordinal_position=j, position_in_unique_constraint=position)
    used, used_cols = (parent, ref_columns) if parent is not None else (t, columns)
    for k in used_cols or []:
        add("constraint_column_usage", "information_schema", table_catalog=db, table_schema=used.schema,
            table_name=used.name, column_name=k, constraint_catalog=db, constraint_schema=t.schema,
            constraint_name=name)
    add("constraint_table_usage", "information_schema", table_catalog=db, table_schema=used.schema,
        table_name=used.name, constraint_catalog=db, constraint_schema=t.schema, constraint_name=name)


def sequence_last_values(catalog: Catalog) -> dict[int, int | None]:
    """pg_sequences.last_value per sequence oid: NULL until the first nextval (or setval)."""
    values = getattr(catalog, "sequences", None)
    out: dict[int, int | None] = {}
    for t in catalog.list_tables(kind="sequence"):
        last, called = values.state(t) if values is not None else (0, False)
        out[t.oid] = last if called else None
    return out


def pg_sequences_rows(catalog: Catalog, owner: str = "tidegate") -> list[dict[str, Any]]:
    """The pg_sequences view (its last_value moves without a catalog change: built per query)."""
    last = sequence_last_values(catalog)
    rows = []
    for t in sorted(catalog.list_tables(kind="sequence"), key=lambda x: (x.schema, x.name)):
        p = SequenceParams.of(t)
        rows.append(dict(schemaname=t.schema, sequencename=t.name, sequenceowner=t.owner or owner,
                         data_type=SEQUENCE_TYPE_NAMES[p.type], start_value=p.start, min_value=p.min,
                         max_value=p.max, increment_by=p.increment, cycle=p.cycle, cache_size=p.cache,
                         last_value=last.get(t.oid)))
    return rows


def _sequence_catalog_rows(t: TableDef, p: SequenceParams, by_oid: dict[int, TableDef], nsp: int, owner_oid: int,
                           relacl: Any, db: str, add: Any) -> None:
    add("pg_class", oid=t.oid, relname=t.name, relnamespace=nsp, reltype=0, reloftype=0, relowner=owner_oid,
        relacl=relacl, relam=0, relfilenode=t.oid, reltablespace=0, relpages=1, reltuples=1.0, relallvisible=0,
        reltoastrelid=0, relhasindex=False, relisshared=False, relpersistence="t" if is_temp_schema(t.schema) else "p", relkind="S", relnatts=3,
        relchecks=0, relhasrules=False, relhastriggers=False, relhassubclass=False, relrowsecurity=False,
        relforcerowsecurity=False, relispopulated=True, relreplident="n", relispartition=False, relrewrite=0,
        relfrozenxid=0, relminmxid=0)
    for i, (name, typ) in enumerate([("last_value", 20), ("log_cnt", 20), ("is_called", 16)], start=1):
        add("pg_attribute", attrelid=t.oid, attname=name, atttypid=typ, attstattarget=-1, attlen=8 if typ == 20 else 1,
            attnum=i, attndims=0, attcacheoff=-1, atttypmod=-1, attbyval=True, attalign="d" if typ == 20 else "c",
            attstorage="p", attcompression="", attnotnull=True, atthasdef=False, atthasmissing=False,
            attidentity="", attgenerated="", attisdropped=False, attislocal=True, attinhcount=0, attcollation=0)
    add("pg_sequence", seqrelid=t.oid, seqtypid=SEQUENCE_TYPE_OIDS[p.type], seqstart=p.start,
        seqincrement=p.increment, seqmax=p.max, seqmin=p.min, seqcache=p.cache, seqcycle=p.cycle)
    tname = SEQUENCE_TYPE_NAMES[p.type]
    add("sequences", "information_schema", sequence_catalog=db, sequence_schema=t.schema, sequence_name=t.name,
        data_type=tname, numeric_precision={"int2": 16, "int4": 32, "int8": 64}[p.type], numeric_precision_radix=2,
        numeric_scale=0, start_value=str(p.start), minimum_value=str(p.min), maximum_value=str(p.max),
        increment=str(p.increment), cycle_option="YES" if p.cycle else "NO")
    if t.comment is not None:
        add("pg_description", objoid=t.oid, classoid=1259, objsubid=0, description=t.comment)
    if p.owned_by is not None:
        table = by_oid.get(p.owned_by[0])
        col = table.column(p.owned_by[1]) if table is not None else None
        if col is not None:
            add("pg_depend", classid=1259, objid=t.oid, objsubid=0, refclassid=1259, refobjid=table.oid,
                refobjsubid=table.columns.index(col) + 1, deptype="i" if col.identity is not None else "a")


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")

def quote_ident(name: str) -> str:
    """PostgreSQL's quote_ident: quote unless all lower-case letters, digits, underscores."""
    if name and (name[0].isalpha() or name[0] == "_") and all(ch in _SAFE for ch in name) \
            and not pg_keywords.needs_quoting(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def index_definition(t: TableDef, column: int = 0, qualify: bool = True, name: str | None = None) -> str:
    """pg_get_indexdef of a table's index ``name`` (None: the primary key's); ``column`` > 0: that
    key column's name.

    Like PostgreSQL, the table is schema-qualified only when it is not visible on search_path."""
    entry = next((i for i in table_indexes(t) if i.name == name), None) if name is not None else None
    keys = entry.columns if entry is not None else t.primary_key
    if column > 0:
        return quote_ident(keys[column - 1]) if column <= len(keys) else ""
    options = entry.options if entry is not None else [""] * len(keys)
    cols = ", ".join(quote_ident(k) + (f" {o}" if o else "") for k, o in zip(keys, options))
    table = f"{quote_ident(t.schema)}.{quote_ident(t.name)}" if qualify else quote_ident(t.name)
    unique = entry is None or entry.unique
    return (f"CREATE {'UNIQUE ' if unique else ''}INDEX {quote_ident(name or pk_name(t))} ON {table} "
            f"USING btree ({cols})")


def constraint_definition(t: TableDef, name: str | None = None) -> str:
    """pg_get_constraintdef of a table's constraint ``name`` (None: its primary key)."""
    con = next((c for c in t.constraints if c["name"] == name), None) if name is not None else None
    if con is None:
        return "PRIMARY KEY (" + ", ".join(quote_ident(k) for k in t.primary_key) + ")"
    cols = ", ".join(quote_ident(k) for k in con["columns"])
    if con["type"] == "u":
        return f"UNIQUE ({cols})"
    ref_schema, ref_table = con["ref"]
    target = quote_ident(ref_table) if ref_schema in ("public", t.schema) else f"{quote_ident(ref_schema)}.{quote_ident(ref_table)}"
    out = f"FOREIGN KEY ({cols}) REFERENCES {target}({', '.join(quote_ident(k) for k in con['ref_columns'])})"
    if con.get("on_update") == "r":
        out += " ON UPDATE RESTRICT"
    if con.get("on_delete") == "r":
        out += " ON DELETE RESTRICT"
    return out


@dataclass(frozen=True)
class IndexEntry:
    """One index of a table as the catalogs show it (the PK's, a UNIQUE constraint's, CREATE INDEX's)."""

    name: str
    oid: int
    columns: list[str]
    options: list[str]
    unique: bool
    primary: bool
    constraint_oid: int | None  # the constraint the index implements (PK, UNIQUE)


def extra_oid(table: TableDef, n: int) -> int:
    """OIDs of a table's n-th UNIQUE/FOREIGN KEY constraint or CREATE INDEX (index: even, constraint: +1)."""
    return 3 * SYNTHETIC_BASE + table.oid * 256 + 2 * n


def table_indexes(t: TableDef) -> list[IndexEntry]:
    if t.kind != "table":
        return []
    out = []
    if t.primary_key:
        out.append(IndexEntry(pk_name(t), index_oid(t), list(t.primary_key), [""] * len(t.primary_key),
                              True, True, constraint_oid(t)))
    for c in t.constraints:
        if c["type"] == "u":
            out.append(IndexEntry(c["name"], extra_oid(t, c["n"]), list(c["columns"]), [""] * len(c["columns"]),
                                  True, False, extra_oid(t, c["n"]) + 1))
    for i in t.indexes:
        out.append(IndexEntry(i["name"], extra_oid(t, i["n"]), list(i["columns"]),
                              list(i.get("options") or [""] * len(i["columns"])), i["unique"], False, None))
    return out


# ---------------------------------------------------------------------------------------------
# pg_proc and the regproc columns of pg_type
#
# Taken from PostgreSQL 15's catalog (same OIDs, so ``typreceive::oid``, ``'abs'::regproc`` and
# clients' cached constants agree with PostgreSQL): the functions tidegate answers (the engine's
# allow-list, the catalog path's session and catalog functions) and the types' I/O functions.
# Only signatures over types tidegate knows are kept. One function a line:
#   oid name <prokind><proretset><provolatile><proisstrict> prolang prorettype proargtypes
#   pronargdefaults provariadic proallargtypes/proargmodes/proargnames ('-': none)
#   prosrc (the rest of the line; '=': the name, '-': empty)
_PG_PROC = """
31 byteaout ffit 12 2275 17 0 0 - =
33 charout ffit 12 2275 18 0 0 - =
34 namein ffit 12 19 2275 0 0 - =
35 nameout ffit 12 2275 19 0 0 - =
38 int2in ffit 12 21 2275 0 0 - =
39 int2out ffit 12 2275 21 0 0 - =
40 int2vectorin ffit 12 22 2275 0 0 - =
41 int2vectorout ffit 12 2275 22 0 0 - =
42 int4in ffit 12 23 2275 0 0 - =
43 int4out ffit 12 2275 23 0 0 - =
44 regprocin ffst 12 24 2275 0 0 - =
45 regprocout ffst 12 2275 24 0 0 - =
46 textin ffit 12 25 2275 0 0 - =
47 textout ffit 12 2275 25 0 0 - =
54 oidvectorin ffit 12 30 2275 0 0 - =
55 oidvectorout ffit 12 2275 30 0 0 - =
89 version ffst 12 25 - 0 0 - pgsql_version
109 unknownin ffit 12 705 2275 0 0 - =
110 unknownout ffit 12 2275 705 0 0 - =
195 pg_node_tree_in ffit 12 194 2275 0 0 - =
196 pg_node_tree_out ffit 12 2275 194 0 0 - =
197 pg_node_tree_recv ffst 12 194 2281 0 0 - =
198 pg_node_tree_send ffst 12 17 194 0 0 - =
200 float4in ffit 12 700 2275 0 0 - =
201 float4out ffit 12 2275 700 0 0 - =
214 float8in ffit 12 701 2275 0 0 - =
215 float8out ffit 12 2275 701 0 0 - =
315 pg_jit_available ffvt 12 16 - 0 0 - =
320 width_bucket ffit 12 23 701,701,701,23 0 0 - width_bucket_float8
321 json_in ffit 12 114 2275 0 0 - =
322 json_out ffit 12 2275 114 0 0 - =
323 json_recv ffit 12 114 2281 0 0 - =
324 json_send ffit 12 17 114 0 0 - =
378 array_append ffif 12 5078 5078,5077 0 0 - =
384 array_to_string ffsf 12 25 2277,25,25 0 0 - array_to_text_null
395 array_to_string ffst 12 25 2277,25 0 0 - array_to_text
460 int8in ffit 12 20 2275 0 0 - =
461 int8out ffit 12 2275 20 0 0 - =
720 octet_length ffit 12 23 17 0 0 - byteaoctetlen
745 current_user ffst 12 19 - 0 0 - =
746 session_user ffst 12 19 - 0 0 - =
749 overlay ffit 12 17 17,17,23,23 0 0 - byteaoverlay
750 array_in ffst 12 2277 2275,26,23 0 0 - =
751 array_out ffst 12 2275 2277 0 0 - =
752 overlay ffit 12 17 17,17,23 0 0 - byteaoverlay_no_len
810 pg_client_encoding ffst 12 19 - 0 0 - =
849 position ffit 12 23 25,25 0 0 - textpos
861 current_database ffst 12 19 - 0 0 - =
868 strpos ffit 12 23 25,25 0 0 - textpos
870 lower ffit 12 25 25 0 0 - =
871 upper ffit 12 25 25 0 0 - =
872 initcap ffit 12 25 25 0 0 - =
873 lpad ffit 12 25 25,23,25 0 0 - =
874 rpad ffit 12 25 25,23,25 0 0 - =
875 ltrim ffit 12 25 25,25 0 0 - =
876 rtrim ffit 12 25 25,25 0 0 - =
877 substr ffit 12 25 25,23,23 0 0 - text_substr
878 translate ffit 12 25 25,25,25 0 0 - =
879 lpad ffit 14 25 25,23 0 0 - -
880 rpad ffit 14 25 25,23 0 0 - -
881 ltrim ffit 12 25 25 0 0 - ltrim1
882 rtrim ffit 12 25 25 0 0 - rtrim1
883 substr ffit 12 25 25,23 0 0 - text_substr_no_len
884 btrim ffit 12 25 25,25 0 0 - =
885 btrim ffit 12 25 25 0 0 - btrim1
910 inet_in ffit 12 869 2275 0 0 - =
911 inet_out ffit 12 2275 869 0 0 - =
936 substring ffit 12 25 25,23,23 0 0 - text_substr
937 substring ffit 12 25 25,23 0 0 - text_substr_no_len
938 generate_series ftit 12 1114 1114,1114,1186 0 0 - generate_series_timestamp
939 generate_series ftst 12 1184 1184,1184,1186 0 0 - generate_series_timestamptz
940 mod ffit 12 21 21,21 0 0 - int2mod
941 mod ffit 12 23 23,23 0 0 - int4mod
947 mod ffit 12 20 20,20 0 0 - int8mod
1044 bpcharin ffit 12 1042 2275,26,23 0 0 - =
1045 bpcharout ffit 12 2275 1042 0 0 - =
1046 varcharin ffit 12 1043 2275,26,23 0 0 - =
1047 varcharout ffit 12 2275 1043 0 0 - =
1066 generate_series ftit 12 23 23,23,23 0 0 - generate_series_step_int4
1067 generate_series ftit 12 23 23,23 0 0 - generate_series_int4
1068 generate_series ftit 12 20 20,20,20 0 0 - generate_series_step_int8
1069 generate_series ftit 12 20 20,20 0 0 - generate_series_int8
1081 format_type ffsf 12 25 26,23 0 0 - =
1084 date_in ffst 12 1082 2275 0 0 - =
1085 date_out ffst 12 2275 1082 0 0 - =
1143 time_in ffst 12 1083 2275,26,23 0 0 - =
1144 time_out ffit 12 2275 1083 0 0 - =
1150 timestamptz_in ffst 12 1184 2275,26,23 0 0 - =
1151 timestamptz_out ffst 12 2275 1184 0 0 - =
1158 to_timestamp ffit 12 1184 701 0 0 - float8_timestamptz
1160 interval_in ffst 12 1186 2275,26,23 0 0 - =
1161 interval_out ffst 12 2275 1186 0 0 - =
1171 date_part ffst 12 701 25,1184 0 0 - timestamptz_part
1172 date_part ffit 12 701 25,1186 0 0 - interval_part
1194 log10 ffit 12 701 701 0 0 - dlog10
1215 obj_description ffst 14 25 26,19 0 0 - -
1216 col_description ffst 14 25 26,23 0 0 - -
1217 date_trunc ffst 12 1184 25,1184 0 0 - timestamptz_trunc
1218 date_trunc ffit 12 1186 25,1186 0 0 - interval_trunc
1242 boolin ffit 12 16 2275 0 0 - =
1243 boolout ffit 12 2275 16 0 0 - =
1244 byteain ffit 12 17 2275 0 0 - =
1245 charin ffit 12 18 2275 0 0 - =
1264 pg_char_to_encoding ffst 12 23 19 0 0 - PG_char_to_encoding
1282 quote_ident ffit 12 25 25 0 0 - =
1283 quote_literal ffit 12 25 25 0 0 - =
1284 date_trunc ffst 12 1184 25,1184,25 0 0 - timestamptz_trunc_zone
1285 quote_literal ffst 14 25 2283 0 0 - select pg_catalog.quote_literal($1::pg_catalog.text)
1289 quote_nullable ffif 12 25 25 0 0 - =
1290 quote_nullable ffsf 14 25 2283 0 0 - select pg_catalog.quote_nullable($1::pg_catalog.text)
1299 now ffst 12 1184 - 0 0 - =
1312 timestamp_in ffst 12 1114 2275,26,23 0 0 - =
1313 timestamp_out ffst 12 2275 1114 0 0 - =
1317 length ffit 12 23 25 0 0 - textlen
1318 length ffit 12 23 1042 0 0 - bpcharlen
1340 log ffit 12 701 701 0 0 - dlog10
1341 ln ffit 12 701 701 0 0 - dlog1
1342 round ffit 12 701 701 0 0 - dround
1343 trunc ffit 12 701 701 0 0 - dtrunc
1344 sqrt ffit 12 701 701 0 0 - dsqrt
1345 cbrt ffit 12 701 701 0 0 - dcbrt
1346 pow ffit 12 701 701,701 0 0 - dpow
1347 exp ffit 12 701 701 0 0 - dexp
1348 obj_description ffst 14 25 26 0 0 - -
1367 character_length ffit 12 23 1042 0 0 - bpcharlen
1368 power ffit 12 701 701,701 0 0 - dpow
1369 character_length ffit 12 23 25 0 0 - textlen
1372 char_length ffit 12 23 1042 0 0 - bpcharlen
1374 octet_length ffit 12 23 25 0 0 - textoctetlen
1375 octet_length ffit 12 23 1042 0 0 - bpcharoctetlen
1376 factorial ffit 12 1700 20 0 0 - numeric_fac
1381 char_length ffit 12 23 25 0 0 - textlen
1384 date_part ffit 14 701 25,1082 0 0 - -
1385 date_part ffit 12 701 25,1083 0 0 - time_part
1387 pg_get_constraintdef ffst 12 25 26 0 0 - =
1394 abs ffit 12 700 700 0 0 - float4abs
1395 abs ffit 12 701 701 0 0 - float8abs
1396 abs ffit 12 20 20 0 0 - int8abs
1397 abs ffit 12 23 23 0 0 - int4abs
1398 abs ffit 12 21 21 0 0 - int2abs
1402 current_schema ffst 12 19 - 0 0 - =
1403 current_schemas ffst 12 1003 16 0 0 - =
1404 overlay ffit 12 25 25,25,23,23 0 0 - textoverlay
1405 overlay ffit 12 25 25,25,23 0 0 - textoverlay_no_len
1481 log10 ffit 14 1700 1700 0 0 - -
1573 pg_get_ruledef ffst 12 25 26 0 0 - =
1597 pg_encoding_to_char ffst 12 19 23 0 0 - PG_encoding_to_char
1598 random ffvt 12 701 - 0 0 - drandom
1600 asin ffit 12 701 701 0 0 - dasin
1601 acos ffit 12 701 701 0 0 - dacos
1602 atan ffit 12 701 701 0 0 - datan
1603 atan2 ffit 12 701 701,701 0 0 - datan2
1604 sin ffit 12 701 701 0 0 - dsin
1605 cos ffit 12 701 701 0 0 - dcos
1606 tan ffit 12 701 701 0 0 - dtan
1607 cot ffit 12 701 701 0 0 - dcot
1608 degrees ffit 12 701 701 0 0 - =
1609 radians ffit 12 701 701 0 0 - =
1610 pi ffit 12 701 - 0 0 - dpi
1620 ascii ffit 12 23 25 0 0 - =
1621 chr ffit 12 25 23 0 0 - =
1622 repeat ffit 12 25 25,23 0 0 - =
1640 pg_get_viewdef ffst 12 25 25 0 0 - pg_get_viewdef_name
1641 pg_get_viewdef ffst 12 25 26 0 0 - =
1642 pg_get_userbyid ffst 12 19 26 0 0 - =
1643 pg_get_indexdef ffst 12 25 26 0 0 - =
1662 pg_get_triggerdef ffst 12 25 26 0 0 - =
1665 pg_get_serial_sequence ffst 12 25 25,25 0 0 - =
1686 pg_get_keywords ftst 12 2249 - 0 0 25,18,16,25,25/o,o,o,o,o/word,catcode,barelabel,catdesc,baredesc =
1701 numeric_in ffit 12 1700 2275,26,23 0 0 - =
1702 numeric_out ffit 12 2275 1700 0 0 - =
1705 abs ffit 12 1700 1700 0 0 - numeric_abs
1706 sign ffit 12 1700 1700 0 0 - numeric_sign
1707 round ffit 12 1700 1700,23 0 0 - numeric_round
1708 round ffit 14 1700 1700 0 0 - -
1709 trunc ffit 12 1700 1700,23 0 0 - numeric_trunc
1710 trunc ffit 14 1700 1700 0 0 - -
1711 ceil ffit 12 1700 1700 0 0 - numeric_ceil
1712 floor ffit 12 1700 1700 0 0 - numeric_floor
1713 length ffst 12 23 17,19 0 0 - length_in_encoding
1716 pg_get_expr ffst 12 25 194,26 0 0 - =
1728 mod ffit 12 1700 1700,1700 0 0 - numeric_mod
1730 sqrt ffit 12 1700 1700 0 0 - numeric_sqrt
1732 exp ffit 12 1700 1700 0 0 - numeric_exp
1734 ln ffit 12 1700 1700 0 0 - numeric_ln
1736 log ffit 12 1700 1700,1700 0 0 - numeric_log
1738 pow ffit 12 1700 1700,1700 0 0 - numeric_power
1741 log ffit 14 1700 1700 0 0 - -
1768 to_char ffst 12 25 1186,25 0 0 - interval_to_char
1770 to_char ffst 12 25 1184,25 0 0 - timestamptz_to_char
1772 to_char ffst 12 25 1700,25 0 0 - numeric_to_char
1773 to_char ffst 12 25 23,25 0 0 - int4_to_char
1774 to_char ffst 12 25 20,25 0 0 - int8_to_char
1775 to_char ffst 12 25 700,25 0 0 - float4_to_char
1776 to_char ffst 12 25 701,25 0 0 - float8_to_char
1778 to_timestamp ffst 12 1184 25,25 0 0 - =
1780 to_date ffst 12 1082 25,25 0 0 - =
1798 oidin ffit 12 26 2275 0 0 - =
1799 oidout ffit 12 2275 26 0 0 - =
1810 bit_length ffit 14 23 17 0 0 - -
1811 bit_length ffit 14 23 25 0 0 - -
1922 has_table_privilege ffst 12 16 19,25,25 0 0 - has_table_privilege_name_name
1923 has_table_privilege ffst 12 16 19,26,25 0 0 - has_table_privilege_name_id
1924 has_table_privilege ffst 12 16 26,25,25 0 0 - has_table_privilege_id_name
1925 has_table_privilege ffst 12 16 26,26,25 0 0 - has_table_privilege_id_id
1926 has_table_privilege ffst 12 16 25,25 0 0 - has_table_privilege_name
1927 has_table_privilege ffst 12 16 26,25 0 0 - has_table_privilege_id
1928 pg_stat_get_numscans ffst 12 20 26 0 0 - =
1973 div ffit 12 1700 1700,1700 0 0 - numeric_div_trunc
1993 shobj_description ffst 14 25 26,19 0 0 - -
2010 length ffit 12 23 17 0 0 - byteaoctetlen
2012 substring ffit 12 17 17,23,23 0 0 - bytea_substr
2013 substring ffit 12 17 17,23 0 0 - bytea_substr_no_len
2014 position ffit 12 23 17,17 0 0 - byteapos
2015 btrim ffit 12 17 17,17 0 0 - byteatrim
2020 date_trunc ffit 12 1114 25,1114 0 0 - timestamp_trunc
2021 date_part ffit 12 701 25,1114 0 0 - timestamp_part
2026 pg_backend_pid ffst 12 23 - 0 0 - =
2049 to_char ffst 12 25 1114,25 0 0 - timestamp_to_char
2050 max afif 12 2277 2277 0 0 - aggregate_dummy
2051 min afif 12 2277 2277 0 0 - aggregate_dummy
2073 substring ffit 12 25 25,25 0 0 - textregexsubstr
2074 substring ffit 14 25 25,25,25 0 0 - -
2077 current_setting ffst 12 25 25 0 0 - show_config_by_name
2078 set_config ffvf 12 25 25,25,16 0 0 - set_config_by_name
2079 pg_table_is_visible ffst 12 16 26 0 0 - =
2080 pg_type_is_visible ffst 12 16 26 0 0 - =
2081 pg_function_is_visible ffst 12 16 26 0 0 - =
2082 pg_operator_is_visible ffst 12 16 26 0 0 - =
2083 pg_opclass_is_visible ffst 12 16 26 0 0 - =
2085 substr ffit 12 17 17,23,23 0 0 - bytea_substr
2086 substr ffit 12 17 17,23 0 0 - bytea_substr_no_len
2087 replace ffit 12 25 25,25,25 0 0 - replace_text
2088 split_part ffit 12 25 25,25,23 0 0 - =
2089 to_hex ffit 12 25 23 0 0 - to_hex32
2090 to_hex ffit 12 25 20 0 0 - to_hex64
2091 array_lower ffit 12 23 2277,23 0 0 - =
2092 array_upper ffit 12 23 2277,23 0 0 - =
2093 pg_conversion_is_visible ffst 12 16 26 0 0 - =
2100 avg afif 12 1700 20 0 0 - aggregate_dummy
2101 avg afif 12 1700 23 0 0 - aggregate_dummy
2102 avg afif 12 1700 21 0 0 - aggregate_dummy
2103 avg afif 12 1700 1700 0 0 - aggregate_dummy
2104 avg afif 12 701 700 0 0 - aggregate_dummy
2105 avg afif 12 701 701 0 0 - aggregate_dummy
2106 avg afif 12 1186 1186 0 0 - aggregate_dummy
2107 sum afif 12 1700 20 0 0 - aggregate_dummy
2108 sum afif 12 20 23 0 0 - aggregate_dummy
2109 sum afif 12 20 21 0 0 - aggregate_dummy
2110 sum afif 12 700 700 0 0 - aggregate_dummy
2111 sum afif 12 701 701 0 0 - aggregate_dummy
2113 sum afif 12 1186 1186 0 0 - aggregate_dummy
2114 sum afif 12 1700 1700 0 0 - aggregate_dummy
2115 max afif 12 20 20 0 0 - aggregate_dummy
2116 max afif 12 23 23 0 0 - aggregate_dummy
2117 max afif 12 21 21 0 0 - aggregate_dummy
2118 max afif 12 26 26 0 0 - aggregate_dummy
2119 max afif 12 700 700 0 0 - aggregate_dummy
2120 max afif 12 701 701 0 0 - aggregate_dummy
2122 max afif 12 1082 1082 0 0 - aggregate_dummy
2123 max afif 12 1083 1083 0 0 - aggregate_dummy
2126 max afif 12 1114 1114 0 0 - aggregate_dummy
2127 max afif 12 1184 1184 0 0 - aggregate_dummy
2128 max afif 12 1186 1186 0 0 - aggregate_dummy
2129 max afif 12 25 25 0 0 - aggregate_dummy
2130 max afif 12 1700 1700 0 0 - aggregate_dummy
2131 min afif 12 20 20 0 0 - aggregate_dummy
2132 min afif 12 23 23 0 0 - aggregate_dummy
2133 min afif 12 21 21 0 0 - aggregate_dummy
2134 min afif 12 26 26 0 0 - aggregate_dummy
2135 min afif 12 700 700 0 0 - aggregate_dummy
2136 min afif 12 701 701 0 0 - aggregate_dummy
2138 min afif 12 1082 1082 0 0 - aggregate_dummy
2139 min afif 12 1083 1083 0 0 - aggregate_dummy
2142 min afif 12 1114 1114 0 0 - aggregate_dummy
2143 min afif 12 1184 1184 0 0 - aggregate_dummy
2144 min afif 12 1186 1186 0 0 - aggregate_dummy
2145 min afif 12 25 25 0 0 - aggregate_dummy
2146 min afif 12 1700 1700 0 0 - aggregate_dummy
2147 count afif 12 20 2276 0 0 - aggregate_dummy
2148 variance afif 12 1700 20 0 0 - aggregate_dummy
2149 variance afif 12 1700 23 0 0 - aggregate_dummy
2150 variance afif 12 1700 21 0 0 - aggregate_dummy
2151 variance afif 12 701 700 0 0 - aggregate_dummy
2152 variance afif 12 701 701 0 0 - aggregate_dummy
2153 variance afif 12 1700 1700 0 0 - aggregate_dummy
2154 stddev afif 12 1700 20 0 0 - aggregate_dummy
2155 stddev afif 12 1700 23 0 0 - aggregate_dummy
2156 stddev afif 12 1700 21 0 0 - aggregate_dummy
2157 stddev afif 12 701 700 0 0 - aggregate_dummy
2158 stddev afif 12 701 701 0 0 - aggregate_dummy
2159 stddev afif 12 1700 1700 0 0 - aggregate_dummy
2162 pg_get_function_arguments ffst 12 25 26 0 0 - =
2165 pg_get_function_result ffst 12 25 26 0 0 - =
2167 ceiling ffit 12 1700 1700 0 0 - numeric_ceil
2168 pg_database_size ffvt 12 20 19 0 0 - pg_database_size_name
2169 power ffit 12 1700 1700,1700 0 0 - numeric_power
2170 width_bucket ffit 12 23 1700,1700,1700,23 0 0 - width_bucket_numeric
2176 array_length ffit 12 23 2277,23 0 0 - =
2181 has_sequence_privilege ffst 12 16 19,25,25 0 0 - has_sequence_privilege_name_name
2182 has_sequence_privilege ffst 12 16 19,26,25 0 0 - has_sequence_privilege_name_id
2183 has_sequence_privilege ffst 12 16 26,25,25 0 0 - has_sequence_privilege_id_name
2184 has_sequence_privilege ffst 12 16 26,26,25 0 0 - has_sequence_privilege_id_id
2185 has_sequence_privilege ffst 12 16 25,25 0 0 - has_sequence_privilege_name
2186 has_sequence_privilege ffst 12 16 26,25 0 0 - has_sequence_privilege_id
2196 inet_client_addr ffsf 12 869 - 0 0 - =
2198 inet_server_addr ffsf 12 869 - 0 0 - =
2199 inet_server_port ffsf 12 23 - 0 0 - =
2218 regclassin ffst 12 2205 2275 0 0 - =
2219 regclassout ffst 12 2275 2205 0 0 - =
2220 regtypein ffst 12 2206 2275 0 0 - =
2221 regtypeout ffst 12 2275 2206 0 0 - =
2232 pg_get_function_identity_arguments ffst 12 25 26 0 0 - =
2236 bit_and afif 12 21 21 0 0 - aggregate_dummy
2237 bit_or afif 12 21 21 0 0 - aggregate_dummy
2238 bit_and afif 12 23 23 0 0 - aggregate_dummy
2239 bit_or afif 12 23 23 0 0 - aggregate_dummy
2240 bit_and afif 12 20 20 0 0 - aggregate_dummy
2241 bit_or afif 12 20 20 0 0 - aggregate_dummy
2244 max afif 12 1042 1042 0 0 - aggregate_dummy
2245 min afif 12 1042 1042 0 0 - aggregate_dummy
2250 has_database_privilege ffst 12 16 19,25,25 0 0 - has_database_privilege_name_name
2251 has_database_privilege ffst 12 16 19,26,25 0 0 - has_database_privilege_name_id
2252 has_database_privilege ffst 12 16 26,25,25 0 0 - has_database_privilege_id_name
2253 has_database_privilege ffst 12 16 26,26,25 0 0 - has_database_privilege_id_id
2254 has_database_privilege ffst 12 16 25,25 0 0 - has_database_privilege_name
2255 has_database_privilege ffst 12 16 26,25 0 0 - has_database_privilege_id
2256 has_function_privilege ffst 12 16 19,25,25 0 0 - has_function_privilege_name_name
2257 has_function_privilege ffst 12 16 19,26,25 0 0 - has_function_privilege_name_id
2258 has_function_privilege ffst 12 16 26,25,25 0 0 - has_function_privilege_id_name
2259 has_function_privilege ffst 12 16 26,26,25 0 0 - has_function_privilege_id_id
2260 has_function_privilege ffst 12 16 25,25 0 0 - has_function_privilege_name
2261 has_function_privilege ffst 12 16 26,25 0 0 - has_function_privilege_id
2262 has_language_privilege ffst 12 16 19,25,25 0 0 - has_language_privilege_name_name
2263 has_language_privilege ffst 12 16 19,26,25 0 0 - has_language_privilege_name_id
2264 has_language_privilege ffst 12 16 26,25,25 0 0 - has_language_privilege_id_name
2265 has_language_privilege ffst 12 16 26,26,25 0 0 - has_language_privilege_id_id
2266 has_language_privilege ffst 12 16 25,25 0 0 - has_language_privilege_name
2267 has_language_privilege ffst 12 16 26,25 0 0 - has_language_privilege_id
2268 has_schema_privilege ffst 12 16 19,25,25 0 0 - has_schema_privilege_name_name
2269 has_schema_privilege ffst 12 16 19,26,25 0 0 - has_schema_privilege_name_id
2270 has_schema_privilege ffst 12 16 26,25,25 0 0 - has_schema_privilege_id_name
2271 has_schema_privilege ffst 12 16 26,26,25 0 0 - has_schema_privilege_id_id
2272 has_schema_privilege ffst 12 16 25,25 0 0 - has_schema_privilege_name
2273 has_schema_privilege ffst 12 16 26,25 0 0 - has_schema_privilege_id
2284 regexp_replace ffit 12 25 25,25,25 0 0 - textregexreplace_noopt
2285 regexp_replace ffit 12 25 25,25,25,25 0 0 - textregexreplace
2286 pg_total_relation_size ffvt 12 20 2205 0 0 - =
2288 pg_size_pretty ffit 12 25 20 0 0 - =
2290 record_in ffst 12 2249 2275,26,23 0 0 - =
2291 record_out ffst 12 2275 2249 0 0 - =
2292 cstring_in ffit 12 2275 2275 0 0 - =
2293 cstring_out ffit 12 2275 2275 0 0 - =
2294 any_in ffit 12 2276 2275 0 0 - =
2295 any_out ffit 12 2275 2276 0 0 - =
2296 anyarray_in ffit 12 2277 2275 0 0 - =
2297 anyarray_out ffst 12 2275 2277 0 0 - =
2298 void_in ffit 12 2278 2275 0 0 - =
2299 void_out ffit 12 2275 2278 0 0 - =
2304 internal_in ffif 12 2281 2275 0 0 - =
2305 internal_out ffit 12 2275 2281 0 0 - =
2308 ceil ffit 12 701 701 0 0 - dceil
2309 floor ffit 12 701 701 0 0 - dfloor
2310 sign ffit 12 701 701 0 0 - dsign
2311 md5 ffit 12 25 25 0 0 - md5_text
2312 anyelement_in ffit 12 2283 2275 0 0 - =
2313 anyelement_out ffit 12 2275 2283 0 0 - =
2320 ceiling ffit 12 701 701 0 0 - dceil
2321 md5 ffit 12 25 17 0 0 - md5_bytea
2324 pg_database_size ffvt 12 20 26 0 0 - pg_database_size_oid
2325 pg_relation_size ffvt 14 20 2205 0 0 - -
2331 unnest ftit 12 2283 2277 0 0 - array_unnest
2332 pg_relation_size ffvt 12 20 2205,25 0 0 - =
2335 array_agg afif 12 2277 2776 0 0 - aggregate_dummy
2390 has_tablespace_privilege ffst 12 16 19,25,25 0 0 - has_tablespace_privilege_name_name
2391 has_tablespace_privilege ffst 12 16 19,26,25 0 0 - has_tablespace_privilege_name_id
2392 has_tablespace_privilege ffst 12 16 26,25,25 0 0 - has_tablespace_privilege_id_name
2393 has_tablespace_privilege ffst 12 16 26,26,25 0 0 - has_tablespace_privilege_id_id
2394 has_tablespace_privilege ffst 12 16 25,25 0 0 - has_tablespace_privilege_name
2395 has_tablespace_privilege ffst 12 16 26,25 0 0 - has_tablespace_privilege_id
2400 array_recv ffst 12 2277 2281,26,23 0 0 - =
2401 array_send ffst 12 17 2277 0 0 - =
2402 record_recv ffst 12 2249 2281,26,23 0 0 - =
2403 record_send ffst 12 17 2249 0 0 - =
2404 int2recv ffit 12 21 2281 0 0 - =
2405 int2send ffit 12 17 21 0 0 - =
2406 int4recv ffit 12 23 2281 0 0 - =
2407 int4send ffit 12 17 23 0 0 - =
2408 int8recv ffit 12 20 2281 0 0 - =
2409 int8send ffit 12 17 20 0 0 - =
2410 int2vectorrecv ffit 12 22 2281 0 0 - =
2411 int2vectorsend ffit 12 17 22 0 0 - =
2412 bytearecv ffit 12 17 2281 0 0 - =
2413 byteasend ffit 12 17 17 0 0 - =
2414 textrecv ffst 12 25 2281 0 0 - =
2415 textsend ffst 12 17 25 0 0 - =
2416 unknownrecv ffit 12 705 2281 0 0 - =
2417 unknownsend ffit 12 17 705 0 0 - =
2418 oidrecv ffit 12 26 2281 0 0 - =
2419 oidsend ffit 12 17 26 0 0 - =
2420 oidvectorrecv ffit 12 30 2281 0 0 - =
2421 oidvectorsend ffit 12 17 30 0 0 - =
2422 namerecv ffst 12 19 2281 0 0 - =
2423 namesend ffst 12 17 19 0 0 - =
2424 float4recv ffit 12 700 2281 0 0 - =
2425 float4send ffit 12 17 700 0 0 - =
2426 float8recv ffit 12 701 2281 0 0 - =
2427 float8send ffit 12 17 701 0 0 - =
2430 bpcharrecv ffst 12 1042 2281,26,23 0 0 - =
2431 bpcharsend ffst 12 17 1042 0 0 - =
2432 varcharrecv ffst 12 1043 2281,26,23 0 0 - =
2433 varcharsend ffst 12 17 1043 0 0 - =
2434 charrecv ffit 12 18 2281 0 0 - =
2435 charsend ffit 12 17 18 0 0 - =
2436 boolrecv ffit 12 16 2281 0 0 - =
2437 boolsend ffit 12 17 16 0 0 - =
2444 regprocrecv ffit 12 24 2281 0 0 - =
2445 regprocsend ffit 12 17 24 0 0 - =
2452 regclassrecv ffit 12 2205 2281 0 0 - =
2453 regclasssend ffit 12 17 2205 0 0 - =
2454 regtyperecv ffit 12 2206 2281 0 0 - =
2455 regtypesend ffit 12 17 2206 0 0 - =
2460 numeric_recv ffit 12 1700 2281,26,23 0 0 - =
2461 numeric_send ffit 12 17 1700 0 0 - =
2462 sinh ffit 12 701 701 0 0 - dsinh
2463 cosh ffit 12 701 701 0 0 - dcosh
2464 tanh ffit 12 701 701 0 0 - dtanh
2468 date_recv ffit 12 1082 2281 0 0 - =
2469 date_send ffit 12 17 1082 0 0 - =
2470 time_recv ffit 12 1083 2281,26,23 0 0 - =
2471 time_send ffit 12 17 1083 0 0 - =
2474 timestamp_recv ffit 12 1114 2281,26,23 0 0 - =
2475 timestamp_send ffit 12 17 1114 0 0 - =
2476 timestamptz_recv ffit 12 1184 2281,26,23 0 0 - =
2477 timestamptz_send ffit 12 17 1184 0 0 - =
2478 interval_recv ffit 12 1186 2281,26,23 0 0 - =
2479 interval_send ffit 12 17 1186 0 0 - =
2496 inet_recv ffit 12 869 2281 0 0 - =
2497 inet_send ffit 12 17 869 0 0 - =
2500 cstring_recv ffst 12 2275 2281 0 0 - =
2501 cstring_send ffst 12 17 2275 0 0 - =
2502 anyarray_recv ffst 12 2277 2281 0 0 - =
2503 anyarray_send ffst 12 17 2277 0 0 - =
2504 pg_get_ruledef ffst 12 25 26,16 0 0 - pg_get_ruledef_ext
2505 pg_get_viewdef ffst 12 25 25,16 0 0 - pg_get_viewdef_name_ext
2506 pg_get_viewdef ffst 12 25 26,16 0 0 - pg_get_viewdef_ext
2507 pg_get_indexdef ffst 12 25 26,23,16 0 0 - pg_get_indexdef_ext
2508 pg_get_constraintdef ffst 12 25 26,16 0 0 - pg_get_constraintdef_ext
2509 pg_get_expr ffst 12 25 194,26,16 0 0 - pg_get_expr_ext
2517 bool_and afif 12 16 16 0 0 - aggregate_dummy
2518 bool_or afif 12 16 16 0 0 - aggregate_dummy
2519 every afif 12 16 16 0 0 - aggregate_dummy
2560 pg_postmaster_start_time ffst 12 1184 - 0 0 - =
2626 pg_sleep ffvt 12 2278 701 0 0 - =
2641 var_samp afif 12 1700 20 0 0 - aggregate_dummy
2642 var_samp afif 12 1700 23 0 0 - aggregate_dummy
2643 var_samp afif 12 1700 21 0 0 - aggregate_dummy
2644 var_samp afif 12 701 700 0 0 - aggregate_dummy
2645 var_samp afif 12 701 701 0 0 - aggregate_dummy
2646 var_samp afif 12 1700 1700 0 0 - aggregate_dummy
2647 transaction_timestamp ffst 12 1184 - 0 0 - now
2648 statement_timestamp ffst 12 1184 - 0 0 - =
2649 clock_timestamp ffvt 12 1184 - 0 0 - =
2705 pg_has_role ffst 12 16 19,19,25 0 0 - pg_has_role_name_name
2706 pg_has_role ffst 12 16 19,26,25 0 0 - pg_has_role_name_id
2707 pg_has_role ffst 12 16 26,19,25 0 0 - pg_has_role_id_name
2708 pg_has_role ffst 12 16 26,26,25 0 0 - pg_has_role_id_id
2709 pg_has_role ffst 12 16 19,25 0 0 - pg_has_role_name
2710 pg_has_role ffst 12 16 26,25 0 0 - pg_has_role_id
2712 stddev_samp afif 12 1700 20 0 0 - aggregate_dummy
2713 stddev_samp afif 12 1700 23 0 0 - aggregate_dummy
2714 stddev_samp afif 12 1700 21 0 0 - aggregate_dummy
2715 stddev_samp afif 12 701 700 0 0 - aggregate_dummy
2716 stddev_samp afif 12 701 701 0 0 - aggregate_dummy
2717 stddev_samp afif 12 1700 1700 0 0 - aggregate_dummy
2718 var_pop afif 12 1700 20 0 0 - aggregate_dummy
2719 var_pop afif 12 1700 23 0 0 - aggregate_dummy
2720 var_pop afif 12 1700 21 0 0 - aggregate_dummy
2721 var_pop afif 12 701 700 0 0 - aggregate_dummy
2722 var_pop afif 12 701 701 0 0 - aggregate_dummy
2723 var_pop afif 12 1700 1700 0 0 - aggregate_dummy
2724 stddev_pop afif 12 1700 20 0 0 - aggregate_dummy
2725 stddev_pop afif 12 1700 23 0 0 - aggregate_dummy
2726 stddev_pop afif 12 1700 21 0 0 - aggregate_dummy
2727 stddev_pop afif 12 701 700 0 0 - aggregate_dummy
2728 stddev_pop afif 12 701 701 0 0 - aggregate_dummy
2729 stddev_pop afif 12 1700 1700 0 0 - aggregate_dummy
2730 pg_get_triggerdef ffst 12 25 26,16 0 0 - pg_get_triggerdef_ext
2777 anynonarray_in ffit 12 2776 2275 0 0 - =
2778 anynonarray_out ffit 12 2275 2776 0 0 - =
2803 count afif 12 20 - 0 0 - aggregate_dummy
2818 regr_count afif 12 20 701,701 0 0 - aggregate_dummy
2819 regr_sxx afif 12 701 701,701 0 0 - aggregate_dummy
2820 regr_syy afif 12 701 701,701 0 0 - aggregate_dummy
2821 regr_sxy afif 12 701 701,701 0 0 - aggregate_dummy
2822 regr_avgx afif 12 701 701,701 0 0 - aggregate_dummy
2823 regr_avgy afif 12 701 701,701 0 0 - aggregate_dummy
2824 regr_r2 afif 12 701 701,701 0 0 - aggregate_dummy
2825 regr_slope afif 12 701 701,701 0 0 - aggregate_dummy
2826 regr_intercept afif 12 701 701,701 0 0 - aggregate_dummy
2827 covar_pop afif 12 701 701,701 0 0 - aggregate_dummy
2828 covar_samp afif 12 701 701,701 0 0 - aggregate_dummy
2829 corr afif 12 701 701,701 0 0 - aggregate_dummy
2854 pg_my_temp_schema ffst 12 26 - 0 0 - =
2855 pg_is_other_temp_schema ffst 12 16 26 0 0 - =
2903 intervaltypmodin ffit 12 23 1263 0 0 - =
2904 intervaltypmodout ffit 12 2275 23 0 0 - =
2905 timestamptypmodin ffit 12 23 1263 0 0 - =
2906 timestamptypmodout ffit 12 2275 23 0 0 - =
2907 timestamptztypmodin ffit 12 23 1263 0 0 - =
2908 timestamptztypmodout ffit 12 2275 23 0 0 - =
2909 timetypmodin ffit 12 23 1263 0 0 - =
2910 timetypmodout ffit 12 2275 23 0 0 - =
2913 bpchartypmodin ffit 12 23 1263 0 0 - =
2914 bpchartypmodout ffit 12 2275 23 0 0 - =
2915 varchartypmodin ffit 12 23 1263 0 0 - =
2916 varchartypmodout ffit 12 2275 23 0 0 - =
2917 numerictypmodin ffit 12 23 1263 0 0 - =
2918 numerictypmodout ffit 12 2275 23 0 0 - =
2943 txid_current ffst 12 20 - 0 0 - pg_current_xact_id
2952 uuid_in ffit 12 2950 2275 0 0 - =
2953 uuid_out ffit 12 2275 2950 0 0 - =
2961 uuid_recv ffit 12 2950 2281 0 0 - =
2962 uuid_send ffit 12 17 2950 0 0 - =
2997 pg_table_size ffvt 12 20 2205 0 0 - =
2998 pg_indexes_size ffvt 12 20 2205 0 0 - =
3000 has_foreign_data_wrapper_privilege ffst 12 16 19,25,25 0 0 - has_foreign_data_wrapper_privilege_name_name
3001 has_foreign_data_wrapper_privilege ffst 12 16 19,26,25 0 0 - has_foreign_data_wrapper_privilege_name_id
3002 has_foreign_data_wrapper_privilege ffst 12 16 26,25,25 0 0 - has_foreign_data_wrapper_privilege_id_name
3003 has_foreign_data_wrapper_privilege ffst 12 16 26,26,25 0 0 - has_foreign_data_wrapper_privilege_id_id
3004 has_foreign_data_wrapper_privilege ffst 12 16 25,25 0 0 - has_foreign_data_wrapper_privilege_name
3005 has_foreign_data_wrapper_privilege ffst 12 16 26,25 0 0 - has_foreign_data_wrapper_privilege_id
3006 has_server_privilege ffst 12 16 19,25,25 0 0 - has_server_privilege_name_name
3007 has_server_privilege ffst 12 16 19,26,25 0 0 - has_server_privilege_name_id
3008 has_server_privilege ffst 12 16 26,25,25 0 0 - has_server_privilege_id_name
3009 has_server_privilege ffst 12 16 26,26,25 0 0 - has_server_privilege_id_id
3010 has_server_privilege ffst 12 16 25,25 0 0 - has_server_privilege_name
3011 has_server_privilege ffst 12 16 26,25 0 0 - has_server_privilege_id
3012 has_column_privilege ffst 12 16 19,25,25,25 0 0 - has_column_privilege_name_name_name
3013 has_column_privilege ffst 12 16 19,25,21,25 0 0 - has_column_privilege_name_name_attnum
3014 has_column_privilege ffst 12 16 19,26,25,25 0 0 - has_column_privilege_name_id_name
3015 has_column_privilege ffst 12 16 19,26,21,25 0 0 - has_column_privilege_name_id_attnum
3016 has_column_privilege ffst 12 16 26,25,25,25 0 0 - has_column_privilege_id_name_name
3017 has_column_privilege ffst 12 16 26,25,21,25 0 0 - has_column_privilege_id_name_attnum
3018 has_column_privilege ffst 12 16 26,26,25,25 0 0 - has_column_privilege_id_id_name
3019 has_column_privilege ffst 12 16 26,26,21,25 0 0 - has_column_privilege_id_id_attnum
3020 has_column_privilege ffst 12 16 25,25,25 0 0 - has_column_privilege_name_name
3021 has_column_privilege ffst 12 16 25,21,25 0 0 - has_column_privilege_name_attnum
3022 has_column_privilege ffst 12 16 26,25,25 0 0 - has_column_privilege_id_name
3023 has_column_privilege ffst 12 16 26,21,25 0 0 - has_column_privilege_id_attnum
3024 has_any_column_privilege ffst 12 16 19,25,25 0 0 - has_any_column_privilege_name_name
3025 has_any_column_privilege ffst 12 16 19,26,25 0 0 - has_any_column_privilege_name_id
3026 has_any_column_privilege ffst 12 16 26,25,25 0 0 - has_any_column_privilege_id_name
3027 has_any_column_privilege ffst 12 16 26,26,25 0 0 - has_any_column_privilege_id_id
3028 has_any_column_privilege ffst 12 16 25,25 0 0 - has_any_column_privilege_name
3029 has_any_column_privilege ffst 12 16 26,25 0 0 - has_any_column_privilege_id
3034 pg_relation_filepath ffst 12 25 2205 0 0 - =
3058 concat ffsf 12 25 2276 0 2276 2276/v/ text_concat
3059 concat_ws ffsf 12 25 25,2276 0 2276 25,2276/i,v/ text_concat_ws
3060 left ffit 12 25 25,23 0 0 - text_left
3061 right ffit 12 25 25,23 0 0 - text_right
3062 reverse ffit 12 25 25 0 0 - text_reverse
3100 row_number wfif 12 20 - 0 0 - window_row_number
3101 rank wfif 12 20 - 0 0 - window_rank
3102 dense_rank wfif 12 20 - 0 0 - window_dense_rank
3103 percent_rank wfif 12 701 - 0 0 - window_percent_rank
3104 cume_dist wfif 12 701 - 0 0 - window_cume_dist
3105 ntile wfit 12 23 23 0 0 - window_ntile
3106 lag wfit 12 2283 2283 0 0 - window_lag
3107 lag wfit 12 2283 2283,23 0 0 - window_lag_with_offset
3108 lag wfit 12 5077 5077,23,5077 0 0 - window_lag_with_offset_and_default
3109 lead wfit 12 2283 2283 0 0 - window_lead
3110 lead wfit 12 2283 2283,23 0 0 - window_lead_with_offset
3111 lead wfit 12 5077 5077,23,5077 0 0 - window_lead_with_offset_and_default
3112 first_value wfit 12 2283 2283 0 0 - window_first_value
3113 last_value wfit 12 2283 2283 0 0 - window_last_value
3114 nth_value wfit 12 2283 2283,23 0 0 - window_nth_value
3120 void_recv ffit 12 2278 2281 0 0 - =
3121 void_send ffit 12 17 2278 0 0 - =
3138 has_type_privilege ffst 12 16 19,25,25 0 0 - has_type_privilege_name_name
3139 has_type_privilege ffst 12 16 19,26,25 0 0 - has_type_privilege_name_id
3140 has_type_privilege ffst 12 16 26,25,25 0 0 - has_type_privilege_id_name
3141 has_type_privilege ffst 12 16 26,26,25 0 0 - has_type_privilege_id_id
3142 has_type_privilege ffst 12 16 25,25 0 0 - has_type_privilege_name
3143 has_type_privilege ffst 12 16 26,25 0 0 - has_type_privilege_id
3159 pg_get_viewdef ffst 12 25 26,23 0 0 - pg_get_viewdef_wrap
3166 pg_size_pretty ffit 12 25 1700 0 0 - pg_size_pretty_numeric
3167 array_remove ffif 12 5078 5078,5077 0 0 - =
3179 cardinality ffit 12 23 2277 0 0 - array_cardinality
3218 width_bucket ffit 12 23 5077,5078 0 0 - width_bucket_array
3259 generate_series ftit 12 1700 1700,1700,1700 0 0 - generate_series_step_numeric
3260 generate_series ftit 12 1700 1700,1700 0 0 - generate_series_numeric
3277 array_position ffif 12 23 5078,5077 0 0 - =
3278 array_position ffif 12 23 5078,5077,23 0 0 - array_position_start
3294 current_setting ffst 12 25 25,16 0 0 - show_config_by_name_missing_ok
3298 row_security_active ffst 12 16 26 0 0 - =
3299 row_security_active ffst 12 16 25 0 0 - row_security_active_name
3352 pg_get_partkeydef ffst 12 25 26 0 0 - =
3432 gen_random_uuid ffvt 12 2950 - 0 0 - =
3461 make_timestamp ffit 12 1114 23,23,23,23,23,701 0 0 //year,month,mday,hour,min,sec =
3462 make_timestamptz ffst 12 1184 23,23,23,23,23,701 0 0 //year,month,mday,hour,min,sec =
3463 make_timestamptz ffst 12 1184 23,23,23,23,23,701,25 0 0 //year,month,mday,hour,min,sec,timezone make_timestamptz_at_timezone
3464 make_interval ffit 12 1186 23,23,23,23,23,23,701 7 0 //years,months,weeks,days,hours,mins,secs =
3493 to_regtype ffst 12 2206 25 0 0 - =
3495 to_regclass ffst 12 2205 25 0 0 - =
3504 anyenum_in ffit 12 3500 2275 0 0 - =
3505 anyenum_out ffst 12 2275 3500 0 0 - =
3526 max afif 12 3500 3500 0 0 - aggregate_dummy
3527 min afif 12 3500 3500 0 0 - aggregate_dummy
3538 string_agg afif 12 25 25,25 0 0 - aggregate_dummy
3545 string_agg afif 12 17 17,17 0 0 - aggregate_dummy
3564 max afif 12 869 869 0 0 - aggregate_dummy
3565 min afif 12 869 869 0 0 - aggregate_dummy
3696 starts_with ffit 12 16 25,25 0 0 - text_starts_with
3758 pg_ts_config_is_visible ffst 12 16 26 0 0 - =
3778 pg_tablespace_location ffst 12 25 26 0 0 - =
3803 jsonb_send ffit 12 17 3802 0 0 - =
3804 jsonb_out ffit 12 2275 3802 0 0 - =
3805 jsonb_recv ffit 12 3802 2281 0 0 - =
3806 jsonb_in ffit 12 3802 2275 0 0 - =
3810 pg_is_in_recovery ffvt 12 16 - 0 0 - =
3815 pg_collation_is_visible ffst 12 16 26 0 0 - =
3816 array_typanalyze ffst 12 16 2281 0 0 - =
3846 make_date ffit 12 1082 23,23,23 0 0 //year,month,day =
3953 json_extract_path_text ffit 12 25 114,1009 0 25 114,1009/i,v/from_json,path_elems =
3972 percentile_disc afif 12 2283 701,2283 0 0 - aggregate_dummy
3974 percentile_cont afif 12 701 701,701 0 0 - aggregate_dummy
3976 percentile_cont afif 12 1186 701,1186 0 0 - aggregate_dummy
3978 percentile_disc afif 12 2277 1022,2283 0 0 - aggregate_dummy
3980 percentile_cont afif 12 1022 1022,701 0 0 - aggregate_dummy
3982 percentile_cont afif 12 1187 1022,1186 0 0 - aggregate_dummy
3984 mode afif 12 2283 2283 0 0 - aggregate_dummy
3986 rank afif 12 20 2276 0 2276 2276/v/ aggregate_dummy
3988 percent_rank afif 12 701 2276 0 2276 2276/v/ aggregate_dummy
3990 cume_dist afif 12 701 2276 0 2276 2276/v/ aggregate_dummy
3992 dense_rank afif 12 20 2276 0 2276 2276/v/ aggregate_dummy
4053 array_agg afif 12 2277 2277 0 0 - aggregate_dummy
4084 regnamespacein ffst 12 4089 2275 0 0 - =
4085 regnamespaceout ffst 12 2275 4089 0 0 - =
4086 to_regnamespace ffst 12 4089 25 0 0 - =
4087 regnamespacerecv ffit 12 4089 2281 0 0 - =
4088 regnamespacesend ffit 12 17 4089 0 0 - =
5059 pg_current_xact_id ffst 12 5069 - 0 0 - =
5070 xid8in ffit 12 5069 2275 0 0 - =
5081 xid8out ffit 12 2275 5069 0 0 - =
5082 xid8recv ffit 12 5069 2281 0 0 - =
5083 xid8send ffit 12 17 5069 0 0 - =
5086 anycompatible_in ffit 12 5077 2275 0 0 - =
5087 anycompatible_out ffit 12 2275 5077 0 0 - =
5088 anycompatiblearray_in ffit 12 5078 2275 0 0 - =
5089 anycompatiblearray_out ffst 12 2275 5078 0 0 - =
5090 anycompatiblearray_recv ffst 12 5078 2281 0 0 - =
5091 anycompatiblearray_send ffst 12 17 5078 0 0 - =
5099 max afif 12 5069 5069 0 0 - aggregate_dummy
5100 min afif 12 5069 5069 0 0 - aggregate_dummy
6098 jsonb_subscript_handler ffit 12 2281 2281 0 0 - =
6120 pg_get_replica_identity_index ffst 12 2205 2205 0 0 - =
6121 pg_relation_is_publishable ffst 12 16 2205 0 0 - =
6164 bit_xor afif 12 21 21 0 0 - aggregate_dummy
6165 bit_xor afif 12 23 23 0 0 - aggregate_dummy
6166 bit_xor afif 12 20 20 0 0 - aggregate_dummy
6174 pg_get_statisticsobjdef_columns ffst 12 25 26 0 0 - =
6177 date_bin ffit 12 1114 1186,1114,1114 0 0 - timestamp_bin
6178 date_bin ffit 12 1184 1186,1184,1184 0 0 - timestamptz_bin
6179 array_subscript_handler ffit 12 2281 2281 0 0 - =
6180 raw_array_subscript_handler ffit 12 2281 2281 0 0 - =
6195 ltrim ffit 12 17 17,17 0 0 - bytealtrim
6196 rtrim ffit 12 17 17,17 0 0 - byteartrim
6199 extract ffit 12 1700 25,1082 0 0 - extract_date
6200 extract ffit 12 1700 25,1083 0 0 - extract_time
6202 extract ffit 12 1700 25,1114 0 0 - extract_timestamp
6203 extract ffst 12 1700 25,1184 0 0 - extract_timestamptz
6204 extract ffit 12 1700 25,1186 0 0 - extract_interval
6205 has_parameter_privilege ffst 12 16 19,25,25 0 0 - has_parameter_privilege_name_name
6206 has_parameter_privilege ffst 12 16 26,25,25 0 0 - has_parameter_privilege_id_name
6207 has_parameter_privilege ffst 12 16 25,25 0 0 - has_parameter_privilege_name
6251 regexp_replace ffit 12 25 25,25,25,23,23,25 0 0 - textregexreplace_extended
6252 regexp_replace ffit 12 25 25,25,25,23,23 0 0 - textregexreplace_extended_no_flags
6253 regexp_replace ffit 12 25 25,25,25,23 0 0 - textregexreplace_extended_no_n
6254 regexp_count ffit 12 23 25,25 0 0 - regexp_count_no_start
6255 regexp_count ffit 12 23 25,25,23 0 0 - regexp_count_no_flags
6256 regexp_count ffit 12 23 25,25,23,25 0 0 - =
6263 regexp_like ffit 12 16 25,25 0 0 - regexp_like_no_flags
6264 regexp_like ffit 12 16 25,25,25 0 0 - =
6265 regexp_substr ffit 12 25 25,25 0 0 - regexp_substr_no_start
6266 regexp_substr ffit 12 25 25,25,23 0 0 - regexp_substr_no_n
6267 regexp_substr ffit 12 25 25,25,23,23 0 0 - regexp_substr_no_flags
6268 regexp_substr ffit 12 25 25,25,23,23,25 0 0 - regexp_substr_no_subexpr
6269 regexp_substr ffit 12 25 25,25,23,23,25,23 0 0 - =
"""

#   oid typname typinput typoutput typreceive typsend typmodin typmodout typanalyze typsubscript
# (PostgreSQL 15's, '-' for none).
_TYPE_IO = """
269 table_am_handler table_am_handler_in table_am_handler_out - - - - - -
325 index_am_handler index_am_handler_in index_am_handler_out - - - - - -
2279 trigger trigger_in trigger_out - - - - - -
2280 language_handler language_handler_in language_handler_out - - - - - -
3115 fdw_handler fdw_handler_in fdw_handler_out - - - - - -
3310 tsm_handler tsm_handler_in tsm_handler_out - - - - - -
3838 event_trigger event_trigger_in event_trigger_out - - - - - -
16 bool boolin boolout boolrecv boolsend - - - -
17 bytea byteain byteaout bytearecv byteasend - - - -
18 char charin charout charrecv charsend - - - -
19 name namein nameout namerecv namesend - - - raw_array_subscript_handler
20 int8 int8in int8out int8recv int8send - - - -
21 int2 int2in int2out int2recv int2send - - - -
22 int2vector int2vectorin int2vectorout int2vectorrecv int2vectorsend - - - array_subscript_handler
23 int4 int4in int4out int4recv int4send - - - -
24 regproc regprocin regprocout regprocrecv regprocsend - - - -
25 text textin textout textrecv textsend - - - -
26 oid oidin oidout oidrecv oidsend - - - -
30 oidvector oidvectorin oidvectorout oidvectorrecv oidvectorsend - - - array_subscript_handler
114 json json_in json_out json_recv json_send - - - -
194 pg_node_tree pg_node_tree_in pg_node_tree_out pg_node_tree_recv pg_node_tree_send - - - -
199 _json array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
700 float4 float4in float4out float4recv float4send - - - -
701 float8 float8in float8out float8recv float8send - - - -
705 unknown unknownin unknownout unknownrecv unknownsend - - - -
869 inet inet_in inet_out inet_recv inet_send - - - -
1000 _bool array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1001 _bytea array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1002 _char array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1003 _name array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1005 _int2 array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1006 _int2vector array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1007 _int4 array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1008 _regproc array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1009 _text array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1013 _oidvector array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1014 _bpchar array_in array_out array_recv array_send bpchartypmodin bpchartypmodout array_typanalyze array_subscript_handler
1015 _varchar array_in array_out array_recv array_send varchartypmodin varchartypmodout array_typanalyze array_subscript_handler
1016 _int8 array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1021 _float4 array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1022 _float8 array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1028 _oid array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1042 bpchar bpcharin bpcharout bpcharrecv bpcharsend bpchartypmodin bpchartypmodout - -
1043 varchar varcharin varcharout varcharrecv varcharsend varchartypmodin varchartypmodout - -
1082 date date_in date_out date_recv date_send - - - -
1083 time time_in time_out time_recv time_send timetypmodin timetypmodout - -
1114 timestamp timestamp_in timestamp_out timestamp_recv timestamp_send timestamptypmodin timestamptypmodout - -
1115 _timestamp array_in array_out array_recv array_send timestamptypmodin timestamptypmodout array_typanalyze array_subscript_handler
1182 _date array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1183 _time array_in array_out array_recv array_send timetypmodin timetypmodout array_typanalyze array_subscript_handler
1184 timestamptz timestamptz_in timestamptz_out timestamptz_recv timestamptz_send timestamptztypmodin timestamptztypmodout - -
1185 _timestamptz array_in array_out array_recv array_send timestamptztypmodin timestamptztypmodout array_typanalyze array_subscript_handler
1186 interval interval_in interval_out interval_recv interval_send intervaltypmodin intervaltypmodout - -
1187 _interval array_in array_out array_recv array_send intervaltypmodin intervaltypmodout array_typanalyze array_subscript_handler
1231 _numeric array_in array_out array_recv array_send numerictypmodin numerictypmodout array_typanalyze array_subscript_handler
1263 _cstring array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
1700 numeric numeric_in numeric_out numeric_recv numeric_send numerictypmodin numerictypmodout - -
2205 regclass regclassin regclassout regclassrecv regclasssend - - - -
2206 regtype regtypein regtypeout regtyperecv regtypesend - - - -
2210 _regclass array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
2211 _regtype array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
2249 record record_in record_out record_recv record_send - - - -
2275 cstring cstring_in cstring_out cstring_recv cstring_send - - - -
2276 any any_in any_out - - - - - -
2277 anyarray anyarray_in anyarray_out anyarray_recv anyarray_send - - - -
2278 void void_in void_out void_recv void_send - - - -
2281 internal internal_in internal_out - - - - - -
2283 anyelement anyelement_in anyelement_out - - - - - -
2287 _record array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
2776 anynonarray anynonarray_in anynonarray_out - - - - - -
2950 uuid uuid_in uuid_out uuid_recv uuid_send - - - -
2951 _uuid array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
3500 anyenum anyenum_in anyenum_out - - - - - -
3802 jsonb jsonb_in jsonb_out jsonb_recv jsonb_send - - - jsonb_subscript_handler
3807 _jsonb array_in array_out array_recv array_send - - array_typanalyze array_subscript_handler
4089 regnamespace regnamespacein regnamespaceout regnamespacerecv regnamespacesend - - - -
5069 xid8 xid8in xid8out xid8recv xid8send - - - -
5077 anycompatible anycompatible_in anycompatible_out - - - - - -
5078 anycompatiblearray anycompatiblearray_in anycompatiblearray_out anycompatiblearray_recv anycompatiblearray_send - - - -
"""

# Pseudo-types and a few others pg_proc's signatures (and clients: 'trigger'::regtype) use, not in
# tidegate.pgtypes:
#   oid typname typlen typbyval typtype typcategory typelem typarray typalign typstorage typcollation
_EXTRA_TYPES = """
269 table_am_handler 4 True p P 0 0 i p 0
325 index_am_handler 4 True p P 0 0 i p 0
2279 trigger 4 True p P 0 0 i p 0
2280 language_handler 4 True p P 0 0 i p 0
3115 fdw_handler 4 True p P 0 0 i p 0
3310 tsm_handler 4 True p P 0 0 i p 0
3838 event_trigger 4 True p P 0 0 i p 0
194 pg_node_tree -1 False b Z 0 0 i x 100
869 inet -1 False b I 0 1041 i m 0
1263 _cstring -1 False b A 2275 0 i x 0
2275 cstring -2 False p P 0 1263 c p 0
2276 any 4 True p P 0 0 i p 0
2277 anyarray -1 False p P 0 0 d x 0
2281 internal 8 True p P 0 0 d p 0
2283 anyelement 4 True p P 0 0 i p 0
2776 anynonarray 4 True p P 0 0 i p 0
3500 anyenum 4 True p P 0 0 i p 0
4089 regnamespace 4 True b N 0 4090 i p 0
5069 xid8 8 True b U 0 271 d p 0
5077 anycompatible 4 True p P 0 0 i p 0
5078 anycompatiblearray -1 False p P 0 0 d x 0
"""


# The DEFAULT expressions of built-in functions' trailing arguments (pg_get_expr(proargdefaults)).
PROC_ARG_DEFAULTS: dict[int, list[str]] = {3464: ["0"] * 6 + ["0.0"]}  # make_interval


@functools.cache
def proc_rows() -> tuple[dict[str, Any], ...]:
    """The pg_proc rows (see :data:`_PG_PROC`)."""
    rows = []
    for line in _PG_PROC.strip().splitlines():
        oid, name, flags, lang, ret, args, ndef, variadic, extra, src = line.split(" ", 9)
        argtypes = [] if args == "-" else [int(a) for a in args.split(",")]
        allargs = modes = argnames = None
        if extra != "-":
            a, m, n = extra.split("/")
            allargs = [int(x) for x in a.split(",")] if a else None
            modes = m.split(",") if m else None
            argnames = n.split(",") if n else None
        rows.append({
            "oid": int(oid), "proname": name, "pronamespace": PG_CATALOG_NS, "proowner": BOOTSTRAP_ROLE,
            "prolang": int(lang), "procost": 1.0, "prorows": 1000.0 if flags[1] == "t" else 0.0,
            "provariadic": int(variadic), "prosupport": "-", "prokind": flags[0], "prosecdef": False,
            "proleakproof": False, "proisstrict": flags[3] == "t", "proretset": flags[1] == "t",
            "provolatile": flags[2], "proparallel": "s", "pronargs": len(argtypes),
            "pronargdefaults": int(ndef), "prorettype": int(ret), "proargtypes": argtypes,
            "proallargtypes": allargs, "proargmodes": modes, "proargnames": argnames,
            "prosrc": name if src == "=" else ("" if src == "-" else src),
            "proargdefaults": ", ".join(PROC_ARG_DEFAULTS[int(oid)]) if int(oid) in PROC_ARG_DEFAULTS else None,
        })
    return tuple(rows)


@functools.cache
def proc_oids() -> dict[str, int]:
    """Function name -> the OID regproc gives it (the lowest OID of that name)."""
    out: dict[str, int] = {}
    for r in proc_rows():
        out.setdefault(r["proname"], r["oid"])
    return out


@functools.cache
def proc_names() -> dict[int, str]:
    return {r["oid"]: r["proname"] for r in proc_rows()}


@functools.cache
def type_io() -> dict[int, tuple[str, ...]]:
    """Type OID -> (typinput, typoutput, typreceive, typsend, typmodin, typmodout, typanalyze, typsubscript)."""
    return {int(f[0]): tuple(f[2:]) for f in (line.split(" ") for line in _TYPE_IO.strip().splitlines())}


@functools.cache
def extra_types() -> dict[int, tuple[str, ...]]:
    return {int(f[0]): tuple(f[1:]) for f in (line.split(" ") for line in _EXTRA_TYPES.strip().splitlines())}


def extra_type_name(oid: int) -> str | None:
    """format_type of a type pg_proc uses that tidegate.pgtypes does not know (``anyelement``)."""
    t = extra_types().get(oid)
    if t is None:
        return None
    if t[0] == "any":
        return '"any"'  # a keyword: PostgreSQL's format_type quotes it
    return t[0][1:] + "[]" if t[0].startswith("_") else t[0]


@functools.cache
def extra_type_oids() -> dict[str, int]:
    """typname -> oid of :func:`extra_types` (regtype input: ``'trigger'::regtype``)."""
    return {t[0]: oid for oid, t in extra_types().items()}
