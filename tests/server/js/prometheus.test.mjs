// Debian's Prometheus scrapes strata's /metrics: the target must be "up" (Prometheus parsed the
// exposition text) and the server's series must be queryable.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startServer } from './lib/server.mjs';

const prometheusPath = process.env.PROMETHEUS_BIN ?? '/usr/bin/prometheus';

let server;
let prometheus;
let prometheusUrl;
let prometheusLog = '';
let scratch;

// A port that was free a moment ago (Prometheus cannot be told to pick one itself).
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

before(async () => {
  server = await startServer();
  scratch = mkdtempSync(path.join(tmpdir(), 'strata-prometheus-'));
  const target = new URL(server.url).host;
  writeFileSync(path.join(scratch, 'prometheus.yml'), [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 1s',
    'scrape_configs:',
    '  - job_name: strata',
    '    metrics_path: /metrics',
    `    static_configs: [{targets: ["${target}"]}]`,
    '',
  ].join('\n'));
  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(prometheusPath, [
    `--config.file=${path.join(scratch, 'prometheus.yml')}`,
    `--storage.tsdb.path=${path.join(scratch, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  prometheus.stdout.on('data', (text) => { prometheusLog += text; });
  prometheus.stderr.on('data', (text) => { prometheusLog += text; });
});
after(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const done = new Promise((resolve) => prometheus.once('exit', resolve));
    prometheus.kill('SIGTERM');
    await done;
  }
  await server?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

async function prometheusApi(route) {
  const response = await fetch(`${prometheusUrl}${route}`);
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.status, 'success');
  return body.data;
}

test('Prometheus scrapes /metrics and reports the target up', async () => {
  // Some traffic first, so that request counters and latency histograms have samples.
  const response = await fetch(`${server.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 8, temperature: 0 }),
  });
  assert.equal(response.status, 200);

  let target;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    assert.equal(prometheus.exitCode, null, `prometheus exited:\n${prometheusLog}`);
    try {
      const data = await prometheusApi('/api/v1/targets');
      target = data.activeTargets.find((t) => t.labels.job === 'strata');
      if (target?.health === 'up' || target?.lastError) break;
    } catch { /* Prometheus still starting */ }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.ok(target, `no strata target in /api/v1/targets:\n${prometheusLog}`);
  assert.equal(target.lastError, '', `scrape error: ${target.lastError}`);
  assert.equal(target.health, 'up');

  // A series strata exports reaches Prometheus' storage with its value.
  const data = await prometheusApi(`/api/v1/query?query=${encodeURIComponent('up{job="strata"}')}`);
  assert.equal(data.result.length, 1);
  assert.equal(data.result[0].value[1], '1');
  const series = await prometheusApi(
    `/api/v1/label/__name__/values?match[]=${encodeURIComponent('{job="strata"}')}`);
  assert.ok(series.some((name) => /time_to_first_token_seconds_bucket$/.test(name)),
    `no time-to-first-token histogram among ${series.join(', ')}`);
});
