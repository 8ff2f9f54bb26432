// Lease Container: the same actions through ContainerClient.getBlobLeaseClient(), the lease in
// container properties and listings, and Delete Container under a lease.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { openServer, rawRequest } from "./server.mjs";
import {
  containerInState,
  expectRawError,
  expectRawOk,
  expectRestError,
  leaseInfo,
  randomUUID,
  sleep,
  uniqueName,
} from "./helpers.mjs";

let server;
let svc;

before(async () => ({ server, svc } = await openServer()));
after(() => server?.stop());

const inState = (state, opts) => containerInState(svc, state, opts);

describe("container lease actions", () => {
  test("acquire on available -> 201 leased (infinite and fixed)", async () => {
    for (const [duration, expected] of [[-1, "infinite"], [30, "fixed"]]) {
      const c = svc.getContainerClient(uniqueName());
      await c.create();
      const id = randomUUID();
      const r = await c.getBlobLeaseClient(id).acquireLease(duration);
      assert.equal(r._response.status, 201);
      assert.equal(r.leaseId, id);
      assert.deepEqual(await leaseInfo(c), { state: "leased", status: "locked", duration: expected });
    }
  });

  test("acquire without a proposed id (raw) -> 201 with a generated id", async () => {
    const c = svc.getContainerClient(uniqueName());
    await c.create();
    const res = await rawRequest(server, {
      method: "PUT",
      path: `/${c.containerName}`,
      query: { restype: "container", comp: "lease" },
      headers: { "x-ms-lease-action": "acquire", "x-ms-lease-duration": "-1" },
    });
    expectRawOk(res, 201);
    assert.match(res.headers["x-ms-lease-id"], /^[0-9a-f-]{36}$/);
  });

  test("acquire B on leased(A) -> 409 LeaseAlreadyPresent; A again -> 201", async () => {
    const { container, leaseId } = await inState("leased");
    await expectRestError(
      container.getBlobLeaseClient(randomUUID()).acquireLease(-1),
      409,
      "LeaseAlreadyPresent",
    );
    assert.equal((await container.getBlobLeaseClient(leaseId).acquireLease(20))._response.status, 201);
    assert.equal((await leaseInfo(container)).duration, "fixed");
  });

  test("breaking(A): acquire A -> 409 LeaseIsBreakingAndCannotBeAcquired, B -> LeaseAlreadyPresent", async () => {
    const { container, leaseId } = await inState("breaking");
    await expectRestError(
      container.getBlobLeaseClient(leaseId).acquireLease(-1),
      409,
      "LeaseIsBreakingAndCannotBeAcquired",
    );
    await expectRestError(
      container.getBlobLeaseClient(randomUUID()).acquireLease(-1),
      409,
      "LeaseAlreadyPresent",
    );
  });

  test("renew: A -> 200, B -> 409 LeaseIdMismatchWithLeaseOperation, broken -> LeaseIsBrokenAndCannotBeRenewed", async () => {
    const { container, leaseId } = await inState("leased", { duration: 30 });
    assert.equal((await container.getBlobLeaseClient(leaseId).renewLease())._response.status, 200);
    await expectRestError(
      container.getBlobLeaseClient(randomUUID()).renewLease(),
      409,
      "LeaseIdMismatchWithLeaseOperation",
    );
    const broken = await inState("broken");
    await expectRestError(
      broken.container.getBlobLeaseClient(broken.leaseId).renewLease(),
      409,
      "LeaseIsBrokenAndCannotBeRenewed",
    );
    const available = await inState("available");
    await expectRestError(
      available.container.getBlobLeaseClient(available.leaseId).renewLease(),
      409,
      "LeaseIdMismatchWithLeaseOperation",
    );
  });

  test("change: A->B -> 200; B->C -> 409; available -> LeaseNotPresentWithLeaseOperation", async () => {
    const { container, leaseId } = await inState("leased");
    const b = randomUUID();
    const r = await container.getBlobLeaseClient(leaseId).changeLease(b);
    assert.equal(r._response.status, 200);
    assert.equal(r.leaseId, b);
    // idempotent retry: A->B again while B holds it
    assert.equal((await container.getBlobLeaseClient(leaseId).changeLease(b))._response.status, 200);
    await expectRestError(
      container.getBlobLeaseClient(randomUUID()).changeLease(randomUUID()),
      409,
      "LeaseIdMismatchWithLeaseOperation",
    );
    const available = await inState("available");
    await expectRestError(
      available.container.getBlobLeaseClient(available.leaseId).changeLease(randomUUID()),
      409,
      "LeaseNotPresentWithLeaseOperation",
    );
    const breaking = await inState("breaking");
    await expectRestError(
      breaking.container.getBlobLeaseClient(breaking.leaseId).changeLease(randomUUID()),
      409,
      "LeaseIsBreakingAndCannotBeChanged",
    );
  });

  test("release: A -> 200 available; B -> 409; available -> 409", async () => {
    for (const state of ["leased", "breaking", "broken"]) {
      const { container, leaseId } = await inState(state);
      await expectRestError(
        container.getBlobLeaseClient(randomUUID()).releaseLease(),
        409,
        "LeaseIdMismatchWithLeaseOperation",
        `release B on ${state}`,
      );
      assert.equal((await container.getBlobLeaseClient(leaseId).releaseLease())._response.status, 200);
      assert.deepEqual(await leaseInfo(container), { state: "available", status: "unlocked", duration: undefined });
    }
    const available = await inState("available");
    await expectRestError(
      available.container.getBlobLeaseClient(available.leaseId).releaseLease(),
      409,
      "LeaseIdMismatchWithLeaseOperation",
    );
  });

  test("break: infinite -> broken (leaseTime 0); with period -> breaking; available -> 409", async () => {
    const inf = await inState("leased");
    const r = await inf.container.getBlobLeaseClient().breakLease(undefined);
    assert.equal(r._response.status, 202);
    assert.equal(r.leaseTime, 0);
    assert.deepEqual(await leaseInfo(inf.container), { state: "broken", status: "unlocked", duration: undefined });

    const p = await inState("leased");
    const r2 = await p.container.getBlobLeaseClient().breakLease(45);
    assert.equal(r2.leaseTime, 45);
    assert.deepEqual(await leaseInfo(p.container), { state: "breaking", status: "locked", duration: undefined });

    const fixed = await inState("leased", { duration: 60 });
    const r3 = await fixed.container.getBlobLeaseClient().breakLease(undefined);
    assert.ok(r3.leaseTime >= 57 && r3.leaseTime <= 60, `fixed lease breaks for the rest: ${r3.leaseTime}`);

    const broken = await inState("broken");
    const r4 = await broken.container.getBlobLeaseClient().breakLease(30);
    assert.equal(r4._response.status, 202);
    assert.equal(r4.leaseTime, 0);

    const available = await inState("available");
    await expectRestError(
      available.container.getBlobLeaseClient().breakLease(0),
      409,
      "LeaseNotPresentWithLeaseOperation",
    );
  });

  test("lease on a missing container -> 404 ContainerNotFound", async () => {
    const c = svc.getContainerClient(uniqueName("none"));
    await expectRestError(c.getBlobLeaseClient().acquireLease(-1), 404, "ContainerNotFound");
  });

  test("container lease operations leave the container ETag alone", async () => {
    const { container, leaseId } = await inState("available");
    const before = await container.getProperties();
    await sleep(1100); // a change of Last-Modified would now be visible
    const lease = container.getBlobLeaseClient(leaseId);
    await lease.acquireLease(-1);
    await lease.renewLease();
    await lease.breakLease(10);
    await lease.releaseLease();
    const after = await container.getProperties();
    assert.equal(after.etag, before.etag);
    assert.equal(after.lastModified.getTime(), before.lastModified.getTime());
  });
});

describe("container lease visibility", () => {
  test("getProperties and raw HEAD headers", async () => {
    const { container } = await inState("leased", { duration: 30 });
    const res = await rawRequest(server, {
      method: "HEAD",
      path: `/${container.containerName}`,
      query: { restype: "container" },
    });
    expectRawOk(res, 200);
    assert.equal(res.headers["x-ms-lease-state"], "leased");
    assert.equal(res.headers["x-ms-lease-status"], "locked");
    assert.equal(res.headers["x-ms-lease-duration"], "fixed");
  });

  test("listContainers items carry the lease state", async () => {
    const prefix = uniqueName("vis").slice(0, 12);
    const made = {};
    for (const state of ["available", "leased", "breaking", "broken"]) {
      const c = svc.getContainerClient(`${prefix}-${state}`);
      await c.create();
      const lease = c.getBlobLeaseClient();
      if (state !== "available") await lease.acquireLease(-1);
      if (state === "breaking") await lease.breakLease(60);
      if (state === "broken") await lease.breakLease(0);
      made[state] = c.containerName;
    }
    const props = {};
    for await (const item of svc.listContainers({ prefix })) {
      props[item.name] = {
        state: item.properties.leaseState,
        status: item.properties.leaseStatus,
        duration: item.properties.leaseDuration,
      };
    }
    assert.deepEqual(props, {
      [made.available]: { state: "available", status: "unlocked", duration: undefined },
      [made.leased]: { state: "leased", status: "locked", duration: "infinite" },
      [made.breaking]: { state: "breaking", status: "locked", duration: undefined },
      [made.broken]: { state: "broken", status: "unlocked", duration: undefined },
    });
  });
});

describe("delete container under a lease", () => {
  test("leased without a lease id -> 412 LeaseIdMissing", async () => {
    const { container } = await inState("leased");
    await expectRestError(container.delete(), 412, "LeaseIdMissing");
    assert.equal(await container.exists(), true);
  });

  test("leased with a wrong lease id -> 412 LeaseIdMismatchWithContainerOperation", async () => {
    const { container } = await inState("leased");
    await expectRestError(
      container.delete({ conditions: { leaseId: randomUUID() } }),
      412,
      "LeaseIdMismatchWithContainerOperation",
    );
    assert.equal(await container.exists(), true);
  });

  test("leased with the right lease id -> 202", async () => {
    const { container, leaseId } = await inState("leased");
    const r = await container.delete({ conditions: { leaseId } });
    assert.equal(r._response.status, 202);
    assert.equal(await container.exists(), false);
  });

  test("raw Delete Container without a lease id on a leased container", async () => {
    const { container } = await inState("leased");
    const res = await rawRequest(server, {
      method: "DELETE",
      path: `/${container.containerName}`,
      query: { restype: "container" },
    });
    expectRawError(res, 412, "LeaseIdMissing");
  });

  test("available container with no lease id -> 202", async () => {
    const { container } = await inState("available");
    assert.equal((await container.delete())._response.status, 202);
  });

  test("a container lease does not guard the blobs inside", async () => {
    const { container } = await inState("leased");
    const blob = container.getBlockBlobClient("inside");
    assert.equal((await blob.upload("x", 1))._response.status, 201);
    assert.equal((await blob.setMetadata({ a: "b" }))._response.status, 200);
    assert.equal((await blob.delete())._response.status, 202);
  });

  test("a re-created container starts without a lease", async () => {
    const { container, leaseId } = await inState("leased");
    await container.delete({ conditions: { leaseId } });
    await container.create();
    assert.deepEqual(await leaseInfo(container), { state: "available", status: "unlocked", duration: undefined });
  });
});
