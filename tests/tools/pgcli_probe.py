"""Run inside .venv-tools: drive released pgcli's own executor (pgcli.pgexecute.PGExecute, the object
pgcli's REPL sends every line to) and its completion loaders, print what it got as JSON.

usage: python pgcli_probe.py HOST PORT USER DBNAME SCHEMA
"""

import json
import sys

from pgcli.pgexecute import PGExecute
from pgspecial.main import PGSpecial

host, port, user, dbname, schema = sys.argv[1:6]
ex = PGExecute(database=dbname, user=user, password="", host=host, port=int(port), dsn=None)
special = PGSpecial()
out: dict = {"commands": {}, "completion": {}}


def plain(v):
    return v if isinstance(v, (str, int, float, bool, type(None))) else str(v)


for cmd in [f"\\dt {schema}.*", f"\\dv {schema}.*", f"\\d {schema}.*", f"\\d {schema}.orders",
            f"\\d+ {schema}.orders", f"\\d {schema}.open_orders", f"\\di {schema}.*", f"\\ds {schema}.*",
            f"\\dn {schema}", "\\l", "\\du tidegate_nobody", "\\x", "\\x",
            f"SELECT count(*) FROM {schema}.orders"]:
    results = []
    try:
        for title, rows, headers, status, sql, success, is_special in ex.run(cmd, pgspecial=special):
            rows = [[plain(v) for v in r] for r in rows] if rows is not None else None
            results.append({"title": plain(title), "headers": list(headers or []), "rows": rows,
                            "status": plain(status), "success": success})
    except Exception as e:  # pgcli shows the error and carries on; the test wants none
        results.append({"error": f"{type(e).__name__}: {e}"})
    out["commands"][cmd] = results

loaders = {
    "schemata": lambda: [s for s in ex.schemata()],
    "tables": lambda: [list(t) for t in ex.tables() if t[0] == schema],
    "views": lambda: [list(t) for t in ex.views() if t[0] == schema],
    "table_columns": lambda: [[plain(v) for v in c] for c in ex.table_columns() if c[0] == schema],
    "view_columns": lambda: [[plain(v) for v in c] for c in ex.view_columns() if c[0] == schema],
    "functions": lambda: len(list(ex.functions())),
    "datatypes": lambda: [list(t) for t in ex.datatypes() if t[0] == schema],
    "casing": lambda: len(list(ex.casing())),
    "foreignkeys": lambda: [[plain(v) for v in f] for f in ex.foreignkeys() if f[0] == schema],
    "databases": lambda: list(ex.databases()),
    "search_path": lambda: list(ex.search_path()),
}
for name, load in loaders.items():
    try:
        out["completion"][name] = load()
    except Exception as e:
        out["completion"][name] = {"error": f"{type(e).__name__}: {e}"}
print(json.dumps(out))
