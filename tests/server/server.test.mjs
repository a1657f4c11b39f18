// `jitllm serve` driven by the real `openai` npm client (v6) over loopback, on the bundled
// stories260K model: models, chat, streaming with usage, completions, stop strings across token
// boundaries, seed reproducibility, every bad request of the checklist (4xx, OpenAI-shaped error
// naming the field), API keys, 503 + Retry-After, cancellation on disconnect, graceful shutdown.
// Expectations are properties of the protocol (and of greedy decoding), not recorded outputs.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import { startServer, waitFor, metric } from './helpers.mjs';

const CTX = 256;

function assertApiError(e, status, param, type = 'invalid_request_error', { named = true } = {}) {
  assert.equal(e.status, status, `status: ${e.message}`);
  assert.ok(e.error && typeof e.error.message === 'string', `no OpenAI error body: ${e.message}`);
  assert.equal(e.type, type, e.message);
  assert.equal(e.code, status, e.message);
  if (param !== undefined) {
    assert.equal(e.param, param, e.message);
    if (named && param !== null && param !== 'body') assert.ok(e.error.message.includes(param.split(/[.[]/)[0]), e.message);
  }
  return true;
}

// Raw HTTP for requests the client library cannot produce.
function rawRequest(port, { method = 'POST', path = '/v1/completions', headers = {}, body, chunked = false }) {
  if (body !== undefined && !chunked && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-length'))
    headers = { ...headers, 'content-length': Buffer.byteLength(body) };
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let data = '';
      res.on('data', (d) => (data += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on('error', reject);
    if (chunked) {
      req.write('{"prompt":');
      req.write('"x"}');
    } else if (body !== undefined) {
      req.write(body);
    }
    req.end();
  });
}

function errorOf(r) {
  const j = JSON.parse(r.body);
  assert.ok(j.error, `no error object: ${r.body}`);
  return j.error;
}

describe('jitllm serve with the openai client', () => {
  let srv, client, model;

  before(async () => {
    srv = await startServer(['--parallel', '2', '--ctx-size', String(CTX)]);
    client = srv.client();
  });
  after(async () => {
    const code = await srv.stop();
    assert.equal(code, 0, srv.log());
  });

  it('lists the model', async () => {
    const page = await client.models.list();
    assert.equal(page.data.length, 1);
    model = page.data[0].id;
    assert.equal(model, 'stories260K');
    assert.equal(page.data[0].object, 'model');
    const one = await client.models.retrieve(model);
    assert.equal(one.id, model);
  });

  it('answers /health cheaply and /metrics in Prometheus text', async () => {
    const h = await fetch(`${srv.base}/health`);
    assert.equal(h.status, 200);
    assert.equal((await h.json()).status, 'ok');
    const m = await fetch(`${srv.base}/metrics`);
    assert.equal(m.status, 200);
    assert.match(m.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    const text = await m.text();
    for (const name of ['jitllm:requests_total', 'jitllm:tokens_predicted_total', 'jitllm:requests_deferred',
                        'jitllm:predicted_tokens_seconds', 'jitllm:time_to_first_token_seconds_count'])
      assert.ok(text.includes(`\n${name} `) || text.startsWith(`${name} `), `missing ${name}`);
  });

  it('chat completion with usage', async () => {
    const r = await client.chat.completions.create({
      model: 'stories260K', messages: [{ role: 'system', content: 'Tell a story.' }, { role: 'user', content: 'Hi' }],
      max_tokens: 24, seed: 7,
    });
    assert.equal(r.object, 'chat.completion');
    assert.match(r.id, /^chatcmpl-/);
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.prompt_tokens > 0);
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 24);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    if (r.choices[0].finish_reason === 'length') assert.equal(r.usage.completion_tokens, 24);
  });

  it('streams chat chunks and a final usage chunk (same text as non-streaming, same seed)', async () => {
    const req = { model: 'stories260K', messages: [{ role: 'user', content: 'Once upon a time' }],
                  max_tokens: 40, seed: 1234, temperature: 0.9 };
    const whole = await client.chat.completions.create(req);
    const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
    let text = '', first = true, finish = null, usage = null, n = 0;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      if (chunk.choices.length === 0) {
        usage = chunk.usage;  // the extra last chunk
        continue;
      }
      assert.equal(chunk.usage, null);  // include_usage: every other chunk says usage: null
      assert.equal(finish, null, 'content after finish_reason');
      if (first) assert.equal(chunk.choices[0].delta.role, 'assistant');
      first = false;
      text += chunk.choices[0].delta.content ?? '';
      finish = chunk.choices[0].finish_reason ?? null;
      n++;
    }
    assert.ok(n >= 2);
    assert.equal(finish, whole.choices[0].finish_reason);
    assert.equal(text, whole.choices[0].message.content);
    assert.ok(usage, 'no usage chunk');
    assert.deepEqual(usage.completion_tokens, whole.usage.completion_tokens);
    assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  });

  it('text completion, streaming and not', async () => {
    const r = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 16, temperature: 0 });
    assert.equal(r.object, 'text_completion');
    assert.match(r.id, /^cmpl-/);
    assert.ok(r.choices[0].text.length > 0);
    assert.equal(r.usage.completion_tokens, 16);
    assert.equal(r.choices[0].finish_reason, 'length');
    const s = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 16,
                                                temperature: 0, stream: true });
    let text = '';
    for await (const c of s) text += c.choices[0]?.text ?? '';
    assert.equal(text, r.choices[0].text);  // greedy: the same tokens
    // a prompt of token ids gives the same as its text (ids from /tokenize)
    const ids = (await (await fetch(`${srv.base}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'Once upon a time', add_special: true }) })).json()).tokens;
    const byIds = await client.completions.create({ model: 'stories260K', prompt: ids, max_tokens: 16, temperature: 0 });
    assert.equal(byIds.choices[0].text, r.choices[0].text);
  });

  it('stops at a stop string that spans a token boundary, streaming and not', async () => {
    const base = { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 48, temperature: 0 };
    const full = await client.completions.create({ ...base, logprobs: 0 });
    const lp = full.choices[0].logprobs;
    const text = full.choices[0].text;
    assert.equal(lp.tokens.length, full.usage.completion_tokens);
    assert.equal(lp.tokens.join(''), text);
    // the last character of a token of >= 2 characters plus the first two of the next one
    let stop = null;
    for (let i = 4; i + 1 < lp.tokens.length && !stop; i++)
      if (lp.tokens[i].length >= 2 && lp.tokens[i + 1].length >= 2 && /^[\x20-\x7e]+$/.test(lp.tokens[i] + lp.tokens[i + 1]))
        stop = lp.tokens[i].slice(-1) + lp.tokens[i + 1].slice(0, 2);
    assert.ok(stop, `no token pair to build a stop string from: ${JSON.stringify(lp.tokens)}`);
    const expected = text.slice(0, text.indexOf(stop));
    const r = await client.completions.create({ ...base, stop: [stop, 'zzzz-never'] });
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.choices[0].text, expected);
    const s = await client.completions.create({ ...base, stop, stream: true });
    let streamed = '', finish = null;
    for await (const c of s) {
      streamed += c.choices[0]?.text ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(streamed, expected);
    assert.equal(finish, 'stop');
    const chat = await client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'x' }],
                                                        stop: ['.'], temperature: 0, max_tokens: 64 });
    assert.ok(!chat.choices[0].message.content.includes('.'));
  });

  it('reproduces a seeded sample, also when requests run side by side', async () => {
    const req = { model: 'stories260K', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 64,
                  temperature: 1.0, top_p: 1.0, seed: 42, ignore_eos: true };
    const [a, b] = await Promise.all([client.chat.completions.create(req), client.chat.completions.create(req)]);
    const c = await client.chat.completions.create(req);
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    assert.equal(a.choices[0].message.content, c.choices[0].message.content);
    assert.equal(a.usage.completion_tokens, 64);
    const d = await client.chat.completions.create({ ...req, seed: 43 });
    assert.notEqual(d.choices[0].message.content, a.choices[0].message.content);
  });

  it('returns logprobs (chat) consistent with the chosen tokens', async () => {
    const r = await client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 8, temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 3 });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, 8);
    for (const t of content) {
      assert.ok(t.logprob <= 0);
      assert.equal(t.top_logprobs.length, 3);
      assert.equal(t.top_logprobs[0].logprob, t.logprob);  // greedy picks the most likely token
      assert.deepEqual(t.bytes, [...Buffer.from(t.token, 'utf8')]);
    }
    assert.equal(content.map((t) => t.token).join(''), r.choices[0].message.content);
  });

  it('tokenize and detokenize round-trip', async () => {
    const post = (p, b) => fetch(`${srv.base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' },
                                                    body: JSON.stringify(b) }).then((r) => r.json());
    const t = await post('/tokenize', { content: 'The cat sat.', with_pieces: true });
    assert.ok(t.tokens.length >= 3);
    assert.equal(t.tokens.map((x) => x.piece).join('').trim(), 'The cat sat.');
    const ids = t.tokens.map((x) => x.id);
    const d = await post('/detokenize', { tokens: ids });
    assert.equal(d.content.trim(), 'The cat sat.');
  });

  describe('rejects bad requests with a 4xx naming the field', () => {
    const msg = [{ role: 'user', content: 'hi' }];
    const chatCases = [
      [{ messages: [] }, 'messages'],
      [{ messages: undefined }, 'messages'],
      [{ messages: [{ role: 'bot', content: 'x' }] }, 'messages[0].role'],
      [{ messages: [{ role: 'user', content: 42 }] }, 'messages[0].content'],
      [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] }, 'messages[0].content[0].type'],
      [{ max_tokens: -1 }, 'max_tokens'],
      [{ max_tokens: 0 }, 'max_tokens'],
      [{ max_tokens: 1.5 }, 'max_tokens'],
      [{ max_tokens: 2 ** 31 }, 'max_tokens'],
      [{ max_tokens: 1e20 }, 'max_tokens'],
      [{ max_tokens: '10' }, 'max_tokens'],
      [{ max_completion_tokens: -3 }, 'max_completion_tokens'],
      [{ temperature: 3.5 }, 'temperature'],
      [{ temperature: -0.1 }, 'temperature'],
      [{ temperature: 'hot' }, 'temperature'],
      [{ top_p: 1.5 }, 'top_p'],
      [{ top_k: -2 }, 'top_k'],
      [{ min_p: 2 }, 'min_p'],
      [{ presence_penalty: 5 }, 'presence_penalty'],
      [{ frequency_penalty: -2.5 }, 'frequency_penalty'],
      [{ seed: 1.5 }, 'seed'],
      [{ seed: 'x' }, 'seed'],
      [{ n: 2 }, 'n'],
      [{ n: 0 }, 'n'],
      [{ n: -1 }, 'n'],
      [{ stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
      [{ stop: [''] }, 'stop[0]'],
      [{ stop: 42 }, 'stop'],
      [{ logprobs: 'yes' }, 'logprobs'],
      [{ logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
      [{ top_logprobs: 2 }, 'top_logprobs'],
      [{ stream: 'yes' }, 'stream'],
      [{ model: 'gpt-4o' }, 'model'],
      [{ tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] }, 'tools'],
      [{ response_format: { type: 'xml' } }, 'response_format.type'],
      [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: 'a+' } } } }, 'response_format.json_schema.schema'],
      [{ logit_bias: { 99999: 1 } }, 'logit_bias.99999'],
      [{ logit_bias: { 5: 500 } }, 'logit_bias.5'],
    ];
    for (const [over, param] of chatCases) {
      it(`chat ${JSON.stringify(over)} -> 400 ${param}`, async () => {
        const body = { model: 'stories260K', messages: msg, max_tokens: 4, ...over };
        if ('messages' in over && over.messages === undefined) delete body.messages;
        await assert.rejects(client.chat.completions.create(body), (e) => assertApiError(e, 400, param));
      });
    }
    const completionCases = [
      [{ prompt: '' }, 'prompt'],
      [{ prompt: [] }, 'prompt'],
      [{ prompt: [1, 99999] }, 'prompt[1]'],
      [{ prompt: [-1] }, 'prompt[0]'],
      [{ prompt: ['a', 'b'] }, 'prompt'],
      [{ prompt: { text: 'x' } }, 'prompt'],
      [{ echo: true }, 'echo'],
      [{ best_of: 2 }, 'best_of'],
      [{ suffix: 'x' }, 'suffix'],
      [{ logprobs: 6 }, 'logprobs'],
    ];
    for (const [over, param] of completionCases) {
      it(`completion ${JSON.stringify(over)} -> 400 ${param}`, async () => {
        const body = { model: 'stories260K', prompt: 'Once', max_tokens: 4, ...over };
        await assert.rejects(client.completions.create(body), (e) => assertApiError(e, 400, param));
      });
    }
    it('context overflow -> 400 exceed_context_size_error with n_prompt_tokens and n_ctx', async () => {
      const long = 'the cat and the dog '.repeat(200);
      await assert.rejects(client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: long }] }),
        (e) => assertApiError(e, 400, 'messages', 'exceed_context_size_error', { named: false }) && e.error.n_ctx === CTX &&
               e.error.n_prompt_tokens > CTX);
      await assert.rejects(client.completions.create({ model: 'stories260K', prompt: long }),
        (e) => assertApiError(e, 400, 'prompt', 'exceed_context_size_error', { named: false }));
    });
    it('max_tokens beyond the context is clamped (finish_reason length), not refused', async () => {
      const r = await client.completions.create({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 100000,
                                                  ignore_eos: true, temperature: 0 });
      assert.equal(r.choices[0].finish_reason, 'length');
      assert.equal(r.usage.total_tokens, CTX);
    });
    it('malformed JSON, a non-object body and deep nesting -> 400 param body', async () => {
      for (const body of ['{"prompt": "x"', '[1, 2]', '['.repeat(100) + ']'.repeat(100), '{"prompt": "\\ud800"}']) {
        const r = await rawRequest(srv.port, { headers: { 'content-type': 'application/json' }, body });
        assert.equal(r.status, 400, body.slice(0, 20));
        const e = errorOf(r);
        assert.equal(e.type, 'invalid_request_error');
        assert.equal(e.param, 'body');
      }
      const bad = Buffer.from([0x7b, 0x22, 0x70, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);  // {"p":"\xff\xfe"}
      const r = await rawRequest(srv.port, { headers: { 'content-type': 'application/json' }, body: bad });
      assert.equal(r.status, 400);
    });
    it('chunked request body -> 411', async () => {
      const r = await rawRequest(srv.port, { headers: { 'content-type': 'application/json' }, chunked: true });
      assert.equal(r.status, 411);
      assert.match(errorOf(r).message, /Transfer-Encoding/);
    });
    it('compressed request body -> 415', async () => {
      const body = '{"prompt":"x"}';
      const r = await rawRequest(srv.port, { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip',
                                                        'content-length': body.length }, body });
      assert.equal(r.status, 415);
    });
    it('oversized body -> 413 before it is read', async () => {
      const r = await rawRequest(srv.port, { headers: { 'content-type': 'application/json', 'content-length': 9 << 20 },
                                             body: 'x'.repeat(64 << 10) });
      assert.equal(r.status, 413);
      assert.match(errorOf(r).message, /too large/);
    });
    it('oversized headers -> 431', async () => {
      const headers = {};
      for (let i = 0; i < 150; i++) headers[`x-h${i}`] = 'v';
      const r = await rawRequest(srv.port, { method: 'GET', path: '/health', headers });
      assert.equal(r.status, 431);
    });
    it('unknown path -> 404, wrong method -> 405', async () => {
      const a = await rawRequest(srv.port, { method: 'GET', path: '/v1/nothing' });
      assert.equal(a.status, 404);
      assert.equal(errorOf(a).type, 'not_found_error');
      const b = await rawRequest(srv.port, { method: 'GET', path: '/v1/chat/completions' });
      assert.equal(b.status, 405);
      assert.equal(b.headers.allow, 'POST');
      await assert.rejects(client.models.retrieve('nope'), (e) => assertApiError(e, 404, 'model', 'not_found_error'));
    });
    it('tokenize / detokenize field errors', async () => {
      const a = await rawRequest(srv.port, { path: '/tokenize', headers: { 'content-type': 'application/json' }, body: '{}' });
      assert.equal(a.status, 400);
      assert.equal(errorOf(a).param, 'content');
      const b = await rawRequest(srv.port, { path: '/detokenize', headers: { 'content-type': 'application/json' },
                                             body: '{"tokens":[1,99999]}' });
      assert.equal(b.status, 400);
      assert.equal(errorOf(b).param, 'tokens[1]');
    });
    it('still serves after all of the above', async () => {
      const r = await client.completions.create({ model: 'stories260K', prompt: 'Once', max_tokens: 3 });
      assert.ok(r.usage.completion_tokens >= 1);
    });
  });
});

describe('--api-key', () => {
  let srv;
  before(async () => {
    srv = await startServer(['--api-key', 'sekrit-key', '--ctx-size', '128']);
  });
  after(async () => {
    assert.equal(await srv.stop(), 0);
  });
  it('refuses a missing or wrong key with 401, keeps /health and /v1/models public', async () => {
    const body = { model: 'stories260K', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };
    await assert.rejects(srv.client({ apiKey: 'wrong' }).chat.completions.create(body),
                         (e) => assertApiError(e, 401, undefined, 'authentication_error'));
    const r = await rawRequest(srv.port, { path: '/v1/chat/completions', headers: { 'content-type': 'application/json' },
                                           body: JSON.stringify(body) });
    assert.equal(r.status, 401);
    assert.equal(errorOf(r).type, 'authentication_error');
    const ok = await srv.client({ apiKey: 'sekrit-key' }).chat.completions.create(body);
    assert.ok(ok.choices.length === 1);
    assert.equal((await fetch(`${srv.base}/health`)).status, 200);
    assert.equal((await srv.client({ apiKey: 'wrong' }).models.list()).data.length, 1);
  });
});

describe('options from JITLLM_ARG_* (llama-server\'s LLAMA_ARG_* convention)', () => {
  it('takes --alias and --parallel from the environment, the command line first', async () => {
    const env = { JITLLM_ARG_ALIAS: 'from-env', JITLLM_ARG_PARALLEL: '2' };
    let srv = await startServer([], { env });
    try {
      assert.deepEqual((await srv.client().models.list()).data.map((m) => m.id), ['from-env']);
      assert.match(srv.log(), /2 slot\(s\)/);
    } finally {
      assert.equal(await srv.stop(), 0);
    }
    srv = await startServer(['--alias', 'from-cli'], { env });
    try {
      assert.deepEqual((await srv.client().models.list()).data.map((m) => m.id), ['from-cli']);
    } finally {
      assert.equal(await srv.stop(), 0);
    }
  });
});

describe('queueing, 503, cancellation and shutdown (one slot, queue of one, slowed steps)', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--parallel', '1', '--queue-size', '1', '--ctx-size', '512', '--debug-step-delay-ms', '20']);
    client = srv.client();
  });
  after(async () => {
    await srv.stop();
  });

  const long = { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 400, ignore_eos: true, stream: true };

  it('503 with Retry-After when the slot and the queue are taken; /health still answers', async () => {
    const ac = new AbortController();
    const a = await client.completions.create(long, { signal: ac.signal });
    const it1 = a[Symbol.asyncIterator]();
    await it1.next();  // A holds the slot
    const b = client.completions.create({ ...long, stream: false, max_tokens: 3 });  // B waits in the queue
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_deferred')) === 1));
    await assert.rejects(client.completions.create({ ...long, stream: false }), (e) => {
      assertApiError(e, 503, undefined, 'unavailable_error');
      assert.equal(e.headers.get('retry-after'), '1');
      return true;
    });
    const h = await fetch(`${srv.base}/health`);
    assert.equal(h.status, 200);
    const hj = await h.json();
    assert.equal(hj.slots_processing, 1);
    assert.equal(hj.requests_deferred, 1);
    // the client disconnects: A's generation is cancelled and B gets the slot
    ac.abort();
    const rb = await b;
    assert.equal(rb.usage.completion_tokens, 3);
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_cancelled_total')) === 1));
    // B's response can reach the client before the scheduler retires its slot: wait for the gauge
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_processing')) === 0));
  });

  it('a non-streaming client that disconnects frees its slot too', async () => {
    const before = await metric(srv.base, 'jitllm:requests_cancelled_total');
    const ac = new AbortController();
    const p = client.completions.create({ ...long, stream: false }, { signal: ac.signal });
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_processing')) === 1));
    ac.abort();
    await assert.rejects(p);
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_cancelled_total')) === before + 1));
    assert.ok(await waitFor(async () => (await metric(srv.base, 'jitllm:requests_processing')) === 0));
  });

  it('SIGTERM: a running stream gets its final chunk and [DONE], the server exits 0', async () => {
    const s = await client.completions.create({ ...long, stream_options: { include_usage: true } });
    const chunks = [];
    let signalled = false;
    for await (const c of s) {
      chunks.push(c);
      if (!signalled) {
        signalled = true;
        srv.proc.kill('SIGTERM');
      }
    }
    const finals = chunks.filter((c) => c.choices.length && c.choices[0].finish_reason);
    assert.equal(finals.length, 1);
    assert.equal(finals[0].choices[0].finish_reason, 'length');
    const usage = chunks.at(-1).usage;
    assert.ok(usage && usage.completion_tokens < 400, 'the stream was not cut short');
    const code = srv.proc.exitCode ?? (await once(srv.proc, 'exit'))[0];
    assert.equal(code, 0, srv.log());
  });
});
