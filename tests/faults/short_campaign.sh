#!/usr/bin/env bash
# The test command's short fault campaign: 3 members in network namespaces for 120 s under
# kill -9, power cuts (unsynced writes lost), pauses, partitions, peer delay and a blackhole long
# enough to need a snapshot, then every checker.
# A fixed seed, so a failure replays with the same schedule:
#   leasehold-faults --binary build/server/leasehold --seed 20261124 ...
# Skipped (77) where namespaces cannot be made. usage: short_campaign.sh FAULTS LEASEHOLD
set -uo pipefail
OUT=$(mktemp -d /tmp/leasehold-short-campaign.XXXXXX)
"$1" --binary "$2" --nodes 3 --time "${SHORT_CAMPAIGN_SECONDS:-120}" --seed 20261124 \
  --nemesis kill,powercut,pause,partition,delay,blackhole --out "$OUT"
rc=$?
if [ $rc -eq 0 ]; then rm -rf "$OUT"; else echo "report kept in $OUT (member logs in $OUT/cluster)"; fi
exit $rc
