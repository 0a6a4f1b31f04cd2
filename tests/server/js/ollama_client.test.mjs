// strata serve through the `ollama` npm client: tools that speak ollama's API work unchanged.
// Greedy replies (temperature 0, fixed seed) are the fixed points: streamed and whole answers of
// /api/generate and /api/chat must agree, and /api/generate with raw must equal the OpenAI
// completion of the same prompt.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { startServer } from './lib/server.mjs';

let server;
let ollama;

before(async () => {
  server = await startServer(['--alias', 'stories']);
  ollama = new Ollama({ host: server.url });
});
after(async () => { await server?.stop(); });

const kOptions = { temperature: 0, seed: 7, num_predict: 24 };

test('version, tags and show describe the served model', async () => {
  const { version } = await ollama.version();
  assert.match(version, /^\d+\.\d+\.\d+$/);
  const { models } = await ollama.list();
  assert.equal(models.length, 1);
  assert.equal(models[0].name, 'stories');
  assert.equal(models[0].details.format, 'gguf');
  assert.equal(models[0].details.family, 'llama');
  assert.ok(models[0].size > 0);
  const show = await ollama.show({ model: 'stories' });
  assert.equal(show.model_info['general.architecture'], 'llama');
  assert.ok(show.model_info['llama.context_length'] > 0);
});

test('generate: streamed parts add up to the whole reply, and raw equals the OpenAI completion', async () => {
  const prompt = 'Once upon a time, there was a little dog';
  const whole = await ollama.generate({ model: 'stories', prompt, raw: true, options: kOptions });
  assert.equal(whole.done, true);
  assert.ok(['stop', 'length'].includes(whole.done_reason));
  assert.ok(whole.eval_count > 0 && whole.eval_count <= kOptions.num_predict);
  assert.ok(whole.prompt_eval_count > 0);
  assert.ok(whole.response.length > 0);
  let streamed = '';
  let last;
  for await (const part of await ollama.generate({
    model: 'stories', prompt, raw: true, stream: true, options: kOptions,
  })) {
    streamed += part.response;
    last = part;
  }
  assert.equal(streamed, whole.response);
  assert.equal(last.done, true);
  assert.equal(last.eval_count, whole.eval_count);
  const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
  const completion = await openai.completions.create({
    model: 'stories', prompt, max_tokens: kOptions.num_predict, temperature: 0, seed: 7,
  });
  assert.equal(completion.choices[0].text, whole.response);
});

test('chat: streamed and whole replies agree', async () => {
  const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
  const whole = await ollama.chat({ model: 'stories', messages, options: kOptions });
  assert.equal(whole.message.role, 'assistant');
  assert.equal(whole.done, true);
  let streamed = '';
  for await (const part of await ollama.chat({
    model: 'stories', messages, stream: true, options: kOptions,
  })) {
    streamed += part.message.content;
  }
  assert.equal(streamed, whole.message.content);
});

test('format "json" constrains the reply to a JSON object', async () => {
  const r = await ollama.generate({
    model: 'stories', prompt: 'A dog', raw: true, format: 'json', options: { ...kOptions, num_predict: 64 },
  });
  if (r.done_reason === 'stop') assert.equal(typeof JSON.parse(r.response), 'object');
  assert.match(r.response, /^\s*\{/);
});

test('errors come back as ollama errors', async () => {
  await assert.rejects(ollama.chat({ model: 'stories', messages: 'hello' }), /messages/);
  await assert.rejects(
    ollama.generate({ model: 'stories', prompt: 'x', options: { temperature: 'hot' } }),
    /temperature/,
  );
  // stories260K has no pooling: /api/embed says how to start the server instead.
  await assert.rejects(ollama.embed({ model: 'stories', input: 'hello' }), /--pooling/);
});
