// Hostile HTTP clients for `jitllm serve` (loopback only, each bounded in time and count): the
// building blocks of hostile.test.mjs, and a command line to measure one attack against any
// running server:
//   node attack.mjs --base http://127.0.0.1:PORT --attack slowloris|idle|range|bigprompt|messages|backlog
// prints one JSON line (what the server answered, /health latencies, sizes, times).
import net from 'node:net';
import { readFileSync } from 'node:fs';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One raw exchange: writes `data` (string or Buffer), collects what comes back until the server
// closes or `ms` pass. halfClose: end our side after writing (a number: that many ms after).
// Returns {data, closed, ms, firstMs}.
export function rawExchange(port, data, { ms = 3000, halfClose = false, untilBytes = Infinity } = {}) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const chunks = [];
    let got = 0, firstMs = null, done = false;
    const s = net.connect(port, '127.0.0.1');
    const finish = (closed) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ data: Buffer.concat(chunks), closed, ms: performance.now() - t0, firstMs });
    };
    const timer = setTimeout(() => finish(false), ms);
    s.on('connect', () => {
      s.write(data);
      if (halfClose === true) s.end();
      else if (halfClose) setTimeout(() => s.end(), halfClose);
    });
    s.on('data', (d) => {
      if (firstMs === null) firstMs = performance.now() - t0;
      chunks.push(d);
      got += d.length;
      if (got >= untilBytes) finish(false);
    });
    s.on('end', () => finish(true));
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
  });
}

// What follows the 1xx interim responses at the start of a byte stream (a server may send them
// to an HTTP/1.1 client unasked; clients must skip them).
export function withoutInterim(buf) {
  let b = buf;
  while (/^HTTP\/1\.1 1\d\d /.test(b.toString('latin1', 0, 13))) {
    const end = b.indexOf('\r\n\r\n');
    if (end < 0) break;
    b = b.subarray(end + 4);
  }
  return b;
}

// Status codes of the HTTP responses in a byte stream (chunked or Content-Length framed).
export function statusLines(buf) {
  return [...buf.toString('latin1').matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
}

// GET /health on a fresh connection; the latency in ms (Infinity when no answer within limitMs).
export async function healthMs(port, limitMs = 3000) {
  const r = await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
                              { ms: limitMs });
  const codes = statusLines(r.data);
  return codes.length && codes[0] === 200 ? r.ms : Infinity;
}

export async function probeHealth(port, n, everyMs, limitMs = 3000) {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(await healthMs(port, limitMs));
    await sleep(everyMs);
  }
  return out;
}

export function peakRssKiB(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmHWM:\s+(\d+) kB/);
  return m ? Number(m[1]) : NaN;
}

export function threads(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/Threads:\s+(\d+)/);
  return m ? Number(m[1]) : NaN;
}

// `n` connections that send a request head one line at a time, a line every `everyMs`, and
// never finish it. Returns {sockets, closedAt: ms after start at which each was closed or null}.
export function slowloris(port, n, everyMs) {
  const t0 = performance.now();
  const closedAt = new Array(n).fill(null);
  const sockets = [];
  let connected = 0;
  for (let i = 0; i < n; i++) {
    const s = net.connect(port, '127.0.0.1');
    let line = 0;
    const lines = ['GET /health HTTP/1.1\r\n', 'Host: 127.0.0.1\r\n'];
    const tick = () => {
      if (s.destroyed) return;
      s.write(lines[line] ?? `X-Trickle-${line}: ${'a'.repeat(8)}\r\n`);
      line++;
    };
    s.on('connect', () => { connected++; tick(); });
    const timer = setInterval(tick, everyMs);
    const closed = () => {
      clearInterval(timer);
      if (closedAt[i] === null) closedAt[i] = performance.now() - t0;
    };
    s.on('close', closed);
    s.on('error', closed);
    sockets.push(s);
  }
  return { sockets, closedAt, connected: () => connected, stop: () => sockets.forEach((s) => s.destroy()) };
}

// `n` connections that each complete one keep-alive request, then stay open doing nothing.
export async function idleKeepAlive(port, n) {
  const sockets = [];
  await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    sockets.push(s);
    let done = false;
    const ok = () => { if (!done) { done = true; resolve(); } };
    s.on('connect', () => s.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    s.on('data', ok);
    s.on('error', ok);
    s.on('close', ok);
    setTimeout(ok, 5000);
  })));
  return { sockets, open: () => sockets.filter((s) => !s.destroyed && s.readyState === 'open').length,
           stop: () => sockets.forEach((s) => s.destroy()) };
}

export function post(path, body, extra = '') {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
                                    `Content-Length: ${b.length}\r\n${extra}\r\n`), b]);
}

// `n` connects at once; the time each took to be answered by /health.
export async function connectBurst(port, n) {
  return Promise.all(Array.from({ length: n }, () => healthMs(port, 5000)));
}

// The p-quantile (0..1) of a list of numbers, null when it is empty.
export function percentile(a, p) {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

async function main() {
  const arg = (k, d) => { const i = process.argv.indexOf(`--${k}`); return i > 0 ? process.argv[i + 1] : d; };
  const base = arg('base');
  if (!base || !base.startsWith('http://127.0.0.1:')) throw new Error('--base must be a loopback URL');
  const port = Number(new URL(base).port);
  const pid = Number(arg('pid', 0));
  const attack = arg('attack');
  const out = { attack };
  if (attack === 'slowloris' || attack === 'idle') {
    const n = Number(arg('n', attack === 'slowloris' ? 200 : 500));
    const a = attack === 'slowloris' ? slowloris(port, n, Number(arg('every', 5000))) : await idleKeepAlive(port, n);
    // wait until every connection is up (a short listen backlog makes connects retry for seconds)
    for (let t = 0; a.connected && a.connected() < n && t < 150; t++) await sleep(100);
    if (a.connected) out.connected = a.connected();
    await sleep(500);
    const h = await probeHealth(port, Number(arg('probes', 10)), 1000, 20000);
    out.health_ms = h.map((x) => Math.round(x));
    out.health_max_ms = Math.round(Math.max(...h));
    if (a.closedAt) out.closed_by_server = a.closedAt.filter((x) => x !== null).length;
    a.stop();
  } else if (attack === 'range') {
    const ranges = Array.from({ length: Number(arg('n', 300)) }, () => '0-').join(',');
    const body = JSON.stringify({ prompt: 'x'.repeat(Number(arg('bytes', 500000))), max_tokens: 1 });
    const rss0 = pid ? peakRssKiB(pid) : NaN;
    const r = await rawExchange(port, post('/v1/completions', body, `Range: bytes=${ranges}\r\nConnection: close\r\n`),
                                { ms: 60000 });
    Object.assign(out, { status: statusLines(r.data)[0], response_bytes: r.data.length, ms: Math.round(r.ms),
                         peak_rss_growth_mib: pid ? (peakRssKiB(pid) - rss0) / 1024 : undefined });
  } else if (attack === 'bigprompt' || attack === 'messages') {
    const body = attack === 'bigprompt'
      ? JSON.stringify({ prompt: 'a '.repeat(4000000), max_tokens: 1 })
      : JSON.stringify({ messages: Array.from({ length: 200000 }, () => ({ role: 'user', content: 'a' })), max_tokens: 1 });
    const rss0 = pid ? peakRssKiB(pid) : NaN;
    const path = attack === 'bigprompt' ? '/v1/completions' : '/v1/chat/completions';
    const r = await rawExchange(port, post(path, body, 'Connection: close\r\n'), { ms: 60000, untilBytes: 12 });
    Object.assign(out, { body_bytes: body.length, status: statusLines(r.data)[0], first_byte_ms: Math.round(r.firstMs),
                         peak_rss_growth_mib: pid ? (peakRssKiB(pid) - rss0) / 1024 : undefined });
  } else if (attack === 'backlog') {
    const t = await connectBurst(port, Number(arg('n', 200)));
    Object.assign(out, { p50_ms: Math.round(percentile(t, 0.5)), max_ms: Math.round(Math.max(...t)),
                         over_1s: t.filter((x) => x > 1000).length });
  } else {
    throw new Error('--attack: expected slowloris, idle, range, bigprompt, messages or backlog');
  }
  console.log(JSON.stringify(out));
  process.exit(0);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
