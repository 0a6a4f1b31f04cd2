// Structured output through the official openai client, on a synthetic model with random
// weights (so the constraint does all the work), checked by an independent validator (ajv):
//  - response_format json_schema: for the JSONSchemaBench sample's schemas, 5 sampled replies
//    each; every reply that finishes ("stop") must be valid under its schema, and a schema the
//    server refuses must be refused with a 400 that says why;
//  - tools with tool_choice "required" on the BFCL function-calling cases: every reply parses
//    into tool calls whose names exist and whose arguments validate against the parameters.
// STRATA_FULL=1 runs every schema and BFCL case; by default every tenth schema and every fifth
// case (the full run takes many minutes).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import Ajv07 from 'ajv';
import Ajv2019 from 'ajv/dist/2019.js';
import Ajv2020 from 'ajv/dist/2020.js';
import AjvDraft04 from 'ajv-draft-04';
import addFormats from 'ajv-formats';
import OpenAI from 'openai';

import { modelPath, repoRoot, startServer, strataBin } from './lib/server.mjs';

const benchDir = path.resolve(repoRoot, '../shared/testdata/jsonschemabench');
const bfclDir = path.resolve(repoRoot, '../shared/testdata/bfcl');
const kChoices = 5;
const kMaxTokens = 256;

let server;
let client;
let modelFile;

before(async () => {
  modelFile = path.join(os.tmpdir(), `strata-structured-${process.pid}.gguf`);
  // Random weights with the stories260K tokenizer.
  execFileSync(strataBin, ['synth', '--preset', 'tiny', '--seed', '11', '--vocab', modelPath, '-o', modelFile]);
  server = await startServer(['--parallel', '8', '-c', '8192'], modelFile);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  await server?.stop();
  if (modelFile) fs.rmSync(modelFile, { force: true });
});

// The validator for the schema's draft ($schema), with formats checked.
function validatorFor(schema) {
  const draft = typeof schema.$schema === 'string' ? schema.$schema : '';
  const options = { strict: false, allErrors: false, validateFormats: true, logger: false };
  let ajv;
  if (draft.includes('draft-04')) ajv = new AjvDraft04(options);
  else if (draft.includes('2019-09')) ajv = new Ajv2019(options);
  else if (draft.includes('2020-12')) ajv = new Ajv2020(options);
  else ajv = new Ajv07(options);
  addFormats(ajv);
  return ajv.compile(schema);
}

function benchSchemas() {
  const files = [];
  for (const subset of fs.readdirSync(benchDir).sort()) {
    const dir = path.join(benchDir, subset);
    if (!fs.statSync(dir).isDirectory()) continue;
    for (const file of fs.readdirSync(dir).sort()) {
      if (file.endsWith('.json')) files.push(path.join(dir, file));
    }
  }
  const every = process.env.STRATA_FULL ? 1 : 10;
  return files.filter((_, i) => i % every === 0);
}

test('sampled replies under response_format json_schema validate with ajv', async () => {
  const stats = { schemas: 0, compiled: 0, validated: 0, length: 0, ajvRefused: 0 };
  const failures = [];
  for (const file of benchSchemas()) {
    const { schema } = JSON.parse(fs.readFileSync(file, 'utf8'));
    stats.schemas += 1;
    let validate;
    try {
      validate = validatorFor(schema);
    } catch {
      stats.ajvRefused += 1;  // ajv cannot compile it either (remote $ref, bad pattern, ...)
      continue;
    }
    let completion;
    try {
      completion = await client.chat.completions.create({
        model: 'strata',
        messages: [{ role: 'user', content: 'Reply with JSON.' }],
        response_format: { type: 'json_schema', json_schema: { name: 'reply', schema, strict: true } },
        n: kChoices,
        temperature: 1,
        seed: stats.schemas,
        max_tokens: kMaxTokens,
      });
    } catch (error) {
      // A schema strata cannot enforce is refused up front, with a reason.
      assert.equal(error.status, 400, `${file}: ${error.message}`);
      assert.match(error.message, /\S/);
      continue;
    }
    stats.compiled += 1;
    assert.equal(completion.choices.length, kChoices);
    for (const choice of completion.choices) {
      if (choice.finish_reason === 'length') {
        stats.length += 1;
        continue;
      }
      assert.equal(choice.finish_reason, 'stop');
      let value;
      try {
        value = JSON.parse(choice.message.content);
      } catch (error) {
        failures.push(`${file}: not JSON (${error.message}): ${choice.message.content}`);
        continue;
      }
      if (validate(value)) {
        stats.validated += 1;
      } else {
        failures.push(`${file}: ${JSON.stringify(validate.errors)}: ${choice.message.content}`);
      }
    }
  }
  console.log(`json_schema generations: ${JSON.stringify(stats)}`);
  assert.deepEqual(failures, []);
  // The converter compiles about 94% of the sample (it refuses what it cannot enforce exactly:
  // uniqueItems over open-ended items, a few oneOf, ...); the floor leaves room for the
  // every-tenth subset of the default run.
  assert.ok(stats.compiled >= 0.85 * (stats.schemas - stats.ajvRefused),
            `only ${stats.compiled} of ${stats.schemas} schemas compiled`);
  assert.ok(stats.validated > 0);
});

// BFCL parameter schemas use Python type names; its README maps them to JSON Schema
// (dict→object, float→number, tuple→array, and BFCL's own table any→string).
function toJsonSchema(parameters) {
  const types = { dict: 'object', float: 'number', tuple: 'array', any: 'string' };
  const convert = (node) => {
    if (Array.isArray(node)) return node.map(convert);
    if (node === null || typeof node !== 'object') return node;
    const out = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'type' && typeof value === 'string' && value in types) {
        out.type = types[value];
      } else {
        out[key] = convert(value);
      }
    }
    return out;
  };
  return convert(parameters);
}

function bfclCases() {
  const cases = [];
  for (const file of fs.readdirSync(bfclDir).sort()) {
    if (!file.endsWith('.jsonl')) continue;
    const lines = fs.readFileSync(path.join(bfclDir, file), 'utf8').split('\n').filter(Boolean);
    for (const line of lines) cases.push({ file, ...JSON.parse(line) });
  }
  const every = process.env.STRATA_FULL ? 1 : 5;
  return cases.filter((_, i) => i % every === 0);
}

test('tool_choice "required" replies are tool calls with valid arguments (BFCL)', async () => {
  const stats = { cases: 0, calls: 0, length: 0 };
  const failures = [];
  for (const c of bfclCases()) {
    const functions = Array.isArray(c.function) ? c.function : [c.function];
    const tools = functions.map((fn) => ({
      type: 'function',
      // OpenAI tool names allow no dots; BFCL itself replaces them with underscores.
      function: {
        name: fn.name.replaceAll('.', '_'),
        description: fn.description,
        parameters: toJsonSchema(fn.parameters),
      },
    }));
    const question = Array.isArray(c.question?.[0]) ? c.question[0] : c.question;
    const messages = (Array.isArray(question) ? question : [{ role: 'user', content: String(question) }])
      .map((m) => ({ role: m.role, content: m.content }));
    stats.cases += 1;
    const completion = await client.chat.completions.create({
      model: 'strata',
      messages,
      tools,
      tool_choice: 'required',
      temperature: 1,
      seed: stats.cases,
      max_tokens: 512,
    });
    const choice = completion.choices[0];
    // The budget guard closes long argument lists in time: running out of tokens is a failure.
    if (choice.finish_reason === 'length') {
      stats.length += 1;
      failures.push(`${c.id}: ran out of tokens: ${JSON.stringify(choice.message)}`);
      continue;
    }
    assert.equal(choice.finish_reason, 'tool_calls', `${c.id}: ${JSON.stringify(choice.message)}`);
    const calls = choice.message.tool_calls ?? [];
    if (calls.length === 0) failures.push(`${c.id}: no tool calls: ${choice.message.content}`);
    for (const call of calls) {
      stats.calls += 1;
      assert.equal(call.type, 'function');
      assert.match(call.id, /\S/);
      const tool = tools.find((t) => t.function.name === call.function.name);
      if (!tool) {
        failures.push(`${c.id}: unknown tool ${call.function.name}`);
        continue;
      }
      const validate = validatorFor(tool.function.parameters);
      let args;
      try {
        args = JSON.parse(call.function.arguments);
      } catch (error) {
        failures.push(`${c.id}: arguments are not JSON: ${call.function.arguments}`);
        continue;
      }
      if (!validate(args)) {
        failures.push(`${c.id}: ${JSON.stringify(validate.errors)}: ${call.function.arguments}`);
      }
    }
  }
  console.log(`tool calls: ${JSON.stringify(stats)}`);
  assert.deepEqual(failures, []);
  assert.ok(stats.calls > 0);
});

// Streamed calls go through the official client's own accumulator (ChatCompletionStream): the
// arguments arrive in pieces and add up to valid calls, as OpenAI streams them.
test('streamed tool calls accumulate in the openai client into valid calls', async () => {
  const cases = bfclCases().slice(0, 12);
  let argumentDeltas = 0;
  for (const [i, c] of cases.entries()) {
    const functions = Array.isArray(c.function) ? c.function : [c.function];
    const tools = functions.map((fn) => ({
      type: 'function',
      function: { name: fn.name.replaceAll('.', '_'), description: fn.description,
                  parameters: toJsonSchema(fn.parameters) },
    }));
    const stream = client.chat.completions.stream({
      model: 'strata',
      messages: [{ role: 'user', content: 'Call a tool.' }],
      tools,
      tool_choice: 'required',
      temperature: 1,
      seed: 100 + i,
      max_tokens: 256,
    });
    stream.on('tool_calls.function.arguments.delta', () => { argumentDeltas += 1; });
    const completion = await stream.finalChatCompletion();
    const choice = completion.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', `${c.id}: ${JSON.stringify(choice.message)}`);
    assert.ok(choice.message.tool_calls.length > 0);
    for (const call of choice.message.tool_calls) {
      assert.match(call.id, /^call_/);
      const tool = tools.find((t) => t.function.name === call.function.name);
      assert.ok(tool, `${c.id}: unknown tool ${call.function.name}`);
      const validate = validatorFor(tool.function.parameters);
      const args = JSON.parse(call.function.arguments);
      assert.ok(validate(args), `${c.id}: ${JSON.stringify(validate.errors)}: ${call.function.arguments}`);
    }
  }
  assert.ok(argumentDeltas > 3 * cases.length, `only ${argumentDeltas} argument deltas`);
});
