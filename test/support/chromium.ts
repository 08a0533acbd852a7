import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * What the browser journeys share (test/e2e/): Debian's Chromium, headless, driven by
 * playwright-core, and axe-core with the rules WCAG 2.2 AA asks.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking'];
/** A desktop's window and a phone's. */
export const WIDE = { width: 1280, height: 800 };
export const NARROW = { width: 390, height: 844 };
/** axe-core, injected into each page checked, and the rules it runs: every one WCAG 2.2 AA asks. */
export const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
export const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

/**
 * Whether Chromium is here. Absent, the journey is skipped with a notice, unless
 * TOLLWATCH_REQUIRE_BROWSER=1 (CI), where that is a failure.
 */
export function chromiumPresent(): boolean {
  if (existsSync(CHROMIUM)) return true;
  const message = `browser test SKIPPED: ${CHROMIUM} is absent (apt-get install chromium)`;
  if (process.env.TOLLWATCH_REQUIRE_BROWSER === '1') throw new Error(`${message}; TOLLWATCH_REQUIRE_BROWSER=1 makes that a failure`);
  console.warn(`\n*** ${message}. ***\n`);
  return false;
}

/** Chromium as every journey runs it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/** What axe finds on the page as it is now (axe-core injected beforehand): one line per element and rule. */
export function axeViolations(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(AXE_TAGS)} }, resultTypes: ['violations'] })
    .then((r) => r.violations.flatMap((v) => v.nodes.map((n) => v.id + ' ' + n.target.join(' ') + ': ' + (n.failureSummary || ''))))`);
}
