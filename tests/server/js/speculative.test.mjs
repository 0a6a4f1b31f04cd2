// Speculative decoding through strata serve, read by the official `openai` npm client: streamed
// greedy answers with n-gram guesses equal those without (the request's `speculative` extension
// turns them off), with several streams at once, and /metrics counts the guesses. stories260K
// costs as much per guessed position as per token, so guesses would rarely pay: --draft-min
// makes every step guess.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { metricValue, startServer } from './lib/server.mjs';

let server;
let client;
before(async () => {
  server = await startServer(['--alias', 'stories', '--spec', 'ngram', '--draft-min', '2', '--parallel', '4']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
});
after(async () => { await server?.stop(); });

async function streamed(prompt, speculative) {
  const stream = await client.completions.create({
    model: 'stories', prompt, max_tokens: 160, temperature: 0, stream: true,
    ...(speculative ? { speculative } : {}),
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  return text;
}

test('streamed answers with guesses equal those without, four streams at once', async () => {
  const prompts = ['Once upon a time', 'Lily and Tom', 'The dog ran', 'One day, a little'];
  const plain = await Promise.all(prompts.map((p) => streamed(p, { type: 'none' })));
  const guessed = await Promise.all(prompts.map((p) => streamed(p)));
  assert.deepEqual(guessed, plain);
  const capped = await streamed(prompts[0], { n_max: 2 });
  assert.equal(capped, plain[0]);
});

test('/metrics counts drafts, guesses and accepted guesses by position', async () => {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const drafts = metricValue(text, 'strata:spec_decode_num_drafts_total');
  const guessed = metricValue(text, 'strata:spec_decode_num_draft_tokens_total');
  const accepted = metricValue(text, 'strata:spec_decode_num_accepted_tokens_total');
  assert.ok(drafts > 0 && guessed >= drafts && accepted <= guessed, text);
  assert.match(text, /strata:spec_decode_num_accepted_tokens_per_pos_total\{position="0"\} \d+/);
});

test('a bad speculative field is a 400 naming it', async () => {
  const error = await streamed('x', { type: 'eagle' }).catch((e) => e);
  assert.equal(error.status, 400);
  assert.match(error.message, /speculative\.type/);
});
