// Each architecture of the table behind strata serve, through the official `openai` client: a
// synthetic file of it (strata synth --arch NAME --preset tiny-gqa) answers completions, and an
// embedding model (a qwen3 file with pooling_type last, as Qwen3-Embedding has) answers
// client.embeddings.create with floats and with base64, the client's default encoding.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { repoRoot, startServer, strataBin } from './lib/server.mjs';

const kArchitectures = [
  'llama', 'gemma', 'gemma2', 'gemma3', 'qwen3', 'smollm3', 'granite', 'mistral3', 'phi3', 'olmo2',
];
const kNEmbd = 256;  // tiny-gqa's width
let dir;

function synth(arch, extra = []) {
  const file = path.join(dir, `${arch}${extra.length ? '-embed' : ''}.gguf`);
  execFileSync(strataBin, ['synth', '--arch', arch, '--preset', 'tiny-gqa', '--type', 'F16',
    '-o', file, ...extra], { stdio: 'ignore' });
  return file;
}

before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-arch-')); });
after(() => { fs.rmSync(dir, { recursive: true, force: true }); });

describe('completions', () => {
  for (const arch of kArchitectures) {
    test(arch, async () => {
      const server = await startServer(['--alias', arch], synth(arch));
      try {
        const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
        const r = await client.completions.create({
          model: arch, prompt: 'Once upon a time', max_tokens: 8, temperature: 0,
        });
        assert.equal(r.choices.length, 1);
        assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
        assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0);
      } finally {
        await server.stop();
      }
    });
  }
});

describe('embeddings', () => {
  let server;
  let client;
  before(async () => {
    server = await startServer(['--alias', 'embedder'], synth('qwen3', ['--pooling-type', '3']));
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
  });
  after(async () => { await server?.stop(); });

  const kInputs = ['The cat sat on the mat.', 'A dog ran in the park.', 'The cat sat on the mat.'];

  test('floats and base64 give the same unit vectors, in input order', async () => {
    const floats = await client.embeddings.create({
      model: 'embedder', input: kInputs, encoding_format: 'float',
    });
    // No encoding_format: the client asks for base64 and decodes it to numbers itself.
    const decoded = await client.embeddings.create({ model: 'embedder', input: kInputs });
    for (const r of [floats, decoded]) {
      assert.equal(r.object, 'list');
      assert.equal(r.data.length, kInputs.length);
      assert.ok(r.usage.prompt_tokens > 0);
      assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
      r.data.forEach((d, i) => {
        assert.equal(d.object, 'embedding');
        assert.equal(d.index, i);
        assert.equal(d.embedding.length, kNEmbd);
        const norm = Math.hypot(...d.embedding);
        assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm}`);
      });
    }
    for (let i = 0; i < kInputs.length; ++i) {
      for (let j = 0; j < kNEmbd; ++j) {
        assert.equal(Math.fround(floats.data[i].embedding[j]), decoded.data[i].embedding[j]);
      }
    }
    // The same text, the same vector; another text, another.
    assert.deepEqual(floats.data[2].embedding, floats.data[0].embedding);
    assert.notDeepEqual(floats.data[1].embedding, floats.data[0].embedding);
  });

  test('token ids embed as their text does', async () => {
    const ids = execFileSync(strataBin, ['tokenize', '-m', path.join(dir, 'qwen3-embed.gguf'),
      '-p', kInputs[1]], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .trim().split('\n').map((line) => Number(line.trim().split(/\s+/)[0]));
    const [byText, byIds] = await Promise.all([
      client.embeddings.create({ model: 'embedder', input: kInputs[1], encoding_format: 'float' }),
      client.embeddings.create({ model: 'embedder', input: ids, encoding_format: 'float' }),
    ]);
    assert.deepEqual(byIds.data[0].embedding, byText.data[0].embedding);
  });

  test('a bad request is a 400 naming the field', async () => {
    await assert.rejects(
      client.embeddings.create({ model: 'embedder', input: [], encoding_format: 'float' }),
      (e) => e.status === 400 && /input/.test(e.message),
    );
    await assert.rejects(
      client.embeddings.create({ model: 'embedder', input: 'x', encoding_format: 'hex' }),
      (e) => e.status === 400 && /encoding_format/.test(e.message),
    );
  });
});

test('a model without pooling refuses embeddings and says how to start it', async () => {
  const server = await startServer([], synth('llama'));
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
    await assert.rejects(
      client.embeddings.create({ model: 'm', input: 'hello', encoding_format: 'float' }),
      (e) => e.status === 400 && /--pooling/.test(e.message),
    );
  } finally {
    await server.stop();
  }
});

// An encoder (bert, with BERT's WordPiece vocabulary and CLS pooling, as bge) embeds through the
// client and refuses completions with a 400 that says what it is.
test('a bert file embeds and refuses to generate', async () => {
  const vocab = path.resolve(repoRoot, '../shared/testdata/vocab/ggml-vocab-bert-bge.gguf');
  const server = await startServer(['--alias', 'bge'],
    synth('bert', ['--pooling-type', '2', '--vocab', vocab]));
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const inputs = ['The cat sat on the mat.', 'A dog ran in the park.'];
    const floats = await client.embeddings.create({
      model: 'bge', input: inputs, encoding_format: 'float',
    });
    const decoded = await client.embeddings.create({ model: 'bge', input: inputs });
    assert.equal(floats.data.length, 2);
    for (let i = 0; i < inputs.length; ++i) {
      assert.equal(floats.data[i].embedding.length, kNEmbd);
      assert.ok(Math.abs(Math.hypot(...floats.data[i].embedding) - 1) < 1e-5);
      assert.deepEqual(decoded.data[i].embedding, floats.data[i].embedding.map(Math.fround));
    }
    assert.notDeepEqual(floats.data[1].embedding, floats.data[0].embedding);
    await assert.rejects(
      client.completions.create({ model: 'bge', prompt: 'Once', max_tokens: 4 }),
      (e) => e.status === 400 && /embedding model/.test(e.message),
    );
  } finally {
    await server.stop();
  }
});
