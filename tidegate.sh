#!/usr/bin/env bash
# tidegate's two set-up commands on a fresh machine:
#   ./tidegate.sh serve [tidegate serve flags...]   start the gateway on its embedded defaults
#   ./tidegate.sh test  [pytest args...]            run every test: pytest, then the sqlness suite
# Each one creates/refreshes .venv with the pinned dependencies, fetches the JVM jars in
# jars/maven.txt into .jars/ with Maven, installs Java 17 (and Maven) if missing, and builds the
# driver JVM's class archive in .jars/ when it is missing or stale.
set -euo pipefail
cd "$(dirname "$0")"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
    # Installs Debian packages only when something is missing (apt-get update is slow).
    local missing=()
    for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing Debian packages: ${missing[*]}" >&2
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

ensure_java() {
    command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
}

ensure_jars() {
    # The JVM jars in jars/maven.txt, copied from Maven Central into .jars/ (Spark's spark.jars).
    local coord missing=()
    while read -r coord; do
        case "$coord" in ''|'#'*) continue ;; esac
        IFS=: read -r group artifact version <<<"$coord"
        [ -f ".jars/$artifact-$version.jar" ] || missing+=("$coord")
    done < jars/maven.txt
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v mvn >/dev/null 2>&1 || apt_install maven
    mkdir -p .jars
    for coord in "${missing[@]}"; do
        echo "fetching $coord" >&2
        mvn -q -B dependency:copy -Dartifact="$coord" -DoutputDirectory=.jars -Dmdep.overWriteIfNewer=true >&2
    done
}

ensure_venv() {
    local stamp=.venv/.tidegate-installed
    [ -x .venv/bin/python ] || python3 -m venv .venv
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
        .venv/bin/python -m pip install -q --upgrade pip >/dev/null
        .venv/bin/python -m pip install -q -c constraints.txt -e '.[test]'
        touch "$stamp"
    fi
}

ensure_driver_archive() {
    # The driver JVM's class archive (.jars/tidegate-driver.jsa, engine/spark.py): Spark starts in
    # about half the time. Built once, and again when java, PySpark or the jars change.
    .venv/bin/python -c 'from engine.spark import ensure_driver_archive; ensure_driver_archive()'
}

cmd=${1:-}
shift || true
case "$cmd" in
    serve)
        ensure_java
        ensure_jars
        ensure_venv
        ensure_driver_archive
        exec .venv/bin/tidegate serve "$@"
        ;;
    test)
        ensure_java
        # The oracle PostgreSQL 15 and pgJDBC driver used by the client-matrix tests.
        apt_install postgresql libpostgresql-jdbc-java
        ensure_jars
        ensure_venv
        ensure_driver_archive
        # The tool suite's own environment (released dbt, pgcli, ibis: tests/tools/requirements.txt).
        .venv/bin/python -m tests.tools.venv >/dev/null
        status=0
        .venv/bin/python -m pytest "$@" || status=$?
        .venv/bin/python -m sqlness || status=$?
        exit $status
        ;;
    *)
        echo "usage: $0 serve [flags] | test [pytest args]" >&2
        exit 2
        ;;
esac
