import { z } from "zod";

/**
 * The querystring schema of a route whose arguments are read leniently (http/params.ts: names
 * matched case-insensitively, booleans as clients spell them): every argument is documented in the
 * OpenAPI description, and z.unknown lets any value through to that lenient reading.
 */
export const queryDoc = (fields: Record<string, string>) =>
  z.looseObject(
    Object.fromEntries(Object.entries(fields).map(([key, text]) => [key, z.unknown().optional().describe(text)])),
  );
