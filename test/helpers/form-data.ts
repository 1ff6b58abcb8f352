import { randomBytes } from "node:crypto";
import path from "node:path";
import type { TestApp } from "./app.js";
import { filesUnder } from "./temp-files.js";

/**
 * `multipart/form-data` bodies (RFC 7578) built by hand, byte for byte, so that a test can send
 * what no well-behaved client would (a filename with `../` or a NUL, a missing final boundary).
 * Well-formed forms from a real client are sent with undici's FormData in the socket tests.
 */
export interface FormPart {
  readonly name: string;
  /** A file part when given ("" included); a text field otherwise. */
  readonly filename?: string;
  /** Sent as `filename*=UTF-8''<percent-encoded>` instead of `filename="..."` (RFC 5987), to smuggle any byte. */
  readonly encodedFilename?: string;
  readonly contentType?: string;
  readonly content: string | Buffer;
}

export interface FormBody {
  readonly payload: Buffer;
  /** `multipart/form-data; boundary=...` */
  readonly contentType: string;
  readonly boundary: string;
}

export function formBody(parts: readonly FormPart[], options: { boundary?: string } = {}): FormBody {
  const boundary = options.boundary ?? `wharf-test-${randomBytes(8).toString("hex")}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let disposition = `form-data; name="${part.name}"`;
    if (part.filename !== undefined) disposition += `; filename="${part.filename}"`;
    if (part.encodedFilename !== undefined) {
      disposition += `; filename*=UTF-8''${encodeURIComponent(part.encodedFilename)}`;
    }
    const type = part.contentType ?? (part.filename !== undefined ? "application/octet-stream" : undefined);
    const head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type ? `Content-Type: ${type}\r\n` : ""}\r\n`;
    chunks.push(Buffer.from(head, "utf8"), Buffer.from(part.content), Buffer.from("\r\n"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}`, boundary };
}

/** One file part named `file`. */
export const filePart = (filename: string, content: string | Buffer, contentType?: string): FormPart => ({
  name: "file",
  filename,
  content,
  ...(contentType === undefined ? {} : { contentType }),
});

/** What a form-upload test sends as the admin of a test app, and the data directory's files it checks. */
export function formRequests(app: () => TestApp) {
  const admin = () => ({ "x-apikey": app().adminKey });
  return {
    admin,
    sendForm: (
      url: string,
      parts: readonly FormPart[],
      options: { method?: "POST" | "PUT" | "PATCH"; headers?: Record<string, string> } = {},
    ) => {
      const form = formBody(parts);
      return app().app.inject({
        method: options.method ?? "POST",
        url,
        headers: { ...admin(), "content-type": form.contentType, ...options.headers },
        payload: form.payload,
      });
    },
    get: (url: string) => app().app.inject({ method: "GET", url, headers: admin() }),
    blobs: () => filesUnder(path.join(app().dataDir, "blobs")),
    temps: () => filesUnder(path.join(app().dataDir, "tmp")),
  };
}
