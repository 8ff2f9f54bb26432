// Load generator for Azure Blob leases, for Leasehold's blob adapter and Azurite alike: each client
// acquires and releases a lease on its own blob in a closed loop (one acquire+release = one cycle),
// over keep-alive connections with SharedKey-signed requests. Optionally first puts N more blobs
// under infinite leases, to see whether cycles slow down as leased blobs accumulate.
//
// usage: node scripts/blob_bench.mjs --url http://127.0.0.1:10000/devstoreaccount1
//          [--clients 1] [--duration 10] [--leased 0] [--container bench] [--blob-bytes 1]
// Prints one JSON line: {"clients", "leased", "cycles", "cycles_per_s", "p50_ms", "p99_ms", "errors"}.
import crypto from "node:crypto";
import http from "node:http";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
const base = new URL(args.url ?? "http://127.0.0.1:10000/devstoreaccount1");
const clients = Number(args.clients ?? 1);
const duration = Number(args.duration ?? 10);
const leased = Number(args.leased ?? 0);
const container = args.container ?? `bench${Date.now()}`;
const blobBody = "x".repeat(Number(args["blob-bytes"] ?? 1));  // the size of each client's own blob
const key = Buffer.from("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==", "base64");
const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(clients, 64) });

function request(method, path, query, headers = {}, body = "") {
  const h = { "x-ms-date": new Date().toUTCString(), "x-ms-version": "2021-08-06", ...headers };
  const length = Buffer.byteLength(body);
  const std = ["Content-Encoding", "Content-Language", length ? String(length) : "", "Content-MD5", "Content-Type",
               "Date", "If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"];
  const standard = std.map((name, i) => (i === 2 ? name : h[name] ?? ""));
  const ms = Object.keys(h).filter((k) => k.startsWith("x-ms-")).sort().map((k) => `${k}:${h[k]}\n`).join("");
  const fullPath = base.pathname.replace(/\/$/, "") + path;
  const params = Object.keys(query).sort().map((k) => `\n${k}:${query[k]}`).join("");
  const toSign = `${method}\n${standard.join("\n")}\n${ms}/devstoreaccount1${fullPath}${params}`;
  h.Authorization = `SharedKey devstoreaccount1:${crypto.createHmac("sha256", key).update(toSign, "utf8").digest("base64")}`;
  h["Content-Length"] = String(length);
  const qs = new URLSearchParams(query).toString();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, method, path: fullPath + (qs ? `?${qs}` : ""), headers: h, agent },
      (res) => { res.resume(); res.on("end", () => resolve(res.statusCode)); });
    req.on("error", reject);
    req.end(body);
  });
}

const lease = (blob, action, extra) => request("PUT", `/${container}/${blob}`, { comp: "lease" }, { "x-ms-lease-action": action, ...extra });

async function pool(n, concurrency, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => { while (next < n) await fn(next++); }));
}

const created = await request("PUT", `/${container}`, { restype: "container" });
if (created !== 201 && created !== 409) throw new Error(`create container: ${created}`);
await pool(clients, 64, async (i) => { if (await request("PUT", `/${container}/c${i}`, {}, { "x-ms-blob-type": "BlockBlob" }, blobBody) !== 201) throw new Error("put"); });
const setupStart = Date.now();
await pool(leased, 64, async (i) => {
  if (await request("PUT", `/${container}/held${i}`, {}, { "x-ms-blob-type": "BlockBlob" }, "x") !== 201) throw new Error("put held");
  if (await lease(`held${i}`, "acquire", { "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": crypto.randomUUID() }) !== 201) throw new Error("lease held");
});
const setupSeconds = (Date.now() - setupStart) / 1000;

const latencies = [];
let errors = 0;
const end = Date.now() + duration * 1000;
await Promise.all(Array.from({ length: clients }, async (_, i) => {
  const id = crypto.randomUUID();
  while (Date.now() < end) {
    const t0 = process.hrtime.bigint();
    const a = await lease(`c${i}`, "acquire", { "x-ms-lease-duration": "15", "x-ms-proposed-lease-id": id });
    const r = await lease(`c${i}`, "release", { "x-ms-lease-id": id });
    if (a !== 201 || r !== 200) { errors++; continue; }
    latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
}));
latencies.sort((a, b) => a - b);
const q = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] : 0);
console.log(JSON.stringify({ clients, leased, setup_s: setupSeconds, cycles: latencies.length,
  cycles_per_s: Math.round(latencies.length / duration), p50_ms: +q(0.5).toFixed(2), p99_ms: +q(0.99).toFixed(2), errors }));
agent.destroy();
