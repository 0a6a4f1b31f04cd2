// Prefix caching through strata serve, read by the official `openai` npm client: a repeated
// system prompt is reported as cached (usage.prompt_tokens_details.cached_tokens) and answered
// the same, cache_salt keeps requests apart, /metrics counts lookups and hits, and a server
// restarted on its --kv-cache-dir starts warm (another model's folder, or a torn page file, gives
// misses and a warning, never a crash).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { metricValue, startServer, strataBin } from './lib/server.mjs';

const kSystem = 'You are a storyteller. '.repeat(2) +
  'Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. ' +
  'One day, she saw a big red ball in the park. She ran to the ball and kicked it very high. ' +
  'The ball flew over the trees and landed in a pond.';

function chat(client, question, extra = {}) {
  return client.chat.completions.create({
    model: 'stories',
    messages: [{ role: 'system', content: kSystem }, { role: 'user', content: question }],
    max_tokens: 16,
    temperature: 0,
    ...extra,
  });
}

describe('one server', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(['--alias', 'stories']);
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(async () => { await server?.stop(); });

  test('the second request with the same system prompt reads it from the cache', async () => {
    const first = await chat(client, 'What did Lily see?');
    const second = await chat(client, 'Where did the ball land?');
    assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
    const cached = second.usage.prompt_tokens_details.cached_tokens;
    assert.ok(cached >= 64 && cached < second.usage.prompt_tokens, `cached_tokens ${cached}`);
    assert.equal(cached % 32, 0, 'whole KV pages');
    // The same question again: the same answer, nearly all of it cached.
    const again = await chat(client, 'What did Lily see?');
    assert.equal(again.choices[0].message.content, first.choices[0].message.content);
    assert.ok(again.usage.prompt_tokens_details.cached_tokens > cached);
  });

  test('a stream reports the cached tokens in its usage chunk', async () => {
    const stream = await chat(client, 'Who is Lily?', {
      stream: true, stream_options: { include_usage: true },
    });
    let usage = null;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    assert.ok(usage.prompt_tokens_details.cached_tokens >= 64);
  });

  test('another cache_salt shares nothing', async () => {
    const salted = await chat(client, 'What did Lily see?', { cache_salt: 'tenant-7' });
    assert.equal(salted.usage.prompt_tokens_details.cached_tokens, 0);
    const bad = await chat(client, 'x', { cache_salt: 7 }).catch((e) => e);
    assert.equal(bad.status, 400);
  });

  test('/metrics counts prefix cache lookups and hits in tokens', async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const queries = metricValue(text, 'strata:prefix_cache_queries_total');
    const hits = metricValue(text, 'strata:prefix_cache_hits_total');
    assert.ok(queries > hits && hits >= 128, `queries ${queries}, hits ${hits}`);
    assert.ok(metricValue(text, 'strata:prefix_cache_pages') > 0);
  });
});

describe('--kv-cache-dir', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-kv-cache-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function withServer(args, model, body) {
    const server = await startServer(['--alias', 'stories', ...args], model);
    try {
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
      return await body(client, server);
    } finally {
      await server.stop();
    }
  }

  test('a restarted server finds the pages its predecessor saved', async () => {
    const before = await withServer(['--kv-cache-dir', dir], undefined, async (client) => {
      const reply = await chat(client, 'What did Lily see?');
      assert.equal(reply.usage.prompt_tokens_details.cached_tokens, 0);
      return reply;
    });
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.kvpage'));
    assert.ok(files.length >= 2, `${files.length} page files`);
    await withServer(['--kv-cache-dir', dir], undefined, async (client) => {
      const reply = await chat(client, 'What did Lily see?');
      assert.ok(reply.usage.prompt_tokens_details.cached_tokens >= 64);
      assert.equal(reply.choices[0].message.content, before.choices[0].message.content);
    });
  });

  test('a torn page file is skipped with a warning', async () => {
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.kvpage'));
    const victim = path.join(dir, files[0]);
    fs.truncateSync(victim, Math.floor(fs.statSync(victim).size / 3));
    await withServer(['--kv-cache-dir', dir], undefined, async (client, server) => {
      assert.match(server.stderr(), /skipping a saved KV page: .*(truncated|checksum)/);
      const reply = await chat(client, 'What did Lily see?');
      assert.equal(reply.choices[0].finish_reason !== undefined, true);
    });
  });

  test("another model's folder gives misses and a warning", async () => {
    const other = path.join(dir, '..', `${path.basename(dir)}-other.gguf`);
    execFileSync(strataBin, ['synth', '--preset', 'tiny', '-o', other, '--seed', '3']);
    try {
      await withServer(['--kv-cache-dir', dir], other, async (client, server) => {
        assert.match(server.stderr(), /of another model or KV configuration; ignored/);
        const reply = await chat(client, 'What did Lily see?');
        assert.equal(reply.usage.prompt_tokens_details.cached_tokens, 0);
      });
    } finally {
      fs.rmSync(other, { force: true });
    }
  });
});
