// Assertions and small utilities shared by the *.test.mjs files.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";

import { encodePath, parseErrorXml, uniqueName } from "./server.mjs";

export { sleep, randomUUID, uniqueName };

// Awaits an SDK call that must fail with `status` and Azure error code `code` (x-ms-error-code).
export async function expectRestError(promise, status, code, what = "") {
  let result;
  try {
    result = await promise;
  } catch (e) {
    const got = { status: e.statusCode, code: e.details?.errorCode ?? e.code };
    assert.deepEqual(
      got,
      { status, code },
      `${what}: expected ${status} ${code}, got ${got.status} ${got.code} (${e.message?.split("\n")[0]})`,
    );
    if (e.response?.headers?.get) {
      assert.equal(e.response.headers.get("x-ms-error-code"), code, `${what}: x-ms-error-code header`);
    }
    return e;
  }
  assert.fail(
    `${what}: expected ${status} ${code}, but the call succeeded (status ${result?._response?.status})`,
  );
}

// Awaits an SDK call that must fail with status `status` (for 304 and other body-less answers).
export async function expectStatus(promise, status, what = "") {
  try {
    const r = await promise;
    assert.fail(`${what}: expected ${status}, got success ${r?._response?.status}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    assert.equal(e.statusCode, status, `${what}: ${e.message?.split("\n")[0]}`);
    return e;
  }
}

// Checks a rawRequest answer: status, x-ms-error-code and (when a body is expected) the XML body.
export function expectRawError(res, status, code, what = "") {
  const desc = `${what}: ${res.status} ${res.headers["x-ms-error-code"] ?? ""} ${res.body}`;
  assert.equal(res.status, status, desc);
  assert.equal(res.headers["x-ms-error-code"], code, desc);
  assert.ok(res.headers["x-ms-request-id"], `${what}: x-ms-request-id on an error answer`);
  if (res.body.length > 0) {
    const err = parseErrorXml(res.body);
    assert.ok(err.isError, `${what}: error body is not <Error>: ${res.body}`);
    assert.equal(err.code, code, desc);
    assert.match(res.headers["content-type"] ?? "", /^application\/xml/, `${what}: content-type`);
  }
  return parseErrorXml(res.body);
}

export function expectRawOk(res, status, what = "") {
  assert.equal(
    res.status,
    status,
    `${what}: expected ${status}, got ${res.status} ${res.headers["x-ms-error-code"] ?? ""} ${res.body}`,
  );
  assert.ok(res.headers["x-ms-request-id"], `${what}: x-ms-request-id`);
  return res;
}

// A fresh blob with some content, in `container` (a ContainerClient).
export async function newBlob(container, prefix = "b", content = "hello") {
  const blob = container.getBlockBlobClient(`${prefix}-${randomUUID()}`);
  await blob.upload(content, Buffer.byteLength(content));
  return blob;
}

// lease state triple from getProperties.
export async function leaseInfo(blobOrContainer) {
  const p = await blobOrContainer.getProperties();
  return { state: p.leaseState, status: p.leaseStatus, duration: p.leaseDuration };
}

// A fresh blob in lease state `state` ("available", "leased", "breaking", "broken"), with lease id
// A (for "available" a GUID never used on it). "leased" uses `duration` (default infinite);
// "breaking" is an infinite lease broken with a 60 s break period, so it stays breaking for the
// rest of any test that does not wait.
export async function blobInState(container, state, { duration = -1, prefix = state } = {}) {
  const blob = await newBlob(container, prefix);
  const leaseId = randomUUID();
  const lease = blob.getBlobLeaseClient(leaseId);
  if (state !== "available") await lease.acquireLease(state === "leased" ? duration : -1);
  if (state === "breaking") await lease.breakLease(60);
  if (state === "broken") await lease.breakLease(0);
  const info = await leaseInfo(blob);
  if (info.state !== state) {
    throw new Error(`setting up a ${state} blob gave ${JSON.stringify(info)}`);
  }
  return { blob, leaseId, lease };
}

// Same for a container.
export async function containerInState(svc, state, { duration = -1 } = {}) {
  const container = svc.getContainerClient(uniqueName(`c${state.slice(0, 3)}`));
  await container.create();
  const leaseId = randomUUID();
  const lease = container.getBlobLeaseClient(leaseId);
  if (state !== "available") await lease.acquireLease(state === "leased" ? duration : -1);
  if (state === "breaking") await lease.breakLease(60);
  if (state === "broken") await lease.breakLease(0);
  const info = await leaseInfo(container);
  if (info.state !== state) {
    throw new Error(`setting up a ${state} container gave ${JSON.stringify(info)}`);
  }
  return { container, leaseId, lease };
}

// rawRequest path of a BlobClient / ContainerClient.
export function rawPathOf(client) {
  return client.name === undefined || client.containerName === undefined
    ? `/${client.containerName}`
    : `/${client.containerName}/${encodePath(client.name)}`;
}

// The canonical (lower-case, hyphenated) form of a GUID.
export const GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
