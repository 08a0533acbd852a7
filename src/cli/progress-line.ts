/**
 * One line of progress on a terminal, rewritten in place (`\r`, then erase to the end of the
 * line), with report lines printed above it. On anything but a terminal it writes nothing, so
 * a log file or a pipe gets the reports alone. Written here rather than taken from a progress
 * library: it is one line of text, and the CLI's users run it from a dial plan too, where every
 * module loaded at start-up costs.
 */
export class ProgressLine {
  private readonly stream: NodeJS.WritableStream;
  private readonly enabled: boolean;
  private readonly intervalMs: number;
  private text = '';
  private shown = false;
  private lastDraw = 0;

  /** Draws on `stream` when it is a terminal (or `enabled` says so), at most once per `intervalMs`. */
  constructor(stream: NodeJS.WritableStream, enabled = (stream as NodeJS.WriteStream).isTTY === true, intervalMs = 100) {
    this.stream = stream;
    this.enabled = enabled;
    this.intervalMs = intervalMs;
  }

  /** Whether anything is drawn at all. */
  get active(): boolean {
    return this.enabled;
  }

  /** Sets the line's text; redrawn now unless it was drawn less than the interval ago (or `force`). */
  update(text: string, force = false): void {
    this.text = text;
    if (!this.enabled) return;
    const now = Date.now();
    if (!force && this.shown && now - this.lastDraw < this.intervalMs) return;
    this.draw();
    this.lastDraw = now;
  }

  /** Writes a whole line to the stream above the progress line, which is drawn again below it. */
  print(line: string): void {
    if (this.enabled && this.shown) this.stream.write('\r\u001b[K');
    this.stream.write(`${line}\n`);
    if (this.enabled && this.shown) this.draw();
  }

  /** Removes the progress line, leaving the cursor at the start of an empty line. */
  clear(): void {
    if (this.enabled && this.shown) this.stream.write('\r\u001b[K');
    this.shown = false;
  }

  private draw(): void {
    // One column short of the width: writing the last column makes some terminals wrap.
    const columns = (this.stream as NodeJS.WriteStream).columns || 80;
    this.stream.write(`\r${this.text.slice(0, Math.max(10, columns - 1))}\u001b[K`);
    this.shown = true;
  }
}

/** A bar of `width` cells filled to `fraction` (0 to 1), and the percentage: `[█████░░░░░]  50%`. */
export function progressBar(fraction: number, width = 24): string {
  const f = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
  const filled = Math.round(f * width);
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}] ${String(Math.floor(f * 100)).padStart(3)}%`;
}

/** A count with thousands separators, as progress and summaries show them. */
export function count(n: number): string {
  return n.toLocaleString('en');
}
