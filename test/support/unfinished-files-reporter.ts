import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Names the test files whose worker died under them. Vitest reports such a death as "Worker
 * exited unexpectedly" with no file, and the file's tests are simply missing from the totals;
 * this prints, last (where CI's tail shows it), each file that was queued but never ended, with
 * when it started, and what any report Node wrote on a fatal error (`--report-on-fatalerror` into
 * `reports`) says, so the next run says where and why.
 */
export default class UnfinishedFilesReporter implements Reporter {
  private readonly open = new Map<string, { project: string; file: string; started?: string }>();
  private readonly reports: string;

  constructor(reports: string) {
    this.reports = reports;
  }

  onTestModuleQueued(module: TestModule) {
    this.open.set(key(module), { project: module.project.name, file: module.relativeModuleId });
  }

  onTestModuleStart(module: TestModule) {
    const entry = this.open.get(key(module));
    if (entry) entry.started = new Date().toISOString();
  }

  onTestModuleEnd(module: TestModule) {
    this.open.delete(key(module));
  }

  onTestRunEnd() {
    if (this.open.size > 0) {
      console.error(`\nTest files that never ended (their worker died or the run was cut short): ${this.open.size}`);
      for (const { project, file, started } of this.open.values()) console.error(`  [${project}] ${file}: ${started ? `started ${started}` : 'never started'}`);
      this.open.clear();
    }
    // Each report once: in watch mode the same directory serves the next run.
    for (const name of reportFiles(this.reports)) {
      const path = join(this.reports, name);
      console.error(`\nA test worker's fatal error, as Node reported it (${name}):\n${summary(readFileSync(path, 'utf8'))}`);
      rmSync(path, { force: true });
    }
  }
}

function reportFiles(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => entry.name);
  } catch {
    return [];
  }
}

function key(module: TestModule): string {
  return `${module.project.name}\0${module.moduleId}`;
}

/** What a diagnostic report says of the crash: the event, the JavaScript stack and the native one's top. */
function summary(text: string): string {
  try {
    const report = JSON.parse(text) as { header?: { event?: string; trigger?: string; processId?: number }; javascriptStack?: { message?: string; stack?: string[] }; nativeStack?: Array<{ symbol?: string }> };
    return [
      `  ${report.header?.trigger ?? '?'}: ${report.header?.event ?? '?'} (pid ${report.header?.processId ?? '?'})`,
      `  ${report.javascriptStack?.message ?? ''}`,
      ...(report.javascriptStack?.stack ?? []).slice(0, 12).map((line) => `    ${line}`),
      ...(report.nativeStack ?? []).slice(0, 12).map((frame) => `    [native] ${frame.symbol ?? '?'}`),
    ].join('\n');
  } catch {
    return text.slice(0, 3000);
  }
}
