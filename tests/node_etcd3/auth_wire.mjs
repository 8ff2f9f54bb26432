// etcd's auth checks as raw gRPC sees them, printed as JSON: what a watch refused for want of
// permission, for an invalid token or for no token answers (its watch id and cancel reason, and
// the id the next watch on the stream gets), and what a call carrying a token gets while auth is
// disabled (etcd knows no token then, so a stale one is refused rather than ignored).
// tests/e2e/node_etcd3_e2e.sh runs it against a fresh etcd 3.4 and a fresh Leasehold and compares.
// usage: node auth_wire.mjs host:port
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import loader from '@grpc/proto-loader';

const protoRoot = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../proto');
const definition = loader.loadSync(path.join(protoRoot, 'etcdserverpb/rpc.proto'), {
  includeDirs: [protoRoot], keepCase: true, longs: String, enums: String, defaults: true,
});
const pb = grpc.loadPackageDefinition(definition).etcdserverpb;
const address = process.argv[2];
const insecure = grpc.credentials.createInsecure();
const services = {
  auth: new pb.Auth(address, insecure), kv: new pb.KV(address, insecure), lease: new pb.Lease(address, insecure),
  cluster: new pb.Cluster(address, insecure), maintenance: new pb.Maintenance(address, insecure),
  watch: new pb.Watch(address, insecure),
};
const results = {};
const bytes = (s) => Buffer.from(s);
const withToken = (token) => {
  const md = new grpc.Metadata();
  if (token !== undefined) md.add('token', token);
  return md;
};
const call = (service, method, request, token) => new Promise((resolve, reject) => {
  services[service][method](request, withToken(token), { deadline: Date.now() + 5000 },
    (err, response) => (err ? reject(err) : resolve(response)));
});

async function check(name, fn) {
  try {
    results[name] = await fn();
  } catch (err) {
    results[name] = `error: code ${err.code} ${err.details}`;
  }
}
// Opens a watch stream, sends `requests`, and returns what came back within 700 ms.
function watchAnswers(token, requests) {
  return new Promise((resolve) => {
    const stream = services.watch.watch(withToken(token));
    const answers = [];
    stream.on('data', (r) => answers.push({ watch_id: r.watch_id, created: r.created, canceled: r.canceled, cancel_reason: r.cancel_reason }));
    stream.on('error', () => {});
    for (const r of requests) stream.write(r);
    setTimeout(() => { stream.cancel(); resolve(answers); }, 700);
  });
}
const ok = () => 'ok';

await check('put with a made-up token, auth never enabled', () => call('kv', 'put', { key: bytes('k'), value: bytes('v') }, 'made-up').then(ok));
await check('set up: users, a role on [f, g), auth enabled', async () => {
  await call('auth', 'userAdd', { name: 'root', password: 'rootpw' });
  await call('auth', 'userGrantRole', { user: 'root', role: 'root' });
  await call('auth', 'userAdd', { name: 'carol', password: 'carolpw' });
  await call('auth', 'roleAdd', { name: 'f-keys' });
  await call('auth', 'roleGrantPermission', { name: 'f-keys', perm: { permType: 'READWRITE', key: bytes('f'), range_end: bytes('g') } });
  await call('auth', 'userGrantRole', { user: 'carol', role: 'f-keys' });
  await call('auth', 'authEnable', {});
  return 'ok';
});
const carol = (await call('auth', 'authenticate', { name: 'carol', password: 'carolpw' })).token;
const root = (await call('auth', 'authenticate', { name: 'root', password: 'rootpw' })).token;
await check('watch a key outside the role, then one inside, on one stream', () =>
  watchAnswers(carol, [{ create_request: { key: bytes('outside') } }, { create_request: { key: bytes('foo') } }]));
await check('watch with an invalid token', () => watchAnswers('made-up', [{ create_request: { key: bytes('foo') } }]));
await check('watch with no token', () => watchAnswers(undefined, [{ create_request: { key: bytes('foo') } }]));
await check('range with no token', () => call('kv', 'range', { key: bytes('foo') }).then(ok));
await check('range with an invalid token', () => call('kv', 'range', { key: bytes('foo') }, 'made-up').then(ok));
await check('auth disabled by root', () => call('auth', 'authDisable', {}, root).then(ok));
await check('put with a token issued before auth was disabled', () => call('kv', 'put', { key: bytes('foo'), value: bytes('x') }, carol).then(ok));
await check('range with that token', () => call('kv', 'range', { key: bytes('foo') }, carol).then(ok));
await check('txn with that token', () => call('kv', 'txn', { success: [{ request_put: { key: bytes('foo'), value: bytes('y') } }] }, carol).then(ok));
await check('lease grant with that token', () => call('lease', 'leaseGrant', { TTL: 30 }, carol).then(ok));
await check('watch with that token', () => watchAnswers(carol, [{ create_request: { key: bytes('foo') } }]));
await check('member list with that token', () => call('cluster', 'memberList', {}, carol).then(ok));
await check('status with that token', () => call('maintenance', 'status', {}, carol).then(ok));
await check('put with no token', () => call('kv', 'put', { key: bytes('foo'), value: bytes('z') }).then(ok));
await check('authenticate while auth is disabled', () => call('auth', 'authenticate', { name: 'carol', password: 'carolpw' }).then(ok));
console.log(JSON.stringify(results, null, 1));
process.exit(0);
