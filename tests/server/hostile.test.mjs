// `jitllm serve` against hostile clients (loopback only; every case bounded in time and count):
// slowloris and idle keep-alive floods while /health must answer within 100 ms, Range
// amplification, oversized prompts and message lists refused before any work, startup failures that
// must exit, a signal while the model loads, a second server on a bound port, HTTP/1.1 framing
// (multipart, pipelining, half-close, duplicate Content-Length), loose input (NUL bytes, foreign
// Host and Origin, text/plain bodies), seed -1, queued requests at shutdown, a 10^5 queue without
// threads.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, BIN, metric, waitFor } from './helpers.mjs';
import { rawExchange, statusLines, withoutInterim, healthMs, probeHealth, peakRssKiB, threads, slowloris, idleKeepAlive, post,
         connectBurst, sleep } from './attack.mjs';

const GET = (path, extra = '') => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;

function bodyOf(buf) {
  const s = buf.toString('latin1');
  return s.slice(s.indexOf('\r\n\r\n') + 4);
}

// The CI machine is shared: one probe in ten may lose the CPU for a moment, none may wait long
// (a starved server answers in seconds or not at all).
function assertFast(ms, limit, what) {
  const shown = `${what}: /health took ${ms.map(Math.round).join(', ')} ms`;
  assert.ok(ms.filter((x) => x < limit).length >= ms.length - 1, `${shown} (expected < ${limit})`);
  assert.ok(Math.max(...ms) < 10 * limit, `${shown} (expected none over ${10 * limit})`);
}

describe('slow and idle connections', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--ctx-size', '256', '--timeout', '3', '--keep-alive', '30']);
  });
  after(async () => assert.equal(await srv.stop(), 0, srv.log()));

  it('200 trickling connections: /health answers in < 100 ms, each is closed at its deadline', async () => {
    const a = slowloris(srv.port, 200, 500);
    for (let t = 0; a.connected() < 200 && t < 100; t++) await sleep(50);
    assert.equal(a.connected(), 200);
    const ms = await probeHealth(srv.port, 10, 100);
    assertFast(ms, 100, 'slowloris');
    await sleep(4000);  // --timeout 3: the whole request must have arrived by then
    const closed = a.closedAt.filter((x) => x !== null);
    a.stop();
    assert.equal(closed.length, 200, 'every trickling connection is closed by the server');
    assert.ok(Math.max(...closed) < 5000, `closed at ${Math.round(Math.max(...closed))} ms`);
  });

  it('500 idle keep-alive connections: /health answers in < 100 ms', async () => {
    const a = await idleKeepAlive(srv.port, 500);
    assert.equal(a.open(), 500);
    const ms = await probeHealth(srv.port, 10, 100);
    a.stop();
    assertFast(ms, 100, 'idle keep-alive');
  });

  it('200 connects at once on an idle server: each answered within 1 s (listen backlog)', async () => {
    const ms = await connectBurst(srv.port, 200);
    assert.ok(Math.max(...ms) < 1000, `slowest ${Math.round(Math.max(...ms))} ms`);
  });
});

describe('amplification and oversized input', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--ctx-size', '256']);
  });
  after(async () => assert.equal(await srv.stop(), 0, srv.log()));

  it('Range: bytes=0-,0-,... does not multiply a response (POST or GET)', async () => {
    const ranges = `Range: bytes=${Array(300).fill('0-').join(',')}\r\n`;
    const rss0 = peakRssKiB(srv.proc.pid);
    const a = await rawExchange(srv.port, post('/v1/completions', JSON.stringify({ prompt: 'x'.repeat(20000), max_tokens: 1 }),
                                               ranges + 'Connection: close\r\n'), { ms: 10000 });
    assert.deepEqual(statusLines(a.data), [400]);  // exceeds the context: one plain answer
    assert.ok(a.data.length < 4096, `${a.data.length} bytes`);
    const b = await rawExchange(srv.port, GET('/v1/models', ranges + 'Connection: close\r\n'), { ms: 5000 });
    assert.deepEqual(statusLines(b.data), [200]);
    assert.ok(b.data.length < 4096, `${b.data.length} bytes`);
    assert.ok(peakRssKiB(srv.proc.pid) - rss0 < 16 << 10);
  });

  for (const [what, path, body] of [
    ['an 8 MB prompt', '/v1/completions', () => JSON.stringify({ prompt: 'a '.repeat(4e6), max_tokens: 1 })],
    ['200 k messages', '/v1/chat/completions',
     () => JSON.stringify({ messages: Array.from({ length: 2e5 }, () => ({ role: 'user', content: 'a' })) })],
  ]) {
    it(`${what}: refused in < 50 ms, peak RSS growth < 64 MB`, async () => {
      const req = post(path, body(), 'Connection: close\r\n');
      const rss0 = peakRssKiB(srv.proc.pid);
      const ms = [];
      for (let i = 0; i < 3; i++) {  // the best of three: the client's own 8 MB write shares the CPU
        const r = await rawExchange(srv.port, req, { ms: 10000, untilBytes: 12 });
        assert.deepEqual(statusLines(r.data), [413]);
        ms.push(r.firstMs);
      }
      assert.ok(Math.min(...ms) < 50 && Math.max(...ms) < 500, `answered after ${ms.map(Math.round).join(', ')} ms`);
      await sleep(200);
      assert.ok(peakRssKiB(srv.proc.pid) - rss0 < 64 << 10, `peak RSS +${(peakRssKiB(srv.proc.pid) - rss0) >> 10} MiB`);
    });
  }

  it('a prompt within the body limit but longer than the context can hold: 400 before tokenizing', async () => {
    const meta = JSON.parse(bodyOf((await rawExchange(srv.port, GET('/v1/models/stories260K', 'Connection: close\r\n'))).data));
    assert.equal(meta.meta.n_ctx, 256);
    const r = await rawExchange(srv.port, post('/v1/completions', JSON.stringify({ prompt: 'abc '.repeat(6000) }),
                                               'Connection: close\r\n'), { ms: 10000 });
    assert.deepEqual(statusLines(r.data), [400]);
    assert.equal(JSON.parse(bodyOf(r.data)).error.type, 'exceed_context_size_error');
  });
});

describe('startup and port', () => {
  const exitOf = (args) => new Promise((resolve) => {
    const t0 = performance.now();
    const p = spawn(BIN, ['serve', '--host', '127.0.0.1', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    p.stderr.on('data', (d) => (log += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 5000);
    p.on('exit', (code, sig) => {
      clearTimeout(timer);
      resolve({ code, sig, ms: performance.now() - t0, log });
    });
  });

  it('a model that fails to load exits non-zero within 2 s, 20 of 20 runs', async () => {
    for (let i = 0; i < 20; i++) {
      const r = await exitOf(['--port', '0', ...(i % 2 ? ['-m', '/etc/passwd'] : ['-c', '3000'])]);
      assert.ok(r.code !== 0 && r.code !== null, `run ${i}: exit ${r.code} ${r.sig}\n${r.log}`);
      assert.ok(r.ms < 2000, `run ${i}: ${Math.round(r.ms)} ms`);
    }
  });

  // The model file is a FIFO nobody writes to: the load waits on storage (as on a stalled network
  // file system) for as long as the test wants, while the port is already bound.
  it('SIGTERM or SIGINT while the model loads: the process ends by that signal within 1 s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'jitllm-load-'));
    const fifo = join(dir, 'stalled.gguf');
    execFileSync('mkfifo', [fifo]);
    try {
      for (const sig of ['SIGTERM', 'SIGINT', 'SIGTERM']) {
        const p = spawn(BIN, ['serve', '--host', '127.0.0.1', '--port', '0', '-m', fifo], { stdio: ['ignore', 'ignore', 'pipe'] });
        let log = '';
        p.stderr.on('data', (d) => (log += d));
        const exited = once(p, 'exit');
        for (let t = 0; !/listening on http:\/\/127\.0\.0\.1:\d+/.test(log) && t < 100 && p.exitCode === null; t++) await sleep(50);
        const port = Number(log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/)?.[1]);
        assert.ok(port > 0, `not listening:\n${log}`);
        const health = await rawExchange(port, GET('/health', 'Connection: close\r\n'));
        assert.deepEqual(statusLines(health.data), [503]);
        assert.match(bodyOf(health.data), /Loading model/);
        const t0 = performance.now();
        p.kill(sig);
        const timer = setTimeout(() => p.kill('SIGKILL'), 5000);
        const [code, got] = await exited;
        clearTimeout(timer);
        const ms = performance.now() - t0;
        assert.equal(got, sig, `exit ${code} ${got}\n${log}`);
        assert.ok(ms < 1000, `${sig} took ${Math.round(ms)} ms`);
        assert.match(log, new RegExp(`${sig} while loading the model: exiting`));
        assert.doesNotMatch(log, /ready:/);
        const after = await rawExchange(port, GET('/health'), { ms: 1000 });
        assert.equal(after.data.length, 0, 'the port still answers after the exit');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a second server on a bound port fails with a sentence', async () => {
    const srv = await startServer([]);
    try {
      const r = await exitOf(['--port', String(srv.port)]);
      assert.notEqual(r.code, 0);
      assert.match(r.log, /cannot listen on 127\.0\.0\.1:\d+: the port is in use/);
    } finally {
      assert.equal(await srv.stop(), 0);
    }
  });
});

describe('HTTP/1.1 framing and loose input', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--ctx-size', '256', '--cors-origin', 'https://app.example']);
  });
  after(async () => assert.equal(await srv.stop(), 0, srv.log()));

  it('a multipart body with 2000 parts and requests inside: one answer, nothing parsed from the body', async () => {
    let body = '';
    for (let i = 0; i < 2000; i++) body += `--b\r\nContent-Disposition: form-data; name="p${i}"\r\n\r\nGET /health HTTP/1.1\r\nHost: a\r\n\r\n\r\n`;
    body += '--b--\r\n';
    const head = `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n` +
                 `Content-Length: ${body.length}\r\n\r\n`;
    const r = await rawExchange(srv.port, head + body, { ms: 3000 });
    assert.deepEqual(statusLines(r.data), [415]);
  });

  it('pipelined requests are answered in order', async () => {
    const b = JSON.stringify({ content: 'hello' });
    const r = await rawExchange(srv.port, GET('/health') + post('/tokenize', b) + GET('/nothing') + GET('/health', 'Connection: close\r\n'),
                                { ms: 5000 });
    assert.deepEqual(statusLines(r.data), [200, 200, 404, 200]);
    assert.ok(r.closed);
  });

  it('a client that half-closes after its request gets the answer (also a completion)', async () => {
    const a = await rawExchange(srv.port, GET('/health'), { halfClose: true });
    assert.deepEqual(statusLines(a.data), [200]);
    // the FIN may reach the server after the request did: the answer may follow a 100 (Continue)
    const b = await rawExchange(srv.port, post('/v1/completions', JSON.stringify({ prompt: 'Once', max_tokens: 4 })),
                                { halfClose: true, ms: 10000 });
    assert.deepEqual(statusLines(withoutInterim(b.data)), [200]);
    assert.ok(JSON.parse(bodyOf(withoutInterim(b.data))).usage.completion_tokens >= 1);
  });

  it('duplicate or conflicting Content-Length: 400 and the connection closes (no smuggled request)', async () => {
    for (const lens of [['4', '40'], ['4', '4']]) {
      const r = await rawExchange(srv.port, `POST /tokenize HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n` +
                                            `Content-Length: ${lens[0]}\r\nContent-Length: ${lens[1]}\r\n\r\n{}` + GET('/health'),
                                  { ms: 3000 });
      assert.deepEqual(statusLines(r.data), [400]);
      assert.match(bodyOf(r.data), /Content-Length: given 2 times/);
    }
  });

  it('bytes after a NUL in a JSON body are not ignored', async () => {
    const r = await rawExchange(srv.port, post('/tokenize', Buffer.from('{"content":"x"}\0{{{'), 'Connection: close\r\n'));
    assert.deepEqual(statusLines(r.data), [400]);
    assert.match(bodyOf(r.data), /NUL byte/);
  });

  it('without --api-key: a foreign Host or Origin gets 403, text/plain 415; --cors-origin is honoured', async () => {
    const body = JSON.stringify({ prompt: 'Once', max_tokens: 1 });
    const host = await rawExchange(srv.port, post('/v1/completions', body, 'Connection: close\r\n').toString()
                                     .replace('Host: 127.0.0.1', 'Host: rebind.evil.example'));
    assert.deepEqual(statusLines(host.data), [403]);
    const origin = await rawExchange(srv.port, post('/v1/completions', body, 'Origin: https://evil.example\r\nConnection: close\r\n'));
    assert.deepEqual(statusLines(origin.data), [403]);
    const plain = await rawExchange(srv.port, post('/v1/completions', body, 'Connection: close\r\n').toString()
                                      .replace('application/json', 'text/plain'));
    assert.deepEqual(statusLines(plain.data), [415]);
    const pre = await rawExchange(srv.port, `OPTIONS /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example\r\n` +
                                            'Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n');
    assert.deepEqual(statusLines(pre.data), [204]);
    assert.match(pre.data.toString(), /Access-Control-Allow-Origin: https:\/\/app\.example/);
    const ok = await rawExchange(srv.port, post('/v1/completions', body, 'Origin: https://app.example\r\nConnection: close\r\n'),
                                 { ms: 10000 });
    assert.deepEqual(statusLines(ok.data), [200]);
    assert.match(ok.data.toString(), /Access-Control-Allow-Origin: https:\/\/app\.example/);
  });

  it('seed -1 samples at random (as llama-server)', async () => {
    const texts = new Set();
    for (let i = 0; i < 4; i++) {
      const r = await rawExchange(srv.port, post('/v1/completions', JSON.stringify({ prompt: 'Once', max_tokens: 24, seed: -1,
                                                                                    temperature: 1.5, top_k: 0, top_p: 1, min_p: 0 }),
                                                 'Connection: close\r\n'), { ms: 10000 });
      texts.add(JSON.parse(bodyOf(r.data)).choices[0].text);
    }
    assert.ok(texts.size > 1, 'four samples with seed -1 were identical');
  });
});

describe('half-close and disconnect during a generation', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--ctx-size', '256', '--debug-step-delay-ms', '20']);
  });
  after(async () => assert.equal(await srv.stop(), 0, srv.log()));
  const req = post('/v1/completions', JSON.stringify({ prompt: 'Once', max_tokens: 60, ignore_eos: true }));

  it('a client that half-closes while its completion runs still gets the whole answer', async () => {
    const r = await rawExchange(srv.port, req, { halfClose: 500, ms: 20000 });
    assert.deepEqual(statusLines(r.data), [100, 200]);  // the 100 tells a half-close from a vanished client
    assert.equal(JSON.parse(bodyOf(withoutInterim(r.data))).usage.completion_tokens, 60);
  });

  it('a client that closes while its completion runs has it cancelled', async () => {
    const before = await metric(srv.base, 'jitllm:requests_cancelled_total');
    const r = await rawExchange(srv.port, req, { ms: 500 });  // destroys the socket after 500 ms
    assert.equal(r.data.length, 0);
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_cancelled_total')) === before + 1));
  });
});

describe('queue and shutdown', () => {
  it('--queue-size 100000 starts without a thread per queue place', async () => {
    const srv = await startServer(['--queue-size', '100000']);
    try {
      assert.ok(threads(srv.proc.pid) < 128, `${threads(srv.proc.pid)} threads`);
      assert.ok((await healthMs(srv.port)) < 1000);
    } finally {
      assert.equal(await srv.stop(), 0);
    }
  });

  it('requests still queued at shutdown get 503, not an empty 200', async () => {
    const srv = await startServer(['--parallel', '1', '--queue-size', '4', '--ctx-size', '512', '--debug-step-delay-ms', '20']);
    const long = { prompt: 'Once upon a time', max_tokens: 400, ignore_eos: true };
    const running = rawExchange(srv.port, post('/v1/completions', JSON.stringify(long)), { ms: 20000 });
    await sleep(300);
    const queued = rawExchange(srv.port, post('/v1/completions', JSON.stringify(long)), { ms: 20000 });
    const queuedStream = rawExchange(srv.port, post('/v1/completions', JSON.stringify({ ...long, stream: true })), { ms: 20000 });
    await sleep(300);
    srv.proc.kill('SIGTERM');
    const [a, b, c] = await Promise.all([running, queued, queuedStream]);
    assert.deepEqual(statusLines(a.data), [200]);
    assert.deepEqual(statusLines(b.data), [503]);
    assert.deepEqual(statusLines(c.data), [503]);
    assert.equal(srv.proc.exitCode ?? (await once(srv.proc, "exit"))[0], 0, srv.log());
  });
});
