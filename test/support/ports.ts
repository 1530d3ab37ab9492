/**
 * A loopback port nothing listens on at the moment it is returned (bound to port 0, then
 * released): for a server a test starts next, or for a peer that must be unreachable.
 */
import { createServer, type AddressInfo } from 'node:net';

export async function unusedLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
