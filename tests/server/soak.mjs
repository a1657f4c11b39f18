// Soak of `jitllm serve` (loopback only, bounded in time): normal streaming clients (load_test.mjs)
// and hostile clients (attack.mjs) against one server at once, while its RSS, open descriptors and
// threads are sampled every few seconds. Hostile clients: a group of trickling connections and a
// group of idle keep-alive ones, each reopened as the server closes it, and one client cycling
// through Range headers, an 8 MB prompt, a 200 k-message body, multipart, pipelining, duplicate
// Content-Length, NUL bytes, foreign Host and Origin, text/plain, Transfer-Encoding, binary
// garbage, half-close, bodies cut off and bursts of connects, each answer checked.
//
// After the run: 0 failed or truncated normal responses, every hostile answer as expected, every
// trickling connection closed by the server (by twice its deadline), RSS flat after warm-up, the
// first fifth of the run (within rssTolerance of its value then), the descriptors back to their
// idle count once the clients are gone, no thread growth, exit 0 on SIGTERM.
//
//   JITLLM_BIN=build/jitllm node tests/server/soak.mjs [--seconds 300] [--clients 64] [--hostile 1]
//       [--parallel 8] [--queue 64] [--ctx 512] [--threads 1] [--model FILE] [--abort-rate 0.05]
//       [--out DIR]
// prints a summary (and writes summary.json and series.csv to --out); exits 1 when a check fails.
// scripts/load-test.sh runs it; soak.test.mjs runs a short one in CI.
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { startServer } from './helpers.mjs';
import { streamingClients } from './load_test.mjs';
import { rawExchange, statusLines, withoutInterim, slowloris, idleKeepAlive, post, connectBurst, percentile, sleep } from './attack.mjs';

export function procStats(pid) {
  const st = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (k) => Number(st.match(new RegExp(`${k}:\\s+(\\d+)`))[1]);
  return { rss_kib: field('VmRSS'), threads: field('Threads'), fds: readdirSync(`/proc/${pid}/fd`).length };
}

const GET = (path, extra = '') => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;
const CLOSE = 'Connection: close\r\n';

// Each case: the bytes to send, how to send them, and the status lines the server must answer
// with (null: nothing is checked but that the server lives on).
function hostileCases() {
  const completion = (prompt) => JSON.stringify({ prompt, max_tokens: 1 });
  let multipart = '';
  for (let i = 0; i < 2000; i++) multipart += `--b\r\nContent-Disposition: form-data; name="p${i}"\r\n\r\n${GET('/health')}\r\n`;
  multipart += '--b--\r\n';
  const tokenize = post('/tokenize', '{"content":"hello"}');
  return [
    { name: 'Range amplification', data: post('/v1/completions', completion('x'.repeat(20000)),
                                              `Range: bytes=${Array(300).fill('0-').join(',')}\r\n${CLOSE}`),
      expect: [400], maxBytes: 4096 },
    { name: '8 MB prompt', data: post('/v1/completions', completion('a '.repeat(4e6)), CLOSE), expect: [413], untilBytes: 12 },
    { name: '200 k messages', data: post('/v1/chat/completions', JSON.stringify({
      messages: Array.from({ length: 2e5 }, () => ({ role: 'user', content: 'a' })) }), CLOSE), expect: [413], untilBytes: 12 },
    { name: 'multipart with requests inside',
      data: `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n` +
            `Content-Length: ${multipart.length}\r\n\r\n${multipart}`, expect: [415] },
    { name: 'pipelined', data: Buffer.concat([Buffer.from(GET('/health')), tokenize, Buffer.from(GET('/nothing') + GET('/health', CLOSE))]),
      expect: [200, 200, 404, 200] },
    { name: 'duplicate Content-Length', data: 'POST /tokenize HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n' +
                                              'Content-Length: 4\r\nContent-Length: 40\r\n\r\n{}' + GET('/health'), expect: [400] },
    { name: 'NUL byte in the body', data: post('/tokenize', Buffer.from('{"content":"x"}\0{{{'), CLOSE), expect: [400] },
    { name: 'foreign Host', data: post('/v1/completions', completion('Once'), CLOSE).toString()
                                    .replace('Host: 127.0.0.1', 'Host: rebind.evil.example'), expect: [403] },
    { name: 'foreign Origin', data: post('/v1/completions', completion('Once'), `Origin: https://evil.example\r\n${CLOSE}`),
      expect: [403] },
    { name: 'text/plain body', data: post('/v1/completions', completion('Once'), CLOSE).toString()
                                       .replace('application/json', 'text/plain'), expect: [415] },
    { name: 'Transfer-Encoding body', data: 'POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
                                            'Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n', expect: [411] },
    { name: 'binary garbage', data: Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 13, 10, 13, 10]),
      expect: [400] },
    { name: 'half-closed completion', data: post('/v1/completions', JSON.stringify({ prompt: 'Once', max_tokens: 4 })),
      halfClose: true, ms: 60000, expect: [200] },
    { name: 'body cut off', data: Buffer.concat([Buffer.from('POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
                                                             'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n'),
                                                 Buffer.alloc(1000, 0x61)]), ms: 200, expect: null },
  ];
}

// Keeps `n` connections of one kind open: each is reopened when the server closes it.
function keepOpen(n, open) {
  let running = true;
  const live = new Set();
  const slot = async () => {
    while (running) {
      const a = await open();
      live.add(a);
      await a.closed;
      live.delete(a);
    }
  };
  const all = Array.from({ length: n }, slot);
  return { stop: async () => { running = false; for (const a of live) a.stop(); await Promise.all(all); } };
}

// Opens one trickling connection (a header line every everyMs, never the end of the head); the
// time until the server closes it goes to lifetimes.
function trickling(port, everyMs, lifetimes) {
  return async () => {
    const a = slowloris(port, 1, everyMs);
    const t0 = performance.now();
    let stopped = false;
    const closed = new Promise((resolve) => a.sockets[0].on('close', resolve))
      .then(() => { if (!stopped) lifetimes.push(performance.now() - t0); });
    return { closed, stop: () => { stopped = true; a.stop(); } };
  };
}

export async function runSoak({ seconds = 300, clients = 64, hostile = true, parallel = 8, queue = 64, ctx = 512,
                                 abortRate = 0.05, serverArgs = [], trickle = 100, idle = 200, warmupS = null,
                                 rssTolerance = 0.05, sampleS = 5, log = () => {} } = {}) {
  const timeoutS = 15, keepAliveS = 5;  // the server's defaults: what a trickle and an idle connection get
  const srv = await startServer(['--parallel', String(parallel), '--queue-size', String(queue), '--ctx-size', String(ctx),
                                 '--timeout', String(timeoutS), '--keep-alive', String(keepAliveS), ...serverArgs]);
  const pid = srv.proc.pid;
  const idleStats = procStats(pid);
  const series = [];
  const t0 = performance.now();
  const sample = () => series.push({ t_s: Math.round((performance.now() - t0) / 1000), ...procStats(pid) });
  sample();
  const sampler = setInterval(sample, sampleS * 1000);
  log(`soak: server pid ${pid} at ${srv.base}; ${clients} clients${hostile ? ` + ${trickle} trickling, ${idle} idle ` +
      'and one hostile client' : ''} for ${seconds} s (parallel ${parallel}, queue ${queue}, ctx ${ctx})`);

  const cases = hostile ? hostileCases() : [];
  const results = Object.fromEntries(cases.map((c) => [c.name, { runs: 0, unexpected: 0, ms: [], last: null }]));
  const bursts = [];
  const lifetimes = [];
  let attacking = hostile;
  const attacker = (async () => {
    while (attacking) {
      for (const c of cases) {
        if (!attacking) break;
        const r = await rawExchange(srv.port, c.data, { ms: c.ms ?? 10000, halfClose: c.halfClose, untilBytes: c.untilBytes });
        const got = statusLines(withoutInterim(r.data));  // a half-close may be probed with a 100
        const res = results[c.name];
        res.runs++;
        res.ms.push(r.firstMs ?? r.ms);
        const bad = c.expect && (JSON.stringify(got) !== JSON.stringify(c.expect) || (c.maxBytes && r.data.length > c.maxBytes));
        if (bad) {
          res.unexpected++;
          res.last = `answered ${JSON.stringify(got)} in ${r.data.length} bytes, expected ${JSON.stringify(c.expect)}`;
        }
        await sleep(100);
      }
      if (attacking) bursts.push(...(await connectBurst(srv.port, 50)));
    }
  })();
  const groups = hostile
    ? [keepOpen(trickle, trickling(srv.port, 1000, lifetimes)),
       keepOpen(idle, async () => {
         const a = await idleKeepAlive(srv.port, 1);
         const s = a.sockets[0];
         return { closed: s.destroyed ? Promise.resolve() : new Promise((r) => s.on('close', r)), stop: a.stop };
       })]
    : [];

  const normal = await streamingClients({ base: srv.base, clients, seconds, abortRate });
  attacking = false;
  await Promise.all([attacker, ...groups.map((g) => g.stop())]);
  // idle connections of the clients close at the keep-alive time: wait for the descriptors
  const settleT0 = performance.now();
  let settled = procStats(pid);
  while (settled.fds > idleStats.fds && performance.now() - settleT0 < (timeoutS + keepAliveS + 10) * 1000) {
    await sleep(500);
    settled = procStats(pid);
  }
  const settleMs = performance.now() - settleT0;
  clearInterval(sampler);
  sample();
  const code = await srv.stop();

  // RSS after warm-up, the first fifth of the run (a minute of 5): the threads touch their stacks
  // and malloc arenas grow to their working size (the live heap stays flat: docs/server.md)
  const w0 = warmupS ?? Math.floor(seconds / 5);
  const warm = series.filter((s) => s.t_s >= w0 && s.t_s <= seconds);
  const ref = warm.length ? warm[0].rss_kib : series[0].rss_kib;
  const rssMin = Math.min(...warm.map((s) => s.rss_kib)), rssMax = Math.max(...warm.map((s) => s.rss_kib));
  const hostileSummary = Object.fromEntries(Object.entries(results).map(([k, r]) => [k, {
    runs: r.runs, unexpected: r.unexpected, ms_p50: Math.round(percentile(r.ms, 0.5)), ms_max: Math.round(Math.max(...r.ms)),
    ...(r.last ? { last_unexpected: r.last } : {}) }]));
  const lateLimitMs = 2 * timeoutS * 1000;  // a trickle that extended the deadline would never be closed
  const summary = {
    seconds, clients, hostile, normal, hostile_cases: hostileSummary,
    trickling: { closed_by_server: lifetimes.length, lifetime_ms_p50: Math.round(percentile(lifetimes, 0.5)),
                 lifetime_ms_max: Math.round(Math.max(0, ...lifetimes)), late: lifetimes.filter((x) => x > lateLimitMs).length },
    connect_bursts: { connects: bursts.length, ms_p50: Math.round(percentile(bursts, 0.5)),
                      ms_max: Math.round(Math.max(0, ...bursts.filter(Number.isFinite))),
                      unanswered: bursts.filter((x) => !Number.isFinite(x)).length },
    rss_mib: { idle: +(idleStats.rss_kib / 1024).toFixed(1), after_warmup: +(ref / 1024).toFixed(1), warmup_s: w0,
               min_after: +(rssMin / 1024).toFixed(1), max_after: +(rssMax / 1024).toFixed(1),
               spread_pct: +((Math.max(rssMax - ref, ref - rssMin) / ref) * 100).toFixed(2) },
    fds: { idle: idleStats.fds, max: Math.max(...series.map((s) => s.fds)), after_settle: settled.fds, settle_ms: Math.round(settleMs) },
    threads: { idle: idleStats.threads, max: Math.max(...series.map((s) => s.threads)) },
    exit_code: code,
  };
  const failures = [];
  if (normal.failed || normal.truncated) failures.push(`${normal.failed} failed, ${normal.truncated} truncated normal responses`);
  if (Object.keys(normal.errors).length) failures.push(`normal client errors: ${JSON.stringify(normal.errors)}`);
  for (const [k, r] of Object.entries(hostileSummary)) {
    if (!r.runs) failures.push(`${k}: never ran`);
    if (r.unexpected) failures.push(`${k}: ${r.unexpected} of ${r.runs} unexpected (${r.last_unexpected})`);
  }
  if (summary.trickling.late) failures.push(`${summary.trickling.late} trickling connections outlived twice --timeout`);
  if (summary.connect_bursts.unanswered) failures.push(`${summary.connect_bursts.unanswered} connects unanswered within 5 s`);
  if (summary.rss_mib.spread_pct > rssTolerance * 100)
    failures.push(`RSS after warm-up moved ${summary.rss_mib.spread_pct} % from ${summary.rss_mib.after_warmup} MiB`);
  if (settled.fds > idleStats.fds) failures.push(`${settled.fds} descriptors open after the clients left, ${idleStats.fds} idle`);
  if (summary.threads.max > idleStats.threads) failures.push(`threads grew from ${idleStats.threads} to ${summary.threads.max}`);
  if (code !== 0) failures.push(`exit code ${code} after SIGTERM`);
  return { summary, series, failures, serverLog: srv.log() };
}

export function describeSoak(s) {
  const n = s.normal;
  const lines = [
    `normal clients: ${n.started} started, ${n.ok} complete, ${n.failed} failed, ${n.truncated} truncated, ` +
    `${n.aborted_on_purpose} aborted on purpose; ${n.tokens_per_second} tok/s, ${n.requests_per_second} req/s; ` +
    `TTFT p50 ${n.ttft_ms_p50} ms, p99 ${n.ttft_ms_p99} ms`,
    `/health (1 probe/s): ${n.health_probes} probes, p50 ${n.health_ms_p50} ms, p99 ${n.health_ms_p99} ms, ` +
    `max ${n.health_ms_max} ms, ${n.health_over_100ms} over 100 ms`,
  ];
  if (s.hostile) {
    for (const [k, r] of Object.entries(s.hostile_cases))
      lines.push(`  ${k}: ${r.runs} runs, ${r.unexpected} unexpected, answer p50 ${r.ms_p50} ms, max ${r.ms_max} ms`);
    lines.push(`trickling connections closed by the server: ${s.trickling.closed_by_server}, lifetime p50 ` +
               `${s.trickling.lifetime_ms_p50} ms, max ${s.trickling.lifetime_ms_max} ms`);
    lines.push(`connects in bursts of 50: ${s.connect_bursts.connects}, p50 ${s.connect_bursts.ms_p50} ms, ` +
               `max ${s.connect_bursts.ms_max} ms, ${s.connect_bursts.unanswered} unanswered`);
  }
  const r = s.rss_mib;
  lines.push(`RSS: ${r.idle} MiB idle, ${r.after_warmup} MiB at ${r.warmup_s} s, then ${r.min_after}-${r.max_after} MiB ` +
             `(${r.spread_pct} %)`);
  lines.push(`descriptors: ${s.fds.idle} idle, max ${s.fds.max}, ${s.fds.after_settle} after the clients left ` +
             `(${s.fds.settle_ms} ms); threads ${s.threads.idle} idle, max ${s.threads.max}; exit ${s.exit_code} on SIGTERM`);
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (k, d) => { const i = process.argv.indexOf(`--${k}`); return i > 0 ? process.argv[i + 1] : d; };
  const r = await runSoak({
    seconds: Number(arg('seconds', 300)), clients: Number(arg('clients', 64)), hostile: arg('hostile', '1') !== '0',
    parallel: Number(arg('parallel', 8)), queue: Number(arg('queue', 64)), ctx: Number(arg('ctx', 512)),
    abortRate: Number(arg('abort-rate', 0.05)),
    serverArgs: [...(arg('model') ? ['-m', arg('model')] : []), '--threads', arg('threads', '1')],
    log: (m) => console.log(m),
  });
  const out = arg('out');
  if (out) {
    mkdirSync(out, { recursive: true });
    writeFileSync(`${out}/summary.json`, JSON.stringify(r.summary, null, 1));
    writeFileSync(`${out}/series.csv`, 't_s,rss_kib,fds,threads\n' +
                  r.series.map((s) => `${s.t_s},${s.rss_kib},${s.fds},${s.threads}`).join('\n') + '\n');
    writeFileSync(`${out}/server.log`, r.serverLog);
  }
  console.log(describeSoak(r.summary));
  console.log(`RSS series (s:MiB): ${r.series.map((s) => `${s.t_s}:${(s.rss_kib / 1024).toFixed(1)}`).join(' ')}`);
  console.log(`descriptor series (s:fds): ${r.series.map((s) => `${s.t_s}:${s.fds}`).join(' ')}`);
  for (const f of r.failures) console.log(`FAIL: ${f}`);
  console.log(r.failures.length ? 'soak: FAILED' : 'soak: passed');
  process.exit(r.failures.length ? 1 : 0);
}
