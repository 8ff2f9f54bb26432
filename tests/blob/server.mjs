// Test harness for the Azure Blob lease REST adapter: starts a private single-member leasehold
// process per test file, and offers two ways to talk to it — the official @azure/storage-blob SDK
// (serviceClient) and hand-signed raw HTTP requests (rawRequest) for the cases the SDK cannot
// express (missing/invalid headers, bad signatures, the x-leasehold-* extension headers).

import { spawn } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";

export const ACCOUNT = "devstoreaccount1";
export const ACCOUNT_KEY =
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
// The x-ms-version rawRequest sends unless told otherwise.
export const RAW_VERSION = "2021-08-06";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_BINARY = path.resolve(HERE, "../../build/server/leasehold");

// A port nobody listens on right now. The three ports of one server are held open together so they
// are distinct; a race with another process grabbing one afterwards is handled by retrying start.
async function reservePorts(count) {
  const servers = [];
  try {
    for (let i = 0; i < count; i++) {
      const srv = net.createServer();
      await new Promise((resolve, reject) => {
        srv.once("error", reject);
        srv.listen(0, "127.0.0.1", resolve);
      });
      servers.push(srv);
    }
    return servers.map((s) => s.address().port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

function canConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
    sock.setTimeout(1000, () => done(false));
  });
}

// Servers still running when the test process exits (a crash, a cancelled run) are killed with it.
const running = new Set();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

async function startOnce(binary) {
  const [clientPort, peerPort, blobPort] = await reservePorts(3);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "leasehold-blob-"));
  const args = [
    "--listen-client-urls", `http://127.0.0.1:${clientPort}`,
    "--listen-peer-urls", `http://127.0.0.1:${peerPort}`,
    "--initial-advertise-peer-urls", `http://127.0.0.1:${peerPort}`,
    "--listen-blob-urls", `http://127.0.0.1:${blobPort}`,
    "--data-dir", dataDir,
    "--log-level", "warn",
  ];
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let log = "";
  const keep = (chunk) => {
    log += chunk.toString();
    if (log.length > 64 * 1024) log = log.slice(-64 * 1024);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  let exited = null;
  const exitPromise = new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      running.delete(child);
      exited = { code, signal };
      resolve(exited);
    });
    child.once("error", (err) => {
      running.delete(child);
      exited = { code: null, signal: null, error: err };
      resolve(exited);
    });
  });

  const server = {
    blobUrl: `http://127.0.0.1:${blobPort}/${ACCOUNT}`,
    host: "127.0.0.1",
    port: blobPort,
    clientPort,
    peerPort,
    dataDir,
    pid: child.pid,
    log: () => log,
    async stop() {
      if (!exited) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => {
          if (!exited) child.kill("SIGKILL");
        }, 10_000);
        await exitPromise;
        clearTimeout(timer);
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };

  const deadline = Date.now() + 30_000;
  let last = "";
  while (Date.now() < deadline) {
    if (exited) {
      await rm(dataDir, { recursive: true, force: true });
      const err = new Error(
        `leasehold exited during start (${JSON.stringify(exited)}):\n${log}`,
      );
      err.exitedEarly = true;
      throw err;
    }
    if (await canConnect(blobPort)) {
      try {
        const res = await rawRequest(server, { method: "GET", path: "", query: { comp: "list" } });
        if (res.status === 200) return server;
        last = `list containers answered ${res.status}: ${res.body}`;
      } catch (e) {
        last = String(e);
      }
    }
    await sleep(100);
  }
  await server.stop();
  throw new Error(`leasehold did not become ready within 30 s (last: ${last}):\n${log}`);
}

// Starts a fresh leasehold (its own ports and data dir). Resolves once a signed List Containers
// succeeds, i.e. the member has elected itself and serves the blob adapter.
export async function startServer() {
  const binary = process.env.LEASEHOLD_BINARY
    ? path.resolve(process.env.LEASEHOLD_BINARY)
    : DEFAULT_BINARY;
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(binary);
    } catch (e) {
      lastError = e;
      if (!e.exitedEarly) throw e; // e.g. a port taken between reservation and bind: retry
    }
  }
  throw lastError;
}

// What a test file starts from: a server of its own, the SDK client for it and, given a prefix, a
// fresh container. The caller stops the server (`server.stop()`) in its `after` hook.
export async function openServer(containerPrefix) {
  const server = await startServer();
  const svc = serviceClient(server);
  let container;
  if (containerPrefix) {
    container = svc.getContainerClient(uniqueName(containerPrefix));
    await container.create();
  }
  return { server, svc, container };
}

// The SDK client for a server. Retries are off, so an answer is seen exactly as the server gave it.
export function serviceClient(server, options = {}) {
  const credential = new StorageSharedKeyCredential(ACCOUNT, ACCOUNT_KEY);
  return new BlobServiceClient(server.blobUrl, credential, {
    retryOptions: { maxTries: 1 },
    ...options,
  });
}

// Percent-encodes a blob or container name for a URL path, keeping "/" as a separator.
export function encodePath(name) {
  return name
    .split("/")
    .map((part) => encodeURIComponent(part))
    .join("/");
}

const SIGNED_STANDARD_HEADERS = [
  "content-encoding",
  "content-language",
  "content-length",
  "content-md5",
  "content-type",
  "date",
  "if-modified-since",
  "if-match",
  "if-none-match",
  "if-unmodified-since",
  "range",
];

// SharedKey string-to-sign for a path-style (emulator) URL. `headers` has lower-case names;
// `rawPath` is the URL path as sent, starting with /devstoreaccount1; `query` maps names to values.
export function stringToSign(method, headers, rawPath, query) {
  let s = `${method.toUpperCase()}\n`;
  for (const name of SIGNED_STANDARD_HEADERS) {
    let value = headers[name] ?? "";
    if (name === "content-length" && String(value) === "0") value = "";
    s += `${value}\n`;
  }
  const msHeaders = Object.keys(headers)
    .filter((n) => n.startsWith("x-ms-") && headers[n] !== undefined && headers[n] !== null)
    .sort();
  for (const n of msHeaders) s += `${n}:${String(headers[n]).trim()}\n`;
  s += `/${ACCOUNT}${rawPath}`;
  const names = Object.keys(query).map((n) => n.toLowerCase());
  const lowered = {};
  for (const [n, v] of Object.entries(query)) lowered[n.toLowerCase()] = v;
  for (const n of [...new Set(names)].sort()) s += `\n${n}:${lowered[n]}`;
  return s;
}

export function sign(stringToSignValue, key = ACCOUNT_KEY) {
  return createHmac("sha256", Buffer.from(key, "base64"))
    .update(stringToSignValue, "utf8")
    .digest("base64");
}

// A hand-signed request.
//   method   HTTP verb
//   path     path below the account, already percent-encoded ("/container/blob"; "" for the account)
//   query    { name: value } (values are encoded here; use null to leave a parameter out)
//   headers  extra headers; a value of null removes a default header (x-ms-date, x-ms-version)
//   body     string or Buffer
//   auth     undefined: sign properly; false: send no Authorization; a string: send it verbatim
//   key      base64 key to sign with (a wrong key gives a wrong signature)
//   tamper   function(stringToSign) -> string, to sign something else than the server will compute
// Resolves to { status, headers (lower-case names), body (utf-8 string), rawBody (Buffer) }.
export function rawRequest(server, opts = {}) {
  const { method, target, headers, body } = buildRequest(opts);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: server.host ?? "127.0.0.1", port: server.port, method, path: target, headers, agent: false },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const rawBody = Buffer.concat(chunks);
          resolve({ status: res.statusCode, headers: res.headers, body: rawBody.toString("utf8"), rawBody });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    if (body) req.end(body);
    else req.end();
  });
}

// The same request written on a plain socket, for answers a server gives before it has read the
// whole body (and then closes). The body follows the head after opts.bodyDelayMs (default 0), and
// only if no answer has arrived by then; write errors are ignored and whatever arrived is parsed.
// Resolves to { status, headers, body, writeError, bodySent } or rejects when no answer came.
export function rawSocketRequest(server, opts = {}) {
  const { method, target, headers, body } = buildRequest(opts);
  let head = `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nConnection: close\r\n`;
  for (const [n, v] of Object.entries(headers)) head += `${n}: ${v}\r\n`;
  head += "\r\n";
  return new Promise((resolve, reject) => {
    const chunks = [];
    let writeError = null;
    let bodySent = false;
    const sock = net.connect({ host: server.host ?? "127.0.0.1", port: server.port }, () => {
      sock.write(head);
      if (!body) return;
      const sendBody = () => {
        if (chunks.length > 0 || sock.destroyed) return;
        bodySent = true;
        sock.write(body);
      };
      if (opts.bodyDelayMs) setTimeout(sendBody, opts.bodyDelayMs);
      else sendBody();
    });
    sock.on("data", (c) => chunks.push(c));
    sock.on("error", (e) => {
      writeError = e;
    });
    sock.on("close", () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf("\r\n\r\n");
      if (split < 0) {
        reject(Object.assign(new Error(`no HTTP answer (${writeError?.code ?? "closed"})`), { writeError }));
        return;
      }
      const lines = all.subarray(0, split).toString("latin1").split("\r\n");
      const status = Number(lines[0].split(" ")[1]);
      const resHeaders = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(":");
        resHeaders[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const rawBody = all.subarray(split + 4);
      resolve({ status, headers: resHeaders, body: rawBody.toString("utf8"), rawBody, writeError, bodySent });
    });
  });
}

function buildRequest(opts) {
  const method = (opts.method ?? "GET").toUpperCase();
  const rawPath = `/${ACCOUNT}${opts.path ?? ""}`;
  const query = {};
  for (const [n, v] of Object.entries(opts.query ?? {})) {
    if (v !== null && v !== undefined) query[n] = String(v);
  }
  const body =
    opts.body === undefined ? null : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(String(opts.body));

  const headers = {
    "x-ms-date": new Date().toUTCString(),
    "x-ms-version": RAW_VERSION,
  };
  if (body !== null || ["PUT", "POST", "DELETE"].includes(method)) {
    headers["content-length"] = String(body ? body.length : 0);
  }
  for (const [n, v] of Object.entries(opts.headers ?? {})) {
    const lower = n.toLowerCase();
    if (v === null || v === undefined) delete headers[lower];
    else headers[lower] = String(v);
  }

  if (opts.auth === undefined) {
    let sts = stringToSign(method, headers, rawPath, query);
    if (opts.tamper) sts = opts.tamper(sts);
    headers.authorization = `SharedKey ${ACCOUNT}:${sign(sts, opts.key ?? ACCOUNT_KEY)}`;
  } else if (opts.auth !== false) {
    headers.authorization = opts.auth;
  }

  const qs = Object.entries(query)
    .map(([n, v]) => `${encodeURIComponent(n)}=${encodeURIComponent(v)}`)
    .join("&");
  return { method, target: qs ? `${rawPath}?${qs}` : rawPath, headers, body };
}

// <Error><Code>..</Code><Message>..</Message>[<HeaderName>..</HeaderName>...]</Error> -> fields.
export function parseErrorXml(xml) {
  const pick = (tag) => {
    const m = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(xml);
    return m ? m[1] : undefined;
  };
  return {
    isError: /<Error>[\s\S]*<\/Error>/.test(xml),
    code: pick("Code"),
    message: pick("Message"),
    headerName: pick("HeaderName"),
    headerValue: pick("HeaderValue"),
  };
}

// A unique, valid container name.
export function uniqueName(prefix = "c") {
  return `${prefix}${randomUUID().replace(/-/g, "").slice(0, 20)}`.toLowerCase();
}
