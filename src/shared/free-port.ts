/**
 * A loopback port that is free now, for a server that binds it a moment later (the local
 * PostgreSQL server the evaluation and the tests start, a service a test starts as a child).
 *
 * A port from `listen(0)` comes from the kernel's ephemeral range, which every outgoing
 * connection on the machine also draws from: between the probe's close and the server's bind, a
 * connection could take it, and the server then fails with EADDRINUSE (seen in the test run while
 * other suites made connections). So the port is chosen below that range, where only listeners
 * are, and each process walks its own sequence (from its pid) so that two processes asking at once
 * rarely probe the same port.
 */
import fs from 'node:fs';
import net from 'node:net';

/** Where Linux's ephemeral range starts when /proc does not say (its default). */
const DEFAULT_EPHEMERAL_START = 32_768;
/** How many ports below the ephemeral range are used. */
const SPAN = 16_384;
/** Steps between this process's picks: odd, so the walk visits every port of the span. */
const STRIDE = 7_919;
const MAX_PROBES = 200;

let next: number | undefined;

function ephemeralStart(): number {
  try {
    const first = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 1024 ? first : DEFAULT_EPHEMERAL_START;
  } catch {
    return DEFAULT_EPHEMERAL_START;
  }
}

/** Whether a server can listen on `port` of 127.0.0.1 now (it is closed again before this resolves). */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A port from `listen(0)`: the last resort when no port below the ephemeral range is free. */
function anyPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** A loopback port free right now, below the ephemeral range; the caller binds it at once. */
export async function freeLoopbackPort(): Promise<number> {
  const top = ephemeralStart();
  const low = Math.max(1_025, top - SPAN);
  const span = top - low;
  if (span > 0) {
    next ??= (process.pid * 40_503) % span;
    for (let i = 0; i < MAX_PROBES; i++) {
      next = (next + STRIDE) % span;
      const port = low + next;
      if (await canListen(port)) return port;
    }
  }
  return anyPort();
}
