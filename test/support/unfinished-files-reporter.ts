import type { Reporter, TestModule } from 'vitest/node';

/**
 * Names the test files whose worker died under them. Vitest reports such a death as "Worker
 * exited unexpectedly" with no file, and the file's tests are simply missing from the totals;
 * this prints, last (where CI's tail shows it), each file that was queued but never ended, with
 * when it started, so the next run says where to look.
 */
export default class UnfinishedFilesReporter implements Reporter {
  private readonly open = new Map<string, { project: string; file: string; started?: string }>();

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
    if (this.open.size === 0) return;
    console.error(`\nTest files that never ended (their worker died or the run was cut short): ${this.open.size}`);
    for (const { project, file, started } of this.open.values()) console.error(`  [${project}] ${file}: ${started ? `started ${started}` : 'never started'}`);
    this.open.clear();
  }
}

function key(module: TestModule): string {
  return `${module.project.name}\0${module.moduleId}`;
}
