import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../../harness/process/browser.ts';
import { freePort } from '../../harness/process/ports.ts';
import { renderNginxConfig, renderPage, START_SCRIPT } from '../../lib/workload/page.ts';

// The page as a person sees it: the pod's start script and nginx configuration, run by Debian's
// nginx (scripts/system-deps.sh), loaded in Debian's headless Chromium.
const artifacts = fileURLToPath(new URL('../../test-results/page/', import.meta.url));

async function serve(title: string, color: string): Promise<{ url: string; stop: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'page-'));
  chmodSync(dir, 0o755); // nginx workers run as an unprivileged user when the tests run as root
  const port = await freePort();
  const nginx: ChildProcess = spawn('/bin/sh', ['-c', START_SCRIPT], {
    env: {
      PATH: `/usr/sbin:${process.env.PATH}`,
      SITE_DIR: join(dir, 'site'),
      WEBSITE_HTML: renderPage(title, color),
      NGINX_CONF: renderNginxConfig(port).replace(`listen ${port};`, `listen 127.0.0.1:${port};`),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      if ((await fetch(url)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`nginx did not serve ${url}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    stop: () => {
      nginx.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let browser: Browser;
beforeAll(async () => {
  mkdirSync(artifacts, { recursive: true });
  browser = await launchBrowser();
});
afterAll(() => browser?.close());

const cases: [string, string, string, string][] = [
  ['plain', 'Hello from website-stack', '#2196F3', 'rgb(33, 150, 243)'],
  ['script', '<script>window.pwned = true</script>', '#4CAF50', 'rgb(76, 175, 80)'],
  ['quotes', `"double" and 'single' & <b>bold</b>`, '#fff', 'rgb(255, 255, 255)'],
  ['shell', '$(touch /tmp/pwned) `id` ${HOME}', '#000', 'rgb(0, 0, 0)'],
  ['backslash', 'C:\\path\\n is not a newline', '#123456', 'rgb(18, 52, 86)'],
  ['newlines', 'first line\nsecond line', '#ff9800', 'rgb(255, 152, 0)'],
  ['emoji', 'Launch 🚀 ünïcödé 漢字', '#9c27b0', 'rgb(156, 39, 176)'],
  ['long', `${'long title '.repeat(186)}end`, '#2196F3', 'rgb(33, 150, 243)'],
];

describe('the Website page in a browser', () => {
  test.each(cases)('%s: shows the title literally on the colour', async (id, title, color, rgb) => {
    const { url, stop } = await serve(title, color);
    const page = await browser.newPage({ viewport: { width: 800, height: 400 } });
    try {
      const response = await page.goto(url);
      expect(response!.headers()['content-type']).toBe('text/html; charset=utf-8');
      // biome-ignore lint/performance/useDomNodeTextContent: the text as the browser renders it is the point.
      expect(await page.locator('#title').innerText()).toBe(title);
      expect(await page.title()).toBe(title.replace(/\s+/g, ' ').trim());
      // Expressions evaluated in the page (the tests are type-checked without the DOM library).
      expect(await page.evaluate('getComputedStyle(document.body).backgroundColor')).toBe(rgb);
      expect(await page.evaluate('window.pwned')).toBeUndefined();
      expect(await page.locator('script, b').count()).toBe(0);
      await page.screenshot({ path: join(artifacts, `${id}.png`) });
    } finally {
      await page.close();
      stop();
    }
  });

  test('a 2 KB title is shown whole', () => {
    expect(cases.find(([id]) => id === 'long')![1].length).toBeGreaterThanOrEqual(2048);
  });
});
