// The seed scenario "acquire-or-poll": clients race for a 60 s lease on one blob; exactly one wins,
// the others get 409 LeaseAlreadyPresent and poll; the winner renews, and when it is disposed
// (releases) a poller gets the lease at once.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { openServer, serviceClient } from "./server.mjs";
import { expectRestError, leaseInfo, randomUUID, sleep, uniqueName } from "./helpers.mjs";

let server;
let containerName;

before(async () => {
  let container;
  ({ server, container } = await openServer("seed"));
  containerName = container.containerName;
});
after(() => server?.stop());

// One client process: its own SDK pipeline and lease id.
class Contender {
  constructor(blobName, name) {
    this.name = name;
    this.blob = serviceClient(server).getContainerClient(containerName).getBlockBlobClient(blobName);
    this.lease = this.blob.getBlobLeaseClient(randomUUID());
    this.held = false;
  }

  // 201 -> true; 409 LeaseAlreadyPresent -> false; anything else throws.
  async tryAcquire(duration = 60) {
    try {
      const r = await this.lease.acquireLease(duration);
      assert.equal(r._response.status, 201);
      assert.equal(r.leaseId, this.lease.leaseId);
      this.held = true;
      return true;
    } catch (e) {
      if (e.statusCode === 409 && e.details?.errorCode === "LeaseAlreadyPresent") return false;
      throw e;
    }
  }

  async acquireOrPoll({ intervalMs = 50, timeoutMs = 10_000 } = {}) {
    const deadline = Date.now() + timeoutMs;
    let polls = 0;
    while (!(await this.tryAcquire())) {
      polls++;
      if (Date.now() > deadline) throw new Error(`${this.name}: no lease after ${polls} polls`);
      await sleep(intervalMs);
    }
    return polls;
  }

  async renew() {
    const r = await this.lease.renewLease();
    assert.equal(r._response.status, 200);
  }

  async dispose() {
    if (!this.held) return;
    this.held = false;
    const r = await this.lease.releaseLease();
    assert.equal(r._response.status, 200);
  }
}

async function seedBlob(content = "0") {
  const name = `seed-${randomUUID()}`;
  await serviceClient(server)
    .getContainerClient(containerName)
    .getBlockBlobClient(name)
    .upload(content, content.length);
  return name;
}

describe("acquire-or-poll", () => {
  test("two clients race for a 60 s lease: exactly one 201, the other 409 LeaseAlreadyPresent", async () => {
    for (let round = 0; round < 20; round++) {
      const name = await seedBlob();
      const a = new Contender(name, "a");
      const b = new Contender(name, "b");
      const results = await Promise.allSettled([a.lease.acquireLease(60), b.lease.acquireLease(60)]);
      const won = results.filter((r) => r.status === "fulfilled");
      const lost = results.filter((r) => r.status === "rejected");
      assert.equal(won.length, 1, `round ${round}: exactly one winner`);
      assert.equal(won[0].value._response.status, 201);
      assert.equal(lost[0].reason.statusCode, 409, `round ${round}: ${lost[0].reason.message}`);
      assert.equal(lost[0].reason.details?.errorCode, "LeaseAlreadyPresent");
      const winner = results[0].status === "fulfilled" ? a : b;
      assert.equal(won[0].value.leaseId, winner.lease.leaseId);
    }
  });

  test("many clients race: exactly one wins", async () => {
    const name = await seedBlob();
    const contenders = Array.from({ length: 8 }, (_, i) => new Contender(name, `c${i}`));
    const wins = await Promise.all(contenders.map((c) => c.tryAcquire()));
    assert.equal(wins.filter(Boolean).length, 1, `winners: ${wins}`);
  });

  test("the winner renews; the loser cannot renew and keeps failing to acquire", async () => {
    const name = await seedBlob();
    const a = new Contender(name, "a");
    const b = new Contender(name, "b");
    assert.equal(await a.tryAcquire(), true);
    assert.equal(await b.tryAcquire(), false);
    await a.renew();
    await expectRestError(b.lease.renewLease(), 409, "LeaseIdMismatchWithLeaseOperation", "loser renews");
    assert.equal(await b.tryAcquire(), false, "still held");
    assert.deepEqual(await leaseInfo(a.blob), { state: "leased", status: "locked", duration: "fixed" });
    // Only the holder writes.
    await a.blob.upload("1", 1, { conditions: { leaseId: a.lease.leaseId } });
    await expectRestError(b.blob.upload("2", 1), 412, "LeaseIdMissing", "loser writes without id");
    await expectRestError(
      b.blob.upload("2", 1, { conditions: { leaseId: b.lease.leaseId } }),
      412,
      "LeaseIdMismatchWithBlobOperation",
      "loser writes with its id",
    );
    await a.dispose();
  });

  test("release on dispose lets the poller acquire immediately", async () => {
    const name = await seedBlob();
    const a = new Contender(name, "a");
    const b = new Contender(name, "b");
    assert.equal(await a.tryAcquire(), true);
    const intervalMs = 100;
    let releasedAt = 0;
    const polling = b.acquireOrPoll({ intervalMs, timeoutMs: 20_000 }).then((polls) => ({
      polls,
      at: Date.now(),
    }));
    await sleep(350); // b polls a few times and is refused
    await a.renew();
    releasedAt = Date.now();
    await a.dispose();
    const { polls, at } = await polling;
    assert.ok(polls >= 2, `b polled while a held the lease (${polls} polls)`);
    assert.ok(at - releasedAt < intervalMs + 500, `b got the lease ${at - releasedAt} ms after the release`);
    assert.equal(b.held, true);
    // Right after a release, a direct acquire also succeeds: no lingering lease.
    await b.dispose();
    assert.equal(await a.tryAcquire(), true);
    await a.dispose();
  });

  test("two acquire-or-poll workers take turns; the lease serialises their writes", async () => {
    const name = await seedBlob("0");
    const rounds = 5;
    const worker = async (label) => {
      const me = new Contender(name, label);
      for (let i = 0; i < rounds; i++) {
        await me.acquireOrPoll({ intervalMs: 20, timeoutMs: 20_000 });
        try {
          const leaseId = me.lease.leaseId;
          const current = Number((await me.blob.downloadToBuffer(0, undefined, { conditions: { leaseId } })).toString());
          await sleep(10); // widen the window a lost lease would expose
          const next = String(current + 1);
          await me.blob.upload(next, next.length, { conditions: { leaseId } });
          await me.renew();
        } finally {
          await me.dispose();
        }
        await sleep(5);
      }
    };
    await Promise.all([worker("w1"), worker("w2")]);
    const final = (await serviceClient(server).getContainerClient(containerName).getBlockBlobClient(name).downloadToBuffer()).toString();
    assert.equal(final, String(2 * rounds));
  });
});
