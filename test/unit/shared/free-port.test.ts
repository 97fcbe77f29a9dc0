/**
 * The free loopback port is one a server can bind, never one from the kernel's ephemeral range
 * (which outgoing connections draw from, so a probe's port could be taken before the bind).
 */
import { describe, expect, it } from '@jest/globals';
import fs from 'node:fs';
import net from 'node:net';
import { freeLoopbackPort } from '../../../src/shared/free-port';

const listen = (port: number) =>
  new Promise<net.Server>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
const close = (server: net.Server) => new Promise((resolve) => server.close(resolve));

describe('freeLoopbackPort', () => {
  it('gives ports below the ephemeral range that a server can bind, a different one each time', async () => {
    const range = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    const ports: number[] = [];
    for (let i = 0; i < 20; i++) ports.push(await freeLoopbackPort());
    expect(new Set(ports).size).toBe(20);
    for (const port of ports) {
      expect(port).toBeGreaterThan(1024);
      expect(port).toBeLessThan(range[0]!);
    }
    const servers = await Promise.all(ports.map(listen));
    await Promise.all(servers.map(close));
  });
});
