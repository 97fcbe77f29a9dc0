/**
 * A progress bar on stderr, drawn only when stderr is a terminal (never in pipes, logs or CI).
 */
export interface ProgressBar {
  update(done: number, note?: string): void;
  finish(): void;
}

export function createProgressBar(params: { total: number; label: string; stream?: NodeJS.WriteStream }): ProgressBar {
  const stream = params.stream ?? process.stderr;
  if (!stream.isTTY || params.total <= 0) return { update: () => undefined, finish: () => undefined };
  let lastDraw = 0;
  const width = 30;
  const draw = (done: number, note = '') => {
    const ratio = Math.min(1, done / params.total);
    const filled = Math.round(ratio * width);
    stream.write(`\r${params.label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${note}\u001b[K`);
  };
  return {
    update(done, note) {
      const now = Date.now();
      if (now - lastDraw < 100) return;
      lastDraw = now;
      draw(done, note);
    },
    finish() {
      draw(params.total);
      stream.write('\n');
    },
  };
}

/**
 * A one-line status on stderr: redrawn in place (`\r`) on a terminal; elsewhere (a file, a pipe,
 * CI) only the line marked `final` is written, so a redirected log holds no progress frames.
 */
export function createStatusLine(stream: NodeJS.WriteStream = process.stderr): (text: string, final?: boolean) => void {
  if (stream.isTTY) return (text, final = false) => stream.write(`\r${text}\u001b[K${final ? '\n' : ''}`);
  return (text, final = false) => {
    if (final) stream.write(`${text}\n`);
  };
}
