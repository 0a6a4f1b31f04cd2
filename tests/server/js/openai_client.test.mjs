// strata serve through the official `openai` npm client: what an existing application sees.
// Greedy answers (temperature 0) are the fixed points: a streamed answer, a completion of the
// same prompt and each of n choices must reproduce them exactly.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { assertSchema } from './lib/schemas.mjs';
import { startServer } from './lib/server.mjs';

const kApiKey = 'test-key-8f3a';
const kMaxTokens = 48;
const kMessages = [{ role: 'user', content: 'Tell me a story about a cat.' }];
const kPrompt = 'Once upon a time, there was a little dog';

let server;
let client;
let model;

before(async () => {
  server = await startServer(['--api-key', kApiKey, '--alias', 'stories']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: kApiKey, maxRetries: 0 });
  model = 'stories';
});
after(async () => {
  await server?.stop();
});

// Every whole response and every streamed chunk is checked against OpenAI's schema.
async function checked(request, name) {
  const result = await request;
  if (typeof result[Symbol.asyncIterator] !== 'function') {
    assertSchema(name, result);
    return result;
  }
  return (async function* chunks() {
    for await (const chunk of result) {
      assertSchema(name.endsWith('.completion') ? `${name}.chunk` : name, chunk);
      yield chunk;
    }
  })();
}

function greedyChat(extra = {}) {
  return checked(client.chat.completions.create({
    model, messages: kMessages, max_tokens: kMaxTokens, temperature: 0, ...extra,
  }), 'chat.completion');
}

function greedyCompletion(extra = {}) {
  return checked(client.completions.create({
    model, prompt: kPrompt, max_tokens: kMaxTokens, temperature: 0, ...extra,
  }), 'text_completion');
}

function assertUsage(usage) {
  assert.ok(Number.isInteger(usage.prompt_tokens) && usage.prompt_tokens > 0, 'prompt_tokens');
  assert.ok(Number.isInteger(usage.completion_tokens) && usage.completion_tokens > 0);
  assert.ok(usage.completion_tokens <= kMaxTokens, 'completion_tokens within max_tokens');
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

// Collects a stream of chunks: the concatenated text per choice index, finish reasons, ids,
// and the usage of a usage-only chunk.
async function collect(stream, textOf) {
  const texts = new Map();
  const finish = new Map();
  const ids = new Set();
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    ids.add(chunk.id);
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      texts.set(choice.index, (texts.get(choice.index) ?? '') + (textOf(choice) ?? ''));
      if (choice.finish_reason) finish.set(choice.index, choice.finish_reason);
    }
  }
  return { texts, finish, ids, usage, chunks };
}

describe('models', () => {
  test('models.list names the served model', async () => {
    const page = await client.models.list();
    assertSchema('model list', { object: page.object, data: page.data });
    const ids = page.data.map((m) => m.id);
    assert.ok(ids.includes(model), `model list ${JSON.stringify(ids)} lacks the --alias`);
    for (const m of page.data) {
      assert.equal(m.object, 'model');
      assert.ok(Number.isInteger(m.created));
      assert.equal(typeof m.owned_by, 'string');
    }
  });
});

describe('chat completions', () => {
  test('non-streamed answer has the OpenAI shape', async () => {
    const reply = await greedyChat();
    assert.match(reply.id, /\S/);
    assert.equal(reply.object, 'chat.completion');
    assert.ok(Number.isInteger(reply.created) && reply.created > 1.6e9, 'created is Unix seconds');
    assert.equal(reply.model, model);
    assert.equal(reply.choices.length, 1);
    const [choice] = reply.choices;
    assert.equal(choice.index, 0);
    assert.equal(choice.message.role, 'assistant');
    assert.ok(choice.message.content.length > 0, 'an answer');
    assert.ok(['stop', 'length'].includes(choice.finish_reason), choice.finish_reason);
    assertUsage(reply.usage);
    if (choice.finish_reason === 'length') assert.equal(reply.usage.completion_tokens, kMaxTokens);
  });

  test('streamed greedy answer concatenates to the non-streamed one', async () => {
    const reply = await greedyChat();
    const stream = await greedyChat({ stream: true });
    const got = await collect(stream, (c) => c.delta?.content);
    assert.ok(got.chunks > 2, 'the answer arrives in several chunks');
    assert.equal(got.ids.size, 1, 'every chunk carries the same id');
    assert.equal(got.texts.get(0), reply.choices[0].message.content);
    assert.equal(got.finish.get(0), reply.choices[0].finish_reason);
    assert.equal(got.usage, null, 'no usage chunk unless stream_options.include_usage');
  });

  test('stream_options.include_usage ends with a usage chunk equal to the non-streamed usage',
    async () => {
      const reply = await greedyChat();
      const stream = await greedyChat({ stream: true, stream_options: { include_usage: true } });
      let last = null;
      let text = '';
      for await (const chunk of stream) {
        last = chunk;
        text += chunk.choices[0]?.delta?.content ?? '';
      }
      assert.deepEqual(last.choices, [], 'the usage chunk has no choices');
      assert.deepEqual(last.usage, reply.usage);
      assert.equal(text, reply.choices[0].message.content);
    });

  // A batch of two sequences multiplies in other tiles than one sequence alone (and the second
  // request finds its prompt's first page cached), so logits may differ in the last bits: the
  // choices must be the single answer's tokens up to its first near tie, where those bits may
  // pick either token.
  test('n: 2 greedy gives two choices, each the greedy answer up to a near tie', async () => {
    const single = await greedyChat({ logprobs: true, top_logprobs: 2 });
    const reply = await greedyChat({ n: 2, logprobs: true });
    assert.deepEqual(reply.choices.map((c) => c.index), [0, 1]);
    const want = single.choices[0].logprobs.content;
    const tie = want.findIndex((t) => t.top_logprobs.length > 1 &&
                                      t.top_logprobs[0].logprob - t.top_logprobs[1].logprob < 1e-3);
    const sure = tie < 0 ? want.length : tie;
    assert.ok(sure >= 4, `a near tie at token ${tie} leaves too little to compare`);
    for (const choice of reply.choices) {
      const got = choice.logprobs.content.map((t) => t.token);
      assert.deepEqual(got.slice(0, sure), want.slice(0, sure).map((t) => t.token));
      assert.equal(choice.message.content, reply.choices[0].message.content);
    }
    assert.equal(reply.usage.prompt_tokens, single.usage.prompt_tokens);
    assert.equal(reply.usage.completion_tokens, 2 * reply.choices[0].logprobs.content.length);
  });

  test('n: 2 streamed keeps the choices apart', async () => {
    const whole = await greedyChat({ n: 2 });
    const stream = await greedyChat({ n: 2, stream: true });
    const got = await collect(stream, (c) => c.delta?.content);
    assert.deepEqual([...got.texts.keys()].sort(), [0, 1]);
    for (const index of [0, 1]) {
      assert.equal(got.texts.get(index), whole.choices[index].message.content);
    }
  });

  test('a stop string ends the answer before its first occurrence', async () => {
    const full = (await greedyChat()).choices[0].message.content;
    // A word from the middle of the greedy answer: the answer must end right before it.
    const words = full.match(/ [A-Za-z]{3,}/g) ?? [];
    assert.ok(words.length >= 3, `greedy answer too short to pick a stop word: ${full}`);
    const stop = words[Math.floor(words.length / 2)];
    const cut = full.indexOf(stop);
    assert.ok(cut > 0);
    for (const stopField of [stop, ['never-appears-xyz', stop]]) {
      const reply = await greedyChat({ stop: stopField });
      assert.equal(reply.choices[0].message.content, full.slice(0, cut));
      assert.equal(reply.choices[0].finish_reason, 'stop');
      const stream = await greedyChat({ stop: stopField, stream: true });
      const got = await collect(stream, (c) => c.delta?.content);
      assert.equal(got.texts.get(0), full.slice(0, cut), 'streamed text withholds the stop string');
      assert.equal(got.finish.get(0), 'stop');
    }
  });

  test('logprobs: one entry per token, greedy token is the top alternative', async () => {
    const reply = await greedyChat({ logprobs: true, top_logprobs: 3 });
    const { content } = reply.choices[0].logprobs;
    assert.equal(content.length, reply.usage.completion_tokens);
    assert.equal(content.map((t) => t.token).join(''), reply.choices[0].message.content);
    for (const entry of content) {
      assert.ok(entry.logprob <= 0, `logprob ${entry.logprob} is a log of a probability`);
      assert.equal(entry.top_logprobs.length, 3);
      const tops = entry.top_logprobs.map((t) => t.logprob);
      assert.deepEqual(tops, [...tops].sort((a, b) => b - a), 'alternatives best first');
      assert.equal(entry.top_logprobs[0].token, entry.token, 'greedy picks the most likely');
      assert.ok(Math.abs(entry.top_logprobs[0].logprob - entry.logprob) < 1e-4);
      assert.ok(Array.isArray(entry.bytes));
      assert.equal(Buffer.from(entry.bytes).toString('utf8'), entry.token);
    }
    const plain = await greedyChat();
    assert.equal(plain.choices[0].logprobs ?? null, null, 'no logprobs unless asked');
  });

  test('the same seed gives the same sampled answer', async () => {
    const sampled = (seed) => client.chat.completions.create({
      model, messages: kMessages, max_tokens: kMaxTokens, temperature: 1.0, seed,
    }).then((r) => r.choices[0].message.content);
    const first = await sampled(1234);
    assert.equal(await sampled(1234), first);
    // Four other seeds all reproducing the same 48 sampled tokens would mean the seed is ignored.
    const others = await Promise.all([1, 2, 3, 4].map(sampled));
    assert.ok(others.some((text) => text !== first), 'different seeds give different answers');
  });
});

describe('completions', () => {
  test('non-streamed completion has the OpenAI shape', async () => {
    const reply = await greedyCompletion();
    assert.equal(reply.object, 'text_completion');
    assert.equal(reply.model, model);
    assert.equal(reply.choices.length, 1);
    assert.ok(reply.choices[0].text.length > 0);
    assert.ok(['stop', 'length'].includes(reply.choices[0].finish_reason));
    assertUsage(reply.usage);
  });

  test('streamed completion concatenates to the non-streamed one, with usage on request',
    async () => {
      const reply = await greedyCompletion();
      const stream = await greedyCompletion({
        stream: true, stream_options: { include_usage: true },
      });
      const got = await collect(stream, (c) => c.text);
      assert.equal(got.texts.get(0), reply.choices[0].text);
      assert.equal(got.finish.get(0), reply.choices[0].finish_reason);
      assert.deepEqual(got.usage, reply.usage);
    });

  test('a prompt array gives one choice per prompt', async () => {
    const one = await greedyCompletion();
    const other = await greedyCompletion({ prompt: 'The sun' });
    const both = await greedyCompletion({ prompt: [kPrompt, 'The sun'] });
    assert.deepEqual(both.choices.map((c) => c.text), [one.choices[0].text, other.choices[0].text]);
  });

  test('completion logprobs list each token and its alternatives', async () => {
    const reply = await greedyCompletion({ logprobs: 2 });
    const { tokens, token_logprobs: logprobs, top_logprobs: tops } = reply.choices[0].logprobs;
    assert.equal(tokens.length, reply.usage.completion_tokens);
    assert.equal(tokens.join(''), reply.choices[0].text);
    assert.equal(logprobs.length, tokens.length);
    tokens.forEach((token, i) => {
      assert.ok(logprobs[i] <= 0);
      assert.equal(Object.keys(tops[i]).length, 2);
      assert.ok(Math.abs(tops[i][token] - logprobs[i]) < 1e-4, 'greedy token among the top 2');
    });
  });

  test('max_tokens: 1 returns one token with finish_reason length', async () => {
    const reply = await greedyCompletion({ max_tokens: 1 });
    assert.equal(reply.usage.completion_tokens, 1);
    assert.equal(reply.choices[0].finish_reason, 'length');
  });
});

describe('errors through the client', () => {
  test('a wrong API key is a 401 AuthenticationError', async () => {
    const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (error) => {
      assert.ok(error instanceof OpenAI.AuthenticationError, error.constructor.name);
      assert.equal(error.status, 401);
      assert.equal(typeof error.error?.message, 'string');
      return true;
    });
    await assert.rejects(
      wrong.chat.completions.create({ model, messages: kMessages }),
      OpenAI.AuthenticationError,
    );
  });

  test('a field of the wrong type is a 400 BadRequestError naming the field', async () => {
    await assert.rejects(greedyChat({ temperature: 'hot' }), (error) => {
      assert.ok(error instanceof OpenAI.BadRequestError, error.constructor.name);
      assert.equal(error.status, 400);
      assert.equal(error.type, 'invalid_request_error');
      assert.ok(error.param === 'temperature' || /temperature/.test(error.message), error.message);
      return true;
    });
  });

  test('the server still serves after the errors', async () => {
    const reply = await greedyChat({ max_tokens: 4 });
    assert.equal(reply.usage.completion_tokens, 4);
    assert.ok(server.alive());
  });
});

describe('timeout', () => {
  test('a stream past --timeout ends with an error the client raises, not silence', async () => {
    const slow = await startServer(['--timeout', '0.2']);
    try {
      const plain = new OpenAI({ baseURL: `${slow.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      // 1800 greedy tokens take seconds on stories260K; the server cuts the stream at 0.2 s.
      const stream = await plain.chat.completions.create({
        model, messages: kMessages, max_tokens: 1800, temperature: 0, stream: true,
      });
      let text = '';
      const read = async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      };
      await assert.rejects(read(), (error) => {
        assert.ok(error instanceof OpenAI.APIError, error.constructor.name);
        assert.match(error.message, /timeout/);
        return true;
      });
      assert.ok(slow.alive());
    } finally {
      await slow.stop();
    }
  });
});
