// Load test client for `jitllm serve` (the normal clients of soak.mjs; loopback only, bounded in
// time): N concurrent clients loop streaming chat / text completions with include_usage through
// the real openai client for a fixed duration, and /health is probed every second. A response
// counts as complete only with one finish_reason chunk, a usage chunk and the end of the stream;
// everything else is failed or truncated. A small share of streams is aborted on purpose (counted
// apart) to exercise cancellation under load. streamingClients() returns the summary; run alone
// (node load_test.mjs --base URL [--clients N --seconds S --abort-rate R --max-tokens N]) it
// prints it as one JSON line.
import OpenAIModule from 'openai';
import { percentile } from './attack.mjs';

const OpenAI = OpenAIModule.default || OpenAIModule;

export async function streamingClients({ base, clients = 64, seconds = 300, abortRate = 0.05, maxTokensHi = 160 }) {
  if (!base || !base.startsWith('http://127.0.0.1:')) throw new Error('--base must be a loopback URL');
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120000 });
  const model = (await client.models.list()).data[0].id;
  const prompts = ['Once upon a time', 'The little dog', 'Lily wanted to play', 'One day, a boy named Tim',
                   'The sun was shining and', 'There was a big tree'];
  const stats = { started: 0, ok: 0, failed: 0, truncated: 0, aborted: 0, tokens: 0, ttft_ms: [], errors: {} };
  const healthMs = [];
  const deadline = Date.now() + seconds * 1000;
  let seq = 0;

  function note(kind, e) {
    const key = `${kind}: ${String(e?.message ?? e).slice(0, 120)}`;
    stats.errors[key] = (stats.errors[key] ?? 0) + 1;
  }

  async function one() {
    const n = seq++;
    const chat = n % 2 === 0;
    const maxTokens = 16 + ((n * 37) % (maxTokensHi - 15));
    const abortAfter = Math.random() < abortRate ? 1 + (n % 5) : 0;
    const ac = new AbortController();
    const prompt = prompts[n % prompts.length];
    const body = { model, max_tokens: maxTokens, temperature: 0.8, stream: true,
                   stream_options: { include_usage: true }, seed: n };
    const t0 = Date.now();
    stats.started++;
    let finishes = 0, usage = null, chunks = 0, first = 0;
    try {
      const stream = chat
        ? await client.chat.completions.create({ ...body, messages: [{ role: 'user', content: prompt }] },
                                              { signal: ac.signal })
        : await client.completions.create({ ...body, prompt }, { signal: ac.signal });
      for await (const c of stream) {
        if (c.choices.length === 0) {
          usage = c.usage;
          continue;
        }
        const ch = c.choices[0];
        const text = chat ? ch.delta?.content : ch.text;
        if (text && !first) first = Date.now();
        if (ch.finish_reason) finishes++;
        chunks++;
        if (abortAfter && chunks >= abortAfter) {
          ac.abort();
          stats.aborted++;
          return;
        }
      }
    } catch (e) {
      if (ac.signal.aborted) {
        stats.aborted++;
        return;
      }
      stats.failed++;
      note('failed', e);
      return;
    }
    if (finishes !== 1 || !usage || usage.total_tokens !== usage.prompt_tokens + usage.completion_tokens ||
        usage.completion_tokens < 1 || usage.completion_tokens > maxTokens) {
      stats.truncated++;
      note('truncated', `finish chunks ${finishes}, usage ${JSON.stringify(usage)}`);
      return;
    }
    stats.ok++;
    stats.tokens += usage.completion_tokens;
    if (first) stats.ttft_ms.push(first - t0);
  }

  async function loop() {
    while (Date.now() < deadline) await one();
  }

  async function probeHealth() {
    while (Date.now() < deadline) {
      const t = Date.now();
      try {
        const r = await fetch(`${base}/health`);
        await r.text();
        if (r.status === 200) healthMs.push(Date.now() - t);
        else note('health', r.status);
      } catch (e) {
        note('health', e);
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  const t0 = Date.now();
  await Promise.all([...Array(clients).keys()].map(loop).concat([probeHealth()]));
  const wall = (Date.now() - t0) / 1000;
  return {
    clients, seconds: wall, started: stats.started, ok: stats.ok, failed: stats.failed, truncated: stats.truncated,
    aborted_on_purpose: stats.aborted, completion_tokens: stats.tokens,
    tokens_per_second: Math.round(stats.tokens / wall), requests_per_second: +(stats.ok / wall).toFixed(2),
    ttft_ms_p50: percentile(stats.ttft_ms, 0.5), ttft_ms_p99: percentile(stats.ttft_ms, 0.99),
    health_ms_p50: percentile(healthMs, 0.5), health_ms_p99: percentile(healthMs, 0.99),
    health_ms_max: healthMs.length ? Math.max(...healthMs) : null,
    health_probes: healthMs.length, health_over_100ms: healthMs.filter((x) => x > 100).length,
    errors: stats.errors,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name, dflt) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : dflt;
  };
  console.log(JSON.stringify(await streamingClients({
    base: arg('base'), clients: Number(arg('clients', 64)), seconds: Number(arg('seconds', 300)),
    abortRate: Number(arg('abort-rate', 0.05)), maxTokensHi: Number(arg('max-tokens', 160)),
  })));
}
