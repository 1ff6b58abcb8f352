import type { FastifyInstance } from "fastify";

/**
 * Root body parsing, lenient as real clients need (compat.md 0.2):
 * - JSON: an empty body declared as JSON is "no body", not an error (pgutil posts with no body).
 * - Any other or missing Content-Type: the raw stream is handed to the route untouched; areas
 *   that accept uploads read and count it themselves (STYLE.md: stream bodies never buffer).
 */
export function registerBodyParsers(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.trim() === "") return done(null, undefined);
    parseJson(request, text, done);
  });
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
}
