// The chat page at / in headless Chromium (Debian's `chromium`, driven by playwright-core):
// a message streams an answer equal to the API's greedy answer, the stats show tokens/s, and
// Stop ends a long generation, which the server sees as a disconnect. Answers render markdown
// (raw HTML and script links shown as text), the conversation survives a reload, an answer cut
// off at max_tokens says so with a Continue button, and a 401 sends the user to Settings.
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
  // Each test starts from an empty conversation: the page keeps the last one in localStorage.
  await page.goto(`${server.url}/`);
  await page.evaluate(() => { localStorage.clear(); sessionStorage.clear(); });
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
  assert.equal(await assistant.getAttribute('data-raw'), expected);
  // Rendered as markdown: the same words, whitespace aside.
  const words = (t) => t.replace(/\s+/g, ' ').trim();
  assert.equal(words(await assistant.textContent()), words(expected));
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
  const stoppedText = await page.locator('#messages .msg.assistant').last().getAttribute('data-raw');
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
  assert.equal(await page.locator('#messages .msg.assistant').last().getAttribute('data-raw'),
    stoppedText);
  assert.ok(await page.isEnabled('#send'));
});

test('a wrong API key sends the user to Settings', async () => {
  await openPage('wrong-key');
  await page.click('summary');  // closed again: the 401 must open it
  await page.fill('#prompt', 'Hello');
  await page.click('#send');
  await page.waitForSelector('#stats[data-state="error"]', { timeout: 30_000 });
  assert.match(await page.textContent('#error'),
    /^This server needs an API key: enter it in Settings\. \(401 authentication_error: /);
  assert.equal(await page.getAttribute('details', 'open'), '', 'Settings are open');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'api-key');
  assert.equal(await page.locator('#messages .msg').count(), 0, 'the failed exchange is removed');
});

test('answers render markdown; raw HTML and script links stay text', async () => {
  await openPage();
  const html = await page.evaluate(() => renderMarkdown(
    '**bold** and `code`\n\n```\nint x = 1;\n```\n\n<img src=x onerror="alert(1)">\n\n' +
    '[ok](https://example.com) [bad](javascript:alert(1))'));
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<pre><code>int x = 1;\n<\/code><\/pre>/);
  assert.doesNotMatch(html, /<img/);
  assert.match(html, /&#60;img src=x/);
  assert.match(html, /<a href="https:\/\/example.com" rel="noopener noreferrer"/);
  assert.doesNotMatch(html, /javascript:/i);
  assert.ok(await page.locator('link[rel="icon"]').count() === 1, 'a favicon');
});

test('the conversation and settings survive a reload; a cut-off answer offers Continue',
  async () => {
    await openPage();
    await page.fill('#max-tokens', '5');
    await page.dispatchEvent('#max-tokens', 'change');
    await page.fill('#prompt', kMessage);
    await page.click('#send');
    await page.waitForSelector('#stats[data-state="done"]', { timeout: 60_000 });
    const cutoff = page.locator('#messages .cutoff');
    await cutoff.waitFor();
    assert.match(await cutoff.textContent(), /^Cut off at 5 tokens/);
    const answer = await page.locator('#messages .msg.assistant').last().getAttribute('data-raw');

    await page.reload();
    await page.locator('#messages .msg.assistant').last().waitFor();
    assert.equal(await page.locator('#messages .msg').count(), 2);
    assert.equal(await page.locator('#messages .msg.user').textContent(), kMessage);
    assert.equal(await page.locator('#messages .msg.assistant').getAttribute('data-raw'), answer);
    assert.equal(await page.inputValue('#max-tokens'), '5');
    assert.equal(await page.inputValue('#api-key'), kApiKey, 'the key stays for this session');

    // Continue asks for more as a new turn (the reloaded page kept max tokens at 5).
    await page.fill('#prompt', kMessage);
    await page.click('#send');
    await page.locator('#messages .cutoff button').waitFor({ timeout: 60_000 });
    await page.click('#messages .cutoff button');
    await page.waitForFunction(
      () => [...document.querySelectorAll('#messages .msg.user')].at(-1)?.dataset.raw === 'Continue.');
    await page.waitForSelector('#stats[data-state="done"]', { timeout: 60_000 });
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
