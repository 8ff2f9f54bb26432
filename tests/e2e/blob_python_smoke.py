"""Debian's python3-azure-storage (the official Azure SDK for Python) against the blob adapter:
the seed's lease pattern (acquire, contend, renew, break, release), and index tags under a lease.
Usage: blob_python_smoke.py http://127.0.0.1:PORT/devstoreaccount1"""
import sys
import time
import uuid

from azure.core.exceptions import HttpResponseError, ResourceExistsError
from azure.storage.blob import BlobServiceClient

KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
failures = 0


def check(name, ok, detail=""):
    global failures
    print(("ok   - " if ok else "FAIL - ") + name + ("" if ok else f"  {detail}"))
    failures += 0 if ok else 1


def error_code(call):
    try:
        call()
    except HttpResponseError as e:
        return e.status_code, e.error_code
    return 200, None


service = BlobServiceClient(account_url=sys.argv[1], credential={"account_name": "devstoreaccount1", "account_key": KEY})
container = service.create_container(f"py{uuid.uuid4().hex[:12]}", metadata={"owner": "smoke"})
blob = container.get_blob_client("jobs/leader.lock")
blob.upload_blob(b"")

holder = blob.acquire_lease(lease_duration=15)
check("acquire returns a lease id", len(holder.id) == 36, holder.id)
props = blob.get_blob_properties()
check("properties show the lease", (props.lease.state, props.lease.status, props.lease.duration) == ("leased", "locked", "fixed"),
      str(props.lease))

status, code = error_code(lambda: blob.acquire_lease(lease_duration=15))
check("a second acquire is refused", (status, code) == (409, "LeaseAlreadyPresent"), f"{status} {code}")
status, code = error_code(lambda: blob.upload_blob(b"x", overwrite=True))
check("a write without the lease id is refused", (status, code) == (412, "LeaseIdMissing"), f"{status} {code}")
blob.upload_blob(b"mine", overwrite=True, lease=holder)
check("the holder writes", blob.download_blob().readall() == b"mine")

holder.renew()
check("renew keeps the lease", blob.get_blob_properties().lease.state == "leased")
holder.change(str(uuid.uuid4()).upper())
check("change takes an upper-case GUID and answers it canonically", holder.id == holder.id.lower(), holder.id)

broken_in = holder.break_lease(lease_break_period=1)
check("break reports the break period", broken_in == 1, str(broken_in))
check("breaking", blob.get_blob_properties().lease.state == "breaking")
time.sleep(1.6)
check("broken after the period", blob.get_blob_properties().lease.state == "broken")
holder.release()
check("release makes it available", blob.get_blob_properties().lease.state == "available")

other = blob.acquire_lease(lease_duration=-1)
check("an infinite lease", blob.get_blob_properties().lease.duration == "infinite")
# Index tags: set and read under the lease, and a condition on them guarding a write.
status, code = error_code(lambda: blob.set_blob_tags({"role": "leader"}))
check("setting tags on a leased blob needs the lease id", (status, code) == (412, "LeaseIdMissing"), f"{status} {code}")
blob.set_blob_tags({"role": "leader", "zone": "eu-1"}, lease=other)
check("tags read back", blob.get_blob_tags() == {"role": "leader", "zone": "eu-1"}, str(blob.get_blob_tags()))
check("the tag count is a property", blob.get_blob_properties().tag_count == 2)
status, code = error_code(lambda: blob.set_blob_metadata({"k": "v"}, lease=other, if_tags_match_condition="role = 'follower'"))
check("an unmet tag condition refuses the write", (status, code) == (412, "ConditionNotMet"), f"{status} {code}")
blob.set_blob_metadata({"k": "v"}, lease=other, if_tags_match_condition="\"role\" = 'leader' AND zone >= 'eu'")
check("a met tag condition lets it through", blob.get_blob_properties().metadata == {"k": "v"})
status, code = error_code(lambda: blob.upload_blob(b"x", overwrite=False))
check("a create-only upload over the leased blob: it exists", (status, code) == (409, "BlobAlreadyExists"), f"{status} {code}")
other.release()
# A write with the id of a lease that has since expired: the service's LeaseLost.
short = container.get_blob_client("expiring")
short.upload_blob(b"x")
lost = short.acquire_lease(lease_duration=15)
time.sleep(16)
status, code = error_code(lambda: short.upload_blob(b"y", overwrite=True, lease=lost))
check("a write with an expired lease's id", (status, code) == (412, "LeaseLost"), f"{status} {code}")
container.delete_container()
status, code = error_code(lambda: container.get_container_properties())
check("the container is gone", (status, code) == (404, "ContainerNotFound"), f"{status} {code}")
print(f"{failures} failed")
sys.exit(1 if failures else 0)
