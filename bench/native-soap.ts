import os from "node:os";
import { cpuSeconds, loadFigures, round } from "./load.js";
import type { Scenario, ScenarioContext } from "./scenarios.js";
import { runWrkOnce, wrkAvailable } from "./wrk.js";
import { createApiKey } from "./api-keys.js";
import { SOAP_NAMESPACE } from "../src/areas/native/soap-namespace.js";

/**
 * The same native method over JSON and over SOAP (issue 14 section 6): `Applications_GetApplications`
 * listing 20 applications, at 32 connections, one after the other in one run. Both carry the key in
 * the body (JSON `API_Key`, the envelope's `API_Key`), so both take the path of a sender known only
 * once the body is read. The figure that matters is the server's CPU time per request (what a call
 * costs, whatever the client); the target is SOAP at most 2x JSON. wrk drives both (POST with a
 * body); requests/s and latencies are reported beside it.
 *
 * `npm run bench -- native-soap-vs-json`
 */
const CONNECTIONS = 32;
const APPLICATIONS = 20;
const TARGET_RATIO = 2;
const METHOD = "Applications_GetApplications";

let key: string | undefined;

const nativeKey = (ctx: ScenarioContext) =>
  createApiKey(ctx, { type: "System", systemApis: ["native"], displayName: "bench native" });

async function createApplications(ctx: ScenarioContext): Promise<void> {
  for (let i = 0; i < APPLICATIONS; i++) {
    const res = await fetch(`${ctx.url}/api/applications/create`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-ApiKey": ctx.adminKey },
      body: JSON.stringify({ name: `bench-app-${String(i).padStart(2, "0")}`, description: "Bench & <co>" }),
    });
    if (!res.ok) throw new Error(`application ${i}: ${res.status} ${await res.text()}`);
  }
}

interface Call {
  readonly name: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Whether an answer holds every application. */
  complete(text: string): boolean;
}

function calls(apiKey: string): Call[] {
  const rows = (text: string, marker: string) => text.split(marker).length - 1;
  return [
    {
      name: "json",
      path: `/api/json/${METHOD}`,
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ API_Key: apiKey }),
      complete: (text) => rows(text, '"Application_Id"') === APPLICATIONS,
    },
    {
      name: "soap",
      path: "/api/soap",
      headers: { "Content-Type": "text/xml; charset=utf-8", SOAPAction: `"${SOAP_NAMESPACE}${METHOD}"` },
      body:
        '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">' +
        `<soap:Body><${METHOD} xmlns="${SOAP_NAMESPACE}"><API_Key>${apiKey}</API_Key></${METHOD}></soap:Body></soap:Envelope>`,
      complete: (text) => rows(text, "<Row>") === APPLICATIONS,
    },
  ];
}

async function measure(ctx: ScenarioContext, call: Call) {
  const probe = await fetch(`${ctx.url}${call.path}`, { method: "POST", headers: call.headers, body: call.body });
  const text = await probe.text();
  if (probe.status !== 200 || !call.complete(text)) {
    throw new Error(`${call.name} answered ${probe.status}: ${text.slice(0, 300)}`);
  }
  const load = { url: `${ctx.url}${call.path}`, method: "POST" as const, headers: call.headers, body: call.body };
  if (ctx.warmup > 0) await runWrkOnce({ ...load, connections: CONNECTIONS }, ctx.warmup);
  ctx.log(`native-soap-vs-json ${call.name}: ${ctx.duration} s with ${CONNECTIONS} connections (wrk)`);
  const before = cpuSeconds(ctx.serverPid);
  const result = await runWrkOnce({ ...load, connections: CONNECTIONS }, ctx.duration);
  const after = cpuSeconds(ctx.serverPid);
  return {
    path: call.path,
    requestBytes: Buffer.byteLength(call.body),
    responseBytes: Buffer.byteLength(text),
    ...loadFigures(result, before, after),
  };
}

type Measured = Awaited<ReturnType<typeof measure>>;

/** The runs' figures averaged (requests summed); CPU per request over all their requests. */
function mean(runs: Measured[]): Measured {
  const [first] = runs;
  if (first === undefined) throw new Error("no runs");
  const average = (pick: (run: Measured) => number) =>
    round(runs.reduce((sum, run) => sum + pick(run), 0) / runs.length);
  const cpu = runs.map((run) => run.serverCpuMicrosPerRequest);
  const requests = runs.reduce((sum, run) => sum + run.requests, 0);
  return {
    ...first,
    requestsPerSec: average((run) => run.requestsPerSec),
    latencyP50Ms: average((run) => run.latencyP50Ms),
    latencyP99Ms: average((run) => run.latencyP99Ms),
    requests,
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    non2xx: runs.reduce((sum, run) => sum + run.non2xx, 0),
    serverCpuMicrosPerRequest: cpu.some((value) => value === null)
      ? null
      : round(runs.reduce((sum, run) => sum + (run.serverCpuMicrosPerRequest ?? 0) * run.requests, 0) / requests, 1),
  };
}

const brief = (run: Measured) => ({
  requestsPerSec: run.requestsPerSec,
  serverCpuMicrosPerRequest: run.serverCpuMicrosPerRequest,
});

const soapVersusJson: Scenario = {
  name: "native-soap-vs-json",
  async setup(ctx) {
    if (!wrkAvailable()) throw new Error("native-soap-vs-json needs wrk (apt-get install wrk): it POSTs bodies");
    key = await nativeKey(ctx);
    await createApplications(ctx);
  },
  async run(ctx) {
    if (key === undefined) throw new Error("setup did not run");
    const [json, soap] = calls(key);
    if (json === undefined || soap === undefined) throw new Error("no calls");
    // Interleaved, twice each: the machine's other load drifts, and neither transport should get the quieter half.
    const jsonRuns = [await measure(ctx, json)];
    const soapRuns = [await measure(ctx, soap)];
    soapRuns.push(await measure(ctx, soap));
    jsonRuns.push(await measure(ctx, json));
    const overJson = mean(jsonRuns);
    const overSoap = mean(soapRuns);
    const cpuRatio =
      overJson.serverCpuMicrosPerRequest && overSoap.serverCpuMicrosPerRequest
        ? round(overSoap.serverCpuMicrosPerRequest / overJson.serverCpuMicrosPerRequest)
        : null;
    return {
      method: METHOD,
      applications: APPLICATIONS,
      connections: CONNECTIONS,
      client: "wrk",
      loadAverage: os.loadavg().map((value) => round(value)),
      json: { ...overJson, runs: jsonRuns.map(brief) },
      soap: { ...overSoap, runs: soapRuns.map(brief) },
      soapOverJsonCpuPerRequest: cpuRatio,
      soapOverJsonTimePerRequest: round(overJson.requestsPerSec / overSoap.requestsPerSec),
      targetRatio: TARGET_RATIO,
      withinTarget: cpuRatio !== null && cpuRatio <= TARGET_RATIO,
    };
  },
};

export const NATIVE_SOAP_SCENARIOS: readonly Scenario[] = [soapVersusJson];
