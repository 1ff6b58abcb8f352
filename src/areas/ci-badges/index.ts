export { type CiBadgeOptions, ciBadgeRoutes as ciBadgesArea } from "./routes.js";
