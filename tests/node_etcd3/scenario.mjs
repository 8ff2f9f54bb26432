// One scenario through the etcd3 client for Node.js, printed as JSON. tests/e2e/node_etcd3_e2e.sh
// runs it against a fresh etcd 3.4 and a fresh Leasehold and compares the outputs: the same calls in
// the same order give the same revisions, values, events, leaders and errors. Lease ids and keys
// that contain them differ between servers by nature and are not printed.
// usage: node scenario.mjs host:port
import { Etcd3 } from 'etcd3';

const client = new Etcd3({ hosts: `http://${process.argv[2]}` });
const results = {};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const within = (ms, promise) =>
  Promise.race([promise, sleep(ms).then(() => { throw new Error(`no answer within ${ms} ms`); })]);

async function check(name, fn) {
  try {
    results[name] = await within(20000, fn());
  } catch (err) {
    results[name] = `error: ${err.constructor.name} ${err.message}`;
  }
}

// Collects a watcher's events until `count` have arrived (or a second passes), then cancels it.
async function collect(watcher, count, act) {
  const events = [];
  const errors = [];
  watcher.on('put', (kv, prev) => events.push(['put', kv.key.toString(), kv.value.toString(), prev ? prev.value.toString() : null]));
  watcher.on('delete', (kv, prev) => events.push(['delete', kv.key.toString(), prev ? prev.value.toString() : null]));
  watcher.on('error', (err) => errors.push(`${err.constructor.name} ${err.message}`));
  await act();
  for (let waited = 0; events.length < count && errors.length === 0 && waited < 5000; waited += 20) await sleep(20);
  await sleep(200);  // a stray event would arrive by now
  await watcher.cancel();
  return { events, errors };
}

await check('put, get, revision', async () => {
  const put = await client.put('/kv/a').value('1');
  return [put.header.revision, await client.get('/kv/a').string(), await client.get('/kv/missing').string()];
});
await check('prefix reads: sorted, limited, counted', async () => {
  for (const [k, v] of [['c', '3'], ['a', '1'], ['b', '2'], ['d', '4']]) await client.put(`/pre/${k}`).value(v);
  return [
    await client.getAll().prefix('/pre/').sort('Key', 'Descend').strings(),
    await client.getAll().prefix('/pre/').sort('Value', 'Ascend').limit(2).keys(),
    await client.getAll().prefix('/pre/').count(),
  ];
});
await check('delete a prefix', async () => (await client.delete().prefix('/pre/')).deleted);
await check('transactions', async () => {
  await client.put('/txn/k').value('v');
  const hit = await client.if('/txn/k', 'Value', '==', 'v').then(client.put('/txn/k').value('then')).else(client.put('/txn/k').value('else')).commit();
  const miss = await client.if('/txn/k', 'Version', '>', 5).then(client.delete().key('/txn/k')).commit();
  return [hit.succeeded, miss.succeeded, await client.get('/txn/k').string()];
});
await check('watch a prefix with previous values', async () => {
  const watcher = await client.watch().prefix('/w/').withPreviousKV().create();
  return collect(watcher, 4, async () => {
    await client.put('/w/1').value('a');
    await client.put('/w/1').value('b');
    await client.put('/elsewhere').value('x');
    await client.put('/w/2').value('c');
    await client.delete().key('/w/1');
  });
});
await check('watch from an earlier revision', async () => {
  const first = (await client.put('/h/k').value('0')).header.revision;
  await client.put('/h/k').value('1');
  const watcher = await client.watch().key('/h/k').startRevision(first).create();
  return collect(watcher, 2, async () => {});
});
await check('watch from a compacted revision', async () => {
  const current = (await client.put('/c/k').value('x')).header.revision;
  await client.kv.compact({ revision: current - 1, physical: true });
  const watcher = client.watch().key('/c/k').startRevision('1').create();
  const result = await watcher.then((w) => collect(w, 1, async () => {}), (err) => `${err.constructor.name} ${err.message}`);
  return result;
});
await check('leases: keys, keep-alive, revoke, expiry', async () => {
  const lease = client.lease(10, { autoKeepAlive: false });
  await lease.put('/lease/k').value('v');
  const out = [await client.get('/lease/k').string()];
  out.push((await lease.keepaliveOnce()).TTL);
  await lease.revoke();
  out.push(await client.get('/lease/k').string(), lease.revoked());
  const short = client.lease(1, { autoKeepAlive: false });
  await short.put('/lease/short').value('v');
  const id = await short.grant();
  const granted = await client.leaseClient.leaseTimeToLive({ ID: id, keys: true });
  out.push(granted.grantedTTL, granted.keys.map((k) => k.toString()));
  await sleep(4000);  // etcd's minimum TTL (2 s) and the expiry's bound
  out.push(await client.get('/lease/short').string());
  out.push((await client.leaseClient.leaseTimeToLive({ ID: id })).TTL);
  return out;
});
await check('put under a revoked lease', async () => {
  const lease = client.lease(10, { autoKeepAlive: false });
  const id = await lease.grant();
  await lease.revoke();
  await client.put('/lease/gone').value('v').lease(id);
  return 'accepted';
});
await check('locks', async () => {
  const first = await client.lock('/locks/l').ttl(5).acquire();
  const out = ['acquired'];
  try {
    await client.lock('/locks/l').ttl(5).acquire();
    out.push('second acquired while held');
  } catch (err) {
    out.push(`second: ${err.constructor.name}`);
  }
  await first.release();
  const again = await client.lock('/locks/l').ttl(5).acquire();
  out.push('acquired after release');
  await again.release();
  out.push(await client.getAll().prefix('/locks/').count());
  return out;
});
await check('elections', async () => {
  const election = client.election('/elect/e', 5);
  const first = election.campaign('alpha');
  await first.wait();
  const out = [await election.leader()];
  // Observed once there is a leader: with none, this client's observer takes the last put of the
  // first watch response as the leader, and etcd, whose catch-up loop sends the first two
  // campaigns' puts together, has it report the second campaigner ("beta") while "alpha" leads.
  const changes = [];
  const observer = await election.observe();
  observer.on('change', (value) => changes.push(value));
  out.push(observer.leader());
  const second = election.campaign('beta');
  let secondElected = false;
  second.on('elected', () => { secondElected = true; });
  await sleep(300);
  out.push(secondElected);
  await first.proclaim('alpha-2');
  out.push(await election.leader());
  await first.resign();
  await second.wait();
  out.push(secondElected, await election.leader());
  await sleep(300);
  out.push(changes);
  await observer.cancel();
  await second.resign();
  out.push(await election.leader());
  return out;
});
await check('errors etcd names', async () => {
  const out = [];
  for (const attempt of [
    () => client.put('/e/k').value('v').lease('123'),
    () => client.leaseClient.leaseRevoke({ ID: '123' }),
    () => client.kv.range({ key: Buffer.from('/e/k'), revision: '1' }),
    () => client.kv.compact({ revision: '100000' }),
  ]) {
    try {
      await attempt();
      out.push('ok');
    } catch (err) {
      out.push(`${err.constructor.name} ${err.message}`);
    }
  }
  return out;
});
client.close();
console.log(JSON.stringify(results, null, 1));
