import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** Debian's Chromium, which the browser journeys drive through playwright-core, headless. */
export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking'];

/**
 * Whether Chromium is here: when it is absent a journey is skipped with a notice, unless
 * TOLLWATCH_REQUIRE_BROWSER=1 (CI), which makes that a failure.
 */
export function chromiumPresent(): boolean {
  if (existsSync(CHROMIUM)) return true;
  const message = `browser test SKIPPED: ${CHROMIUM} is absent (apt-get install chromium)`;
  if (process.env.TOLLWATCH_REQUIRE_BROWSER === '1') throw new Error(`${message}; TOLLWATCH_REQUIRE_BROWSER=1 makes that a failure`);
  console.warn(`\n*** ${message}. ***\n`);
  return false;
}

/** axe-core, to inject into pages, and the rules it runs: every one WCAG 2.2 AA asks. */
export const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
export const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];
