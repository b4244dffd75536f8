import { redactUrls } from '../internal/secrets.redact';

const URL_AUTHORITY = /\b([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^\s/?#'"]+/g;
const IPV6 = /\[[0-9A-Fa-f:.]+\](:\d+)?/g;
const IPV4 = /\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b/g;
const LOOKUP = /\b(ENOTFOUND|EAI_AGAIN)\s+\S+/g;
const NAME_AND_PORT = /\b(localhost|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+):\d+\b/g;

/**
 * The reason a health check gives for a backend that is down, fit for a health
 * endpoint that anyone may read: credentials redacted and every host — a URL's
 * authority, an IP address, `host:port`, the name a DNS lookup did not find —
 * replaced by `<host>`. What went wrong stays (`connect ECONNREFUSED <host>`,
 * `Redis did not answer within 500 ms`); where is in the logs.
 */
export function healthReason(text: string): string {
  return redactUrls(text)
    .replace(URL_AUTHORITY, '$1<host>')
    .replace(IPV6, '<host>')
    .replace(IPV4, '<host>')
    .replace(LOOKUP, '$1 <host>')
    .replace(NAME_AND_PORT, '<host>');
}
