// Debian's headless Chromium (scripts/system-deps.sh) driven by playwright-core: the page as a
// person sees it.
import { type Browser, chromium } from 'playwright-core';

export function launchBrowser(): Promise<Browser> {
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
    ],
  });
}
