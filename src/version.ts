/** Wharf's own version, and the ProGet API level it answers as (docs/compat.md 0.4). */
export const WHARF_VERSION = "0.1.0";
/** Four-part .NET style version sent in `X-ProGet-Version`: the ProGet API level Wharf implements. */
export const PROGET_API_VERSION = "25.0.0.1";
export const PROGET_EDITION = "free";
