// The chat page at / in headless Chromium (Debian's `chromium`, driven by playwright-core):
// a message streams an answer equal to the API's greedy answer, the stats show tokens/s, and
// Stop ends a long generation, which the server sees as a disconnect.
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { metricValue, startServer } from './lib/server.mjs';

const chromiumPath = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const kMessage = 'Tell me a story about a cat.';
const kApiKey = 'page-key-7d1e';  // typed into the page's settings, sent as Bearer

let server;
let browser;
let page;
const pageErrors = [];  // uncaught exceptions of the page's script

before(async () => {
  server = await startServer(['--api-key', kApiKey]);
  // --no-sandbox: Chromium's sandbox refuses to run as root, as CI containers do.
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  page = await browser.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
});
afterEach(() => {
  assert.deepEqual(pageErrors, [], 'the page script threw');
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

async function greedyAnswer(maxTokens) {
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${kApiKey}` },
    body: JSON.stringify({
      messages: [{ role: 'user', content: kMessage }], temperature: 0, max_tokens: maxTokens,
    }),
  });
  assert.equal(response.status, 200);
  return (await response.json()).choices[0].message.content;
}

async function openPage(apiKey = kApiKey) {
  await page.goto(`${server.url}/`);
  assert.equal(await page.title(), 'strata');
  // Settings live in a closed <details>; fill() needs them visible.
  await page.click('summary');
  await page.fill('#temperature', '0');
  await page.fill('#api-key', apiKey);
}

async function runningRequests() {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return metricValue(text, 'strata:num_requests_running');
}

test('GET / serves the page as HTML', async () => {
  const response = await fetch(`${server.url}/`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /^text\/html/);
  assert.match(await response.text(), /id="messages"/);
});

test('a message streams the greedy answer and shows tokens/s', async () => {
  const expected = await greedyAnswer(40);
  await openPage();
  await page.fill('#max-tokens', '40');
  await page.fill('#prompt', kMessage);
  // The key typed above reaches /v1/models once its field loses focus.
  await page.waitForFunction(() => document.getElementById('model').textContent !== '');
  assert.equal(await page.textContent('#model'), 'stories260K');
  await page.click('#send');
  const assistant = page.locator('#messages .msg.assistant').last();
  await assistant.waitFor();
  await page.waitForSelector('#stats[data-state="done"]', { timeout: 60_000 });
  assert.equal(await assistant.textContent(), expected);
  assert.equal(await page.locator('#messages .msg.user').last().textContent(), kMessage);
  const stats = await page.textContent('#stats');
  assert.match(stats, /\d+ tokens · \d+(\.\d)? tok\/s/, stats);
  assert.ok(await page.isHidden('#error'), 'no error shown');
  assert.ok(await page.isEnabled('#send'));
  assert.ok(await page.isDisabled('#stop'));
});

test('Stop ends a long generation and the server frees the request', async () => {
  const maxTokens = 1800;  // stories260K's context is 2048: seconds of generation
  await openPage();
  await page.fill('#max-tokens', String(maxTokens));
  await page.fill('#prompt', 'Once upon a time');
  // Stop is pressed from inside the page the moment the first token shows: a click from the test
  // process could arrive after the whole answer on a loaded machine (the server writes 1,800
  // tokens in about two seconds), and then Stop would already be disabled.
  await page.evaluate(() => {
    const stats = document.getElementById('stats');
    new MutationObserver((_, observer) => {
      if (stats.dataset.state !== 'streaming') return;
      observer.disconnect();
      document.getElementById('stop').click();
    }).observe(stats, { attributes: true, attributeFilter: ['data-state'] });
  });
  await page.click('#send');
  await page.waitForSelector('#stats[data-state="stopped"]', { timeout: 60_000 });
  const stoppedText = await page.locator('#messages .msg.assistant').last().textContent();
  assert.ok(stoppedText.length > 0, 'the partial answer stays');
  assert.match(await page.textContent('#stats'), /stopped/);
  // The server ends the disconnected sequence at its next step: the running gauge drops to 0.
  let running;
  for (let i = 0; i < 100; i += 1) {
    running = await runningRequests();
    if (running === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.equal(running, 0, 'strata:num_requests_running returns to 0 after Stop');
  // No text arrives after Stop.
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(await page.locator('#messages .msg.assistant').last().textContent(), stoppedText);
  assert.ok(await page.isEnabled('#send'));
});

test('a wrong API key is shown as the server 401', async () => {
  await openPage('wrong-key');
  await page.fill('#prompt', 'Hello');
  await page.click('#send');
  await page.waitForSelector('#stats[data-state="error"]', { timeout: 30_000 });
  assert.match(await page.textContent('#error'), /^401 authentication_error: /);
  assert.equal(await page.locator('#messages .msg').count(), 0, 'the failed exchange is removed');
});

test('an API error is shown with the server message', async () => {
  await openPage();
  await page.fill('#max-tokens', '0');  // max_tokens must be at least 1
  await page.fill('#prompt', 'Hello');
  await page.click('#send');
  await page.waitForSelector('#stats[data-state="error"]', { timeout: 30_000 });
  assert.match(await page.textContent('#error'), /^400 /);
  assert.equal(await page.inputValue('#prompt'), 'Hello', 'the message returns to the box');
});
