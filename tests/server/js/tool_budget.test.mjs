// Tool calls under a small max_tokens, read by the official `openai` client: with tool_choice
// "required", every reply over 50 seeds at max_tokens 40, 60 and 100 is a parsed tool call or
// ends ("length") without raw protocol text in its content, streamed or not.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { startServer, strataBin } from './lib/server.mjs';

const kTools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city'],
    },
  },
}];

let server;
let client;
let model;
before(async () => {
  // The tiny synthetic model: its small vocabulary makes calls long, so budgets cut them.
  model = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'strata-tool-budget-')), 'tiny.gguf');
  execFileSync(strataBin, ['synth', '--preset', 'tiny', '-o', model]);
  server = await startServer(['--alias', 'tiny'], model);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
});
after(async () => {
  await server?.stop();
  fs.rmSync(path.dirname(model), { recursive: true, force: true });
});

function request(maxTokens, seed, extra = {}) {
  return client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: kTools,
    tool_choice: 'required',
    max_tokens: maxTokens,
    temperature: 1,
    seed,
    ...extra,
  });
}

function assertNoProtocolText(content, where) {
  assert.ok(!content || !/tool_calls|"name"|[{[]/.test(content), `${where}: content ${content}`);
}

test('non-streamed: a parsed call, or a cut reply with no protocol text', async () => {
  let calls = 0;
  for (const maxTokens of [40, 60, 100]) {
    for (let seed = 0; seed < 50; seed += 1) {
      const reply = await request(maxTokens, seed);
      const choice = reply.choices[0];
      if (choice.message.tool_calls?.length) {
        calls += 1;
        assert.equal(choice.finish_reason, 'tool_calls');
        JSON.parse(choice.message.tool_calls[0].function.arguments);
      } else {
        assert.equal(choice.finish_reason, 'length', `max_tokens ${maxTokens} seed ${seed}`);
        assertNoProtocolText(choice.message.content, `max_tokens ${maxTokens} seed ${seed}`);
      }
    }
  }
  assert.ok(calls > 0, 'some budgets are enough for a whole call');
});

test('streamed: no protocol text in the content deltas of a cut reply', async () => {
  for (const maxTokens of [40, 60]) {
    for (let seed = 0; seed < 10; seed += 1) {
      const stream = await request(maxTokens, seed, { stream: true });
      let content = '';
      for await (const chunk of stream) content += chunk.choices[0]?.delta?.content ?? '';
      assertNoProtocolText(content, `max_tokens ${maxTokens} seed ${seed}`);
    }
  }
});
