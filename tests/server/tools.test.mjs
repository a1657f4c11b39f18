// Tool calling and chat-template variables through the real `openai` client (v6): `jitllm serve`
// with the bundled stories260K model rendering chats by a real chat template
// (--chat-template-file: Qwen2.5's, Qwen3's, Llama 3.3's and Mistral Nemo's from
// tests/data/templates). The tiny model does not call tools of itself; what is checked is the
// protocol: tools, tool_choice, tool messages and chat_template_kwargs are accepted, change the
// prompt as the template says (usage.prompt_tokens), and the responses, streamed or not, have
// OpenAI's shape. With tool_choice "required" or a named function the reply is a call whatever
// the model "wants" (constrained output): its name is a tool's and its arguments validate against
// the tool's parameters, in each template's call syntax. Turning replies into tool_calls is
// tool_calls_test (serve_units_test).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const templates = path.join(process.env.JITLLM_TEST_DATA_DIR || path.join(here, '..', 'data'), 'templates');

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Get the current weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
  {
    type: 'function',
    function: { name: 'add', description: 'Add two numbers', parameters: { type: 'object', properties: {} } },
  },
];
const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
const history = [
  ...ask,
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'call12345', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
  },
  { role: 'tool', tool_call_id: 'call12345', content: '21 degrees, clear' },
];

function assertChoice(r) {
  assert.equal(r.object, 'chat.completion');
  const c = r.choices[0];
  assert.equal(c.message.role, 'assistant');
  assert.ok(['stop', 'length', 'tool_calls'].includes(c.finish_reason), c.finish_reason);
  if (c.finish_reason === 'tool_calls') assert.ok(Array.isArray(c.message.tool_calls) && c.message.tool_calls.length);
  else assert.equal(typeof c.message.content, 'string');
  return c;
}

describe('tools with a Qwen2.5 template', () => {
  let srv, client;
  const base = { model: 'stories260K', max_tokens: 6, temperature: 0 };

  before(async () => {
    srv = await startServer(['--ctx-size', '2048', '--chat-template-file', path.join(templates, 'qwen2.5-instruct.jinja')]);
    client = srv.client();
  });
  after(async () => {
    if (srv) assert.equal(await srv.stop(), 0);
  });

  it('renders the tools into the prompt and answers in the chat.completion shape', async () => {
    const plain = await client.chat.completions.create({ ...base, messages: ask });
    const withTools = await client.chat.completions.create({ ...base, messages: ask, tools });
    assertChoice(plain);
    assertChoice(withTools);
    // the template's "# Tools" section and the two function signatures
    assert.ok(withTools.usage.prompt_tokens > plain.usage.prompt_tokens + 100,
              `${withTools.usage.prompt_tokens} vs ${plain.usage.prompt_tokens}`);
    const none = await client.chat.completions.create({ ...base, messages: ask, tools, tool_choice: 'none' });
    assert.equal(none.usage.prompt_tokens, plain.usage.prompt_tokens);
    const one = await client.chat.completions.create({
      ...base, max_tokens: 64, messages: ask, tools, tool_choice: { type: 'function', function: { name: 'add' } },
    });
    assert.ok(one.usage.prompt_tokens < withTools.usage.prompt_tokens);  // only the named function is shown
    assert.ok(one.usage.prompt_tokens > plain.usage.prompt_tokens);
  });

  it('takes tool calls and tool results in the history', async () => {
    const r = await client.chat.completions.create({ ...base, messages: history, tools });
    assertChoice(r);
    const shorter = await client.chat.completions.create({ ...base, messages: ask, tools });
    assert.ok(r.usage.prompt_tokens > shorter.usage.prompt_tokens);
  });

  it('streams with tools: deltas, then one finish_reason', async () => {
    const stream = await client.chat.completions.create({
      ...base, messages: history, tools, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    const finishes = [];
    let usage = null;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (typeof c.delta.content === 'string') text += c.delta.content;
        if (c.delta.tool_calls) for (const t of c.delta.tool_calls) assert.equal(typeof t.function.name, 'string');
        if (c.finish_reason) finishes.push(c.finish_reason);
      }
    }
    assert.equal(finishes.length, 1);
    assert.ok(['stop', 'length', 'tool_calls'].includes(finishes[0]));
    assert.ok(usage && usage.completion_tokens >= 1);
    assert.equal(typeof text, 'string');
  });

  it('refuses a tool_choice naming no tool, and tools the model cannot be shown', async () => {
    await assert.rejects(
      client.chat.completions.create({ ...base, messages: ask, tools, tool_choice: { type: 'function', function: { name: 'nope' } } }),
      (e) => e.status === 400 && e.param === 'tool_choice');
    await assert.rejects(client.chat.completions.create({ ...base, messages: ask, tool_choice: 'required' }),
                         (e) => e.status === 400 && e.param === 'tool_choice');
  });
});

describe('chat_template_kwargs with a Qwen3 template', () => {
  let srv, client;
  before(async () => {
    srv = await startServer(['--ctx-size', '1024', '--chat-template-file', path.join(templates, 'qwen3.jinja')]);
    client = srv.client();
  });
  after(async () => {
    if (srv) assert.equal(await srv.stop(), 0);
  });

  it('enable_thinking=false adds the empty think block to the prompt', async () => {
    const base = { model: 'stories260K', max_tokens: 4, temperature: 0, messages: ask };
    const thinking = await client.chat.completions.create(base);
    const direct = await client.chat.completions.create({ ...base, chat_template_kwargs: { enable_thinking: false } });
    assertChoice(thinking);
    assertChoice(direct);
    // "<think>\n\n</think>\n\n" as the bundled vocabulary spells it: more tokens
    assert.ok(direct.usage.prompt_tokens > thinking.usage.prompt_tokens,
              `${direct.usage.prompt_tokens} vs ${thinking.usage.prompt_tokens}`);
    await assert.rejects(client.chat.completions.create({ ...base, chat_template_kwargs: 'x' }),
                         (e) => e.status === 400 && e.param === 'chat_template_kwargs');
  });
});

// The calls of a streamed reply: the tool_calls deltas put together (OpenAI's stream shape).
async function streamedCalls(stream) {
  const calls = [];
  const finishes = [];
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      for (const t of c.delta.tool_calls ?? []) {
        if (!calls[t.index]) calls[t.index] = { id: t.id, type: t.type, function: { name: '', arguments: '' } };
        calls[t.index].function.name += t.function?.name ?? '';
        calls[t.index].function.arguments += t.function?.arguments ?? '';
      }
      if (c.finish_reason) finishes.push(c.finish_reason);
    }
  }
  return { calls, finishes };
}

for (const [family, file] of [['Qwen2.5 (<tool_call>)', 'qwen2.5-instruct.jinja'],
                              ['Llama 3.3 (JSON)', 'llama-3.3-instruct.jinja'],
                              ['Mistral Nemo ([TOOL_CALLS])', 'mistral-nemo-instruct-2407.jinja']]) {
  describe(`forced tool calls with a ${family} template`, () => {
    let srv, client;
    const base = { model: 'stories260K', max_tokens: 80, temperature: 0, messages: ask, tools };
    before(async () => {
      srv = await startServer(['--ctx-size', '2048', '--chat-template-file', path.join(templates, file)]);
      client = srv.client();
    });
    after(async () => {
      if (srv) assert.equal(await srv.stop(), 0);
    });

    function assertWeatherCall(calls) {
      assert.equal(calls.length, 1);
      assert.equal(calls[0].type, 'function');
      assert.ok(calls[0].id.length >= 9, calls[0].id);
      assert.equal(calls[0].function.name, 'get_weather');
      const args = JSON.parse(calls[0].function.arguments);
      assert.deepEqual(Object.keys(args), ['city']);
      assert.equal(typeof args.city, 'string');
    }

    it('a named function: one call of it, its arguments of its schema, streamed or not', async () => {
      const tool_choice = { type: 'function', function: { name: 'get_weather' } };
      const r = await client.chat.completions.create({ ...base, tool_choice });
      assert.equal(r.choices[0].finish_reason, 'tool_calls');
      assert.equal(r.choices[0].message.content, null);
      assertWeatherCall(r.choices[0].message.tool_calls);
      const s = await streamedCalls(await client.chat.completions.create({ ...base, tool_choice, stream: true }));
      assert.deepEqual(s.finishes, ['tool_calls']);
      assertWeatherCall(s.calls);
    });

    it('required: a call of one of the tools', async () => {
      for (const seed of [1, 2, 3]) {
        const r = await client.chat.completions.create({ ...base, tool_choice: 'required', temperature: 1, seed });
        assert.equal(r.choices[0].finish_reason, 'tool_calls');
        const [call] = r.choices[0].message.tool_calls;
        assert.ok(['get_weather', 'add'].includes(call.function.name), call.function.name);
        const args = JSON.parse(call.function.arguments);
        assert.equal(typeof args, 'object');
        assert.ok(args !== null && !Array.isArray(args));
      }
    });

    it('refuses parameters constrained output does not take, and a budget too small for the call', async () => {
      const odd = [{ type: 'function', function: { name: 'f', parameters: { type: 'string', pattern: 'a+' } } }];
      await assert.rejects(
        client.chat.completions.create({ ...base, tools: odd, tool_choice: 'required' }),
        (e) => e.status === 400 && e.param === 'tools' && /pattern/.test(e.message));
      await assert.rejects(
        client.chat.completions.create({ ...base, max_tokens: 5, tool_choice: 'required' }),
        (e) => e.status === 400 && e.param === 'max_tokens');
    });
  });
}
