import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { captureResponse, type CapturedResponse } from './http-response.capture';

/** One request to a server whose handler is `handle`; resolves with the body once the client has it all. */
async function requestTo(handle: (res: http.ServerResponse) => void): Promise<string> {
  const server = http.createServer((_req, res) => handle(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe('captureResponse', () => {
  it('lets the last bytes leave only once beforeEnd is done (a client that retries at once finds the record)', async () => {
    let stored: CapturedResponse | undefined;
    const events: string[] = [];
    const body = await requestTo((res) => {
      const capture = captureResponse(res, 1024, async (captured) => {
        await new Promise((resolve) => setTimeout(resolve, 150));
        stored = captured;
        events.push('stored');
      });
      void capture.done.then(() => events.push('done'));
      res.setHeader('Content-Type', 'application/json');
      res.statusCode = 201;
      res.end('{"id":1}');
    });
    events.push('client has the response');
    expect(body).toBe('{"id":1}');
    expect(events[0]).toBe('stored');
    expect(events).toContain('client has the response');
    expect(events.indexOf('stored')).toBeLessThan(events.indexOf('client has the response'));
    expect(stored).toMatchObject({ complete: true, status: 201, headers: { 'content-type': 'application/json' } });
    expect(stored!.body.toString()).toBe('{"id":1}');
  });

  it('still sends the response when beforeEnd fails', async () => {
    const body = await requestTo((res) => {
      captureResponse(res, 1024, () => Promise.reject(new Error('store down')));
      res.end('sent anyway');
    });
    expect(body).toBe('sent anyway');
  });
});
