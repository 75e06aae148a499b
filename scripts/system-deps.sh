#!/usr/bin/env bash
# What the test suite needs outside Python, installed the same way on a fresh machine and in CI:
# - the JDBC drivers Spark reads the event log with (Debian packages);
# - Java 17 for Spark (normally present);
# - kcat (librdkafka's CLI; Debian ships 1.7) for tests/e2e/test_kcat_e2e.py;
# - a running PostgreSQL on 127.0.0.1:5432 (started if the machine has it installed but stopped).
set -euo pipefail
need=()
[ -f /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
[ -f /usr/share/java/sqlite-jdbc.jar ] || need+=(libxerial-sqlite-jdbc-java)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: installing ${need[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  elif ! command -v apt-get >/dev/null 2>&1; then
    echo "system-deps: missing ${need[*]}: apt-get is not available here (install them with the system's package manager)" >&2
  else
    echo "system-deps: missing ${need[*]} (run as root or install them with apt-get)" >&2
  fi
  # under CI every dependency must be present: the tests that need them fail rather than skip
  if [ "${CI:-}" = "true" ]; then
    for p in "${need[@]}"; do
      case "$p" in
        kcat) command -v kcat >/dev/null 2>&1 || { echo "system-deps: kcat is required under CI" >&2; exit 1; } ;;
      esac
    done
  fi
fi
if command -v pg_isready >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "system-deps: starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
fi
exit 0
