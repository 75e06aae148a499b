#!/usr/bin/env bash
# What the test suite needs outside Python, installed the same way on a fresh machine and in CI:
# - the JDBC drivers Spark reads the event log with (Debian packages);
# - Java 17 for Spark (normally present);
# - a running PostgreSQL on 127.0.0.1:5432 (started if the machine has it installed but stopped).
set -euo pipefail
need=()
[ -f /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
[ -f /usr/share/java/sqlite-jdbc.jar ] || need+=(libxerial-sqlite-jdbc-java)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "system-deps: installing ${need[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "system-deps: missing ${need[*]} (run as root or install them with apt-get)" >&2
  fi
fi
if command -v pg_isready >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "system-deps: starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
fi
exit 0
