// Lease Blob: acquire, renew, change, release and break in the states reachable without waiting
// (available, leased, breaking, broken), and how the lease state is reported. The expired state and
// everything else that needs the clock is in lease-expiry.test.mjs.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { openServer, rawRequest } from "./server.mjs";
import {
  GUID_RE,
  blobInState,
  expectRawError,
  expectRawOk,
  expectRestError,
  leaseInfo,
  newBlob,
  randomUUID,
  rawPathOf,
  sleep,
  uniqueName,
} from "./helpers.mjs";

let server;
let svc;
let container;

before(async () => ({ server, svc, container } = await openServer("lease")));
after(() => server?.stop());

const inState = (state, opts) => blobInState(container, state, opts);

describe("acquire", () => {
  test("available -> 201 leased with the proposed id (infinite)", async () => {
    const blob = await newBlob(container);
    const id = randomUUID();
    const r = await blob.getBlobLeaseClient(id).acquireLease(-1);
    assert.equal(r._response.status, 201);
    assert.equal(r.leaseId, id);
    assert.ok(r.etag);
    assert.ok(r.lastModified instanceof Date);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "infinite" });
  });

  test("available -> 201 leased (fixed 60 s)", async () => {
    const blob = await newBlob(container);
    const r = await blob.getBlobLeaseClient().acquireLease(60);
    assert.equal(r._response.status, 201);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "fixed" });
  });

  test("available without a proposed id -> 201 with a server-generated GUID", async () => {
    const blob = await newBlob(container);
    const res = await rawRequest(server, {
      method: "PUT",
      path: rawPathOf(blob),
      query: { comp: "lease" },
      headers: { "x-ms-lease-action": "acquire", "x-ms-lease-duration": "-1" },
    });
    expectRawOk(res, 201, "acquire without proposed id");
    assert.match(res.headers["x-ms-lease-id"], GUID_RE);
    // The generated id works as the lease id.
    const renew = await blob.getBlobLeaseClient(res.headers["x-ms-lease-id"]).renewLease();
    assert.equal(renew._response.status, 200);
  });

  test("two acquires without a proposed id get different ids", async () => {
    const ids = [];
    for (let i = 0; i < 2; i++) {
      const blob = await newBlob(container);
      const res = await rawRequest(server, {
        method: "PUT",
        path: rawPathOf(blob),
        query: { comp: "lease" },
        headers: { "x-ms-lease-action": "acquire", "x-ms-lease-duration": "30" },
      });
      expectRawOk(res, 201);
      ids.push(res.headers["x-ms-lease-id"]);
    }
    assert.notEqual(ids[0], ids[1]);
  });

  test("broken -> 201 leased with a new id", async () => {
    const { blob } = await inState("broken");
    const id = randomUUID();
    const r = await blob.getBlobLeaseClient(id).acquireLease(-1);
    assert.equal(r._response.status, 201);
    assert.equal(r.leaseId, id);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "infinite" });
  });

  test("broken -> 201 with the old id too", async () => {
    const { blob, leaseId } = await inState("broken");
    const r = await blob.getBlobLeaseClient(leaseId).acquireLease(30);
    assert.equal(r._response.status, 201);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "fixed" });
  });

  test("leased(A) acquire A -> 201, and may change the duration", async () => {
    const { blob, leaseId } = await inState("leased");
    const again = await blob.getBlobLeaseClient(leaseId).acquireLease(-1);
    assert.equal(again._response.status, 201);
    assert.equal(again.leaseId, leaseId);
    const fixed = await blob.getBlobLeaseClient(leaseId).acquireLease(45);
    assert.equal(fixed._response.status, 201);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "fixed" });
    const back = await blob.getBlobLeaseClient(leaseId).acquireLease(-1);
    assert.equal(back._response.status, 201);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "infinite" });
  });

  test("leased(A) acquire B -> 409 LeaseAlreadyPresent", async () => {
    const { blob } = await inState("leased");
    await expectRestError(
      blob.getBlobLeaseClient(randomUUID()).acquireLease(-1),
      409,
      "LeaseAlreadyPresent",
    );
    assert.equal((await leaseInfo(blob)).state, "leased");
  });

  test("leased(A) acquire without proposed id -> 409 LeaseAlreadyPresent", async () => {
    const { blob } = await inState("leased");
    const res = await rawRequest(server, {
      method: "PUT",
      path: rawPathOf(blob),
      query: { comp: "lease" },
      headers: { "x-ms-lease-action": "acquire", "x-ms-lease-duration": "-1" },
    });
    expectRawError(res, 409, "LeaseAlreadyPresent");
  });

  test("breaking(A) acquire A -> 409 LeaseIsBreakingAndCannotBeAcquired", async () => {
    const { blob, leaseId } = await inState("breaking");
    await expectRestError(
      blob.getBlobLeaseClient(leaseId).acquireLease(-1),
      409,
      "LeaseIsBreakingAndCannotBeAcquired",
    );
    assert.equal((await leaseInfo(blob)).state, "breaking");
  });

  test("breaking(A) acquire B -> 409 LeaseAlreadyPresent", async () => {
    const { blob } = await inState("breaking");
    await expectRestError(
      blob.getBlobLeaseClient(randomUUID()).acquireLease(-1),
      409,
      "LeaseAlreadyPresent",
    );
  });
});

describe("renew", () => {
  test("available -> 409 LeaseIdMismatchWithLeaseOperation", async () => {
    const { blob, leaseId } = await inState("available");
    await expectRestError(
      blob.getBlobLeaseClient(leaseId).renewLease(),
      409,
      "LeaseIdMismatchWithLeaseOperation",
    );
  });

  test("leased(A) renew A -> 200", async () => {
    const { blob, leaseId } = await inState("leased", { duration: 30 });
    const r = await blob.getBlobLeaseClient(leaseId).renewLease();
    assert.equal(r._response.status, 200);
    assert.equal(r.leaseId, leaseId);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "fixed" });
  });

  test("leased(A) infinite renew A -> 200, stays infinite", async () => {
    const { blob, leaseId } = await inState("leased");
    const r = await blob.getBlobLeaseClient(leaseId).renewLease();
    assert.equal(r._response.status, 200);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "infinite" });
  });

  test("leased(A) renew B -> 409 LeaseIdMismatchWithLeaseOperation", async () => {
    const { blob } = await inState("leased");
    await expectRestError(
      blob.getBlobLeaseClient(randomUUID()).renewLease(),
      409,
      "LeaseIdMismatchWithLeaseOperation",
    );
  });

  test("breaking(A) renew A -> 409 LeaseIsBrokenAndCannotBeRenewed", async () => {
    const { blob, leaseId } = await inState("breaking");
    await expectRestError(
      blob.getBlobLeaseClient(leaseId).renewLease(),
      409,
      "LeaseIsBrokenAndCannotBeRenewed",
    );
    assert.equal((await leaseInfo(blob)).state, "breaking");
  });

  test("broken(A) renew A -> 409 LeaseIsBrokenAndCannotBeRenewed", async () => {
    const { blob, leaseId } = await inState("broken");
    await expectRestError(
      blob.getBlobLeaseClient(leaseId).renewLease(),
      409,
      "LeaseIsBrokenAndCannotBeRenewed",
    );
    assert.equal((await leaseInfo(blob)).state, "broken");
  });
});

describe("change", () => {
  for (const state of ["available", "broken"]) {
    test(`${state} -> 409 LeaseNotPresentWithLeaseOperation`, async () => {
      const { blob, leaseId } = await inState(state);
      await expectRestError(
        blob.getBlobLeaseClient(leaseId).changeLease(randomUUID()),
        409,
        "LeaseNotPresentWithLeaseOperation",
      );
      assert.equal((await leaseInfo(blob)).state, state);
    });
  }

  test("leased(A) change A->B -> 200, leased by B", async () => {
    const { blob, leaseId } = await inState("leased");
    const b = randomUUID();
    const r = await blob.getBlobLeaseClient(leaseId).changeLease(b);
    assert.equal(r._response.status, 200);
    assert.equal(r.leaseId, b);
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "infinite" });
    // B holds it now: B renews, A does not.
    assert.equal((await blob.getBlobLeaseClient(b).renewLease())._response.status, 200);
    await expectRestError(
      blob.getBlobLeaseClient(leaseId).renewLease(),
      409,
      "LeaseIdMismatchWithLeaseOperation",
      "old id renews",
    );
  });

  test("leased(A) change B->A -> 200 (idempotent retry of a change)", async () => {
    const { blob, leaseId } = await inState("leased");
    const b = randomUUID();
    const r = await blob.getBlobLeaseClient(b).changeLease(leaseId);
    assert.equal(r._response.status, 200);
    assert.equal(r.leaseId, leaseId);
    assert.equal((await blob.getBlobLeaseClient(leaseId).renewLease())._response.status, 200);
  });

  test("leased(A) change A->A -> 200", async () => {
    const { blob, leaseId } = await inState("leased");
    const r = await blob.getBlobLeaseClient(leaseId).changeLease(leaseId);
    assert.equal(r._response.status, 200);
    assert.equal(r.leaseId, leaseId);
  });

  test("leased(A) change B->C -> 409 LeaseIdMismatchWithLeaseOperation", async () => {
    const { blob, leaseId } = await inState("leased");
    await expectRestError(
      blob.getBlobLeaseClient(randomUUID()).changeLease(randomUUID()),
      409,
      "LeaseIdMismatchWithLeaseOperation",
    );
    assert.equal((await blob.getBlobLeaseClient(leaseId).renewLease())._response.status, 200);
  });

  test("breaking(A) change A->B -> 409 LeaseIsBreakingAndCannotBeChanged", async () => {
    const { blob, leaseId } = await inState("breaking");
    await expectRestError(
      blob.getBlobLeaseClient(leaseId).changeLease(randomUUID()),
      409,
      "LeaseIsBreakingAndCannotBeChanged",
    );
  });

  test("a fixed lease keeps its duration across a change", async () => {
    const { blob, leaseId } = await inState("leased", { duration: 40 });
    await blob.getBlobLeaseClient(leaseId).changeLease(randomUUID());
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "fixed" });
  });
});

describe("release", () => {
  for (const state of ["leased", "breaking", "broken"]) {
    test(`${state}(A) release A -> 200 available`, async () => {
      const { blob, leaseId } = await inState(state);
      const r = await blob.getBlobLeaseClient(leaseId).releaseLease();
      assert.equal(r._response.status, 200);
      assert.deepEqual(await leaseInfo(blob), { state: "available", status: "unlocked", duration: undefined });
    });

    test(`${state}(A) release B -> 409 LeaseIdMismatchWithLeaseOperation`, async () => {
      const { blob } = await inState(state);
      await expectRestError(
        blob.getBlobLeaseClient(randomUUID()).releaseLease(),
        409,
        "LeaseIdMismatchWithLeaseOperation",
      );
      assert.equal((await leaseInfo(blob)).state, state);
    });
  }

  test("available release -> 409 LeaseIdMismatchWithLeaseOperation", async () => {
    const { blob, leaseId } = await inState("available");
    await expectRestError(
      blob.getBlobLeaseClient(leaseId).releaseLease(),
      409,
      "LeaseIdMismatchWithLeaseOperation",
    );
  });

  test("released lease can be acquired right away by another id", async () => {
    const { blob, leaseId } = await inState("leased", { duration: 60 });
    await blob.getBlobLeaseClient(leaseId).releaseLease();
    const r = await blob.getBlobLeaseClient(randomUUID()).acquireLease(60);
    assert.equal(r._response.status, 201);
  });

  test("released id cannot renew", async () => {
    const { blob, leaseId } = await inState("leased");
    await blob.getBlobLeaseClient(leaseId).releaseLease();
    await expectRestError(
      blob.getBlobLeaseClient(leaseId).renewLease(),
      409,
      "LeaseIdMismatchWithLeaseOperation",
    );
  });
});

describe("break", () => {
  test("available -> 409 LeaseNotPresentWithLeaseOperation", async () => {
    const { blob } = await inState("available");
    await expectRestError(
      blob.getBlobLeaseClient().breakLease(undefined),
      409,
      "LeaseNotPresentWithLeaseOperation",
    );
    await expectRestError(
      blob.getBlobLeaseClient().breakLease(10),
      409,
      "LeaseNotPresentWithLeaseOperation",
      "with a period",
    );
  });

  test("infinite lease without a period -> 202, broken at once, leaseTime 0", async () => {
    const { blob } = await inState("leased");
    const r = await blob.getBlobLeaseClient().breakLease(undefined);
    assert.equal(r._response.status, 202);
    assert.equal(r.leaseTime, 0);
    assert.equal(r._response.headers.get("x-ms-lease-time"), "0");
    assert.deepEqual(await leaseInfo(blob), { state: "broken", status: "unlocked", duration: undefined });
  });

  test("fixed lease without a period -> 202 breaking until the lease ends", async () => {
    const { blob } = await inState("leased", { duration: 60 });
    const r = await blob.getBlobLeaseClient().breakLease(undefined);
    assert.equal(r._response.status, 202);
    assert.ok(r.leaseTime >= 57 && r.leaseTime <= 60, `leaseTime ${r.leaseTime} ~ 60`);
    assert.deepEqual(await leaseInfo(blob), { state: "breaking", status: "locked", duration: undefined });
  });

  test("period 0 -> broken at once (infinite and fixed leases)", async () => {
    for (const duration of [-1, 30]) {
      const { blob } = await inState("leased", { duration });
      const r = await blob.getBlobLeaseClient().breakLease(0);
      assert.equal(r._response.status, 202);
      assert.equal(r.leaseTime, 0);
      assert.equal((await leaseInfo(blob)).state, "broken", `duration ${duration}`);
    }
  });

  test("infinite lease with period p -> breaking for p seconds", async () => {
    for (const p of [1, 30, 60]) {
      const { blob } = await inState("leased");
      const r = await blob.getBlobLeaseClient().breakLease(p);
      assert.equal(r._response.status, 202);
      assert.equal(r.leaseTime, p, `period ${p}`);
      assert.deepEqual(await leaseInfo(blob), { state: "breaking", status: "locked", duration: undefined });
    }
  });

  test("fixed lease with period p -> breaking for min(p, remaining)", async () => {
    const short = await inState("leased", { duration: 60 });
    const r1 = await short.blob.getBlobLeaseClient().breakLease(10);
    assert.equal(r1.leaseTime, 10, "p < remaining");
    const long = await inState("leased", { duration: 20 });
    const r2 = await long.blob.getBlobLeaseClient().breakLease(50);
    assert.ok(r2.leaseTime >= 18 && r2.leaseTime <= 20, `p > remaining: leaseTime ${r2.leaseTime} ~ 20`);
    assert.equal((await leaseInfo(long.blob)).state, "breaking");
  });

  test("breaking again with a shorter period shortens it; a longer one does not lengthen it", async () => {
    const { blob } = await inState("leased");
    const lease = blob.getBlobLeaseClient();
    assert.equal((await lease.breakLease(60)).leaseTime, 60);
    const shorter = await lease.breakLease(30);
    assert.equal(shorter._response.status, 202);
    assert.ok(shorter.leaseTime <= 30 && shorter.leaseTime >= 29, `shortened to ${shorter.leaseTime}`);
    const longer = await lease.breakLease(50);
    assert.equal(longer._response.status, 202);
    assert.ok(longer.leaseTime <= 30, `not lengthened: ${longer.leaseTime}`);
    assert.equal((await leaseInfo(blob)).state, "breaking");
    const now = await lease.breakLease(0);
    assert.equal(now.leaseTime, 0);
    assert.equal((await leaseInfo(blob)).state, "broken", "period 0 ends the breaking period");
  });

  test("breaking without a period again -> 202, still breaking", async () => {
    const { blob } = await inState("breaking");
    const r = await blob.getBlobLeaseClient().breakLease(undefined);
    assert.equal(r._response.status, 202);
    assert.ok(r.leaseTime > 0 && r.leaseTime <= 60, `leaseTime ${r.leaseTime}`);
    assert.equal((await leaseInfo(blob)).state, "breaking");
  });

  test("broken -> 202 broken, leaseTime 0", async () => {
    const { blob } = await inState("broken");
    for (const p of [undefined, 0, 30]) {
      const r = await blob.getBlobLeaseClient().breakLease(p);
      assert.equal(r._response.status, 202, `period ${p}`);
      assert.equal(r.leaseTime, 0, `period ${p}`);
      assert.equal((await leaseInfo(blob)).state, "broken");
    }
  });

  test("break needs no lease id and ignores a wrong one", async () => {
    const { blob } = await inState("leased");
    const r = await blob.getBlobLeaseClient(randomUUID()).breakLease(0);
    assert.equal(r._response.status, 202);
    assert.equal((await leaseInfo(blob)).state, "broken");
  });
});

describe("lease state reporting", () => {
  test("listBlobsFlat items carry lease state, status and duration", async () => {
    const c = svc.getContainerClient(uniqueName("rep"));
    await c.create();
    const byState = {};
    for (const state of ["available", "leased", "breaking", "broken"]) {
      byState[state] = (await blobInState(c, state, { prefix: state })).blob.name;
    }
    const fixed = (await blobInState(c, "leased", { duration: 30, prefix: "leasedfixed" })).blob.name;
    const props = {};
    for await (const item of c.listBlobsFlat()) {
      props[item.name] = {
        state: item.properties.leaseState,
        status: item.properties.leaseStatus,
        duration: item.properties.leaseDuration,
      };
    }
    assert.deepEqual(props[byState.available], { state: "available", status: "unlocked", duration: undefined });
    assert.deepEqual(props[byState.leased], { state: "leased", status: "locked", duration: "infinite" });
    assert.deepEqual(props[fixed], { state: "leased", status: "locked", duration: "fixed" });
    assert.deepEqual(props[byState.breaking], { state: "breaking", status: "locked", duration: undefined });
    assert.deepEqual(props[byState.broken], { state: "broken", status: "unlocked", duration: undefined });
  });

  test("getProperties raw headers x-ms-lease-state/status/duration", async () => {
    const { blob } = await inState("leased", { duration: 30 });
    const res = await rawRequest(server, { method: "HEAD", path: rawPathOf(blob) });
    expectRawOk(res, 200);
    assert.equal(res.headers["x-ms-lease-state"], "leased");
    assert.equal(res.headers["x-ms-lease-status"], "locked");
    assert.equal(res.headers["x-ms-lease-duration"], "fixed");
  });
});

describe("lease operations leave ETag and Last-Modified alone; writes change them", () => {
  test("acquire, renew, change, break, release", async () => {
    const blob = await newBlob(container, "etag");
    const before = await blob.getProperties();
    await sleep(1100); // a change of Last-Modified would now be visible
    const id = randomUUID();
    const lease = blob.getBlobLeaseClient(id);
    const results = [];
    results.push(["acquire", await lease.acquireLease(-1)]);
    results.push(["renew", await lease.renewLease()]);
    results.push(["change", await lease.changeLease(randomUUID())]);
    results.push(["break", await lease.breakLease(30)]);
    results.push(["release", await lease.releaseLease()]);
    results.push(["acquire", await lease.acquireLease(30)]);
    results.push(["break0", await lease.breakLease(0)]);
    for (const [op, r] of results) {
      assert.equal(r.etag, before.etag, `${op} answers the blob's unchanged ETag`);
      const p = await blob.getProperties();
      assert.equal(p.etag, before.etag, `ETag after ${op}`);
      assert.equal(p.lastModified.getTime(), before.lastModified.getTime(), `Last-Modified after ${op}`);
    }
  });

  test("upload and setMetadata under a lease change the ETag and Last-Modified", async () => {
    const { blob, leaseId } = await inState("leased");
    const p0 = await blob.getProperties();
    await sleep(1100);
    const up = await blob.upload("new content", 11, { conditions: { leaseId } });
    assert.notEqual(up.etag, p0.etag);
    const p1 = await blob.getProperties();
    assert.equal(p1.etag, up.etag);
    assert.ok(p1.lastModified > p0.lastModified, "Last-Modified moved on");
    const md = await blob.setMetadata({ x: "y" }, { conditions: { leaseId } });
    assert.notEqual(md.etag, up.etag);
    assert.equal((await blob.getProperties()).etag, md.etag);
    // The lease survives the writes.
    assert.deepEqual(await leaseInfo(blob), { state: "leased", status: "locked", duration: "infinite" });
  });
});

describe("lease on things that do not exist", () => {
  test("lease on a missing blob -> 404 BlobNotFound", async () => {
    const blob = container.getBlockBlobClient(`missing-${randomUUID()}`);
    await expectRestError(blob.getBlobLeaseClient().acquireLease(-1), 404, "BlobNotFound", "acquire");
    await expectRestError(blob.getBlobLeaseClient().renewLease(), 404, "BlobNotFound", "renew");
    await expectRestError(blob.getBlobLeaseClient().releaseLease(), 404, "BlobNotFound", "release");
    await expectRestError(blob.getBlobLeaseClient().breakLease(0), 404, "BlobNotFound", "break");
    await expectRestError(blob.getBlobLeaseClient().changeLease(randomUUID()), 404, "BlobNotFound", "change");
  });

  test("lease on a blob of a missing container -> 404 ContainerNotFound", async () => {
    const blob = svc.getContainerClient(uniqueName("nope")).getBlockBlobClient("b");
    await expectRestError(blob.getBlobLeaseClient().acquireLease(-1), 404, "ContainerNotFound");
  });

  test("a deleted leased blob loses its lease; a new blob of that name is available", async () => {
    const { blob, leaseId } = await inState("leased");
    await blob.delete({ conditions: { leaseId } });
    await blob.upload("again", 5);
    assert.deepEqual(await leaseInfo(blob), { state: "available", status: "unlocked", duration: undefined });
  });
});
