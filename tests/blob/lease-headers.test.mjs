// Lease Blob header validation (raw requests: the SDK would not send these), Azure's error body,
// and the GUID spellings a lease id may arrive in.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { openServer, parseErrorXml, rawRequest, rawSocketRequest } from "./server.mjs";
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
let svc;
let container;

before(async () => ({ server, svc, container } = await openServer("hdr")));
after(() => server?.stop());

function lease(blob, headers) {
  return rawRequest(server, {
    method: "PUT",
    path: rawPathOf(blob),
    query: { comp: "lease" },
    headers,
  });
}

async function leasedBlob(duration = "-1") {
  const blob = await newBlob(container, "hdr");
  const id = randomUUID();
  expectRawOk(
    await lease(blob, {
      "x-ms-lease-action": "acquire",
      "x-ms-lease-duration": duration,
      "x-ms-proposed-lease-id": id,
    }),
    201,
    "setup acquire",
  );
  return { blob, id };
}

function expectHeaderError(res, status, code, headerName, what) {
  const err = expectRawError(res, status, code, what);
  assert.ok(res.body.length > 0, `${what}: error has a body`);
  assert.match(res.headers["content-type"], /^application\/xml/, `${what}: content-type`);
  assert.ok(err.message && err.message.length > 0, `${what}: <Message> present`);
  assert.equal(err.headerName?.toLowerCase(), headerName, `${what}: <HeaderName> in ${res.body}`);
}

describe("the Lease Blob reference's sample request", () => {
  test("its headers as written there (version 2012-02-12, no Content-Length), signed -> 201", async () => {
    const blob = await newBlob(container, "sample");
    const res = await rawSocketRequest(server, {
      method: "PUT",
      path: rawPathOf(blob),
      query: { comp: "lease" },
      headers: {
        "content-length": null, // the sample has none
        "x-ms-version": "2012-02-12",
        "x-ms-lease-action": "acquire",
        "x-ms-lease-duration": "-1",
        "x-ms-proposed-lease-id": "1f812371-a41d-49e6-b123-f4b542e851c5",
      },
    });
    assert.equal(res.status, 201, res.body);
    assert.equal(res.headers["x-ms-lease-id"], "1f812371-a41d-49e6-b123-f4b542e851c5");
    assert.equal((await leaseInfo(blob)).state, "leased");
  });
});

describe("x-ms-lease-duration on another action than acquire", () => {
  // "Only allowed and required on an acquire operation": a renew, change, release or break that
  // carries it is refused, naming the header, and the lease is left as it was.
  for (const action of ["renew", "change", "release", "break"]) {
    test(`${action} with x-ms-lease-duration -> 400 InvalidHeaderValue`, async () => {
      const { blob, id } = await leasedBlob();
      const headers = { "x-ms-lease-action": action, "x-ms-lease-duration": "30", "x-ms-lease-id": id };
      if (action === "change") headers["x-ms-proposed-lease-id"] = randomUUID();
      const res = await lease(blob, headers);
      expectHeaderError(res, 400, "InvalidHeaderValue", "x-ms-lease-duration", action);
      assert.equal((await leaseInfo(blob)).state, "leased");
    });
  }
});

describe("acquire", () => {
  test("without x-ms-lease-duration -> 400 MissingRequiredHeader", async () => {
    const blob = await newBlob(container);
    const res = await lease(blob, { "x-ms-lease-action": "acquire", "x-ms-proposed-lease-id": randomUUID() });
    expectHeaderError(res, 400, "MissingRequiredHeader", "x-ms-lease-duration", "no duration");
    assert.equal((await leaseInfo(blob)).state, "available");
  });

  for (const bad of ["14", "61", "0", "abc", "-2", "1.5", "", "15s"]) {
    test(`x-ms-lease-duration ${JSON.stringify(bad)} -> 400 InvalidHeaderValue`, async () => {
      const blob = await newBlob(container);
      const res = await lease(blob, { "x-ms-lease-action": "acquire", "x-ms-lease-duration": bad });
      if (bad === "") {
        // An empty header is either missing or invalid; both are a 400 naming the header.
        assert.equal(res.status, 400, res.body);
        assert.ok(["MissingRequiredHeader", "InvalidHeaderValue"].includes(res.headers["x-ms-error-code"]));
        return;
      }
      expectHeaderError(res, 400, "InvalidHeaderValue", "x-ms-lease-duration", `duration ${bad}`);
      assert.equal((await leaseInfo(blob)).state, "available");
    });
  }

  for (const ok of ["-1", "15", "60", "30"]) {
    test(`x-ms-lease-duration ${ok} -> 201`, async () => {
      const blob = await newBlob(container);
      const res = await lease(blob, { "x-ms-lease-action": "acquire", "x-ms-lease-duration": ok });
      expectRawOk(res, 201, `duration ${ok}`);
      assert.deepEqual(await leaseInfo(blob), {
        state: "leased",
        status: "locked",
        duration: ok === "-1" ? "infinite" : "fixed",
      });
    });
  }

  const badIds = [
    "not-a-guid",
    "1234",
    "1f812371-a41d-49e6-b123-f4b542e851c", // one digit short
    "zf812371-a41d-49e6-b123-f4b542e851c5", // not hex
    "{1f812371-a41d-49e6-b123-f4b542e851c5)", // mismatched brackets
    "1f812371-a41d49e6-b123-f4b542e851c5", // a hyphen missing
    "{1f812371a41d49e6b123f4b542e851c5}", // braces around the digits-only form
  ];
  for (const bad of badIds) {
    test(`proposed id ${JSON.stringify(bad)} -> 400 InvalidHeaderValue`, async () => {
      const blob = await newBlob(container);
      const res = await lease(blob, {
        "x-ms-lease-action": "acquire",
        "x-ms-lease-duration": "-1",
        "x-ms-proposed-lease-id": bad,
      });
      expectHeaderError(res, 400, "InvalidHeaderValue", "x-ms-proposed-lease-id", `proposed ${bad}`);
      assert.equal((await leaseInfo(blob)).state, "available");
    });
  }
});

describe("action", () => {
  test("missing x-ms-lease-action -> 400 MissingRequiredHeader", async () => {
    const blob = await newBlob(container);
    const res = await lease(blob, { "x-ms-lease-duration": "-1" });
    expectHeaderError(res, 400, "MissingRequiredHeader", "x-ms-lease-action", "no action");
  });

  test("unknown x-ms-lease-action -> 400 InvalidHeaderValue", async () => {
    const blob = await newBlob(container);
    const res = await lease(blob, { "x-ms-lease-action": "steal", "x-ms-lease-duration": "-1" });
    expectHeaderError(res, 400, "InvalidHeaderValue", "x-ms-lease-action", "steal");
  });

  for (const action of ["renew", "release"]) {
    test(`${action} without x-ms-lease-id -> 400 MissingRequiredHeader`, async () => {
      const { blob } = await leasedBlob();
      const res = await lease(blob, { "x-ms-lease-action": action });
      expectHeaderError(res, 400, "MissingRequiredHeader", "x-ms-lease-id", action);
      assert.equal((await leaseInfo(blob)).state, "leased");
    });

    test(`${action} with a malformed x-ms-lease-id -> 400 InvalidHeaderValue`, async () => {
      const { blob } = await leasedBlob();
      const res = await lease(blob, { "x-ms-lease-action": action, "x-ms-lease-id": "nope" });
      expectHeaderError(res, 400, "InvalidHeaderValue", "x-ms-lease-id", action);
    });
  }

  test("change without x-ms-proposed-lease-id -> 400 MissingRequiredHeader", async () => {
    const { blob, id } = await leasedBlob();
    const res = await lease(blob, { "x-ms-lease-action": "change", "x-ms-lease-id": id });
    expectHeaderError(res, 400, "MissingRequiredHeader", "x-ms-proposed-lease-id", "change");
  });

  test("change without x-ms-lease-id -> 400 MissingRequiredHeader", async () => {
    const { blob } = await leasedBlob();
    const res = await lease(blob, { "x-ms-lease-action": "change", "x-ms-proposed-lease-id": randomUUID() });
    expectHeaderError(res, 400, "MissingRequiredHeader", "x-ms-lease-id", "change");
  });
});

describe("break period", () => {
  for (const bad of ["61", "-1", "abc"]) {
    test(`x-ms-lease-break-period ${bad} -> 400 InvalidHeaderValue`, async () => {
      const { blob } = await leasedBlob();
      const res = await lease(blob, { "x-ms-lease-action": "break", "x-ms-lease-break-period": bad });
      expectHeaderError(res, 400, "InvalidHeaderValue", "x-ms-lease-break-period", `period ${bad}`);
      assert.equal((await leaseInfo(blob)).state, "leased");
    });
  }

  for (const [period, state] of [["0", "broken"], ["60", "breaking"]]) {
    test(`x-ms-lease-break-period ${period} -> 202 ${state}, x-ms-lease-time ${period}`, async () => {
      const { blob } = await leasedBlob();
      const res = await lease(blob, { "x-ms-lease-action": "break", "x-ms-lease-break-period": period });
      expectRawOk(res, 202);
      assert.equal(res.headers["x-ms-lease-time"], period);
      assert.equal((await leaseInfo(blob)).state, state);
    });
  }
});

describe("error body", () => {
  test("is <Error><Code/><Message/></Error> XML with Content-Type application/xml", async () => {
    const blob = await newBlob(container);
    const res = await lease(blob, { "x-ms-lease-action": "renew", "x-ms-lease-id": randomUUID() });
    expectRawError(res, 409, "LeaseIdMismatchWithLeaseOperation");
    assert.match(res.headers["content-type"], /^application\/xml/);
    assert.match(res.body, /^(<\?xml[^>]*\?>)?\s*<Error>\s*<Code>LeaseIdMismatchWithLeaseOperation<\/Code>\s*<Message>[\s\S]+<\/Message>[\s\S]*<\/Error>\s*$/);
    assert.equal(Number(res.headers["content-length"]), Buffer.byteLength(res.body));
    assert.ok(res.headers["x-ms-request-id"]);
    // The message names the request, as Azure's do.
    assert.ok(parseErrorXml(res.body).message.includes(res.headers["x-ms-request-id"]),
      "Message carries the RequestId");
  });
});

describe("error body escaping", () => {
  test("a hostile header value comes back XML-escaped in <HeaderValue>", async () => {
    const blob = await newBlob(container);
    const evil = "]]></HeaderValue><Code>Evil</Code>&<\"'";
    const res = await lease(blob, { "x-ms-lease-action": "acquire", "x-ms-lease-duration": evil });
    const err = expectRawError(res, 400, "InvalidHeaderValue");
    assert.equal((res.body.match(/<Code>/g) ?? []).length, 1, `one <Code> element: ${res.body}`);
    const unescaped = err.headerValue
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&amp;/g, "&");
    assert.equal(unescaped, evil);
  });
});

describe("GUID spellings of a lease id", () => {
  const canonical = "1f812371-a41d-49e6-b123-f4b542e851c5";
  const spellings = [
    "1F812371A41D49E6B123F4B542E851C5",
    "1f812371a41d49e6b123f4b542e851c5",
    "{1f812371-a41d-49e6-b123-f4b542e851c5}",
    "(1F812371-A41D-49E6-B123-F4B542E851C5)",
    "1F812371-A41D-49E6-B123-F4B542E851C5",
    "{1F812371-A41D-49E6-B123-F4B542E851C5}",
  ];

  test("acquired in canonical form, renewed by every spelling; answers are canonical", async () => {
    const blob = await newBlob(container, "guid");
    const acq = await lease(blob, {
      "x-ms-lease-action": "acquire",
      "x-ms-lease-duration": "-1",
      "x-ms-proposed-lease-id": canonical,
    });
    expectRawOk(acq, 201);
    assert.equal(acq.headers["x-ms-lease-id"], canonical);
    for (const s of spellings) {
      const res = await lease(blob, { "x-ms-lease-action": "renew", "x-ms-lease-id": s });
      expectRawOk(res, 200, `renew with ${s}`);
      assert.equal(res.headers["x-ms-lease-id"], canonical, `renew with ${s} answers canonical`);
    }
  });

  for (const s of spellings) {
    test(`release by ${s}`, async () => {
      const blob = await newBlob(container, "guid");
      expectRawOk(
        await lease(blob, {
          "x-ms-lease-action": "acquire",
          "x-ms-lease-duration": "60",
          "x-ms-proposed-lease-id": canonical,
        }),
        201,
      );
      const res = await lease(blob, { "x-ms-lease-action": "release", "x-ms-lease-id": s });
      expectRawOk(res, 200, `release with ${s}`);
      assert.equal((await leaseInfo(blob)).state, "available");
    });
  }

  test("proposed in a non-canonical spelling -> answered and stored canonical", async () => {
    const blob = await newBlob(container, "guid");
    const acq = await lease(blob, {
      "x-ms-lease-action": "acquire",
      "x-ms-lease-duration": "-1",
      "x-ms-proposed-lease-id": "{1F812371-A41D-49E6-B123-F4B542E851C5}",
    });
    expectRawOk(acq, 201);
    assert.equal(acq.headers["x-ms-lease-id"], canonical);
    // The SDK (canonical id) renews it.
    const r = await blob.getBlobLeaseClient(canonical).renewLease();
    assert.equal(r._response.status, 200);
  });

  test("change to a non-canonical spelling; the new id answers canonical", async () => {
    const blob = await newBlob(container, "guid");
    const a = randomUUID();
    expectRawOk(
      await lease(blob, { "x-ms-lease-action": "acquire", "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": a }),
      201,
    );
    const res = await lease(blob, {
      "x-ms-lease-action": "change",
      "x-ms-lease-id": a.toUpperCase().replace(/-/g, ""),
      "x-ms-proposed-lease-id": "(1F812371-A41D-49E6-B123-F4B542E851C5)",
    });
    expectRawOk(res, 200, "change");
    assert.equal(res.headers["x-ms-lease-id"], canonical);
  });

  test("a write with the lease id in another spelling is accepted", async () => {
    const blob = await newBlob(container, "guid");
    expectRawOk(
      await lease(blob, {
        "x-ms-lease-action": "acquire",
        "x-ms-lease-duration": "-1",
        "x-ms-proposed-lease-id": canonical,
      }),
      201,
    );
    const put = await rawRequest(server, {
      method: "PUT",
      path: rawPathOf(blob),
      headers: { "x-ms-blob-type": "BlockBlob", "x-ms-lease-id": "1F812371A41D49E6B123F4B542E851C5" },
      body: "written",
    });
    expectRawOk(put, 201, "Put Blob with N-format lease id");
  });
});
