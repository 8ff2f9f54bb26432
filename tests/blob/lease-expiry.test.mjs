// Everything that waits for the clock: fixed leases (15 s, the minimum) expiring, break periods
// elapsing, and the expired state's answers. The cases are independent (one blob each) and run
// concurrently, so the file takes about as long as its slowest case (~25 s), not their sum.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { openServer } from "./server.mjs";
import { READS, WRITES, checkRead, checkWrite } from "./access-table.mjs";
import { expectRestError, leaseInfo, newBlob, randomUUID, sleep, uniqueName } from "./helpers.mjs";

let server;
let svc;
let container;

before(async () => ({ server, svc, container } = await openServer("expiry")));
after(() => server?.stop());

const MIN_DURATION = 15;
// How late after its due time a lease may be seen to expire or a break to complete.
const SLACK_MS = 4000;

// Sleeps until `startedAt + atMs`.
async function sleepUntil(startedAt, atMs) {
  const wait = startedAt + atMs - Date.now();
  if (wait > 0) await sleep(wait);
}

// Polls the lease state of `client` until it is `state`; returns ms since `startedAt` when seen.
async function waitForState(client, state, startedAt, { fromMs = 0, timeoutMs }) {
  await sleepUntil(startedAt, fromMs);
  let last;
  for (;;) {
    last = await leaseInfo(client);
    if (last.state === state) return Date.now() - startedAt;
    if (Date.now() - startedAt > timeoutMs) {
      assert.fail(`still ${JSON.stringify(last)} ${Date.now() - startedAt} ms after start, expected ${state}`);
    }
    await sleep(250);
  }
}

// A fresh blob whose 15 s lease (id A) has expired.
async function expiredBlob(prefix = "exp") {
  const blob = await newBlob(container, prefix);
  const leaseId = randomUUID();
  const startedAt = Date.now();
  await blob.getBlobLeaseClient(leaseId).acquireLease(MIN_DURATION);
  const seenAt = await waitForState(blob, "expired", startedAt, {
    fromMs: MIN_DURATION * 1000 - 500,
    timeoutMs: MIN_DURATION * 1000 + SLACK_MS,
  });
  return { blob, leaseId, seenAt };
}

describe("lease expiry and break timing", { concurrency: true }, () => {
  test("a 15 s lease is leased until ~15 s, then expired (getProperties and listing)", async () => {
    const blob = await newBlob(container, "clock");
    const startedAt = Date.now();
    await blob.getBlobLeaseClient().acquireLease(MIN_DURATION);
    await sleepUntil(startedAt, MIN_DURATION * 1000 - 1500);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "fixed" },
      "still leased shortly before the end");
    const seenAt = await waitForState(blob, "expired", startedAt, { timeoutMs: MIN_DURATION * 1000 + SLACK_MS });
    assert.ok(seenAt >= MIN_DURATION * 1000 - 1000, `expired after ${seenAt} ms, not before ~15 s`);
    assert.deepEqual(await leaseInfo(blob), { state: "expired", status: "unlocked", duration: undefined });
    let listed;
    for await (const item of container.listBlobsFlat({ prefix: blob.name })) listed = item;
    assert.equal(listed.properties.leaseState, "expired");
    assert.equal(listed.properties.leaseStatus, "unlocked");
    assert.equal(listed.properties.leaseDuration, undefined);
  });

  describe("lease actions on an expired lease", { concurrency: true }, () => {
    test("acquire with the same id -> 201 leased", async () => {
      const { blob, leaseId } = await expiredBlob();
      const r = await blob.getBlobLeaseClient(leaseId).acquireLease(-1);
      assert.equal(r._response.status, 201);
      assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "infinite" });
    });

    test("acquire with another id -> 201 leased", async () => {
      const { blob, leaseId } = await expiredBlob();
      const other = randomUUID();
      const r = await blob.getBlobLeaseClient(other).acquireLease(30);
      assert.equal(r._response.status, 201);
      assert.equal(r.leaseId, other);
      await expectRestError(
        blob.getBlobLeaseClient(leaseId).renewLease(),
        409,
        "LeaseIdMismatchWithLeaseOperation",
        "the expired holder renews after another acquired",
      );
    });

    test("renew with A, no write since -> 200 and leased again", async () => {
      const { blob, leaseId } = await expiredBlob();
      const r = await blob.getBlobLeaseClient(leaseId).renewLease();
      assert.equal(r._response.status, 200);
      assert.equal(r.leaseId, leaseId);
      assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "fixed" });
      // Leased again for a full period: a write without the id is refused.
      await expectRestError(blob.upload("x", 1), 412, "LeaseIdMissing", "write without id after renew");
    });

    test("reads and refused writes do not count as writes: renew A still -> 200", async () => {
      const { blob, leaseId } = await expiredBlob();
      await blob.downloadToBuffer();
      await blob.getProperties();
      await expectRestError(
        blob.upload("x", 1, { conditions: { leaseId } }),
        412,
        "LeaseLost",
        "write with A on expired",
      );
      assert.equal((await leaseInfo(blob)).state, "expired");
      const r = await blob.getBlobLeaseClient(leaseId).renewLease();
      assert.equal(r._response.status, 200);
      assert.equal((await leaseInfo(blob)).state, "leased");
    });

    test("break then renew A -> 409 LeaseIsBrokenAndCannotBeRenewed", async () => {
      const { blob, leaseId } = await expiredBlob();
      await blob.getBlobLeaseClient().breakLease(0);
      await expectRestError(
        blob.getBlobLeaseClient(leaseId).renewLease(),
        409,
        "LeaseIsBrokenAndCannotBeRenewed",
      );
    });

    test("renew with B -> 409 LeaseIdMismatchWithLeaseOperation", async () => {
      const { blob } = await expiredBlob();
      await expectRestError(
        blob.getBlobLeaseClient(randomUUID()).renewLease(),
        409,
        "LeaseIdMismatchWithLeaseOperation",
      );
    });

    test("upload without lease id -> ok and available; then renew A -> 409 LeaseIdMismatchWithLeaseOperation", async () => {
      const { blob, leaseId } = await expiredBlob();
      const up = await blob.upload("written after expiry", 20);
      assert.equal(up._response.status, 201);
      assert.deepEqual(await leaseInfo(blob), { state: "available", status: "unlocked", duration: undefined });
      await expectRestError(
        blob.getBlobLeaseClient(leaseId).renewLease(),
        409,
        "LeaseIdMismatchWithLeaseOperation",
        "renew after a write",
      );
    });

    test("setMetadata without lease id -> ok and available; then renew A -> 409", async () => {
      const { blob, leaseId } = await expiredBlob();
      await blob.setMetadata({ after: "expiry" });
      assert.equal((await leaseInfo(blob)).state, "available");
      await expectRestError(
        blob.getBlobLeaseClient(leaseId).renewLease(),
        409,
        "LeaseIdMismatchWithLeaseOperation",
        "renew after a metadata write",
      );
    });

    test("change -> 409 LeaseNotPresentWithLeaseOperation", async () => {
      const { blob, leaseId } = await expiredBlob();
      await expectRestError(
        blob.getBlobLeaseClient(leaseId).changeLease(randomUUID()),
        409,
        "LeaseNotPresentWithLeaseOperation",
      );
      assert.equal((await leaseInfo(blob)).state, "expired");
    });

    test("release with A -> 200 available", async () => {
      const { blob, leaseId } = await expiredBlob();
      const r = await blob.getBlobLeaseClient(leaseId).releaseLease();
      assert.equal(r._response.status, 200);
      assert.deepEqual(await leaseInfo(blob), { state: "available", status: "unlocked", duration: undefined });
    });

    test("release with B -> 409 LeaseIdMismatchWithLeaseOperation", async () => {
      const { blob } = await expiredBlob();
      await expectRestError(
        blob.getBlobLeaseClient(randomUUID()).releaseLease(),
        409,
        "LeaseIdMismatchWithLeaseOperation",
      );
    });

    test("break -> 202 broken, leaseTime 0", async () => {
      const { blob } = await expiredBlob();
      const r = await blob.getBlobLeaseClient().breakLease(30);
      assert.equal(r._response.status, 202);
      assert.equal(r.leaseTime, 0);
      assert.deepEqual(await leaseInfo(blob), { state: "broken", status: "unlocked", duration: undefined });
    });
  });

  describe("reads and writes on an expired lease", { concurrency: true }, () => {
    for (const op of Object.keys(WRITES)) {
      for (const idKind of ["A", "B", "none"]) {
        test(`${op} with lease id ${idKind} on expired`, async () => {
          const { blob, leaseId } = await expiredBlob("expw");
          await checkWrite("expired", op, idKind, blob, leaseId);
        });
      }
    }
    for (const op of Object.keys(READS)) {
      for (const idKind of ["A", "B", "none"]) {
        test(`${op} with lease id ${idKind} on expired`, async () => {
          const { blob, leaseId } = await expiredBlob("expr");
          await checkRead("expired", op, idKind, blob, leaseId);
        });
      }
    }
  });

  describe("break periods elapsing", { concurrency: true }, () => {
    test("fixed lease broken without a period: breaking until the lease's end, then broken", async () => {
      const blob = await newBlob(container, "brk");
      const leaseId = randomUUID();
      const startedAt = Date.now();
      await blob.getBlobLeaseClient(leaseId).acquireLease(MIN_DURATION);
      await sleep(2000);
      const r = await blob.getBlobLeaseClient().breakLease(undefined);
      assert.equal(r._response.status, 202);
      assert.ok(r.leaseTime >= 11 && r.leaseTime <= 13, `leaseTime ${r.leaseTime} ~ 13 s remaining`);
      assert.deepEqual(await leaseInfo(blob), { state: "breaking", status: "locked", duration: undefined });
      // Breaking: the holder still writes, others need the id.
      await blob.upload("holder", 6, { conditions: { leaseId } });
      await expectRestError(blob.upload("x", 1), 412, "LeaseIdMissing", "write without id while breaking");
      await sleepUntil(startedAt, MIN_DURATION * 1000 - 1500);
      assert.equal((await leaseInfo(blob)).state, "breaking", "still breaking before the lease's end");
      const seenAt = await waitForState(blob, "broken", startedAt, { timeoutMs: MIN_DURATION * 1000 + SLACK_MS });
      assert.ok(seenAt >= MIN_DURATION * 1000 - 1000, `broken after ${seenAt} ms`);
      assert.deepEqual(await leaseInfo(blob), { state: "broken", status: "unlocked", duration: undefined });
      // Broken: the old holder cannot write with its id, anyone can without one.
      await expectRestError(
        blob.upload("x", 1, { conditions: { leaseId } }),
        412,
        "LeaseNotPresentWithBlobOperation",
        "holder writes after broken",
      );
      await blob.upload("anyone", 6);
      assert.equal((await leaseInfo(blob)).state, "available");
    });

    test("infinite lease, period 3: breaking for ~3 s, then broken", async () => {
      const blob = await newBlob(container, "brk");
      const lease = blob.getBlobLeaseClient();
      await lease.acquireLease(-1);
      const startedAt = Date.now();
      const r = await lease.breakLease(3);
      assert.equal(r.leaseTime, 3);
      await sleepUntil(startedAt, 1500);
      assert.equal((await leaseInfo(blob)).state, "breaking", "still breaking at 1.5 s");
      const seenAt = await waitForState(blob, "broken", startedAt, { timeoutMs: 3000 + SLACK_MS });
      assert.ok(seenAt >= 2000, `broken after ${seenAt} ms`);
      // Broken: renew refused, acquire by anyone fine.
      await expectRestError(lease.renewLease(), 409, "LeaseIsBrokenAndCannotBeRenewed", "renew after broken");
      assert.equal((await blob.getBlobLeaseClient().acquireLease(-1))._response.status, 201);
    });

    test("fixed 15 s lease, period 5: breaking for 5 s, then broken", async () => {
      const blob = await newBlob(container, "brk");
      const lease = blob.getBlobLeaseClient();
      await lease.acquireLease(MIN_DURATION);
      const startedAt = Date.now();
      const r = await lease.breakLease(5);
      assert.equal(r.leaseTime, 5);
      await sleepUntil(startedAt, 3000);
      assert.equal((await leaseInfo(blob)).state, "breaking", "still breaking at 3 s");
      const seenAt = await waitForState(blob, "broken", startedAt, { timeoutMs: 5000 + SLACK_MS });
      assert.ok(seenAt >= 4000, `broken after ${seenAt} ms`);
    });

    test("fixed 15 s lease, period 40: breaks at the lease's end, not after 40 s", async () => {
      const blob = await newBlob(container, "brk");
      const lease = blob.getBlobLeaseClient();
      const startedAt = Date.now();
      await lease.acquireLease(MIN_DURATION);
      const r = await lease.breakLease(40);
      assert.ok(r.leaseTime >= 13 && r.leaseTime <= 15, `leaseTime ${r.leaseTime} = min(40, ~15)`);
      await waitForState(blob, "broken", startedAt, {
        fromMs: MIN_DURATION * 1000 - 1000,
        timeoutMs: MIN_DURATION * 1000 + SLACK_MS,
      });
    });

    test("breaking for 60 s, broken again with period 2: broken after ~2 s", async () => {
      const blob = await newBlob(container, "brk");
      const lease = blob.getBlobLeaseClient();
      await lease.acquireLease(-1);
      assert.equal((await lease.breakLease(60)).leaseTime, 60);
      const startedAt = Date.now();
      const r = await lease.breakLease(2);
      assert.equal(r._response.status, 202);
      assert.ok(r.leaseTime <= 2, `shortened: leaseTime ${r.leaseTime}`);
      const seenAt = await waitForState(blob, "broken", startedAt, { timeoutMs: 2000 + SLACK_MS });
      assert.ok(seenAt >= 1000, `broken after ${seenAt} ms`);
    });

    test("breaking for 5 s, broken again with period 30: still broken after ~5 s", async () => {
      const blob = await newBlob(container, "brk");
      const lease = blob.getBlobLeaseClient();
      await lease.acquireLease(-1);
      const startedAt = Date.now();
      assert.equal((await lease.breakLease(5)).leaseTime, 5);
      const r = await lease.breakLease(30);
      assert.ok(r.leaseTime <= 5, `not lengthened: leaseTime ${r.leaseTime}`);
      await waitForState(blob, "broken", startedAt, { fromMs: 4000, timeoutMs: 5000 + SLACK_MS });
    });
  });

  describe("durations and renewals", { concurrency: true }, () => {
    test("re-acquiring an infinite lease with 15 s makes it expire 15 s later", async () => {
      const blob = await newBlob(container, "dur");
      const id = randomUUID();
      await blob.getBlobLeaseClient(id).acquireLease(-1);
      await sleep(1000);
      const startedAt = Date.now();
      await blob.getBlobLeaseClient(id).acquireLease(MIN_DURATION);
      assert.equal((await leaseInfo(blob)).duration, "fixed");
      const seenAt = await waitForState(blob, "expired", startedAt, {
        fromMs: MIN_DURATION * 1000 - 1500,
        timeoutMs: MIN_DURATION * 1000 + SLACK_MS,
      });
      assert.ok(seenAt >= MIN_DURATION * 1000 - 1000, `expired after ${seenAt} ms`);
    });

    test("renewing a 15 s lease at 8 s keeps it past its first end and it expires ~15 s after the renewal", async () => {
      const blob = await newBlob(container, "dur");
      const lease = blob.getBlobLeaseClient();
      const startedAt = Date.now();
      await lease.acquireLease(MIN_DURATION);
      await sleepUntil(startedAt, 8000);
      const renewedAt = Date.now();
      await lease.renewLease();
      await sleepUntil(startedAt, MIN_DURATION * 1000 + 2500);
      assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "fixed" },
        "renewed lease outlives the first period");
      const seenAt = await waitForState(blob, "expired", renewedAt, {
        fromMs: MIN_DURATION * 1000 - 1000,
        timeoutMs: MIN_DURATION * 1000 + SLACK_MS,
      });
      assert.ok(seenAt >= MIN_DURATION * 1000 - 1000, `expired ${seenAt} ms after the renewal`);
    });

    test("an infinite lease does not expire", async () => {
      const blob = await newBlob(container, "dur");
      await blob.getBlobLeaseClient().acquireLease(-1);
      await sleep(MIN_DURATION * 1000 + 2000);
      assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "infinite" });
    });

    test("a change keeps the lease's end: the changed lease still expires on time", async () => {
      const blob = await newBlob(container, "dur");
      const a = randomUUID();
      const startedAt = Date.now();
      await blob.getBlobLeaseClient(a).acquireLease(MIN_DURATION);
      await sleep(5000);
      const b = randomUUID();
      await blob.getBlobLeaseClient(a).changeLease(b);
      await waitForState(blob, "expired", startedAt, {
        fromMs: MIN_DURATION * 1000 - 1000,
        timeoutMs: MIN_DURATION * 1000 + SLACK_MS,
      });
      // The new id can renew the expired lease (no write since).
      assert.equal((await blob.getBlobLeaseClient(b).renewLease())._response.status, 200);
    });
  });

  describe("container lease expiry", { concurrency: true }, () => {
    test("a 15 s container lease expires (properties and listing); another id acquires", async () => {
      const c = svc.getContainerClient(uniqueName("cexp"));
      await c.create();
      const startedAt = Date.now();
      const a = randomUUID();
      await c.getBlobLeaseClient(a).acquireLease(MIN_DURATION);
      await expectRestError(c.delete(), 412, "LeaseIdMissing", "delete while leased");
      await waitForState(c, "expired", startedAt, {
        fromMs: MIN_DURATION * 1000 - 1000,
        timeoutMs: MIN_DURATION * 1000 + SLACK_MS,
      });
      assert.deepEqual(await leaseInfo(c), { state: "expired", status: "unlocked", duration: undefined });
      let listed;
      for await (const item of svc.listContainers({ prefix: c.containerName })) listed = item;
      assert.equal(listed.properties.leaseState, "expired");
      assert.equal((await c.getBlobLeaseClient().acquireLease(-1))._response.status, 201);
    });

    test("a container whose lease expired is deleted without a lease id", async () => {
      const c = svc.getContainerClient(uniqueName("cexp"));
      await c.create();
      const startedAt = Date.now();
      await c.getBlobLeaseClient().acquireLease(MIN_DURATION);
      await waitForState(c, "expired", startedAt, {
        fromMs: MIN_DURATION * 1000 - 1000,
        timeoutMs: MIN_DURATION * 1000 + SLACK_MS,
      });
      assert.equal((await c.delete())._response.status, 202);
    });
  });
});
