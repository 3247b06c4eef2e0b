// Debian's headless Chromium (scripts/system-deps.sh) driven by playwright-core: the page as a
// person sees it.
import { type Browser, chromium } from 'playwright-core';

/** `args`: Chromium flags beyond the ones every test's browser has. */
export function launchBrowser(args: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...args,
    ],
  });
}
