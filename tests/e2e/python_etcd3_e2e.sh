#!/usr/bin/env bash
# Debian's python3-etcd3 client against Leasehold and against etcd 3.4: the same scenario
# (python_etcd3_scenario.py) on a fresh server of each must print the same thing.
source "$(dirname "$0")/lib.sh"
e2e_plan 2
e2e_same_as_etcd "python3-etcd3" 15 /usr/bin/python3 "$(dirname "$0")/python_etcd3_scenario.py"
e2e_finish
