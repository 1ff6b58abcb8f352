import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import type { TestApp } from "./app.js";

/**
 * A browser for inject tests of the web UI: holds its cookies, signs in through the form, and
 * posts forms with the CSRF token of the page it last read (the frame's csrf-token meta), as a
 * page's own form would.
 */
export class UiClient {
  readonly cookies = new Map<string, string>();
  /** The CSRF token of the last page read while signed in. */
  token = "";
  constructor(
    private readonly t: TestApp,
    readonly address = "198.51.100.20",
    readonly userAgent = "UiClient/1.0",
  ) {}

  async request(options: {
    method?: "GET" | "POST";
    url: string;
    form?: [string, string][];
  }): Promise<LightMyRequestResponse> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const res = await this.t.app.inject({
      method: options.method ?? "GET",
      url: options.url,
      remoteAddress: this.address,
      headers: {
        "user-agent": this.userAgent,
        ...(cookie ? { cookie } : {}),
        ...(options.form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      },
      ...(options.form ? { payload: new URLSearchParams(options.form).toString() } : {}),
    });
    for (const set of res.cookies) {
      if (set.value === "" || set.maxAge === 0) this.cookies.delete(set.name);
      else this.cookies.set(set.name, set.value);
    }
    const meta = /<meta name="csrf-token" content="([^"]+)">/.exec(res.body);
    if (meta?.[1] !== undefined) this.token = meta[1];
    return res;
  }

  get(url: string): Promise<LightMyRequestResponse> {
    return this.request({ url });
  }

  /** Posts a form with the session's CSRF token (read from `from`, or the last page read). */
  async post(url: string, fields: [string, string][] = [], from?: string): Promise<LightMyRequestResponse> {
    if (from !== undefined) await this.get(from);
    return this.request({ method: "POST", url, form: [["_csrf", this.token], ...fields] });
  }

  /** Posts without any CSRF token (what a cross-site form would send). */
  postWithoutToken(url: string, fields: [string, string][] = []): Promise<LightMyRequestResponse> {
    return this.request({ method: "POST", url, form: fields });
  }

  async signIn(user: string, password: string): Promise<void> {
    const form = await this.get("/sign-in");
    const token = /action="\/sign-in"[^>]*>\s*<input type="hidden" name="_csrf" value="([^"]+)"/.exec(form.body)?.[1];
    expect(token, "the sign-in form's CSRF token").toBeDefined();
    const res = await this.request({
      method: "POST",
      url: "/sign-in",
      form: [
        ["_csrf", token ?? ""],
        ["user", user],
        ["password", password],
      ],
    });
    expect(res.statusCode, res.body).toBe(303);
    await this.get("/account");
  }
}
