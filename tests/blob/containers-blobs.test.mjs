// Containers and block blobs: the basics the lease operations stand on.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { openServer, rawRequest } from "./server.mjs";
import { expectRestError, randomUUID, uniqueName } from "./helpers.mjs";

let server;
let svc;

before(async () => ({ server, svc } = await openServer()));
after(() => server?.stop());

async function collect(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

describe("containers", () => {
  test("create answers 201; creating it again is 409 ContainerAlreadyExists", async () => {
    const c = svc.getContainerClient(uniqueName());
    const r = await c.create();
    assert.equal(r._response.status, 201);
    assert.ok(r.etag, "create returns an ETag");
    assert.ok(r.lastModified instanceof Date, "create returns Last-Modified");
    await expectRestError(c.create(), 409, "ContainerAlreadyExists", "second create");
    const ifNot = await c.createIfNotExists();
    assert.equal(ifNot.succeeded, false);
  });

  test("getProperties of a container", async () => {
    const c = svc.getContainerClient(uniqueName());
    const created = await c.create({ metadata: { color: "blue" } });
    const p = await c.getProperties();
    assert.equal(p._response.status, 200);
    assert.equal(p.etag, created.etag);
    assert.equal(p.leaseState, "available");
    assert.equal(p.leaseStatus, "unlocked");
    assert.equal(p.leaseDuration, undefined);
    assert.deepEqual(p.metadata, { color: "blue" });
  });

  test("a missing container is 404 ContainerNotFound", async () => {
    const c = svc.getContainerClient(uniqueName("missing"));
    await expectRestError(c.getProperties(), 404, "ContainerNotFound", "getProperties");
    await expectRestError(c.delete(), 404, "ContainerNotFound", "delete");
    assert.equal(await c.exists(), false);
    const b = c.getBlockBlobClient("x");
    await expectRestError(b.upload("x", 1), 404, "ContainerNotFound", "upload into missing container");
    await expectRestError(
      collect(c.listBlobsFlat()),
      404,
      "ContainerNotFound",
      "list blobs of missing container",
    );
  });

  test("delete answers 202 and the container is gone", async () => {
    const c = svc.getContainerClient(uniqueName());
    await c.create();
    await c.getBlockBlobClient("inside").upload("x", 1);
    const r = await c.delete();
    assert.equal(r._response.status, 202);
    await expectRestError(c.getProperties(), 404, "ContainerNotFound", "after delete");
    await expectRestError(c.getBlockBlobClient("inside").getProperties(), 404, "ContainerNotFound",
      "blob of deleted container");
  });

  test("a re-created container does not bring back the old blobs", async () => {
    const c = svc.getContainerClient(uniqueName());
    await c.create();
    await c.getBlockBlobClient("old").upload("x", 1);
    await c.delete();
    await c.create();
    assert.deepEqual(await collect(c.listBlobsFlat()), []);
    await expectRestError(c.getBlockBlobClient("old").getProperties(), 404, "BlobNotFound");
  });

  test("listContainers with prefix and maxPageSize pagination", async () => {
    const prefix = uniqueName("lst").slice(0, 14);
    const names = [];
    for (let i = 0; i < 5; i++) names.push(`${prefix}-${i}`);
    await Promise.all(names.map((n) => svc.getContainerClient(n).create()));
    // Another container that the prefix must filter out.
    await svc.getContainerClient(uniqueName("zz")).create();

    const all = await collect(svc.listContainers({ prefix }));
    assert.deepEqual(all.map((c) => c.name), names);
    for (const c of all) {
      assert.equal(c.properties.leaseState, "available");
      assert.equal(c.properties.leaseStatus, "unlocked");
      assert.ok(c.properties.etag);
      assert.ok(c.properties.lastModified instanceof Date);
    }

    const pages = [];
    for await (const page of svc.listContainers({ prefix }).byPage({ maxPageSize: 2 })) {
      pages.push(page);
    }
    assert.deepEqual(
      pages.map((p) => p.containerItems.map((c) => c.name)),
      [names.slice(0, 2), names.slice(2, 4), names.slice(4)],
    );
    assert.ok(pages[0].continuationToken, "first page has a continuation token");
    assert.ok(pages[1].continuationToken, "second page has a continuation token");
    assert.ok(!pages[2].continuationToken, "last page has none");

    // Resuming from a continuation token gives the rest.
    const resumed = await svc
      .listContainers({ prefix })
      .byPage({ maxPageSize: 10, continuationToken: pages[0].continuationToken })
      .next();
    assert.deepEqual(resumed.value.containerItems.map((c) => c.name), names.slice(2));
  });

  test("listContainers includeMetadata", async () => {
    const name = uniqueName("md");
    await svc.getContainerClient(name).create({ metadata: { k: "v" } });
    const items = await collect(svc.listContainers({ prefix: name, includeMetadata: true }));
    assert.equal(items.length, 1);
    assert.deepEqual(items[0].metadata, { k: "v" });
  });
});

describe("blobs", () => {
  let container;
  before(async () => {
    container = svc.getContainerClient(uniqueName("blobs"));
    await container.create();
  });

  test("upload, download and getProperties", async () => {
    const b = container.getBlockBlobClient("hello.txt");
    const content = "Hello, leasehold!";
    const up = await b.upload(content, content.length, {
      blobHTTPHeaders: { blobContentType: "text/plain; charset=utf-8" },
      metadata: { owner: "tests", purpose: "basics" },
    });
    assert.equal(up._response.status, 201);
    assert.ok(up.etag);

    const dl = await b.download();
    assert.equal(dl._response.status, 200);
    assert.equal((await streamToString(dl.readableStreamBody)), content);
    assert.equal(dl.contentLength, content.length);
    assert.equal(dl.etag, up.etag);

    const p = await b.getProperties();
    assert.equal(p.contentLength, content.length);
    assert.equal(p.contentType, "text/plain; charset=utf-8");
    assert.deepEqual(p.metadata, { owner: "tests", purpose: "basics" });
    assert.equal(p.blobType, "BlockBlob");
    assert.equal(p.etag, up.etag);
    assert.equal(p.leaseState, "available");
    assert.equal(p.leaseStatus, "unlocked");
  });

  test("range download with offset and count", async () => {
    const b = container.getBlockBlobClient("range.bin");
    const content = "0123456789abcdefghij";
    await b.upload(content, content.length);
    const dl = await b.download(3, 7);
    assert.equal(dl._response.status, 206);
    assert.equal(await streamToString(dl.readableStreamBody), content.slice(3, 10));
    assert.equal(dl.contentLength, 7);
    assert.equal(dl.contentRange, `bytes 3-9/${content.length}`);

    const tail = await b.download(15);
    assert.equal(await streamToString(tail.readableStreamBody), content.slice(15));

    const buf = await b.downloadToBuffer(5, 2);
    assert.equal(buf.toString(), "56");
  });

  test("a range starting past the end -> 416 InvalidRange", async () => {
    const b = container.getBlockBlobClient("short.bin");
    await b.upload("0123456789", 10);
    await expectRestError(b.download(20, 5), 416, "InvalidRange");
    // A range running past the end is cut to the blob's end.
    const dl = await b.download(5, 100);
    assert.equal(dl._response.status, 206);
    assert.equal(await streamToString(dl.readableStreamBody), "56789");
  });

  test("HEAD of a missing blob: 404 with x-ms-error-code and no body", async () => {
    const res = await rawRequest(server, { method: "HEAD", path: `/${container.containerName}/nothing-here` });
    assert.equal(res.status, 404);
    assert.equal(res.headers["x-ms-error-code"], "BlobNotFound");
    assert.equal(res.rawBody.length, 0);
    assert.ok(res.headers["x-ms-request-id"]);
  });

  test("empty blob", async () => {
    const b = container.getBlockBlobClient("empty");
    await b.upload("", 0);
    const p = await b.getProperties();
    assert.equal(p.contentLength, 0);
    const dl = await b.download();
    assert.equal(await streamToString(dl.readableStreamBody), "");
  });

  test("upload overwrites content and changes the ETag", async () => {
    const b = container.getBlockBlobClient("overwrite");
    const first = await b.upload("one", 3, { metadata: { v: "1" } });
    const second = await b.upload("second", 6);
    assert.notEqual(first.etag, second.etag);
    const p = await b.getProperties();
    assert.equal(p.contentLength, 6);
    assert.deepEqual(p.metadata, {}, "Put Blob replaces metadata");
    assert.equal(await streamToString((await b.download()).readableStreamBody), "second");
  });

  test("setMetadata replaces metadata and changes the ETag", async () => {
    const b = container.getBlockBlobClient("meta");
    const up = await b.upload("m", 1, { metadata: { a: "1" } });
    const r = await b.setMetadata({ b: "2", c: "three" });
    assert.equal(r._response.status, 200);
    assert.notEqual(r.etag, up.etag);
    const p = await b.getProperties();
    assert.deepEqual(p.metadata, { b: "2", c: "three" });
    assert.equal(p.etag, r.etag);
    await b.setMetadata({});
    assert.deepEqual((await b.getProperties()).metadata, {});
  });

  test("missing blob is 404 BlobNotFound", async () => {
    const b = container.getBlockBlobClient("does-not-exist");
    await expectRestError(b.download(), 404, "BlobNotFound", "download");
    await expectRestError(b.getProperties(), 404, "BlobNotFound", "getProperties");
    await expectRestError(b.delete(), 404, "BlobNotFound", "delete");
    await expectRestError(b.setMetadata({ a: "b" }), 404, "BlobNotFound", "setMetadata");
    assert.equal(await b.exists(), false);
  });

  test("delete answers 202 and the blob is gone", async () => {
    const b = container.getBlockBlobClient("to-delete");
    await b.upload("x", 1);
    const r = await b.delete();
    assert.equal(r._response.status, 202);
    await expectRestError(b.getProperties(), 404, "BlobNotFound", "after delete");
  });

  test("names with spaces, unicode and slashes round-trip", async () => {
    const names = [
      "with space.txt",
      "dir/sub dir/file name.txt",
      "ünïcödé/日本語/файл.txt",
      "emoji-😀.bin",
      "plus+and%percent&amp=eq",
    ];
    for (const name of names) {
      const b = container.getBlockBlobClient(name);
      await b.upload(name, Buffer.byteLength(name));
      const text = await streamToString((await b.download()).readableStreamBody);
      assert.equal(text, name, `content of ${JSON.stringify(name)}`);
      assert.equal((await b.getProperties()).contentLength, Buffer.byteLength(name));
    }
    const listed = new Set();
    for await (const item of container.listBlobsFlat()) listed.add(item.name);
    for (const name of names) assert.ok(listed.has(name), `listing contains ${JSON.stringify(name)}`);
  });

  describe("listing", () => {
    let lc;
    const flat = ["a/1", "a/2", "a/3", "b/1", "c"];
    const tree = ["h/a", "h/b/c", "h/b/d", "h/e/f", "h/g", "top"];
    before(async () => {
      lc = svc.getContainerClient(uniqueName("list"));
      await lc.create();
      for (const n of [...flat, ...tree]) {
        await lc.getBlockBlobClient(n).upload(n, n.length, { metadata: { name: n.replace(/\//g, "_") } });
      }
    });

    test("listBlobsFlat lists everything in order", async () => {
      const items = await collect(lc.listBlobsFlat());
      assert.deepEqual(items.map((i) => i.name), [...flat, ...tree].sort());
      const c = items.find((i) => i.name === "c");
      assert.equal(c.properties.contentLength, 1);
      assert.equal(c.properties.blobType, "BlockBlob");
      assert.equal(c.properties.leaseState, "available");
      assert.equal(c.properties.leaseStatus, "unlocked");
      assert.ok(c.properties.etag);
      assert.equal(c.metadata, undefined, "no metadata unless asked");
    });

    test("listBlobsFlat with prefix and includeMetadata", async () => {
      const items = await collect(lc.listBlobsFlat({ prefix: "a/", includeMetadata: true }));
      assert.deepEqual(items.map((i) => i.name), ["a/1", "a/2", "a/3"]);
      assert.deepEqual(items[1].metadata, { name: "a_2" });
    });

    test("listBlobsFlat pagination", async () => {
      const pages = [];
      for await (const page of lc.listBlobsFlat({ prefix: "a/" }).byPage({ maxPageSize: 2 })) {
        pages.push(page);
      }
      assert.deepEqual(
        pages.map((p) => p.segment.blobItems.map((i) => i.name)),
        [["a/1", "a/2"], ["a/3"]],
      );
      assert.ok(pages[0].continuationToken);
      assert.ok(!pages[1].continuationToken);

      const all = [];
      for await (const page of lc.listBlobsFlat().byPage({ maxPageSize: 3 })) {
        assert.ok(page.segment.blobItems.length <= 3);
        all.push(...page.segment.blobItems.map((i) => i.name));
      }
      assert.deepEqual(all, [...flat, ...tree].sort());
    });

    test("listBlobsByHierarchy with '/' delimiter", async () => {
      // The SDK yields a page's prefixes before its blobs, so compare each kind on its own.
      const split = (items) => ({
        prefixes: items.filter((i) => i.kind === "prefix").map((i) => i.name),
        blobs: items.filter((i) => i.kind === "blob").map((i) => i.name),
      });
      assert.deepEqual(split(await collect(lc.listBlobsByHierarchy("/"))), {
        prefixes: ["a/", "b/", "h/"],
        blobs: ["c", "top"],
      });
      assert.deepEqual(split(await collect(lc.listBlobsByHierarchy("/", { prefix: "h/" }))), {
        prefixes: ["h/b/", "h/e/"],
        blobs: ["h/a", "h/g"],
      });
      assert.deepEqual(split(await collect(lc.listBlobsByHierarchy("/", { prefix: "h/b/" }))), {
        prefixes: [],
        blobs: ["h/b/c", "h/b/d"],
      });
    });

    test("listing an empty prefix gives nothing", async () => {
      const items = await collect(lc.listBlobsFlat({ prefix: `nothing-${randomUUID()}` }));
      assert.deepEqual(items, []);
    });
  });
});

async function streamToString(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return Buffer.concat(chunks).toString("utf8");
}
