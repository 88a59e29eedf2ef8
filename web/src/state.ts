// The view's state, all of it in the URL's query string, so that a URL
// reopens the same view (docs/web.md, "Sharing a view").

export type Side = {
  selector: string; // the matchers: {job="api"}
  from: string; // now-1h, or milliseconds since 1970
  to: string;
  profile: string; // one profile's id (SERIES@MICROSECONDS), or ''
  mfrom: string; // a dragged sub-range to merge, or ''
  mto: string;
};

export type State = {
  type: string;
  a: Side; // the selection; the compared side in compare mode
  b: Side; // the base side in compare mode
  compare: boolean;
  keep: string; // stack filters: only stacks through this function
  drop: string; // without the stacks through this one
  nodes: number; // the flame graph asks for this many times the nodes its width can draw
  theme: 'dark' | 'light';
};

const emptySide = (): Side => ({ selector: '{}', from: 'now-1h', to: 'now', profile: '', mfrom: '', mto: '' });

const sideKeys: (keyof Side)[] = ['selector', 'from', 'to', 'profile', 'mfrom', 'mto'];

export function readState(search: string): State {
  const q = new URLSearchParams(search);
  const side = (prefix: string): Side => {
    const s = emptySide();
    for (const k of sideKeys) {
      const v = q.get(prefix + k);
      if (v !== null) s[k] = v;
    }
    return s;
  };
  return {
    type: q.get('type') || '',
    a: side(''),
    b: side('base_'),
    compare: q.get('compare') === '1',
    keep: q.get('keep') || '',
    drop: q.get('drop') || '',
    nodes: Math.max(1, Math.min(64, Number(q.get('nodes')) || 1)),
    theme: q.get('theme') === 'light' ? 'light' : 'dark',
  };
}

export function writeState(s: State): string {
  const q = new URLSearchParams();
  if (s.type) q.set('type', s.type);
  const side = (prefix: string, d: Side) => {
    const dflt = emptySide();
    for (const k of sideKeys) if (d[k] !== dflt[k]) q.set(prefix + k, d[k]);
  };
  side('', s.a);
  if (s.compare) {
    q.set('compare', '1');
    side('base_', s.b);
  }
  if (s.keep) q.set('keep', s.keep);
  if (s.drop) q.set('drop', s.drop);
  if (s.nodes !== 1) q.set('nodes', String(s.nodes));
  if (s.theme !== 'dark') q.set('theme', s.theme);
  return '?' + q.toString();
}

// "now-1h" (units s, m, h, d, w, y) or milliseconds, against now
export function resolveTime(t: string, now: number): number {
  if (t === 'now') return now;
  const m = /^now-(\d+)([smhdwy])$/.exec(t);
  if (m) {
    const unit: Record<string, number> = { s: 1e3, m: 6e4, h: 36e5, d: 864e5, w: 6048e5, y: 31536e6 };
    return now - Number(m[1]) * unit[m[2]];
  }
  const n = Number(t);
  return Number.isFinite(n) ? n : now;
}

// the parameters naming a side's profile: one profile, a dragged range, or the whole range
export function profileParams(s: State, d: Side, now: number, prefix = ''): Record<string, string> {
  if (d.profile) return { [prefix + 'profile']: d.profile };
  const p: Record<string, string> = {
    [prefix + 'selector']: s.type + d.selector,
    [prefix + 'start']: String(d.mfrom ? Number(d.mfrom) : resolveTime(d.from, now)),
    [prefix + 'stop']: String(d.mto ? Number(d.mto) : resolveTime(d.to, now)),
  };
  if (s.keep) p[prefix + 'keep_function'] = s.keep;
  if (s.drop) p[prefix + 'drop_function'] = s.drop;
  return p;
}

// a label value as a selector's double-quoted string
export function quoteValue(v: string): string {
  return '"' + v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') + '"';
}

// the selector that names exactly one series: its labels, each with =
export function seriesSelector(labels: Record<string, string>): string {
  return '{' + Object.keys(labels).sort().map((k) => `${k}=${quoteValue(labels[k])}`).join(', ') + '}';
}
