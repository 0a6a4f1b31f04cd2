// Starts `strata serve` on a free port for one test file and stops it afterwards.
//
// STRATA_BIN: the strata binary (ctest passes it; default build/strata).
// STRATA_MODEL: the GGUF model (default ../shared/models/stories260K.gguf); relative paths are
// resolved from the repository root, as ctest's working directory is.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
export const strataBin = path.resolve(repoRoot, process.env.STRATA_BIN ?? 'build/strata');
export const modelPath = path.resolve(
  repoRoot,
  process.env.STRATA_MODEL ?? '../shared/models/stories260K.gguf',
);

const kStartTimeoutMs = 60_000;

// Runs `strata serve -m MODEL --port 0 ...extraArgs` (MODEL: `model`, default modelPath) and resolves once it prints
// "listening on http://HOST:PORT" on stderr and /health answers 200. The returned object has the
// base `url`, the server's `stderr` so far (a function) and `stop()`.
export async function startServer(extraArgs = [], model = modelPath) {
  const args = ['serve', '-m', model, '--host', '127.0.0.1', '--port', '0', ...extraArgs];
  const child = spawn(strataBin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`strata serve printed no "listening on" line in ${kStartTimeoutMs} ms:\n${stderr}`));
    }, kStartTimeoutMs);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (text) => {
      stderr += text;
      const match = stderr.match(/listening on (http:\/\/[^\s]+)/);
      if (match) {
        clearTimeout(timer);
        resolve(match[1].replace(/\/$/, ''));
      }
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${strataBin}: ${error.message}`));
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`strata serve exited (${code ?? signal}) before listening:\n${stderr}`));
    });
  });
  await waitHealthy(url);
  let exited = false;
  child.on('exit', () => { exited = true; });
  return {
    url,
    stderr: () => stderr,
    alive: () => !exited,
    async stop() {
      if (exited) return;
      const done = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(timer);
    },
  };
}

// /health answers 503 while the model loads and 200 once requests are served.
async function waitHealthy(url) {
  const deadline = Date.now() + kStartTimeoutMs;
  for (;;) {
    try {
      const response = await fetch(`${url}/health`);
      if (response.status === 200) return;
    } catch { /* not accepting connections yet */ }
    if (Date.now() > deadline) throw new Error(`${url}/health never answered 200`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// The value of one Prometheus sample (`name{labels} value`) in a /metrics text, or undefined.
export function metricValue(text, name) {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const [key, value] = line.trim().split(/\s+/);
    if (key === name || key?.split('{')[0] === name) return Number(value);
  }
  return undefined;
}
