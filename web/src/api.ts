// The server's API (server/ui_api.c, docs/web.md): GET /api/..., JSON
// answers, errors as {error, reason} with an HTTP status.

export class ApiError extends Error {
  status: number;
  reason: string;
  constructor(status: number, reason: string, message: string) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

export type Params = Record<string, string | number | undefined | null>;

export function query(params: Params): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  return q.toString();
}

export async function get<T>(what: string, params: Params, signal?: AbortSignal): Promise<T> {
  let resp: Response;
  try {
    resp = await fetch(`api/${what}?${query(params)}`, { credentials: 'same-origin', signal });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'unreachable', 'parca-server does not answer: is it running?');
  }
  if (!resp.ok) {
    let body: { error?: string; reason?: string } = {};
    try {
      body = await resp.json();
    } catch {
      /* not JSON: a proxy's page */
    }
    throw new ApiError(resp.status, body.reason || 'http_' + resp.status,
      body.error || `parca-server answered ${resp.status} ${resp.statusText}`);
  }
  return resp.json() as Promise<T>;
}

export type List = { values: string[]; truncated: boolean };
export type RangeSeries = { series: string; labels: Record<string, string>; points: [number, number, number][] };
export type Range = { series: RangeSeries[] };
export type Profiles = { ids: string[]; times: number[]; series: string[]; totals: number[] };
export type Icicle = {
  type: string | null;
  total: number;
  max_nodes: number;
  trimmed: boolean;
  level: number[];
  value: number[];
  self: number[];
  label: string[];
  valueRight?: number[];
  selfRight?: number[];
};
