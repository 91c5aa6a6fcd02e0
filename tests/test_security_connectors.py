"""Which files a refreshable table with ``connector = 'file'`` may read, and who may create one.

The file connector reads only under ``file_connector_roots`` (none configured: refused), with the
path and every matched file resolved (symlinks, '..') before the check, at CREATE TABLE and again
at every REFRESH; the server's own files (data dir, config file, TLS files) and /proc never, even
under a root of '/'. Only superusers create connector tables.

End to end through psycopg against the shared gateway, whose root is pytest's base temp dir (it
holds every test's ``tmp_path`` and the shared gateway's data dir); a second gateway started with a
config file allowing '/' shows the server's own files stay unreadable. The path checks and the
superuser check are also unit-tested directly.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import SimpleNamespace

import psycopg
import pytest

from engine.ddl import validate_options
from engine.refresh import FileAccess, Source, check_create_connector
from tests.tidegate_server import TidegateServer, start_tidegate
from tidegate.config import Settings, load_settings
from tidegate.errors import SqlError

ROOTS = "file_connector_roots (TIDEGATE_FILE_CONNECTOR_ROOTS)"


@pytest.fixture()
def conn(tidegate: TidegateServer):
    with psycopg.connect(tidegate.dsn, autocommit=True) as c:
        yield c


@pytest.fixture()
def outside() -> Path:
    """A folder outside every root (the system temp dir, not pytest's base temp dir) holding a
    CSV file the tests try to reach: readable rows if a check let it through."""
    folder = Path(tempfile.mkdtemp(prefix="tidegate-outside-"))
    (folder / "secret.csv").write_text("id,name\n1,secret\n2,hidden\n")
    yield folder
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()


def error_of(conn: psycopg.Connection, sql: str) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql)
    return info.value


def create_sql(name: str, path: Path | str, pattern: str = "*", cols: str = "id int PRIMARY KEY, name text",
               enc: str = "") -> str:
    return (f"CREATE TABLE {name} ({cols}) WITH (connector = 'file', path = '{path}', match_pattern = '{pattern}', "
            f"refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV" + (f" ({enc})" if enc else ""))


def exists(conn: psycopg.Connection, name: str) -> bool:
    return conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = %s",
                        (name,)).fetchone()[0] == 1


def status(conn: psycopg.Connection, name: str) -> tuple:
    return conn.execute("SELECT current_status, last_error FROM information_schema.refresh_tables "
                        "WHERE table_name = %s", (name,)).fetchone()


# -- end to end: the shared gateway (root: pytest's base temp dir) ------------------------------------

def test_etc_passwd_is_refused(conn) -> None:
    err = error_of(conn, create_sql("sec_passwd", "/etc", "passwd", cols="line text PRIMARY KEY",
                                    enc="without_header = 'true', delimiter = '|'"))
    assert err.sqlstate == "42501"
    assert err.diag.message_primary == (
        f"permission denied for path '/etc': it is outside the directories the file connector may read; "
        f"add a directory holding it to the setting {ROOTS}")
    assert not exists(conn, "sec_passwd")
    # Naming the file itself is no better.
    err = error_of(conn, create_sql("sec_passwd", "/etc/passwd", cols="line text PRIMARY KEY"))
    assert err.sqlstate == "42501" and "'/etc/passwd'" in err.diag.message_primary
    assert not exists(conn, "sec_passwd")


def test_dotdot_out_of_the_root_is_refused(conn, tmp_path: Path) -> None:
    escape = f"{tmp_path}/{'../' * len(tmp_path.parts)}etc"
    err = error_of(conn, create_sql("sec_dotdot", escape, "passwd", cols="line text PRIMARY KEY"))
    assert err.sqlstate == "42501"
    assert err.diag.message_primary.startswith(f"permission denied for path '{escape}': it is outside")
    assert not exists(conn, "sec_dotdot")
    # '..' that stays inside the root is just a path.
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("id,name\n1,a\n")
    conn.execute(create_sql("sec_dotdot_in", f"{tmp_path}/other/../in"))
    conn.execute("REFRESH TABLE sec_dotdot_in WAIT")
    assert conn.execute("SELECT id, name FROM sec_dotdot_in").fetchall() == [(1, "a")]


def test_match_pattern_must_be_a_file_name_pattern(conn, tmp_path: Path) -> None:
    for pattern in ("../../../../etc/passwd", "sub/*.csv", "..", "/etc/passwd"):
        err = error_of(conn, create_sql("sec_pattern", tmp_path, pattern))
        assert (err.sqlstate, err.diag.message_primary) == (
            "22023", f"invalid match_pattern '{pattern}': must be a file name pattern such as '*.csv' "
                     "(no '/' and no '..'); put the folder in path"), pattern
    assert not exists(conn, "sec_pattern")


def test_the_data_dir_is_never_readable(conn, tidegate: TidegateServer) -> None:
    # The shared gateway's data dir lies under its root, pytest's base temp dir.
    for path, pattern in ((tidegate.data_dir, "catalog.sqlite"), (tidegate.data_dir, "*"),
                          (tidegate.data_dir / "catalog.sqlite", "*"), (tidegate.data_dir / "warehouse", "*")):
        err = error_of(conn, create_sql("sec_data", path, pattern))
        assert err.sqlstate == "42501", path
        assert err.diag.message_primary.startswith(f"permission denied for path '{path}': the server's own files")
    assert not exists(conn, "sec_data")


def test_symlinked_source_folder_pointing_outside_is_refused(conn, tmp_path: Path, outside: Path) -> None:
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    err = error_of(conn, create_sql("sec_dirlink", tmp_path / "link"))
    assert err.sqlstate == "42501"
    assert err.diag.message_primary.startswith(
        f"permission denied for path '{tmp_path / 'link'}' (resolves to '{outside}'): it is outside")
    assert not exists(conn, "sec_dirlink")


def test_symlink_inside_the_root_to_a_file_outside_fails_the_refresh(conn, tmp_path: Path, outside: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "leak.csv").symlink_to(outside / "secret.csv")
    conn.execute(create_sql("sec_filelink", src))  # the folder itself is inside the root
    err = error_of(conn, "REFRESH TABLE sec_filelink WAIT")
    assert err.sqlstate == "42501"
    assert err.diag.message_primary == (
        f"refresh of table 'public.sec_filelink' failed: permission denied for file '{src / 'leak.csv'}' "
        f"(resolves to '{outside / 'secret.csv'}'): it is outside the directories the file connector may "
        f"read; add a directory holding it to the setting {ROOTS}")
    assert conn.execute("SELECT count(*) FROM sec_filelink").fetchone() == (0,)
    current, last_error = status(conn, "sec_filelink")
    assert current == "IDLE" and last_error.startswith(f"permission denied for file '{src / 'leak.csv'}'")
    conn.execute("DROP TABLE sec_filelink")


def test_every_refresh_checks_again(conn, tmp_path: Path, outside: Path) -> None:
    """A folder that was fine at CREATE and the first REFRESH is swapped for a link out of the
    root: the next REFRESH fails and the table keeps its rows."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.csv").write_text("id,name\n1,a\n2,b\n")
    conn.execute(create_sql("sec_swap", src))
    conn.execute("REFRESH TABLE sec_swap WAIT")
    assert conn.execute("SELECT id, name FROM sec_swap ORDER BY id").fetchall() == [(1, "a"), (2, "b")]
    (src / "a.csv").unlink()
    src.rmdir()
    src.symlink_to(outside, target_is_directory=True)
    err = error_of(conn, "REFRESH TABLE sec_swap WAIT")
    assert err.sqlstate == "42501"
    assert err.diag.message_primary.startswith(
        f"refresh of table 'public.sec_swap' failed: permission denied for path '{src}' (resolves to '{outside}')")
    assert conn.execute("SELECT id, name FROM sec_swap ORDER BY id").fetchall() == [(1, "a"), (2, "b")]
    assert status(conn, "sec_swap")[1].startswith("permission denied for path")
    conn.execute("DROP TABLE sec_swap")


def test_a_folder_inside_the_root_loads(conn, tmp_path: Path) -> None:
    src = tmp_path / "users"
    src.mkdir()
    (src / "a.csv").write_text("id,name\n1,ann\n2,bob\n")
    (src / "b.csv").write_text("id,name\n3,cid\n")
    (src / "notes.txt").write_text("not matched\n")
    (tmp_path / "inner-link").symlink_to(src, target_is_directory=True)  # a link that stays inside is fine
    conn.execute(create_sql("sec_ok", tmp_path / "inner-link", "*.csv"))
    conn.execute("REFRESH TABLE sec_ok WAIT")
    assert conn.execute("SELECT id, name FROM sec_ok ORDER BY id").fetchall() == [(1, "ann"), (2, "bob"), (3, "cid")]
    assert status(conn, "sec_ok") == ("IDLE", None)
    conn.execute("DROP TABLE sec_ok")


# -- end to end: a gateway whose config file allows '/' ------------------------------------------------

def test_own_files_stay_unreadable_under_a_root_of_slash(tmp_path: Path) -> None:
    cfg_dir = tmp_path / "etc"
    cfg_dir.mkdir()
    cfg = cfg_dir / "tidegate.toml"
    cfg.write_text('file_connector_roots = ["/"]\nlog_level = "INFO"\n')
    src = tmp_path / "src"
    src.mkdir()
    gw = start_tidegate(tmp_path / "data", extra_args=["--config", str(cfg)], file_roots=[])
    try:
        with psycopg.connect(gw.dsn, autocommit=True) as c:
            c.execute(create_sql("own_ok", src))  # '/' allows the rest of the filesystem
            for path in (cfg, gw.data_dir, gw.data_dir / "catalog.sqlite", "/proc/self/environ"):
                err = error_of(c, create_sql("own_no", path))
                assert err.sqlstate == "42501", path
                assert "the server's own files" in err.diag.message_primary, path
            assert not exists(c, "own_no")
    finally:
        gw.stop()


# -- unit: the path checks ------------------------------------------------------------------------------

def settings_for(tmp_path: Path, roots: list[str], **kw) -> Settings:
    return Settings(data_dir=tmp_path / "data", file_connector_roots=roots, **kw)


def refused(access: FileAccess, path: Path | str) -> str:
    with pytest.raises(SqlError) as info:
        access.resolve(str(path))
    assert info.value.sqlstate == "42501"
    return info.value.message


def test_settings_roots_from_toml_and_environment(tmp_path: Path) -> None:
    cfg = tmp_path / "tg.toml"
    cfg.write_text('file_connector_roots = ["/srv/a", "/srv/b"]\n')
    s = load_settings(cfg, environ={})
    assert s.file_connector_roots == ["/srv/a", "/srv/b"] and s.config_file == cfg.resolve()
    s = load_settings(environ={"TIDEGATE_FILE_CONNECTOR_ROOTS": f"/srv/a, /srv/b{os.pathsep}/srv/c,",
                               "TIDEGATE_CONFIG_FILE": "/elsewhere.toml"})
    assert s.file_connector_roots == ["/srv/a", "/srv/b", "/srv/c"]
    assert s.config_file is None  # only load_settings says which file it read
    assert Settings().file_connector_roots == []
    cfg.write_text("file_connector_roots = 5\n")
    with pytest.raises(ValueError):
        load_settings(cfg, environ={})


def test_no_roots_refuses_the_file_connector(tmp_path: Path) -> None:
    access = FileAccess.from_settings(settings_for(tmp_path, []))
    assert refused(access, tmp_path) == (
        f"permission denied for path '{tmp_path}': the file connector is disabled; list the directories it "
        f"may read in the setting {ROOTS}")


def test_roots_compare_whole_path_components(tmp_path: Path) -> None:
    root = tmp_path / "data-in"
    (root / "x").mkdir(parents=True)
    (tmp_path / "data-in-secrets").mkdir()
    access = FileAccess.from_settings(settings_for(tmp_path, [str(root)]))
    assert access.resolve(str(root)) == str(root)
    assert access.resolve(str(root / "x")) == str(root / "x")
    assert "outside" in refused(access, tmp_path / "data-in-secrets")  # a string prefix, not a subfolder
    assert "outside" in refused(access, root / ".." / "data-in-secrets")
    assert "outside" in refused(access, tmp_path)


def test_symlinked_roots_and_links_are_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    (real / "up").symlink_to(tmp_path, target_is_directory=True)
    (real / "ok.csv").write_text("id\n1\n")
    access = FileAccess.from_settings(settings_for(tmp_path, [str(tmp_path / "alias")]))
    assert access.resolve(str(real / "ok.csv")) == str(real / "ok.csv")  # root given through a link
    assert access.resolve(str(tmp_path / "alias" / "ok.csv")) == str(real / "ok.csv")
    assert "outside" in refused(access, real / "up")


def test_own_files_are_refused_under_any_root(tmp_path: Path) -> None:
    cfg = tmp_path / "tg.toml"
    cfg.write_text("")
    key = tmp_path / "server.key"
    key.write_text("")
    settings = settings_for(tmp_path, ["/"], config_file=cfg, tls_key=key, tls_cert=tmp_path / "server.crt")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "catalog.sqlite").write_text("")
    access = FileAccess.from_settings(settings)
    for path in (cfg, key, tmp_path / "data", tmp_path / "data" / "catalog.sqlite", tmp_path / "data" / "warehouse",
                 "/proc/self/environ", "/proc/1/environ"):
        assert "the server's own files" in refused(access, path), path
    (tmp_path / "cfg-link").symlink_to(cfg)
    assert "the server's own files" in refused(access, tmp_path / "cfg-link")
    os.link(cfg, tmp_path / "cfg-hardlink")
    assert "the server's own files" in refused(access, tmp_path / "cfg-hardlink")
    assert access.resolve(str(tmp_path)) == str(tmp_path)  # the folder holding them is not itself refused


def test_names_spark_would_expand_are_refused(tmp_path: Path) -> None:
    access = FileAccess.from_settings(settings_for(tmp_path, [str(tmp_path)]))
    for name in ("{..,x}", "a*.csv", "b[1].csv"):
        assert "Spark would read its name as a pattern" in refused(access, tmp_path / name), name


def _source(path: Path, pattern: str, access: FileAccess) -> Source:
    options = {"connector": "file", "path": str(path), "match_pattern": pattern, "encode": "CSV"}
    return Source(SimpleNamespace(options=options), access)  # type: ignore[arg-type]


def test_refresh_checks_every_matched_file(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.csv").write_text("id\n1\n")
    cfg = tmp_path / "tg.toml"
    cfg.write_text("")
    access = FileAccess.from_settings(settings_for(tmp_path, [str(tmp_path)], config_file=cfg))
    assert _source(src, "*.csv", access)._files() == [str(src / "a.csv")]
    (src / "b.csv").symlink_to(cfg)  # one bad file fails the whole refresh
    with pytest.raises(SqlError) as info:
        _source(src, "*.csv", access)._files()
    assert info.value.sqlstate == "42501" and f"'{src / 'b.csv'}' (resolves to '{cfg}')" in info.value.message
    assert _source(src, "a.csv", access)._files() == [str(src / "a.csv")]  # not matched: not read
    with pytest.raises(SqlError) as info:
        _source(src, "../tg.toml", access)._files()  # a stored option is checked again
    assert info.value.sqlstate == "22023"


def test_create_checks_superuser_and_path(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, [str(tmp_path)])
    file_opts = {"connector": "file", "path": str(tmp_path), "encode": "CSV", "refresh_mode": "FULL_RELOAD"}
    pg_opts = {"connector": "postgres", "url": "postgresql://h/db", "source_table": "t", "refresh_mode": "FULL_RELOAD"}
    for opts in (file_opts, pg_opts):
        validate_options(opts, ["id"])
        with pytest.raises(SqlError) as info:
            check_create_connector(opts, False, settings)
        assert (info.value.sqlstate, info.value.message) == (
            "42501", f"must be superuser to create a table with connector '{opts['connector']}'")
        check_create_connector(opts, True, settings)
    check_create_connector({}, False, settings)  # no connector: nothing to check
    with pytest.raises(SqlError) as info:
        check_create_connector({**file_opts, "path": "/etc"}, True, settings)
    assert info.value.sqlstate == "42501"
