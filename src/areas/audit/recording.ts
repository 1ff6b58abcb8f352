import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Clock } from "../../domain/clock.js";
import { ANONYMOUS, type Principal } from "../../domain/principal.js";
import { credentialsFromHeaders } from "../../http/credentials.js";
import type { AuditLog } from "./audit-log.js";
import { type AuditActor, actorOf, objectOf, outcomeOf } from "./record.js";

/** Methods that change something: every request with one is recorded. */
const UNSAFE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Records every change made through any route (API or UI), and every refused authorisation on
 * any method, from one root hook: no route has to remember. Runs once the response is sent, so
 * the status is final and the caller never waits for the record. A URL that matched no route
 * (404 before routing) names nothing to record.
 */
export function registerAuditRecording(app: FastifyInstance, audit: AuditLog, clock: Clock): void {
  app.addHook("onResponse", (request, reply, done) => {
    const status = reply.statusCode;
    const pattern = request.routeOptions.url;
    if (pattern !== undefined && (UNSAFE_METHODS.has(request.method) || status === 401 || status === 403)) {
      audit.append({
        at: clock.now().toISOString(),
        actor: actorAfter(request, status),
        address: request.ip,
        action: `${request.method} ${pattern}`,
        object: objectOf(request.params, request.query, request.body),
        status,
        outcome: outcomeOf(status),
        requestId: request.id,
      });
    }
    done();
  });
}

/**
 * Who made the request. A refused Basic sign-in leaves the principal Anonymous: the user name it
 * tried is recorded (a name, not a secret); a key that was refused is never shown in any part.
 */
function actorAfter(request: FastifyRequest, status: number): AuditActor {
  // Null when a hook before authentication answered (the decoration's empty value).
  const actor = actorOf((request.principal as Principal | null) ?? ANONYMOUS);
  if (actor.kind !== "anonymous" || (status !== 401 && status !== 403)) return actor;
  const credentials = credentialsFromHeaders(request.headers);
  return credentials?.kind === "password" ? { kind: "anonymous", name: credentials.user } : actor;
}
