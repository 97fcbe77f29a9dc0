/**
 * In-process metrics in the Prometheus text format: counters and histograms that components
 * record into, plus gauges computed when scraped. One registry per service (the core owns it).
 */
export interface Metrics {
  inc(name: string, labels?: Record<string, string>, by?: number): void;
  observe(name: string, seconds: number, labels?: Record<string, string>): void;
  /** The text of every recorded metric, with HELP/TYPE lines. */
  render(): string;
}

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

function key(labels: Record<string, string> = {}): string {
  const entries = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? '' : `{${entries.map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, '_')}"`).join(',')}}`;
}

export function createMetrics(help: Record<string, string> = {}): Metrics {
  const counters = new Map<string, Map<string, number>>();
  const histograms = new Map<string, Map<string, { buckets: number[]; sum: number; count: number }>>();
  return {
    inc(name, labels, by = 1) {
      const series = counters.get(name) ?? new Map<string, number>();
      series.set(key(labels), (series.get(key(labels)) ?? 0) + by);
      counters.set(name, series);
    },
    observe(name, seconds, labels) {
      const series = histograms.get(name) ?? new Map();
      const h = series.get(key(labels)) ?? { buckets: BUCKETS.map(() => 0), sum: 0, count: 0 };
      BUCKETS.forEach((b, i) => {
        if (seconds <= b) h.buckets[i]!++;
      });
      h.sum += seconds;
      h.count++;
      series.set(key(labels), h);
      histograms.set(name, series);
    },
    render() {
      const lines: string[] = [];
      for (const [name, series] of counters) {
        lines.push(`# HELP ${name} ${help[name] ?? name}`, `# TYPE ${name} counter`);
        for (const [labels, value] of series) lines.push(`${name}${labels} ${value}`);
      }
      for (const [name, series] of histograms) {
        lines.push(`# HELP ${name} ${help[name] ?? name}`, `# TYPE ${name} histogram`);
        for (const [labels, h] of series) {
          const inner = labels.slice(1, -1);
          BUCKETS.forEach((b, i) => lines.push(`${name}_bucket{${inner ? `${inner},` : ''}le="${b}"} ${h.buckets[i]}`));
          lines.push(`${name}_bucket{${inner ? `${inner},` : ''}le="+Inf"} ${h.count}`, `${name}_sum${labels} ${h.sum}`, `${name}_count${labels} ${h.count}`);
        }
      }
      return lines.join('\n');
    },
  };
}
