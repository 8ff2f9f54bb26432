// Leasehold's fencing-token extension: Lease Blob acquire/change answer x-leasehold-fencing-token
// (strictly increasing per blob); Put Blob, Delete Blob and Set Blob Metadata carrying
// x-leasehold-if-fencing-token: N succeed when N >= the latest token issued for the blob and are
// refused with 412 FencingTokenSuperseded otherwise.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { openServer, rawRequest } from "./server.mjs";
import {
  expectRawError,
  expectRawOk,
  leaseInfo,
  newBlob,
  randomUUID,
  rawPathOf,
  uniqueName,
} from "./helpers.mjs";

let server;
let container;

before(async () => ({ server, container } = await openServer("fence")));
after(() => server?.stop());

function leaseOp(blob, headers) {
  return rawRequest(server, { method: "PUT", path: rawPathOf(blob), query: { comp: "lease" }, headers });
}

function tokenOf(res, what) {
  const raw = res.headers["x-leasehold-fencing-token"];
  assert.ok(raw !== undefined, `${what}: x-leasehold-fencing-token present (${JSON.stringify(res.headers)})`);
  assert.match(raw, /^\d+$/, `${what}: token is an integer`);
  return BigInt(raw);
}

async function acquire(blob, id = randomUUID(), duration = "-1") {
  const res = await leaseOp(blob, {
    "x-ms-lease-action": "acquire",
    "x-ms-lease-duration": duration,
    "x-ms-proposed-lease-id": id,
  });
  expectRawOk(res, 201, "acquire");
  return { id, token: tokenOf(res, "acquire") };
}

async function change(blob, from, to) {
  const res = await leaseOp(blob, {
    "x-ms-lease-action": "change",
    "x-ms-lease-id": from,
    "x-ms-proposed-lease-id": to,
  });
  expectRawOk(res, 200, "change");
  return tokenOf(res, "change");
}

const WRITES = {
  put: (blob, headers) =>
    rawRequest(server, {
      method: "PUT",
      path: rawPathOf(blob),
      headers: { "x-ms-blob-type": "BlockBlob", ...headers },
      body: "fenced write",
    }),
  setMetadata: (blob, headers) =>
    rawRequest(server, {
      method: "PUT",
      path: rawPathOf(blob),
      query: { comp: "metadata" },
      headers: { "x-ms-meta-fenced": "yes", ...headers },
    }),
  delete: (blob, headers) => rawRequest(server, { method: "DELETE", path: rawPathOf(blob), headers }),
};
const WRITE_STATUS = { put: 201, setMetadata: 200, delete: 202 };

describe("tokens", () => {
  test("acquire and change answer strictly increasing tokens", async () => {
    const blob = await newBlob(container, "fence");
    const tokens = [];
    const a = await acquire(blob);
    tokens.push(a.token);
    const b = randomUUID();
    tokens.push(await change(blob, a.id, b));
    const c = randomUUID();
    tokens.push(await change(blob, b, c));
    expectRawOk(await leaseOp(blob, { "x-ms-lease-action": "release", "x-ms-lease-id": c }), 200);
    tokens.push((await acquire(blob)).token);
    expectRawOk(await leaseOp(blob, { "x-ms-lease-action": "break", "x-ms-lease-break-period": "0" }), 202);
    tokens.push((await acquire(blob, randomUUID(), "30")).token);
    for (let i = 1; i < tokens.length; i++) {
      assert.ok(tokens[i] > tokens[i - 1], `token ${i} (${tokens[i]}) > token ${i - 1} (${tokens[i - 1]}): ${tokens}`);
    }
  });

  test("tokens keep increasing across delete and re-creation of the blob", async () => {
    const blob = await newBlob(container, "fence");
    const first = await acquire(blob);
    expectRawOk(await WRITES.delete(blob, { "x-ms-lease-id": first.id }), 202, "delete");
    await blob.upload("again", 5);
    const second = await acquire(blob);
    assert.ok(second.token > first.token, `${second.token} > ${first.token}`);
    // A holder of the old incarnation's token is fenced from the new blob once it is leased again.
    expectRawOk(await leaseOp(blob, { "x-ms-lease-action": "release", "x-ms-lease-id": second.id }), 200);
    const stale = await WRITES.put(blob, { "x-leasehold-if-fencing-token": String(first.token) });
    expectRawError(stale, 412, "FencingTokenSuperseded", "old incarnation's token");
  });

  test("re-acquiring the same lease id issues a new, larger token", async () => {
    const blob = await newBlob(container, "fence");
    const first = await acquire(blob);
    const again = await acquire(blob, first.id, "30");
    assert.ok(again.token > first.token, `${again.token} > ${first.token}`);
  });

  test("tokens keep increasing under concurrent acquire/release cycles on one blob", async () => {
    const blob = await newBlob(container, "fence");
    const seen = [];
    for (let round = 0; round < 10; round++) {
      const a = await acquire(blob);
      seen.push(a.token);
      expectRawOk(await leaseOp(blob, { "x-ms-lease-action": "release", "x-ms-lease-id": a.id }), 200);
    }
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], `${seen}`);
  });
});

describe("fenced writes", () => {
  for (const op of Object.keys(WRITES)) {
    test(`${op}: token >= latest -> ok`, async () => {
      const blob = await newBlob(container, "fence");
      const { id, token } = await acquire(blob);
      const res = await WRITES[op](blob, { "x-ms-lease-id": id, "x-leasehold-if-fencing-token": String(token) });
      expectRawOk(res, WRITE_STATUS[op], `${op} with the latest token`);
    });

    test(`${op}: token above latest -> ok`, async () => {
      const blob = await newBlob(container, "fence");
      const { id, token } = await acquire(blob);
      const res = await WRITES[op](blob, {
        "x-ms-lease-id": id,
        "x-leasehold-if-fencing-token": String(token + 1000n),
      });
      expectRawOk(res, WRITE_STATUS[op], `${op} with a larger token`);
    });

    test(`${op}: token below latest -> 412 FencingTokenSuperseded`, async () => {
      const blob = await newBlob(container, "fence");
      const first = await acquire(blob);
      const b = randomUUID();
      const newer = await change(blob, first.id, b);
      const before = await blob.getProperties();
      const res = await WRITES[op](blob, {
        "x-ms-lease-id": b,
        "x-leasehold-if-fencing-token": String(first.token),
      });
      expectRawError(res, 412, "FencingTokenSuperseded", `${op} with superseded token ${first.token} < ${newer}`);
      const after = await blob.getProperties();
      assert.equal(after.etag, before.etag, "refused write changed nothing");
      // With the current token the same write goes through.
      const ok = await WRITES[op](blob, { "x-ms-lease-id": b, "x-leasehold-if-fencing-token": String(newer) });
      expectRawOk(ok, WRITE_STATUS[op], `${op} with the current token`);
    });

    // Tokens are positive 64-bit integers: 0 is refused like any other value no token can have.
    for (const bad of ["abc", "1.5", "-1", "0", "0x10", "99999999999999999999999999"]) {
      test(`${op}: token ${JSON.stringify(bad)} -> 400 InvalidHeaderValue`, async () => {
        const blob = await newBlob(container, "fence");
        const before = await blob.getProperties();
        const res = await WRITES[op](blob, { "x-leasehold-if-fencing-token": bad });
        expectRawError(res, 400, "InvalidHeaderValue", `${op} token ${bad}`);
        assert.equal((await blob.getProperties()).etag, before.etag);
      });
    }
  }

  test("a stale holder is fenced off after the lease moved on", async () => {
    const blob = await newBlob(container, "fence");
    // Holder 1 takes the lease, then loses it (broken by an operator), holder 2 takes and releases it.
    const h1 = await acquire(blob, randomUUID(), "60");
    expectRawOk(await leaseOp(blob, { "x-ms-lease-action": "break", "x-ms-lease-break-period": "0" }), 202);
    const h2 = await acquire(blob, randomUUID(), "60");
    expectRawOk(await leaseOp(blob, { "x-ms-lease-action": "release", "x-ms-lease-id": h2.id }), 200);
    assert.equal((await leaseInfo(blob)).state, "available");
    // Holder 1 writes (no lease is held, so no lease id is needed) with its old token: fenced.
    const stale = await WRITES.put(blob, { "x-leasehold-if-fencing-token": String(h1.token) });
    expectRawError(stale, 412, "FencingTokenSuperseded", "stale holder");
    // Holder 2's token is still current.
    expectRawOk(await WRITES.put(blob, { "x-leasehold-if-fencing-token": String(h2.token) }), 201, "holder 2");
  });

  test("a blob that never had a lease accepts any token", async () => {
    const blob = await newBlob(container, "fence");
    expectRawOk(await WRITES.put(blob, { "x-leasehold-if-fencing-token": "1" }), 201);
    expectRawOk(await WRITES.setMetadata(blob, { "x-leasehold-if-fencing-token": "7" }), 200);
  });

  test("creating a new blob with a fencing token", async () => {
    const blob = container.getBlockBlobClient(`fresh-${randomUUID()}`);
    expectRawOk(await WRITES.put(blob, { "x-leasehold-if-fencing-token": "1" }), 201);
  });

  test("tokens are per blob", async () => {
    const one = await newBlob(container, "fence");
    const two = await newBlob(container, "fence");
    // Drive blob one's token up.
    let a = await acquire(one);
    for (let i = 0; i < 3; i++) {
      const next = randomUUID();
      await change(one, a.id, next);
      a = { id: next };
    }
    const t2 = await acquire(two);
    // Blob two's own latest token fences its writes, whatever blob one's token is.
    expectRawOk(
      await WRITES.put(two, { "x-ms-lease-id": t2.id, "x-leasehold-if-fencing-token": String(t2.token) }),
      201,
    );
  });

  test("writes without the header are not fenced", async () => {
    const blob = await newBlob(container, "fence");
    const { id } = await acquire(blob);
    expectRawOk(await WRITES.put(blob, { "x-ms-lease-id": id }), 201);
  });

  test("a fencing token does not replace the lease id", async () => {
    const blob = await newBlob(container, "fence");
    const { token } = await acquire(blob);
    const res = await WRITES.put(blob, { "x-leasehold-if-fencing-token": String(token) });
    expectRawError(res, 412, "LeaseIdMissing");
  });
});
