/**
 * `attachment; filename="…"` with the quotes the Jenkins plugin needs (docs/clients.md 3.7, 4 item 7).
 * A name that is not plain printable ASCII, or holds a quote or backslash, also gets an RFC 8187
 * `filename*` and a sanitised ASCII fallback, so that no header can be broken by a file name
 * (Node refuses other header characters, and clients read the quoted one as Latin-1).
 */
export function attachment(fileName: string): string {
  if (/^[\x20-\x7e]*$/.test(fileName) && !/["\\]/.test(fileName)) return `attachment; filename="${fileName}"`;
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeRfc8187(fileName)}`;
}

function encodeRfc8187(value: string): string {
  return encodeURIComponent(value).replace(/['()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}
