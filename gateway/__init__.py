"""PostgreSQL wire protocol front end of tidegate: server, connections, auth, sessions, dispatch.

Protocol code never imports Spark: backends are reached through :mod:`gateway.dispatch`.
"""
