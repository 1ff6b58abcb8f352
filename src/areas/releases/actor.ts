import type { Principal } from "../../domain/principal.js";

/** Who to record as creator/canceler (docs/compat.md 7.3: API calls show `API`; users by name). */
export function actorName(principal: Principal): string {
  switch (principal.type) {
    case "user":
      return principal.userName;
    case "anonymous":
      return "Anonymous";
    default:
      return "API";
  }
}
