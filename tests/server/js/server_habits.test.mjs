// What a llama.cpp or ollama user expects of a server (issue 24): the openai client's
// models.retrieve, a real `created`, CORS for a browser page on another origin (--cors-origins),
// one access-log line per request (--log-format text|json), server-wide sampling defaults and
// --chat-template.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startServer } from './lib/server.mjs';

describe('a server with CORS and a JSON access log', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(['--alias', 'stories', '--cors-origins', 'http://app.example',
      '--log-format', 'json', '--api-key', 'k1']);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'k1', maxRetries: 0 });
  });
  after(async () => { await server?.stop(); });

  test('models.retrieve returns the served model; another id is a 404', async () => {
    const model = await client.models.retrieve('stories');
    assert.equal(model.id, 'stories');
    assert.equal(model.object, 'model');
    const now = Date.now() / 1000;
    assert.ok(model.created > now - 3600 && model.created <= now + 5, `created ${model.created}`);
    const list = await client.models.list();
    assert.equal(list.data[0].created, model.created);
    const missing = await client.models.retrieve('gpt-4').catch((e) => e);
    assert.equal(missing.status, 404);
  });

  test('/props has llama-server\'s fields', async () => {
    const props = await (await fetch(`${server.url}/props`, {
      headers: { Authorization: 'Bearer k1' },
    })).json();
    assert.equal(props.total_slots, 4);
    assert.ok(props.default_generation_settings.n_ctx > 0);
    assert.equal(props.default_generation_settings.params.temperature, 0.800000011920929);
    assert.equal(typeof props.chat_template, 'string');
    assert.match(props.model_path, /\.gguf$/);
  });

  test('a preflight from an allowed origin is answered, another origin is not', async () => {
    const ok = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://app.example', 'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type' },
    });
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('access-control-allow-origin'), 'http://app.example');
    assert.match(ok.headers.get('access-control-allow-headers'), /Authorization/);
    const other = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    assert.equal(other.status, 403);
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  test('responses to the allowed origin carry its CORS header, streams too', async () => {
    const reply = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { Origin: 'http://app.example', Authorization: 'Bearer k1',
        'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'stories', prompt: 'Once', max_tokens: 4, stream: true }),
    });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('access-control-allow-origin'), 'http://app.example');
    await reply.text();
    const unauthorized = await fetch(`${server.url}/v1/models`, {
      headers: { Origin: 'http://app.example' },
    });
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.headers.get('access-control-allow-origin'), 'http://app.example');
  });

  test('replies carry llama-server\'s timings', async () => {
    const reply = await client.completions.create({ model: 'stories', prompt: 'Tom', max_tokens: 6 });
    assert.equal(reply.timings.predicted_n, reply.usage.completion_tokens);
    assert.equal(reply.timings.prompt_n + reply.timings.cache_n, reply.usage.prompt_tokens);
    assert.ok(reply.timings.prompt_ms > 0 && reply.timings.predicted_per_second > 0);
  });

  test('every request leaves one JSON access-log line with its tokens', async () => {
    await client.completions.create({ model: 'stories', prompt: 'Lily', max_tokens: 5 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const lines = server.stderr().split('\n').filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    const completion = lines.filter((l) => l.path === '/v1/completions' && l.status === 200);
    assert.ok(completion.length >= 1, server.stderr());
    const last = completion.at(-1);
    assert.equal(last.method, 'POST');
    assert.ok(last.duration_ms > 0);
    assert.equal(last.completion_tokens, '5');
    assert.ok(Number(last.prompt_tokens) > 0 && Number(last.ttft_ms) > 0);
    assert.ok(lines.some((l) => l.method === 'OPTIONS' && l.status === 204));
    assert.ok(lines.some((l) => l.path === '/v1/models/gpt-4' && l.status === 404));
  });
});

test('the default text access log and --log-level warn silencing it', async () => {
  const chatty = await startServer(['--alias', 'stories']);
  try {
    await fetch(`${chatty.url}/v1/models`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.match(chatty.stderr(), /\d{4}-\d\d-\d\dT[\d:]+Z GET \/v1\/models 200 [\d.]+ms/);
  } finally {
    await chatty.stop();
  }
  const quiet = await startServer(['--alias', 'stories', '--log-level', 'warn']);
  try {
    await fetch(`${quiet.url}/v1/models`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.doesNotMatch(quiet.stderr(), /GET \/v1\/models 200/);
  } finally {
    await quiet.stop();
  }
});

// llama-server's --temp, --top-k, ... are the defaults of requests that do not set them (and
// /props reports them); a request's own field still wins. --chat-template FILE replaces the
// model's template (stories260K has none, so ChatML would be used).
describe('server-wide sampling defaults and --chat-template', () => {
  const kTemplate = '{% for m in messages %}Q: {{ m.content }}\n{% endfor %}' +
    '{% if add_generation_prompt %}A:{% endif %}';
  let dir;
  let server;
  let client;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-template-'));
    const file = path.join(dir, 'qa.jinja');
    fs.writeFileSync(file, kTemplate);
    server = await startServer(['--alias', 'stories', '--temp', '0', '--top-k', '7',
      '--repeat-penalty', '1.1', '--chat-template', file]);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(async () => {
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('/props reports the defaults and the replacement template', async () => {
    const props = await (await fetch(`${server.url}/props`)).json();
    const params = props.default_generation_settings.params;
    assert.equal(params.temperature, 0);
    assert.equal(params.top_k, 7);
    assert.equal(params.repeat_penalty, 1.100000023841858);
    assert.equal(props.chat_template, kTemplate);
  });

  test('requests without a temperature are greedy; one with its own samples', async () => {
    const ask = (extra) => client.completions.create({
      model: 'stories', prompt: 'Once upon a time', max_tokens: 24, ...extra,
    });
    const [a, b] = await Promise.all([ask({}), ask({})]);
    assert.equal(a.choices[0].text, b.choices[0].text);
    const texts = new Set();
    for (let seed = 1; seed <= 4; ++seed) {
      texts.add((await ask({ temperature: 1.5, seed })).choices[0].text);
    }
    assert.ok(texts.size > 1, 'a request\'s own temperature is used');
  });

  test('chat prompts are rendered with the replacement template', async () => {
    const [chat, plain] = await Promise.all([
      client.chat.completions.create({
        model: 'stories', messages: [{ role: 'user', content: 'Hi there' }], max_tokens: 4,
      }),
      client.completions.create({ model: 'stories', prompt: 'Q: Hi there\nA:', max_tokens: 4 }),
    ]);
    assert.equal(chat.usage.prompt_tokens, plain.usage.prompt_tokens);
  });
});

test('a --chat-template that is not a file or chatml stops the start with one error line',
  async () => {
    await assert.rejects(startServer(['--chat-template', '/nonexistent/template.jinja']),
      /no such file/);
  });

// llama-server's /slots: one entry per --parallel slot, idle ones not processing, busy ones
// with their request's progress.
test('/slots shows idle slots and the requests running in them', async () => {
  const server = await startServer(['--parallel', '2']);
  try {
    const idle = await (await fetch(`${server.url}/slots`)).json();
    assert.equal(idle.length, 2);
    for (const [i, slot] of idle.entries()) {
      assert.equal(slot.id, i);
      assert.equal(slot.is_processing, false);
      assert.ok(slot.n_ctx > 0);
    }
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
    let done = false;
    const requests = Promise.all([1, 2, 3, 4].map((seed) => client.completions.create({
      model: 'm', prompt: 'Once upon a time', max_tokens: 400, seed, temperature: 1,
    }))).finally(() => { done = true; });
    let busy = null;
    while (!done && !busy) {
      const slots = await (await fetch(`${server.url}/slots`)).json();
      busy = slots.find((s) => s.is_processing && s.next_token.n_decoded > 0) ?? null;
    }
    await requests;
    assert.ok(busy, 'a slot was seen processing');
    assert.ok(busy.n_prompt_tokens > 0);
    assert.equal(busy.next_token.n_decoded + busy.next_token.n_remain, 400);
    assert.ok(busy.id_task >= 0);
  } finally {
    await server.stop();
  }
});
