// Reads and writes by lease state (available, leased, breaking, broken) and by the lease id sent:
// the table in access-table.mjs. The expired column is checked in lease-expiry.test.mjs.

import { after, before, describe, test } from "node:test";

import { openServer } from "./server.mjs";
import { blobInState, uniqueName } from "./helpers.mjs";
import { READS, WRITES, checkRead, checkWrite } from "./access-table.mjs";

let server;
let container;

before(async () => ({ server, container } = await openServer("access")));
after(() => server?.stop());

const STATES = ["available", "leased", "breaking", "broken"];
const ID_KINDS = ["A", "B", "none"];

describe("writes", { concurrency: 4 }, () => {
  for (const state of STATES) {
    for (const op of Object.keys(WRITES)) {
      for (const idKind of ID_KINDS) {
        test(`${op} with lease id ${idKind} on ${state}`, async () => {
          const { blob, leaseId } = await blobInState(container, state);
          await checkWrite(state, op, idKind, blob, leaseId);
        });
      }
    }
  }
});

describe("reads", { concurrency: 4 }, () => {
  for (const state of STATES) {
    for (const op of Object.keys(READS)) {
      for (const idKind of ID_KINDS) {
        test(`${op} with lease id ${idKind} on ${state}`, async () => {
          const { blob, leaseId } = await blobInState(container, state);
          await checkRead(state, op, idKind, blob, leaseId);
        });
      }
    }
  }
});

describe("a lease on one blob does not affect another", () => {
  test("writes to a neighbour of a leased blob need no lease id", async () => {
    const { blob: leased } = await blobInState(container, "leased");
    const { blob: free } = await blobInState(container, "available");
    await checkWrite("available", "upload", "none", free, undefined);
    await checkRead("leased", "getProperties", "none", leased, undefined);
  });
});
