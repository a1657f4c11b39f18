// Constrained output through the real `openai` client (v6): `response_format` json_schema with 100
// random schemas (a seeded generator below) and json_object, on the bundled stories260K model,
// streamed and not. Whatever the model "wants" to say, the reply must parse and validate against
// the schema (a validator written here, independent of the server's matcher).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './helpers.mjs';

// mulberry32: a small seeded generator, so that the schemas are the same on every run
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomSchema(r, depth = 0) {
  const pick = (n) => Math.floor(r() * n);
  const kind = depth >= 2 ? 3 + pick(7) : pick(10);
  switch (kind) {
    case 0:
    case 1: {
      const names = ['id', 'name', 'tags', 'score', 'ok', 'kind', 'items', 'note'];
      const properties = {};
      const required = [];
      for (let i = 0, n = 1 + pick(4); i < n; ++i) {
        const k = names[pick(names.length)];
        properties[k] = randomSchema(r, depth + 1);
        if (r() < 0.6 && !required.includes(k)) required.push(k);
      }
      const s = { type: 'object', properties, required };
      if (r() < 0.5) s.additionalProperties = false;
      return s;
    }
    case 2: {
      const s = { type: 'array', items: randomSchema(r, depth + 1) };
      const lo = pick(3);
      if (r() < 0.5) s.minItems = lo;
      if (r() < 0.5) s.maxItems = lo + pick(3);
      return s;
    }
    case 3: return r() < 0.5 ? { type: 'string' } : { type: 'string', maxLength: 1 + pick(12) };
    case 4: return { type: 'integer' };
    case 5: return { type: 'number' };
    case 6: return { type: 'boolean' };
    case 7: return { type: ['string', 'null'] };
    case 8: return { enum: ['red', 'green', 7, null] };
    default: return { const: r() < 0.5 ? 'fixed' : 42 };
  }
}

function validates(v, s) {
  if ('const' in s) return JSON.stringify(v) === JSON.stringify(s.const);
  if ('enum' in s) return s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v));
  const type = (t) => {
    switch (t) {
      case 'object': return v !== null && typeof v === 'object' && !Array.isArray(v);
      case 'array': return Array.isArray(v);
      case 'string': return typeof v === 'string';
      case 'number': return typeof v === 'number';
      case 'integer': return Number.isInteger(v);
      case 'boolean': return typeof v === 'boolean';
      case 'null': return v === null;
      default: return false;
    }
  };
  if ('type' in s && !(Array.isArray(s.type) ? s.type : [s.type]).some(type)) return false;
  if (type('object')) {
    for (const k of s.required || []) if (!(k in v)) return false;
    for (const [k, x] of Object.entries(v)) {
      if (s.properties && k in s.properties) {
        if (!validates(x, s.properties[k])) return false;
      } else if (s.additionalProperties === false) {
        return false;
      }
    }
  }
  if (Array.isArray(v)) {
    if (s.minItems !== undefined && v.length < s.minItems) return false;
    if (s.maxItems !== undefined && v.length > s.maxItems) return false;
    if (s.items && !v.every((x) => validates(x, s.items))) return false;
  }
  if (typeof v === 'string' && s.maxLength !== undefined && [...v].length > s.maxLength) return false;
  return true;
}

describe('response_format: constrained JSON', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--ctx-size', '1024', '--parallel', '2']);
    client = srv.client();
  });
  after(async () => {
    if (srv) assert.equal(await srv.stop(), 0);
  });

  it('100 random schemas: every reply parses and validates, streamed and not', async () => {
    const r = rng(20260507);
    const messages = [{ role: 'user', content: 'Once upon a time' }];
    let stops = 0;
    for (let i = 0; i < 100; ++i) {
      const schema = randomSchema(r);
      const body = {
        model: 'stories260K', messages, max_tokens: 300, temperature: 1.0, seed: i,
        response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema, strict: true } },
      };
      let text = '';
      let finish = null;
      if (i % 2) {
        const stream = await client.chat.completions.create({ ...body, stream: true });
        for await (const chunk of stream)
          for (const c of chunk.choices) {
            if (typeof c.delta.content === 'string') text += c.delta.content;
            if (c.finish_reason) finish = c.finish_reason;
          }
      } else {
        const res = await client.chat.completions.create(body);
        text = res.choices[0].message.content;
        finish = res.choices[0].finish_reason;
      }
      let value;
      assert.doesNotThrow(() => { value = JSON.parse(text); }, `schema ${JSON.stringify(schema)}: ${text}`);
      assert.ok(validates(value, schema), `schema ${JSON.stringify(schema)}: ${text}`);
      // the model ends the value, or max_tokens came first: the mask closed it within the budget
      assert.ok(finish === 'stop' || finish === 'length', finish);
      stops += finish === 'stop';
    }
    assert.ok(stops > 0);
  });

  it('json_object gives an object', async () => {
    for (let seed = 0; seed < 5; ++seed) {
      const res = await client.chat.completions.create({
        model: 'stories260K', messages: [{ role: 'user', content: 'Tell me' }], max_tokens: 60, temperature: 1,
        seed, response_format: { type: 'json_object' },
      });
      const v = JSON.parse(res.choices[0].message.content);
      assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v));
    }
  });

  it('refuses schemas it cannot enforce and budgets too small for them', async () => {
    const base = { model: 'stories260K', messages: [{ role: 'user', content: 'x' }] };
    const schema = { type: 'object', properties: { long_property_name: { type: 'string' } }, required: ['long_property_name'] };
    await assert.rejects(
      client.chat.completions.create({ ...base, max_tokens: 5, response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } }),
      (e) => e.status === 400 && e.param === 'max_tokens');
    await assert.rejects(
      client.chat.completions.create({ ...base, response_format: { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'integer', minimum: 3 } } } }),
      (e) => e.status === 400 && e.param === 'response_format.json_schema.schema' && e.message.includes('minimum'));
  });
});
