// The paged KV cache behind `jitllm serve` (docs/server.md, Concurrency): a request waits in the
// queue until the pool can promise it the blocks of prompt + max_tokens, while a slot is free; a
// cancelled, disconnected or finished request gives its blocks back (the used-blocks gauge returns
// to 0: a leaked block would keep it above); a second request with the same long prompt attaches the
// first one's blocks (prompt_tokens_reused_total) and gives the same text. The bundled stories260K.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { metric, startServer, waitFor } from './helpers.mjs';

const model = 'stories260K';

describe('KV pool: waiting for blocks, and every block back (2 slots, a pool of 8 blocks of 16)', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--parallel', '2', '--ctx-size', '128', '--kv-pool-tokens', '128', '--queue-size', '4',
                             '--debug-step-delay-ms', '20']);
    client = srv.client();
  });
  after(async () => {
    await srv.stop();
  });

  const used = () => metric(srv.base, 'jitllm:kv_cache_blocks_used');

  it('reports the pool in /metrics', async () => {
    assert.equal(await metric(srv.base, 'jitllm:kv_cache_blocks_total'), 8);
    assert.equal(await metric(srv.base, 'jitllm:kv_cache_block_tokens'), 16);
    assert.equal(await used(), 0);
    assert.equal(await metric(srv.base, 'jitllm:kv_cache_usage_ratio'), 0);
  });

  it('a request the pool cannot promise waits beside a free slot until a cancelled stream gives its blocks back',
     async () => {
       const ac = new AbortController();
       // about 6 prompt tokens + 100: 7 of the 8 blocks promised
       const a = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 100, ignore_eos: true,
                                                   stream: true }, { signal: ac.signal });
       const it1 = a[Symbol.asyncIterator]();
       await it1.next();
       assert.ok(await waitFor(async () => (await used()) >= 1));
       // 3 blocks: one is left, so it waits although the second slot is free
       const b = client.completions.create({ model, prompt: 'The dog', max_tokens: 40, ignore_eos: true });
       assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_deferred')) === 1));
       assert.equal(await metric(srv.base, 'jitllm:requests_processing'), 1);
       ac.abort();  // the client goes away: its blocks go back, b starts
       const rb = await b;
       assert.equal(rb.usage.completion_tokens, 40);
       assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_processing')) === 0));
       assert.ok(await waitFor(async () => (await used()) === 0), 'a block leaked');
     });

  it('a non-streaming client that disconnects gives its blocks back', async () => {
    const ac = new AbortController();
    const p = client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 100, ignore_eos: true },
                                        { signal: ac.signal });
    assert.ok(await waitFor(async () => (await used()) >= 1));
    ac.abort();
    await assert.rejects(p);
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_processing')) === 0));
    assert.ok(await waitFor(async () => (await used()) === 0), 'a block leaked');
  });

  it('two requests at once, both finished: no block held', async () => {
    const rs = await Promise.all([
      client.completions.create({ model, prompt: 'Lily went', max_tokens: 30, ignore_eos: true }),
      client.completions.create({ model, prompt: 'Tom saw a big', max_tokens: 30, ignore_eos: true }),
    ]);
    for (const r of rs) assert.equal(r.usage.completion_tokens, 30);
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_processing')) === 0));
    assert.ok(await waitFor(async () => (await used()) === 0), 'a block leaked');
  });
});

describe('KV pool: prefix reuse', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--parallel', '2', '--ctx-size', '256']);
    client = srv.client();
  });
  after(async () => {
    await srv.stop();
  });

  const system = 'You are a friendly storyteller. You tell short, happy stories about animals, kids and their ' +
                 'friends, with a little lesson at the end. ';

  it('a second request with the same long prompt attaches its blocks and gives the same text', async () => {
    const req = { model, prompt: system + 'Tell me about a cat.', max_tokens: 12, temperature: 0 };
    const first = await client.completions.create(req);
    assert.equal(await metric(srv.base, 'jitllm:prompt_tokens_reused_total'), 0);
    const n = first.usage.prompt_tokens;
    assert.ok(n >= 33, `a prompt of ${n} tokens`);
    const second = await client.completions.create(req);
    const reused = await metric(srv.base, 'jitllm:prompt_tokens_reused_total');
    // the whole blocks of the prompt but its last token
    assert.equal(reused, Math.floor((n - 1) / 16) * 16);
    assert.equal(second.choices[0].text, first.choices[0].text);
    // another question after the same system prompt: its blocks of the system prompt only
    const third = await client.completions.create({ ...req, prompt: system + 'And a dog?' });
    assert.ok(third.usage.completion_tokens > 0);
    assert.ok(await metric(srv.base, 'jitllm:prompt_tokens_reused_total') > reused);
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:kv_cache_blocks_used')) === 0));
    assert.ok(await metric(srv.base, 'jitllm:kv_cache_blocks_cached') > 0);
  });

  it('--no-prefix-reuse computes every prompt whole', async () => {
    const s = await startServer(['--no-prefix-reuse']);
    try {
      const c = s.client();
      const req = { model, prompt: system, max_tokens: 4, temperature: 0 };
      await c.completions.create(req);
      await c.completions.create(req);
      assert.equal(await metric(s.base, 'jitllm:prompt_tokens_reused_total'), 0);
    } finally {
      await s.stop();
    }
  });
});
