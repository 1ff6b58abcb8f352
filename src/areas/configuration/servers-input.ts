import { z } from "zod";
import { invalid } from "../../domain/errors.js";

/**
 * A server as clients send it (docs/compat.md 8.2), every property optional: missing ones are left
 * unchanged on update. Otter's Windows-only properties (encryptionType, encryptionKey, requireSsl,
 * wsManUrl) are accepted and ignored, as are unknown ones (clients round-trip what they read).
 */
const flag = z.union([
  z.boolean(),
  z.enum(["true", "false", "True", "False"]).transform((v) => v.toLowerCase() === "true"),
]);
const names = z.array(z.string());
const nullableText = z.string().nullable().optional();
export const serverInputSchema = z
  .looseObject({
    name: z.string().optional(),
    serverType: z.string().optional(),
    drift: z.string().optional(),
    active: flag.optional(),
    roles: names.nullable().optional(),
    environments: names.nullable().optional(),
    variables: z.unknown().optional(),
    hostName: nullableText,
    port: z
      .union([
        z.number().int(),
        z
          .string()
          .regex(/^\d{1,5}$/)
          .transform(Number),
      ])
      .nullable()
      .optional(),
    credentialsName: nullableText,
    credentialsType: nullableText,
    tempPath: nullableText,
    rootPath: nullableText,
    hostKeySha256: nullableText,
    items: z.unknown().optional(),
  })
  .nullish();
export type ServerInput = NonNullable<z.infer<typeof serverInputSchema>>;

export const roleInputSchema = z
  .looseObject({
    name: z.string().optional(),
    description: z.string().nullable().optional(),
    variables: z.unknown().optional(),
    dependsOn: names.nullable().optional(),
    items: z.unknown().optional(),
  })
  .nullish();
export type RoleInput = NonNullable<z.infer<typeof roleInputSchema>>;

/** Parses with a 400 naming the fields (the CLI's and tests' way in; routes use the schema itself). */
export function parseInput<T>(
  schema: z.ZodType<T | null | undefined>,
  body: unknown,
): NonNullable<T> | Record<string, never> {
  const result = schema.safeParse(body);
  if (!result.success) {
    const details = result.error.issues
      .map((issue) => `${issue.path.join(".") || "body"}: ${issue.message}`)
      .join("; ");
    throw invalid("INVALID_REQUEST", `Invalid body: ${details}`);
  }
  return result.data ?? {};
}
