import type { z } from "zod";
import type { Attribute } from "../../domain/attributes.js";
import type { AccessNeed } from "../../domain/principal.js";
import type { FeedService } from "../management/index.js";
import type { ReleasesServices } from "../releases/index.js";
import type { NativeConfigurationServices } from "./methods-otter.js";
import type { NativeUpackServices } from "./methods-proget.js";

/**
 * The native API method table (docs/seed-api.md area H; docs/compat.md 7.7). A method is data first: its
 * name, typed parameters, the privilege it needs and the zod schema of what it returns, plus a
 * transport-free `invoke`. The JSON transport (routes.ts) is one reader of this table; the SOAP
 * service at `/api/soap` (each method with the key as first argument, then these parameters, its
 * WSDL types derived from `result` with z.toJSONSchema) and the `/reference/api` page are meant to
 * be two more, generated from the same entries without touching the methods.
 */

/** How an argument is written on the wire: integers, free text, or Y/N (true/false) indicators. */
export type NativeType = "integer" | "string" | "indicator";

export interface NativeParameter {
  /** Canonical spelling (what reference pages and SOAP show); callers may use any letter case. */
  readonly name: string;
  readonly type: NativeType;
  readonly required: boolean;
  readonly description: string;
  /** Other names accepted for the same argument (e.g. a shorter spelling some clients use). */
  readonly aliases?: readonly string[];
}

type ValueOf<T extends NativeType> = T extends "integer" ? number : T extends "indicator" ? boolean : string;

/** The typed arguments a method's `run` receives: required ones present, optional ones maybe undefined. */
export type NativeArgumentsOf<P extends readonly NativeParameter[]> = {
  readonly [Q in P[number] as Q["name"]]: Q["required"] extends true
    ? ValueOf<Q["type"]>
    : ValueOf<Q["type"]> | undefined;
};

/** Bound arguments by canonical parameter name (arguments.ts guarantees they match the parameters). */
export type NativeArguments = Readonly<Record<string, string | number | boolean | undefined>>;

/**
 * The services methods read, one field per area (each area's methods live in their own
 * methods-<area>.ts file and add their services here).
 */
export interface NativeServices {
  readonly releases: ReleasesServices;
  /** Every feed (universal, asset and the others), for the ProGet feed methods. */
  readonly feeds: FeedService;
  readonly upack: NativeUpackServices;
  readonly configuration: NativeConfigurationServices;
}

/** What every transport hands a method: the services it reads and who is calling. */
export interface NativeContext {
  readonly services: NativeServices;
  /** Display name recorded on changes (releases/actor.ts: `API` for System keys). */
  readonly actor: string;
  /**
   * Whether the caller meets a need beyond the method's own attribute (request.can): a feed
   * method checks the caller's privilege on each feed it shows or changes, as the feed's own API does.
   */
  can(need: AccessNeed): Promise<boolean>;
}

export interface NativeMethod {
  readonly name: string;
  readonly summary: string;
  readonly parameters: readonly NativeParameter[];
  /** A System key needs the `native` scope; a user, personal key or Anonymous needs this attribute. */
  readonly attribute: Attribute;
  /** Shape of the JSON result; undefined for methods that return nothing (JSON: an empty 200). */
  readonly result: z.ZodType | undefined;
  /** Runs with arguments already bound and checked; throws DomainError. */
  invoke(args: NativeArguments, context: NativeContext): Promise<unknown>;
}

type ResultOf<R extends z.ZodType | undefined> = R extends z.ZodType ? z.input<R> : void;

/**
 * Declares a method; `run` is typed from the parameter list and the result schema, so a field
 * missing from the schema (or a parameter read under the wrong name) fails to compile.
 */
export function defineNativeMethod<
  const P extends readonly NativeParameter[],
  R extends z.ZodType | undefined = undefined,
>(definition: {
  readonly name: string;
  readonly summary: string;
  readonly parameters: P;
  readonly attribute: Attribute;
  readonly result: R;
  run(args: NativeArgumentsOf<P>, context: NativeContext): Promise<ResultOf<R>>;
}): NativeMethod {
  const { run, ...described } = definition;
  return { ...described, invoke: (args, context) => run(args as NativeArgumentsOf<P>, context) };
}

/** The table transports look methods up in. */
export interface NativeRegistry {
  /** Method names match case-insensitively (docs/compat.md 0.1); undefined for an unknown name. */
  find(name: string): NativeMethod | undefined;
  /** In declaration order, for reference pages and service descriptions. */
  readonly methods: readonly NativeMethod[];
}

export function createNativeRegistry(methods: readonly NativeMethod[]): NativeRegistry {
  const byName = new Map<string, NativeMethod>();
  for (const method of methods) {
    const key = method.name.toLowerCase();
    if (byName.has(key)) throw new Error(`native method ${method.name} is declared twice`);
    const names = method.parameters.flatMap((p) => [p.name, ...(p.aliases ?? [])].map((n) => n.toLowerCase()));
    if (new Set(names).size !== names.length) throw new Error(`native method ${method.name} repeats a parameter name`);
    byName.set(key, method);
  }
  return { find: (name) => byName.get(name.toLowerCase()), methods: [...methods] };
}
