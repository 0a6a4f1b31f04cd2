// The error matrix through curl: each bad request gets the right 4xx with an OpenAI error body
// {"error": {"message", "type", "param", "code"}}, and the server keeps serving.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { assertSchema } from './lib/schemas.mjs';
import { startServer } from './lib/server.mjs';

const run = promisify(execFile);
const kApiKey = 'curl-key-51c2';
const kContext = 64;
const kAuth = ['-H', `Authorization: Bearer ${kApiKey}`];
const kJson = ['-H', 'Content-Type: application/json'];
const kHello = [{ role: 'user', content: 'Hello' }];

let server;
let scratch;

before(async () => {
  server = await startServer(['--api-key', kApiKey, '-c', String(kContext)]);
  scratch = mkdtempSync(path.join(tmpdir(), 'strata-curl-'));
});
after(async () => {
  await server?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

// Runs curl against the server; returns {status, body, json, headers}.
async function curl(route, args = []) {
  const marker = '\n--strata-status--';
  const { stdout } = await run('curl', [
    '-sS', '--max-time', '60', '-D', '-', '-w', `${marker}%{http_code}`, ...args,
    `${server.url}${route}`,
  ], { maxBuffer: 64 << 20 });
  const at = stdout.lastIndexOf(marker);
  const status = Number(stdout.slice(at + marker.length));
  const response = stdout.slice(0, at);
  // -D - prints the header blocks (a 100 Continue one first, if any) before the body.
  const split = response.lastIndexOf('\r\n\r\n');
  const headers = response.slice(0, split);
  const body = response.slice(split + 4);
  let json = null;
  try { json = JSON.parse(body); } catch { /* checked by the caller */ }
  return { status, body, json, headers };
}

function post(route, body, extra = []) {
  return curl(route, [...kAuth, ...kJson, '--data-binary', body, ...extra]);
}

function chat(fields) {
  return post('/v1/chat/completions', JSON.stringify({ messages: kHello, max_tokens: 4, ...fields }));
}

// An OpenAI error body with all four fields; `field` (when given) is the param or in the message.
function assertError(response, status, field) {
  assert.equal(response.status, status, `status ${response.status}, body ${response.body}`);
  assert.ok(response.json, `error body is JSON: ${response.body}`);
  assertSchema('error', response.json);
  const { error } = response.json;
  if (field) {
    assert.ok(error.param === field || error.message.includes(field),
      `error names "${field}": ${response.body}`);
  }
  return error;
}

describe('malformed requests get 400', () => {
  test('malformed JSON', async () => {
    const error = assertError(await post('/v1/chat/completions', '{"messages": [}'), 400);
    assert.equal(error.type, 'invalid_request_error');
  });

  test('empty body', async () => {
    assertError(await post('/v1/chat/completions', ''), 400);
  });

  test('a JSON value that is not an object', async () => {
    assertError(await post('/v1/chat/completions', '[1, 2]'), 400);
  });

  const wrongTypes = [
    ['temperature', { temperature: 'hot' }],
    ['max_tokens', { max_tokens: '10' }],
    ['stream', { stream: 'yes' }],
    ['n', { n: 'two' }],
    ['stop', { stop: 5 }],
    ['top_p', { top_p: [0.9] }],
    ['seed', { seed: 'abc' }],
    ['messages', { messages: 'Hello' }],
    ['logit_bias', { logit_bias: [1, 2] }],
  ];
  for (const [field, fields] of wrongTypes) {
    test(`wrong type: ${field} = ${JSON.stringify(Object.values(fields)[0])}`, async () => {
      const error = assertError(await chat(fields), 400, field);
      assert.equal(error.type, 'invalid_request_error');
    });
  }

  const badValues = [
    ['max_tokens', { max_tokens: 1e300 }],
    ['max_tokens', { max_tokens: -5 }],
    ['max_tokens', { max_tokens: 0 }],
    ['n', { n: 1e300 }],
    ['n', { n: 0 }],
    ['temperature', { temperature: -1 }],
  ];
  for (const [field, fields] of badValues) {
    test(`out of range: ${JSON.stringify(fields)}`, async () => {
      assertError(await chat(fields), 400, field);
    });
  }

  test('missing messages', async () => {
    assertError(await post('/v1/chat/completions', '{"max_tokens": 4}'), 400, 'messages');
  });

  test('missing prompt', async () => {
    assertError(await post('/v1/completions', '{"max_tokens": 4}'), 400, 'prompt');
  });

  test('invalid UTF-8 in a message', async () => {
    const file = path.join(scratch, 'bad-utf8.json');
    const head = Buffer.from('{"max_tokens": 4, "messages": [{"role": "user", "content": "a');
    writeFileSync(file, Buffer.concat([head, Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}]}')]));
    assertError(await post('/v1/chat/completions', `@${file}`), 400);
  });

  test('a prompt longer than the context is a 400 with the numbers', async () => {
    const long = 'Once upon a time there was a little cat. '.repeat(40);
    const error = assertError(await chat({ messages: [{ role: 'user', content: long }] }), 400);
    const numbers = (error.message.match(/\d+/g) ?? []).map(Number);
    assert.ok(numbers.includes(kContext), `message names the context ${kContext}: ${error.message}`);
    assert.ok(numbers.some((n) => n > kContext), `message names the prompt length: ${error.message}`);
    assertError(await post('/v1/completions', JSON.stringify({ prompt: long, max_tokens: 4 })), 400);
  });
});

describe('other statuses', () => {
  test('an unknown route is 404', async () => {
    assertError(await curl('/v1/nothing-here', kAuth), 404);
    assertError(await post('/v2/chat/completions', JSON.stringify({ messages: kHello })), 404);
  });

  test('a body too large is 413', async () => {
    const file = path.join(scratch, 'huge.json');
    const filler = 'a'.repeat(64 << 20);
    writeFileSync(file, `{"messages": [{"role": "user", "content": "${filler}"}]}`);
    const response = await post('/v1/chat/completions', `@${file}`, ['-H', 'Expect:']);
    assert.equal(response.status, 413, `status ${response.status}, body ${response.body}`);
  });

  test('a missing API key is 401', async () => {
    const body = JSON.stringify({ messages: kHello, max_tokens: 4 });
    const error = assertError(
      await curl('/v1/chat/completions', [...kJson, '--data-binary', body]), 401);
    assert.match(error.message, /API key/i);
    assertError(await curl('/v1/models'), 401);
  });

  test('a wrong API key is 401', async () => {
    const response = await curl('/v1/models', ['-H', 'Authorization: Bearer nope']);
    assertError(response, 401);
  });

  test('the server keeps serving after every error', async () => {
    const models = await curl('/v1/models', kAuth);
    assert.equal(models.status, 200);
    const reply = await chat({ max_tokens: 3, temperature: 0 });
    assert.equal(reply.status, 200, reply.body);
    assert.equal(reply.json.usage.completion_tokens, 3);
    assert.ok(server.alive());
  });
});
