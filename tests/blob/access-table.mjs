// The expected outcome of reads and writes on a blob by lease state and by the lease id the request
// carries (A: the blob's lease id; B: another GUID; none). Shared by lease-access.test.mjs (states
// reachable at once) and lease-expiry.test.mjs (the expired state).
//
// The Lease Blob page's table, except that another lease id is answered 412 in every state, as the
// service does (the page's table says 409 on a leased blob; a live recording of the service says 412).

import assert from "node:assert/strict";

import { expectRestError, leaseInfo, randomUUID } from "./helpers.mjs";

const OK = "ok";
const notPresent = { status: 412, code: "LeaseNotPresentWithBlobOperation" };
// The service's answer to a lease id whose lease has expired ("A lease ID was specified, but the
// lease for the blob has expired.").
const lost = { status: 412, code: "LeaseLost" };

export const WRITE_EXPECT = {
  available: { A: notPresent, B: notPresent, none: OK },
  leased: { A: OK, B: { status: 412, code: "LeaseIdMismatchWithBlobOperation" }, none: { status: 412, code: "LeaseIdMissing" } },
  breaking: { A: OK, B: { status: 412, code: "LeaseIdMismatchWithBlobOperation" }, none: { status: 412, code: "LeaseIdMissing" } },
  broken: { A: notPresent, B: notPresent, none: OK },
  expired: { A: lost, B: lost, none: OK },
};

export const READ_EXPECT = {
  available: { A: notPresent, B: notPresent, none: OK },
  leased: { A: OK, B: { status: 412, code: "LeaseIdMismatchWithBlobOperation" }, none: OK },
  breaking: { A: OK, B: { status: 412, code: "LeaseIdMismatchWithBlobOperation" }, none: OK },
  broken: { A: notPresent, B: notPresent, none: OK },
  expired: { A: lost, B: lost, none: OK },
};

export const WRITES = {
  upload: async (blob, conditions) => {
    const r = await blob.upload("rewritten", 9, { conditions });
    assert.equal(r._response.status, 201);
  },
  setMetadata: async (blob, conditions) => {
    const r = await blob.setMetadata({ touched: "yes" }, { conditions });
    assert.equal(r._response.status, 200);
  },
  delete: async (blob, conditions) => {
    const r = await blob.delete({ conditions });
    assert.equal(r._response.status, 202);
  },
};

export const READS = {
  download: async (blob, conditions) => {
    const r = await blob.download(0, undefined, { conditions });
    assert.equal(r._response.status, 200);
    for await (const _ of r.readableStreamBody) {
      // drain
    }
  },
  getProperties: async (blob, conditions) => {
    const r = await blob.getProperties({ conditions });
    assert.equal(r._response.status, 200);
  },
};

function conditionsFor(idKind, leaseId) {
  if (idKind === "A") return { leaseId };
  if (idKind === "B") return { leaseId: randomUUID() };
  return {};
}

// Runs write `op` with lease id kind `idKind` on `blob` (in lease state `state`, lease id
// `leaseId`) and checks the outcome and what it did to the blob and its lease.
export async function checkWrite(state, op, idKind, blob, leaseId) {
  const expect = WRITE_EXPECT[state][idKind];
  const before = await blob.getProperties();
  const what = `${op} with ${idKind} on ${state}`;
  if (expect === OK) {
    await WRITES[op](blob, conditionsFor(idKind, leaseId));
    if (op === "delete") {
      assert.equal(await blob.exists(), false, `${what}: blob deleted`);
      return;
    }
    const after = await blob.getProperties();
    assert.notEqual(after.etag, before.etag, `${what}: ETag changed`);
    if (op === "upload") assert.equal(after.contentLength, 9, `${what}: content written`);
    if (op === "setMetadata") assert.deepEqual(after.metadata, { touched: "yes" }, `${what}: metadata set`);
    // A write keeps a live lease; it ends an expired or broken one (the blob becomes available).
    const expectedState = state === "broken" || state === "expired" ? "available" : state;
    assert.equal(after.leaseState, expectedState, `${what}: lease state afterwards`);
  } else {
    await expectRestError(WRITES[op](blob, conditionsFor(idKind, leaseId)), expect.status, expect.code, what);
    const after = await blob.getProperties();
    assert.equal(after.etag, before.etag, `${what}: refused write changed nothing`);
    assert.equal(after.leaseState, state, `${what}: lease state unchanged`);
  }
}

export async function checkRead(state, op, idKind, blob, leaseId) {
  const expect = READ_EXPECT[state][idKind];
  const what = `${op} with ${idKind} on ${state}`;
  if (expect === OK) {
    await READS[op](blob, conditionsFor(idKind, leaseId));
  } else {
    await expectRestError(READS[op](blob, conditionsFor(idKind, leaseId)), expect.status, expect.code, what);
  }
  assert.equal((await leaseInfo(blob)).state, state, `${what}: a read does not change the lease state`);
}
