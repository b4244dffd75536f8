/**
 * Credentials the library may find in text it prints: the userinfo of a URL
 * (`scheme://user:password@host`) and libpq's `password=` setting. Everything a
 * library message or log line may carry goes through {@link redactUrls} first, so
 * a bad `REDIS_URL` or a driver error quoting its connection string never prints
 * a password.
 *
 * The userinfo runs to the last `@` before the host part ends (white space, `/`,
 * `?` or `#`), so a password with an unencoded `@` is hidden whole; quotes around
 * the URL (as `docker --env-file` keeps them) and JSON escaping do not matter.
 */
const URL_USERINFO = /\b([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^\s/?#]*)@/g;
const PASSWORD_SETTING = /\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\\?"[^\s]*|[^\s'"&;,)]+)/gi;

/** `text` with every URL's password (or lone userinfo) replaced by `***`. */
export function redactUrls(text: string): string {
  if (!text.includes('@') && !/password/i.test(text)) return text;
  return text
    .replace(URL_USERINFO, (_match, scheme: string, userinfo: string) => `${scheme}${redactUserinfo(userinfo)}@`)
    .replace(PASSWORD_SETTING, '$1***');
}

/** `user:password` → `user:***`; a userinfo without `:` may be a password alone (`redis://secret@host`) → `***`. */
function redactUserinfo(userinfo: string): string {
  const colon = userinfo.indexOf(':');
  if (colon < 0) return '***';
  // A user name that itself ends in quotes or escapes is part of the same token; keep only plain names.
  const user = userinfo.slice(0, colon);
  return /^[A-Za-z0-9._~%!$&'()*+,;=-]*$/.test(user) ? `${user}:***` : '***';
}
