// Conditional headers: If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since on reads,
// writes and Lease Blob.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { openServer, rawRequest } from "./server.mjs";
import {
  blobInState,
  expectRawError,
  expectRawOk,
  expectRestError,
  expectStatus,
  leaseInfo,
  newBlob,
  rawPathOf,
  uniqueName,
} from "./helpers.mjs";

let server;
let container;

const WRONG_ETAG = '"0x8D0DEADBEEF0000"';
const past = () => new Date(Date.now() - 24 * 3600 * 1000);
const future = () => new Date(Date.now() + 24 * 3600 * 1000);

before(async () => ({ server, container } = await openServer("cond")));
after(() => server?.stop());

async function fresh() {
  const blob = await newBlob(container, "cond", "original");
  const p = await blob.getProperties();
  return { blob, etag: p.etag };
}

async function content(blob) {
  return (await blob.downloadToBuffer()).toString();
}

describe("If-Match", () => {
  test("upload: matching -> 201, non-matching -> 412 ConditionNotMet", async () => {
    const { blob, etag } = await fresh();
    await expectRestError(
      blob.upload("changed", 7, { conditions: { ifMatch: WRONG_ETAG } }),
      412,
      "ConditionNotMet",
    );
    assert.equal(await content(blob), "original");
    const r = await blob.upload("changed", 7, { conditions: { ifMatch: etag } });
    assert.equal(r._response.status, 201);
    assert.equal(await content(blob), "changed");
    // The old ETag no longer matches.
    await expectRestError(
      blob.upload("again", 5, { conditions: { ifMatch: etag } }),
      412,
      "ConditionNotMet",
      "stale etag",
    );
  });

  test("setMetadata: matching -> 200, non-matching -> 412 ConditionNotMet", async () => {
    const { blob, etag } = await fresh();
    await expectRestError(
      blob.setMetadata({ a: "1" }, { conditions: { ifMatch: WRONG_ETAG } }),
      412,
      "ConditionNotMet",
    );
    assert.deepEqual((await blob.getProperties()).metadata, {});
    const r = await blob.setMetadata({ a: "1" }, { conditions: { ifMatch: etag } });
    assert.equal(r._response.status, 200);
  });

  test("delete: matching -> 202, non-matching -> 412 ConditionNotMet", async () => {
    const { blob, etag } = await fresh();
    await expectRestError(blob.delete({ conditions: { ifMatch: WRONG_ETAG } }), 412, "ConditionNotMet");
    assert.equal(await blob.exists(), true);
    const r = await blob.delete({ conditions: { ifMatch: etag } });
    assert.equal(r._response.status, 202);
  });

  test("lease acquire: matching -> 201, non-matching -> 412 ConditionNotMet", async () => {
    const { blob, etag } = await fresh();
    await expectRestError(
      blob.getBlobLeaseClient().acquireLease(-1, { conditions: { ifMatch: WRONG_ETAG } }),
      412,
      "ConditionNotMet",
    );
    assert.equal((await leaseInfo(blob)).state, "available");
    const r = await blob.getBlobLeaseClient().acquireLease(-1, { conditions: { ifMatch: etag } });
    assert.equal(r._response.status, 201);
  });

  test("If-Match '*' matches an existing blob", async () => {
    const { blob } = await fresh();
    const r = await blob.upload("star", 4, { conditions: { ifMatch: "*" } });
    assert.equal(r._response.status, 201);
  });

  test("a write with the right lease id but a wrong ETag -> 412 ConditionNotMet", async () => {
    const { blob, leaseId } = await blobInState(container, "leased");
    await expectRestError(
      blob.upload("x", 1, { conditions: { leaseId, ifMatch: WRONG_ETAG } }),
      412,
      "ConditionNotMet",
    );
  });

  test("download with a non-matching If-Match -> 412 ConditionNotMet", async () => {
    const { blob } = await fresh();
    await expectRestError(blob.download(0, undefined, { conditions: { ifMatch: WRONG_ETAG } }), 412, "ConditionNotMet");
  });
});

describe("If-None-Match", () => {
  test("'*' on upload over an existing blob -> 409 BlobAlreadyExists", async () => {
    const { blob } = await fresh();
    await expectRestError(
      blob.upload("x", 1, { conditions: { ifNoneMatch: "*" } }),
      409,
      "BlobAlreadyExists",
    );
    assert.equal(await content(blob), "original");
  });

  test("'*' on upload over an existing leased blob -> 409 BlobAlreadyExists, before the lease", async () => {
    // The conditions are weighed before the lease: a create-only upload learns that the blob
    // exists (not that someone holds it), and the lease is untouched.
    const { blob } = await fresh();
    await blob.getBlobLeaseClient().acquireLease(-1);
    await expectRestError(
      blob.upload("x", 1, { conditions: { ifNoneMatch: "*" } }),
      409,
      "BlobAlreadyExists",
    );
    assert.equal((await blob.getProperties()).leaseState, "leased");
    assert.equal(await content(blob), "original");
  });

  test("'*' on upload of a new blob -> 201", async () => {
    const blob = container.getBlockBlobClient(`new-${Date.now()}-${Math.random()}`);
    const r = await blob.upload("x", 1, { conditions: { ifNoneMatch: "*" } });
    assert.equal(r._response.status, 201);
  });

  test("current ETag on download -> 304; another ETag -> 200", async () => {
    const { blob, etag } = await fresh();
    await expectStatus(blob.download(0, undefined, { conditions: { ifNoneMatch: etag } }), 304, "download");
    const r = await blob.download(0, undefined, { conditions: { ifNoneMatch: WRONG_ETAG } });
    assert.equal(r._response.status, 200);
    for await (const _ of r.readableStreamBody) {
      // drain
    }
  });

  test("current ETag on raw Get Blob -> 304 with no body", async () => {
    const { blob, etag } = await fresh();
    const res = await rawRequest(server, {
      method: "GET",
      path: rawPathOf(blob),
      headers: { "if-none-match": etag },
    });
    expectRawOk(res, 304);
    assert.equal(res.rawBody.length, 0);
    assert.equal(res.headers.etag, etag);
  });

  test("current ETag on getProperties -> 304", async () => {
    const { blob, etag } = await fresh();
    await expectStatus(blob.getProperties({ conditions: { ifNoneMatch: etag } }), 304, "getProperties");
  });
});

describe("If-Modified-Since / If-Unmodified-Since", () => {
  test("If-Modified-Since in the future on getProperties -> 304; in the past -> 200", async () => {
    const { blob } = await fresh();
    await expectStatus(blob.getProperties({ conditions: { ifModifiedSince: future() } }), 304, "future");
    const r = await blob.getProperties({ conditions: { ifModifiedSince: past() } });
    assert.equal(r._response.status, 200);
  });

  test("dates equal to Last-Modified: If-Modified-Since -> 304, If-Unmodified-Since -> ok", async () => {
    const { blob } = await fresh();
    const lm = (await blob.getProperties()).lastModified;
    await expectStatus(blob.getProperties({ conditions: { ifModifiedSince: lm } }), 304, "If-Modified-Since");
    const r = await blob.setMetadata({ a: "b" }, { conditions: { ifUnmodifiedSince: lm } });
    assert.equal(r._response.status, 200);
  });

  test("If-Modified-Since in the future on download -> 304", async () => {
    const { blob } = await fresh();
    await expectStatus(blob.download(0, undefined, { conditions: { ifModifiedSince: future() } }), 304);
  });

  for (const op of ["upload", "setMetadata", "delete"]) {
    test(`If-Unmodified-Since in the past on ${op} -> 412 ConditionNotMet; in the future -> ok`, async () => {
      const { blob, etag } = await fresh();
      const run = (conditions) => {
        if (op === "upload") return blob.upload("new!", 4, { conditions });
        if (op === "setMetadata") return blob.setMetadata({ k: "v" }, { conditions });
        return blob.delete({ conditions });
      };
      await expectRestError(run({ ifUnmodifiedSince: past() }), 412, "ConditionNotMet", op);
      assert.equal((await blob.getProperties()).etag, etag, `${op}: refused write changed nothing`);
      const r = await run({ ifUnmodifiedSince: future() });
      assert.ok([200, 201, 202].includes(r._response.status));
    });
  }

  test("If-Unmodified-Since in the past on lease acquire -> 412 ConditionNotMet", async () => {
    const { blob } = await fresh();
    await expectRestError(
      blob.getBlobLeaseClient().acquireLease(-1, { conditions: { ifUnmodifiedSince: past() } }),
      412,
      "ConditionNotMet",
    );
  });

  test("If-Modified-Since in the future on a write -> 412 ConditionNotMet", async () => {
    const { blob } = await fresh();
    await expectRestError(
      blob.upload("x", 1, { conditions: { ifModifiedSince: future() } }),
      412,
      "ConditionNotMet",
    );
  });

  test("raw: If-Unmodified-Since in the past on Put Blob -> 412 with an XML error", async () => {
    const { blob } = await fresh();
    const res = await rawRequest(server, {
      method: "PUT",
      path: rawPathOf(blob),
      headers: { "x-ms-blob-type": "BlockBlob", "if-unmodified-since": past().toUTCString() },
      body: "raw",
    });
    expectRawError(res, 412, "ConditionNotMet");
  });
});
