// Set Blob Properties (the SDK's setHTTPHeaders): the six x-ms-blob-* properties, replaced as a set,
// checked against the lease, conditions and tag conditions as any write.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { openServer, rawRequest } from "./server.mjs";
import { expectRawError, expectRestError, newBlob, randomUUID, rawPathOf } from "./helpers.mjs";

let server;
let container;

before(async () => ({ server, container } = await openServer("props")));
after(() => server?.stop());

const md5 = createHash("md5").update("anything").digest();
const ALL = {
  blobContentType: "text/plain; charset=utf-8",
  blobContentEncoding: "gzip",
  blobContentLanguage: "en-GB",
  blobCacheControl: "max-age=60",
  blobContentDisposition: "attachment; filename=x.txt",
  blobContentMD5: new Uint8Array(md5),
};

describe("Set Blob Properties", () => {
  test("sets all six, changes the ETag, keeps content, metadata and tags", async () => {
    const blob = await newBlob(container, "props", "content");
    await blob.setMetadata({ owner: "me" });
    await blob.setTags({ env: "prod" });
    const before = await blob.getProperties();
    const r = await blob.setHTTPHeaders(ALL);
    assert.equal(r._response.status, 200);
    assert.notEqual(r.etag, before.etag);
    const p = await blob.getProperties();
    assert.equal(p.etag, r.etag);
    assert.equal(p.contentType, ALL.blobContentType);
    assert.equal(p.contentEncoding, "gzip");
    assert.equal(p.contentLanguage, "en-GB");
    assert.equal(p.cacheControl, "max-age=60");
    assert.equal(p.contentDisposition, ALL.blobContentDisposition);
    assert.deepEqual(Buffer.from(p.contentMD5), md5);
    assert.deepEqual(p.metadata, { owner: "me" });
    assert.equal(p.tagCount, 1);
    assert.equal(p.contentLength, 7);
  });

  test("a property not sent is cleared", async () => {
    const blob = await newBlob(container, "props");
    await blob.setHTTPHeaders(ALL);
    await blob.setHTTPHeaders({ blobContentLanguage: "fr" });
    const p = await blob.getProperties();
    assert.equal(p.contentLanguage, "fr");
    assert.equal(p.contentEncoding, undefined);
    assert.equal(p.cacheControl, undefined);
    assert.equal(p.contentDisposition, undefined);
    assert.equal(p.contentMD5, undefined);
  });

  test("a leased blob needs the lease id", async () => {
    const blob = await newBlob(container, "props");
    const lease = blob.getBlobLeaseClient(randomUUID());
    await lease.acquireLease(-1);
    await expectRestError(blob.setHTTPHeaders(ALL), 412, "LeaseIdMissing");
    await blob.setHTTPHeaders(ALL, { conditions: { leaseId: lease.leaseId } });
    await lease.releaseLease();
  });

  test("conditions and tag conditions refuse it with 412, changing nothing", async () => {
    const blob = await newBlob(container, "props");
    await blob.setTags({ env: "prod" });
    const etag = (await blob.getProperties()).etag;
    await expectRestError(blob.setHTTPHeaders(ALL, { conditions: { ifMatch: '"0x8D0DEADBEEF0000"' } }), 412, "ConditionNotMet");
    await expectRestError(blob.setHTTPHeaders(ALL, { conditions: { tagConditions: "env = 'test'" } }), 412, "ConditionNotMet");
    assert.equal((await blob.getProperties()).etag, etag);
    await blob.setHTTPHeaders(ALL, { conditions: { ifMatch: etag, tagConditions: "env = 'prod'" } });
  });

  test("a missing blob is 404; a malformed MD5 is 400 InvalidHeaderValue", async () => {
    await expectRestError(container.getBlockBlobClient(`none-${randomUUID()}`).setHTTPHeaders(ALL), 404, "BlobNotFound");
    const blob = await newBlob(container, "props");
    const res = await rawRequest(server, {
      method: "PUT",
      path: rawPathOf(blob),
      query: { comp: "properties" },
      headers: { "x-ms-blob-content-md5": "not-base64!" },
    });
    expectRawError(res, 400, "InvalidHeaderValue");
  });
});
