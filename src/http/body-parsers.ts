import type { FastifyInstance } from "fastify";
import { DomainError, invalid } from "../domain/errors.js";
import { jsonCostProblem, MAX_JSON_DEPTH, MAX_JSON_VALUES } from "../domain/json-depth.js";
import { closeConnectionsOfRefusedUploads } from "./upload-body.js";

/**
 * Root body parsing, lenient as real clients need (docs/compat.md 0.2):
 * - JSON: an empty body declared as JSON is "no body", not an error (pgutil posts with no body).
 *   Its depth and number of values are bounded before JSON.parse runs (json-depth.ts), so that
 *   no body, however its sender got past the size limits, blocks the event loop for long.
 * - Any other or missing Content-Type: the raw stream is handed to the route untouched; areas
 *   that accept uploads read and count it themselves (docs/STYLE.md: stream bodies never buffer).
 * A refused request whose body has not arrived whole is answered with `Connection: close`, so
 * the rest is never read (Node would otherwise read it to the end to reuse the connection).
 */
export function registerBodyParsers(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.trim() === "") return done(null, undefined);
    const problem = jsonCostProblem(text);
    if (problem === "depth") {
      return done(invalid("JSON_TOO_DEEP", `The JSON body is nested more than ${MAX_JSON_DEPTH} levels deep.`));
    }
    if (problem === "values") {
      const message = `The JSON body holds more than ${MAX_JSON_VALUES} values.`;
      return done(new DomainError("too_large", "JSON_TOO_MANY_VALUES", message));
    }
    parseJson(request, text, done);
  });
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
  closeConnectionsOfRefusedUploads(app);
}
