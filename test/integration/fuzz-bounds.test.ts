import { randomBytes, randomInt } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory } from "../helpers/asset-fixtures.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * What requests spelled at random leave behind (issue 11 section 7): the request metrics are
 * labelled by route template, so thousands of unknown URLs, feed names and query strings add no
 * series (a label made of raw URLs would grow without bound and be kept for the life of the
 * process).
 */

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
  await createUpackFixtures(t).createFeed("feed");
  await createAssetDirectory(t, "files");
});
afterAll(async () => t.close());

const junk = () => randomBytes(randomInt(1, 30)).toString("base64url");

async function series(): Promise<string[]> {
  const res = await t.app.inject({ url: "/metrics", headers: { "x-apikey": t.adminKey } });
  expect(res.statusCode).toBe(200);
  return res.body.split("\n").filter((line) => line.startsWith("wharf_http_requests_total{"));
}

describe("requests spelled at random", () => {
  it("add no metric series per URL, feed name or query string", async () => {
    const headers = { "x-apikey": t.adminKey };
    const shapes = [
      () => `/${junk()}/${junk()}?${junk()}=${junk()}`,
      () => `/upack/${junk()}/packages?group=${junk()}`,
      () => `/upack/feed/versions?name=${junk()}&${junk()}=1`,
      () => `/endpoints/${junk()}/content/${junk()}`,
      () => `/endpoints/files/dir/${junk()}?recursive=${junk()}`,
      () => `/api/packages/${junk()}/versions`,
    ];
    const send = (i: number) =>
      t.app.inject({
        method: i % 7 === 0 ? "DELETE" : "GET",
        url: (shapes[i % shapes.length] as () => string)(),
        headers,
      });
    for (let i = 0; i < 300; i++) await send(i);
    const before = (await series()).length;
    for (let i = 0; i < 3000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => send(i + j)));
    const after = await series();
    // Only a new status of a route already seen could add one; random spellings add none.
    expect(after.length).toBeLessThanOrEqual(before + 2);
    expect(after.length).toBeLessThan(40);
    expect(after.every((line) => !/route="[^"]*(\?|%)/.test(line))).toBe(true);
  });
});
