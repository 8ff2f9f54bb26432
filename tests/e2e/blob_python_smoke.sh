#!/usr/bin/env bash
# The official Azure SDK for Python (Debian's python3-azure-storage) against the blob adapter.
source "$(dirname "$0")/lib.sh"
e2e_plan 1
BLOB_PORT=$(free_port)
e2e_start_server --listen-blob-urls "http://127.0.0.1:$BLOB_PORT"
if /usr/bin/python3 "$(dirname "$0")/blob_python_smoke.py" "http://127.0.0.1:$BLOB_PORT/devstoreaccount1"; then
  pass "python SDK smoke test"
else
  fail "python SDK smoke test"
fi
e2e_finish
