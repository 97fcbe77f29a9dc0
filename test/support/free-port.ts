/** A free loopback port for a test's servers and the service's doors (src/shared/free-port.ts). */
export { freeLoopbackPort as freePort } from '../../src/shared/free-port';
