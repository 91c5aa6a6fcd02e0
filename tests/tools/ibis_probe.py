"""Run inside .venv-tools: released ibis (postgres backend) creates a table from a DataFrame and runs
table operations with window functions; prints every result as JSON (rows in the result's order).

usage: python ibis_probe.py HOST PORT USER DBNAME
"""

import json
import sys

import ibis
import pandas as pd

host, port, user, dbname = sys.argv[1:5]
con = ibis.postgres.connect(host=host, port=int(port), user=user, password="", database=dbname)
con.drop_table("ibis_sales", force=True)
df = pd.DataFrame({
    "region": ["north", "north", "north", "south", "south", "east"],
    "day": pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-01", "2024-01-03", "2024-01-02"]),
    "units": [3, 5, 2, 7, 1, 4],
    "price": [2.5, 2.0, None, 1.25, 3.0, 4.5],
})
t = con.create_table("ibis_sales", df)
out = {"tables": sorted(n for n in con.list_tables() if n.startswith("ibis_")),
       "schema": {k: str(v) for k, v in t.schema().items()}}
by_region = ibis.window(group_by=t.region, order_by=t.day)
whole = ibis.window(order_by=[t.region, t.day])
exprs = {
    "windows": t.mutate(rn=ibis.row_number().over(by_region), running=t.units.sum().over(by_region),
                        prev=t.units.lag().over(by_region), nxt=t.units.lead().over(by_region),
                        rk=ibis.rank().over(ibis.window(order_by=ibis.desc(t.units))),
                        share=t.units / t.units.sum().over(ibis.window(group_by=t.region)),
                        first=t.units.first().over(whole))
                .order_by([t.region, t.day]),
    "aggregate": t.group_by("region").aggregate(n=t.count(), units=t.units.sum(), avg_price=t.price.mean(),
                                                 top=t.units.max()).order_by("region"),
    "filter_limit": t.filter((t.units > 1) & t.price.notnull()).select("region", "units").order_by(
        ibis.desc("units")).limit(3),
    "distinct_count": t.aggregate(regions=t.region.nunique(), rows=t.count()),
    "topk": t.region.value_counts().order_by([ibis.desc("region_count"), "region"]),
    "date_ops": t.mutate(month=t.day.month(), dow=t.day.day_of_week.index(), next_week=t.day + ibis.interval(days=7))
                 .select("region", "day", "month", "dow", "next_week").order_by(["region", "day"]),
    # ibis 12 cannot compile DISTINCT over derived columns followed by ORDER BY (a KeyError in its own
    # rewrite, before any SQL is sent), so the strings are grouped and DISTINCT is asked of a plain column.
    "string_ops": t.group_by(up=t.region.upper(), n=t.region.length(), sub=t.region.substr(0, 2))
                   .aggregate(rows=t.count()).order_by("up"),
    "distinct": t.select("region").distinct().order_by("region"),
}
out["results"] = {}
for name, expr in exprs.items():
    res = expr.to_pandas()
    out["results"][name] = {"columns": list(res.columns),
                            "rows": json.loads(res.to_json(orient="values", date_format="iso"))}
print(json.dumps(out))
