/**
 * The webhook's callback rules (callback-target.ts): which addresses count as internal, and that a
 * host under a `*.` entry is judged by the addresses it resolves to while a host listed exactly is
 * the operator's choice. The composed service is tested in test/chaos/webhook-callbacks.test.ts.
 */
import { describe, expect, it } from '@jest/globals';
import { checkCallbackUrl, isInternalAddress } from '../../../src/channels/webhook/callback-target';

describe('webhook callback targets', () => {
  it('counts loopback, private, link-local, metadata, CGNAT, multicast and mapped addresses as internal', () => {
    const internal = [
      '127.0.0.1',
      '127.255.0.9',
      '0.0.0.0',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      'fc00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      'not an address',
    ];
    const external = ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111'];
    expect(internal.filter((a) => !isInternalAddress(a))).toEqual([]);
    expect(external.filter((a) => isInternalAddress(a))).toEqual([]);
  });

  it('refuses every callback when no host is configured, and hosts not listed', async () => {
    expect(await checkCallbackUrl('https://hooks.example.com/cb', [])).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/WEBHOOK_CALLBACK_HOSTS is empty/),
    });
    expect(await checkCallbackUrl('https://evil.example.net/cb', ['hooks.example.com', '*.example.org'])).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not one of/),
    });
    expect(await checkCallbackUrl('https://example.org/cb', ['*.example.org'])).toMatchObject({ ok: false });
  });

  it('allows a host listed exactly, even internal; refuses an internal address reached through a wildcard', async () => {
    expect(await checkCallbackUrl('http://127.0.0.1:9/cb', ['127.0.0.1'])).toMatchObject({ ok: true, target: { allowance: 'exact' } });
    expect(await checkCallbackUrl('http://HOOKS.example.com./cb', ['hooks.example.com'])).toMatchObject({ ok: true });
    expect(await checkCallbackUrl('http://127.0.0.1:9/cb', ['*.0.0.1'])).toMatchObject({ ok: false, reason: expect.stringMatching(/internal address/) });
    expect(await checkCallbackUrl('http://a.b.invalid/cb', ['*.b.invalid'])).toMatchObject({ ok: false, reason: expect.stringMatching(/does not resolve/) });
  });
});
