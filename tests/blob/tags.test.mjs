// Blob index tags: Set and Get Blob Tags, x-ms-tags on Put Blob, x-ms-tag-count and List Blobs'
// TagCount, the lease rules of the tag operations, and x-ms-if-tags on blob operations.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { openServer, rawRequest } from "./server.mjs";
import { expectRawError, expectRawOk, expectRestError, newBlob, randomUUID, rawPathOf } from "./helpers.mjs";

let server;
let svc;
let container;

before(async () => ({ server, svc, container } = await openServer("tags")));
after(() => server?.stop());

const TAGS = { project: "leasehold", "stage/2": "a b+c-d.e:f=g_h" };

async function tagged(tags = TAGS) {
  const blob = await newBlob(container, "tags");
  await blob.setTags(tags);
  return blob;
}

function setTagsRaw(blob, body, headers = {}) {
  return rawRequest(server, {
    method: "PUT",
    path: rawPathOf(blob),
    query: { comp: "tags" },
    headers: { "content-type": "application/xml; charset=UTF-8", ...headers },
    body,
  });
}

describe("Set and Get Blob Tags", () => {
  test("round trip: 204 without ETag, then the same tags back", async () => {
    const blob = await newBlob(container, "tags");
    const r = await blob.setTags(TAGS);
    assert.equal(r._response.status, 204);
    assert.equal(r._response.headers.get("etag"), undefined);
    assert.deepEqual((await blob.getTags()).tags, TAGS);
  });

  test("the raw document: sorted by key, an empty set as <TagSet/>", async () => {
    const blob = await newBlob(container, "tags");
    const empty = expectRawOk(await rawRequest(server, { method: "GET", path: rawPathOf(blob), query: { comp: "tags" } }), 200);
    assert.match(empty.headers["content-type"], /^application\/xml/);
    assert.equal(empty.body, '<?xml version="1.0" encoding="utf-8"?>\n<Tags><TagSet/></Tags>');
    await blob.setTags({ zeta: "1", alpha: "2" });
    const res = expectRawOk(await rawRequest(server, { method: "GET", path: rawPathOf(blob), query: { comp: "tags" } }), 200);
    assert.equal(
      res.body,
      '<?xml version="1.0" encoding="utf-8"?>\n<Tags><TagSet><Tag><Key>alpha</Key><Value>2</Value></Tag>' +
        "<Tag><Key>zeta</Key><Value>1</Value></Tag></TagSet></Tags>",
    );
  });

  test("Set Blob Tags replaces the set, and an empty set clears it", async () => {
    const blob = await tagged();
    await blob.setTags({ only: "one" });
    assert.deepEqual((await blob.getTags()).tags, { only: "one" });
    await blob.setTags({});
    assert.deepEqual((await blob.getTags()).tags, {});
    assert.equal((await blob.getProperties()).tagCount, undefined);
  });

  test("neither the ETag nor the last-modified time changes", async () => {
    const blob = await newBlob(container, "tags");
    const before = await blob.getProperties();
    await blob.setTags(TAGS);
    const after = await blob.getProperties();
    assert.equal(after.etag, before.etag);
    assert.equal(after.lastModified.getTime(), before.lastModified.getTime());
  });

  test("a missing blob is 404 BlobNotFound, a missing container 404 ContainerNotFound", async () => {
    await expectRestError(container.getBlockBlobClient(`none-${randomUUID()}`).setTags(TAGS), 404, "BlobNotFound");
    await expectRestError(container.getBlockBlobClient(`none-${randomUUID()}`).getTags(), 404, "BlobNotFound");
    const gone = svc.getContainerClient(`gone${Date.now()}`).getBlockBlobClient("b");
    await expectRestError(gone.setTags(TAGS), 404, "ContainerNotFound");
  });

  test("snapshots and versions are refused, not answered from the blob", async () => {
    const blob = await tagged();
    for (const parameter of ["snapshot", "versionid"]) {
      const res = await rawRequest(server, {
        method: "GET",
        path: rawPathOf(blob),
        query: { comp: "tags", [parameter]: "2026-11-27T10:00:00.0000000Z" },
      });
      expectRawError(res, 400, "InvalidQueryParameterValue", parameter);
    }
  });

  test("entities in keys and values are decoded", async () => {
    const blob = await newBlob(container, "tags");
    const res = await setTagsRaw(
      blob,
      '<?xml version="1.0" encoding="utf-8"?><Tags><TagSet><!-- c --><Tag><Key>k&#x3a;1</Key><Value>a&#32;b</Value></Tag>' +
        "<Tag><Key>empty</Key><Value/></Tag><Tag><Value>v</Value><Key>c<!-- note -->d</Key></Tag></TagSet></Tags>",
    );
    expectRawOk(res, 204);
    assert.deepEqual((await blob.getTags()).tags, { "k:1": "a b", empty: "", cd: "v" });
  });
});

describe("tag rules", () => {
  const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, "v"]));
  const cases = [
    ["eleven tags", eleven, "TagsTooLarge"],
    ["a key of 129 characters", { ["k".repeat(129)]: "v" }, "TagsTooLarge"],
    ["a value of 257 characters", { k: "v".repeat(257) }, "TagsTooLarge"],
    ["an empty key", { "": "v" }, "EmptyTagName"],
    ["a key with '#'", { "a#b": "v" }, "InvalidTag"],
    ["a value with '?'", { k: "why?" }, "InvalidTag"],
    ["a non-ASCII value", { k: "caf\u00e9" }, "InvalidTag"],
  ];
  for (const [what, tags, code] of cases) {
    test(`Set Blob Tags with ${what}: 400 ${code}, tags unchanged`, async () => {
      const blob = await tagged();
      await expectRestError(blob.setTags(tags), 400, code, what);
      assert.deepEqual((await blob.getTags()).tags, TAGS);
    });
  }

  test("the limits themselves are allowed: ten tags, key 128, value 256, empty value", async () => {
    const ten = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, ""]));
    ten["k".repeat(128)] = "v".repeat(256);
    const blob = await tagged(ten);
    assert.deepEqual((await blob.getTags()).tags, ten);
  });

  test("a key twice: 400 DuplicateTagNames", async () => {
    const blob = await newBlob(container, "tags");
    const res = await setTagsRaw(
      blob,
      "<Tags><TagSet><Tag><Key>k</Key><Value>1</Value></Tag><Tag><Key>k</Key><Value>2</Value></Tag></TagSet></Tags>",
    );
    expectRawError(res, 400, "DuplicateTagNames");
  });

  for (const [what, body] of [
    ["not XML", "tags please"],
    ["unclosed", "<Tags><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet>"],
    ["another root", "<Labels><TagSet/></Labels>"],
    ["a tag without a value", "<Tags><TagSet><Tag><Key>k</Key></Tag></TagSet></Tags>"],
    ["without a TagSet", "<Tags/>"],
    ["with two TagSets", "<Tags><TagSet/><TagSet/></Tags>"],
    ["a tag with two keys", "<Tags><TagSet><Tag><Key>k</Key><Key>j</Key><Value>v</Value></Tag></TagSet></Tags>"],
    ["a tag with another element", "<Tags><TagSet><Tag><Key>k</Key><Value>v</Value><Note/></Tag></TagSet></Tags>"],
    // Under the size cap, with names the parser takes, nested deeper than any tag document.
    ["nested deep", "<Tags>" + "<1>".repeat(9000) + "</1>".repeat(9000) + "</Tags>"],
    ["nested deep behind text closing nothing", "<Tags>" + "/>".repeat(9000) + "<TagSet>".repeat(3000) + "</Tags>"],
  ]) {
    test(`a document ${what}: 400 InvalidXmlDocument, and the server serves on`, async () => {
      const blob = await tagged();
      expectRawError(await setTagsRaw(blob, body), 400, "InvalidXmlDocument", what);
      assert.deepEqual((await blob.getTags()).tags, TAGS);
    });
  }
});

describe("x-ms-tags, x-ms-tag-count and List Blobs", () => {
  test("Put Blob with tags sets them; overwriting without tags clears them", async () => {
    const blob = container.getBlockBlobClient(`tags-${randomUUID()}`);
    await blob.upload("x", 1, { tags: TAGS });
    assert.deepEqual((await blob.getTags()).tags, TAGS);
    assert.equal((await blob.getProperties()).tagCount, 2);
    assert.equal((await blob.download()).tagCount, 2);
    await blob.upload("y", 1);
    assert.deepEqual((await blob.getTags()).tags, {});
    assert.equal((await blob.getProperties()).tagCount, undefined);
  });

  test("Put Blob with invalid tags: 400 and no blob", async () => {
    const blob = container.getBlockBlobClient(`tags-${randomUUID()}`);
    await expectRestError(blob.upload("x", 1, { tags: { "a#": "b" } }), 400, "InvalidTag");
    assert.equal(await blob.exists(), false);
  });

  test("List Blobs: TagCount always, the tags with include=tags", async () => {
    const blob = await tagged();
    const name = blob.name;
    const plain = [];
    for await (const item of container.listBlobsFlat({ prefix: name })) plain.push(item);
    assert.equal(plain.length, 1);
    assert.equal(plain[0].properties.tagCount, 2);
    assert.equal(plain[0].tags, undefined);
    const withTags = [];
    for await (const item of container.listBlobsFlat({ prefix: name, includeTags: true })) withTags.push(item);
    assert.deepEqual(withTags[0].tags, TAGS);
  });
});

describe("leases on the tag operations", () => {
  test("leased: setTags needs the lease id (412 LeaseIdMissing), another id is 412 mismatch", async () => {
    const blob = await tagged();
    const lease = blob.getBlobLeaseClient(randomUUID());
    await lease.acquireLease(-1);
    await expectRestError(blob.setTags({ a: "1" }), 412, "LeaseIdMissing");
    await expectRestError(
      blob.setTags({ a: "1" }, { conditions: { leaseId: randomUUID() } }),
      412,
      "LeaseIdMismatchWithBlobOperation",
    );
    await expectRestError(blob.getTags({ conditions: { leaseId: randomUUID() } }), 412, "LeaseIdMismatchWithBlobOperation");
    // Reading without the id is allowed, as for any read.
    assert.deepEqual((await blob.getTags()).tags, TAGS);
    await blob.setTags({ a: "1" }, { conditions: { leaseId: lease.leaseId } });
    assert.deepEqual((await blob.getTags({ conditions: { leaseId: lease.leaseId } })).tags, { a: "1" });
    await lease.releaseLease();
  });

  test("a lease id on an unleased blob: 412 LeaseNotPresentWithBlobOperation", async () => {
    const blob = await tagged();
    await expectRestError(
      blob.setTags({ a: "1" }, { conditions: { leaseId: randomUUID() } }),
      412,
      "LeaseNotPresentWithBlobOperation",
    );
  });

  test("setting tags under a broken lease keeps its id, where a write would forget it", async () => {
    const blob = await tagged();
    const lease = blob.getBlobLeaseClient(randomUUID());
    await lease.acquireLease(-1);
    await lease.breakLease(0);
    await blob.setTags({ a: "1" });
    // Releasing with the broken lease's id still finds it.
    await lease.releaseLease();
    assert.equal((await blob.getProperties()).leaseState, "available");
  });

  test("x-leasehold-if-fencing-token guards Set Blob Tags as it guards writes", async () => {
    const blob = await tagged();
    const lease = blob.getBlobLeaseClient(randomUUID());
    const first = await lease.acquireLease(-1);
    const stale = first._response.headers.get("x-leasehold-fencing-token");
    await lease.changeLease(randomUUID());
    const body = "<Tags><TagSet><Tag><Key>k</Key><Value>v</Value></Tag></TagSet></Tags>";
    const headers = { "x-ms-lease-id": lease.leaseId, "x-leasehold-if-fencing-token": stale };
    expectRawError(await setTagsRaw(blob, body, headers), 412, "FencingTokenSuperseded");
    assert.deepEqual((await blob.getTags()).tags, TAGS);
    await lease.releaseLease();
  });
});

describe("x-ms-if-tags", () => {
  const met = { tagConditions: "project = 'leasehold' AND \"stage/2\" >= 'a'" };
  const unmet = { tagConditions: "project = 'other'" };

  test("reads: met serves, unmet is 412 ConditionNotMet", async () => {
    const blob = await tagged();
    assert.equal((await blob.getProperties({ conditions: met })).tagCount, 2);
    await expectRestError(blob.getProperties({ conditions: unmet }), 412, "ConditionNotMet");
    await expectRestError(blob.download(0, undefined, { conditions: unmet }), 412, "ConditionNotMet");
    await expectRestError(blob.getTags({ conditions: unmet }), 412, "ConditionNotMet");
    assert.deepEqual((await blob.getTags({ conditions: met })).tags, TAGS);
  });

  test("writes: unmet is 412 and changes nothing; met proceeds", async () => {
    const blob = await tagged();
    const etag = (await blob.getProperties()).etag;
    await expectRestError(blob.upload("z", 1, { conditions: unmet }), 412, "ConditionNotMet");
    await expectRestError(blob.setMetadata({ a: "b" }, { conditions: unmet }), 412, "ConditionNotMet");
    await expectRestError(blob.setTags({ a: "1" }, { conditions: unmet }), 412, "ConditionNotMet");
    await expectRestError(blob.delete({ conditions: unmet }), 412, "ConditionNotMet");
    assert.equal((await blob.getProperties()).etag, etag);
    await blob.setMetadata({ a: "b" }, { conditions: met });
    await blob.delete({ conditions: met });
    assert.equal(await blob.exists(), false);
  });

  test("Lease Blob: acquire when met, change refused when unmet", async () => {
    const blob = await tagged();
    const lease = blob.getBlobLeaseClient(randomUUID());
    await lease.acquireLease(15, { conditions: met });
    await expectRestError(lease.changeLease(randomUUID(), { conditions: unmet }), 412, "ConditionNotMet");
    await lease.releaseLease();
  });

  test("a missing key fails every comparison, <> included; OR, parentheses and case-insensitive keywords", async () => {
    const blob = await tagged();
    await expectRestError(blob.getProperties({ conditions: { tagConditions: "absent <> 'x'" } }), 412, "ConditionNotMet");
    const either = { tagConditions: "(absent = 'x' or project = 'leasehold') and \"stage/2\" < 'b'" };
    assert.equal((await blob.getProperties({ conditions: either })).tagCount, 2);
  });

  test("a blob without tags meets no condition", async () => {
    const blob = await newBlob(container, "tags");
    await expectRestError(blob.getProperties({ conditions: { tagConditions: "a >= ''" } }), 412, "ConditionNotMet");
  });

  test("a missing blob is 404 whatever the condition; Put Blob creates it", async () => {
    const blob = container.getBlockBlobClient(`tags-${randomUUID()}`);
    await expectRestError(blob.getProperties({ conditions: unmet }), 404, "BlobNotFound");
    await blob.upload("new", 3, { conditions: unmet });
    assert.equal(await blob.exists(), true);
  });

  for (const expression of ["project = leasehold", "project == 'x'", "(project = 'x'", "project = 'x' AND", "a#b = 'x'", "'x' = project"]) {
    test(`malformed: ${expression} -> 400 InvalidHeaderValue, even for a missing blob`, async () => {
      const blob = container.getBlockBlobClient(`tags-${randomUUID()}`);
      const res = await rawRequest(server, { method: "HEAD", path: rawPathOf(blob), headers: { "x-ms-if-tags": expression } });
      expectRawError(res, 400, "InvalidHeaderValue", expression);
    });
  }

  test("ignored on containers", async () => {
    const res = await rawRequest(server, {
      method: "GET",
      path: rawPathOf(container),
      query: { restype: "container" },
      headers: { "x-ms-if-tags": "project = 'other'" },
    });
    expectRawOk(res, 200);
    const malformed = await rawRequest(server, {
      method: "GET",
      path: rawPathOf(container),
      query: { restype: "container" },
      headers: { "x-ms-if-tags": "project ==" },
    });
    expectRawOk(malformed, 200);
  });
});
