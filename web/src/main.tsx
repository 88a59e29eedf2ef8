// parca-server's web UI (docs/web.md): pick a profile type, select series
// by labels, see them over time, open one profile or merge a range as a
// flame graph; compare two selections as a diff.  The state lives in the
// URL.
import React from 'react';
import { createRoot } from 'react-dom/client';
import { ApiError, get, query, type Icicle, type List, type Profiles, type Range, type RangeSeries } from './api';
import { Flame, formatter, unitOf } from './Flame';
import { MetricGraph } from './MetricGraph';
import { SelectorInput } from './SelectorInput';
import { profileParams, readState, resolveTime, seriesSelector, writeState, type Side, type State } from './state';

const presets: [string, string][] = [
  ['now-15m', 'Last 15 minutes'], ['now-1h', 'Last hour'], ['now-6h', 'Last 6 hours'], ['now-24h', 'Last 24 hours'],
  ['now-7d', 'Last 7 days'], ['now-30d', 'Last 30 days'], ['now-1y', 'Last year'], ['0', 'All time'],
];

// points the metric graph aims at over its width
const TARGET_POINTS = 240;

function stepFor(start: number, stop: number): number {
  const s = Math.max(1, Math.ceil((stop - start) / 1000 / TARGET_POINTS));
  return s * 1000;
}

// nodes a flame graph of this width can draw: a node narrower than a pixel
// is not drawn, so no more are asked for (parca_icicle's max_nodes)
function maxNodesFor(width: number): number {
  return Math.min(100000, Math.max(500, Math.round(width * 3)));
}

const localInput = (ms: number) => {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 19);
};

function ErrorBox({ error }: { error: Error | null }) {
  if (!error) return null;
  const e = error as ApiError;
  const title = e.reason === 'database_unavailable' || e.reason === 'database_timeout' ? 'The database cannot answer'
    : e.status === 401 ? 'Credentials are required'
      : e.status === 403 ? 'Not allowed'
        : e.reason === 'unreachable' ? 'parca-server does not answer' : 'The query failed';
  return (
    <div className="error" role="alert">
      <strong>{title}</strong>
      <div className="message">{e.message}</div>
    </div>
  );
}

type SideData = {
  range?: Range;
  step: number;
  start: number;
  stop: number;
  choices?: { ids: string[]; times: number[] }; // the profiles of a clicked point
  error: Error | null;
  loading: boolean;
};

function RangePicker({ side, onChange, now }: { side: Side; onChange: (s: Partial<Side>) => void; now: number }) {
  const preset = side.to === 'now' && presets.some(([v]) => v === side.from) ? side.from : 'custom';
  return (
    <span className="range">
      <select aria-label="time range" value={preset}
        onChange={(e) => e.target.value !== 'custom' && onChange({ from: e.target.value, to: 'now', mfrom: '', mto: '', profile: '' })}>
        {presets.map(([v, label]) => <option key={v} value={v}>{label}</option>)}
        <option value="custom">Absolute range</option>
      </select>
      <input type="datetime-local" step="1" aria-label="from" value={localInput(resolveTime(side.from, now))}
        onChange={(e) => e.target.value && onChange({ from: String(new Date(e.target.value).getTime()), to: String(resolveTime(side.to, now)), mfrom: '', mto: '', profile: '' })} />
      <span>to</span>
      <input type="datetime-local" step="1" aria-label="to" value={localInput(resolveTime(side.to, now))}
        onChange={(e) => e.target.value && onChange({ to: String(new Date(e.target.value).getTime()), from: String(resolveTime(side.from, now)), mfrom: '', mto: '', profile: '' })} />
    </span>
  );
}

function SidePanel(props: {
  name: string; state: State; side: Side; data: SideData; now: number;
  onChange: (s: Partial<Side>) => void; onError: (e: Error) => void;
  onPoint: (s: RangeSeries, t: number) => void;
}) {
  const { state, side, data } = props;
  const [draft, setDraft] = React.useState(side.selector);
  React.useEffect(() => setDraft(side.selector), [side.selector]);
  const format = formatter(unitOf(state.type), state.theme);
  const selection: [number, number] | undefined = side.mfrom ? [Number(side.mfrom), Number(side.mto)] : undefined;
  return (
    <section className="side" data-side={props.name}>
      <div className="toolbar">
        {state.compare && <span className="side-name">{props.name === 'base' ? 'Base' : 'Compared'}</span>}
        <SelectorInput id={'selector-' + props.name} type={state.type} value={draft} onChange={setDraft}
          onSubmit={(v) => props.onChange({ selector: v || '{}', profile: '', mfrom: '', mto: '' })}
          onError={props.onError} />
        <RangePicker side={side} onChange={props.onChange} now={props.now} />
        <button type="button" className="primary" onClick={() => props.onChange({ selector: draft || '{}', profile: '', mfrom: '', mto: '' })}>
          Search
        </button>
      </div>
      <ErrorBox error={data.error} />
      {data.loading && !data.range && <div className="loading">Loading…</div>}
      {data.range && data.range.series.length === 0 && !data.error && (
        <div className="empty" role="status">
          No profiles of <code>{state.type}</code> match <code>{side.selector}</code> from{' '}
          {new Date(data.start).toISOString()} to {new Date(data.stop).toISOString()}.{' '}
          {side.from !== '0' && <button type="button" onClick={() => props.onChange({ from: '0', to: 'now', mfrom: '', mto: '', profile: '' })}>Search all time</button>}
        </div>
      )}
      {data.range && data.range.series.length > 0 && (
        <MetricGraph series={data.range.series} start={data.start} stop={data.stop} step={data.step} format={format}
          selection={selection} onPoint={props.onPoint}
          onRange={(a, b) => props.onChange({ mfrom: String(a), mto: String(b), profile: '' })} />
      )}
      <div className="what">
        {side.profile ? (
          <span className="chosen">One profile: <code data-profile-id={side.profile}>{side.profile}</code>{' '}
            <button type="button" onClick={() => props.onChange({ profile: '' })}>Merge the range instead</button></span>
        ) : side.mfrom ? (
          <span className="chosen">Merged from {new Date(Number(side.mfrom)).toISOString()} to {new Date(Number(side.mto)).toISOString()}{' '}
            <button type="button" onClick={() => props.onChange({ mfrom: '', mto: '' })}>Whole range</button></span>
        ) : data.range && data.range.series.length > 0 ? (
          <span className="chosen">Every profile of the range merged: click a point to open one, drag to merge a part</span>
        ) : null}
        {data.choices && data.choices.ids.length > 1 && (
          <span className="choices">{data.choices.ids.length} profiles at this point:{' '}
            {data.choices.ids.map((id, i) => (
              <button type="button" key={id} className={id === side.profile ? 'on' : ''}
                onClick={() => props.onChange({ profile: id })}>{new Date(data.choices!.times[i]).toISOString().slice(11, 23)}</button>
            ))}
          </span>
        )}
      </div>
    </section>
  );
}

function App() {
  const [state, setStateRaw] = React.useState<State>(() => readState(location.search));
  const [now, setNow] = React.useState(() => Date.now());
  const [types, setTypes] = React.useState<string[] | null>(null);
  const [error, setError] = React.useState<Error | null>(null);
  const [sides, setSides] = React.useState<Record<'a' | 'b', SideData>>({
    a: { step: 1000, start: 0, stop: 0, error: null, loading: false },
    b: { step: 1000, start: 0, stop: 0, error: null, loading: false },
  });
  const [icicle, setIcicle] = React.useState<Icicle | null>(null);
  const [flameError, setFlameError] = React.useState<Error | null>(null);
  const [flameLoading, setFlameLoading] = React.useState(false);
  const maxNodes = Math.min(100000, maxNodesFor(window.innerWidth) * state.nodes);

  // the state as last set, for callbacks that finish after other changes
  const latest = React.useRef(state);
  latest.current = state;
  const setState = (next: State, push = true) => {
    latest.current = next;
    setStateRaw(next);
    const url = writeState(next);
    if (url !== location.search) (push ? history.pushState : history.replaceState).call(history, null, '', url || '?');
  };
  React.useEffect(() => {
    const onPop = () => setStateRaw(readState(location.search));
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);
  React.useEffect(() => {
    document.body.className = 'theme-' + state.theme;
  }, [state.theme]);

  React.useEffect(() => {
    get<List>('profile-types', {}).then((l) => { setTypes(l.values); setError(null); }, setError);
  }, []);

  // each side's metric graph
  const sideKeys: ('a' | 'b')[] = state.compare ? ['b', 'a'] : ['a'];
  const rangeKey = (k: 'a' | 'b') => JSON.stringify([state.type, state[k].selector, state[k].from, state[k].to, now]);
  for (const k of ['a', 'b'] as const) {
    // (hooks in a fixed order: both sides always, the base one idle outside compare mode)
    // eslint-disable-next-line react-hooks/rules-of-hooks
    React.useEffect(() => {
      if (!state.type || (k === 'b' && !state.compare)) return;
      const d = state[k];
      const start = resolveTime(d.from, now);
      const stop = resolveTime(d.to, now);
      const step = stepFor(start, stop);
      const ctl = new AbortController();
      setSides((s) => ({ ...s, [k]: { ...s[k], loading: true, error: null, start, stop, step } }));
      get<Range>('range', { selector: state.type + d.selector, start, stop, step: step / 1000 }, ctl.signal).then(
        (range) => setSides((s) => ({ ...s, [k]: { ...s[k], range, loading: false, error: null } })),
        (e) => e.name !== 'AbortError' && setSides((s) => ({ ...s, [k]: { ...s[k], range: undefined, loading: false, error: e } })));
      return () => ctl.abort();
    }, [rangeKey(k), state.compare]);
  }

  // the flame graph: the merged or single profile, or the diff
  const flameParams = !state.type ? null : state.compare
    ? { ...profileParams(state, state.b, now, 'base_'), ...profileParams(state, state.a, now) }
    : profileParams(state, state.a, now);
  const flameKey = JSON.stringify([state.compare, flameParams, maxNodes]);
  React.useEffect(() => {
    if (!flameParams) return;
    const ctl = new AbortController();
    setFlameLoading(true);
    get<Icicle>(state.compare ? 'diff' : 'icicle', { ...flameParams, max_nodes: maxNodes }, ctl.signal).then(
      (ic) => {
        // what is drawn, for the tests and the bench (test/web, bench/web.sh)
        Object.assign(window, { parcaIcicle: ic, parcaIcicleParams: flameParams });
        setIcicle(ic); setFlameError(null); setFlameLoading(false);
      },
      (e) => { if (e.name !== 'AbortError') { setIcicle(null); setFlameError(e); setFlameLoading(false); } });
    return () => ctl.abort();
  }, [flameKey]);

  const changeSide = (k: 'a' | 'b') => (patch: Partial<Side>) => {
    if (patch.from !== undefined || patch.to !== undefined) setNow(Date.now());
    if (patch.profile === '' || patch.mfrom !== undefined) setSides((s) => ({ ...s, [k]: { ...s[k], choices: undefined } }));
    setState({ ...state, [k]: { ...state[k], ...patch } });
  };

  const onPoint = (k: 'a' | 'b') => (series: RangeSeries, t: number) => {
    const d = sides[k];
    get<Profiles>('profiles', {
      selector: state.type + seriesSelector(series.labels), start: t, stop: t + d.step - 1,
    }).then((p) => {
      setSides((s) => ({ ...s, [k]: { ...s[k], choices: { ids: p.ids, times: p.times } } }));
      // what changed while the profiles were looked up stays changed
      const current = latest.current;
      if (p.ids.length > 0) setState({ ...current, [k]: { ...current[k], profile: p.ids[0], mfrom: '', mto: '' } });
    }, setError);
  };

  const unit = unitOf(icicle?.type || state.type);
  const format = formatter(unit, state.theme);
  const download = !state.compare && flameParams ? 'api/pprof?' + query(flameParams) : null;

  return (
    <div className="app">
      <header>
        <h1>parca</h1>
        <select aria-label="profile type" value={state.type}
          onChange={(e) => setState({ ...state, type: e.target.value, a: { ...state.a, profile: '', mfrom: '', mto: '' }, b: { ...state.b, profile: '', mfrom: '', mto: '' } })}>
          <option value="">{types === null ? (error ? 'No profile types: see below' : 'Loading profile types…') : types.length ? 'Choose a profile type' : 'No profiles stored yet'}</option>
          {(types || []).map((t) => <option key={t} value={t}>{t}</option>)}
        </select>
        <label className="toggle"><input type="checkbox" checked={state.compare} aria-label="compare"
          onChange={(e) => setState({ ...state, compare: e.target.checked, b: e.target.checked ? { ...state.a, profile: state.a.profile, mfrom: state.a.mfrom, mto: state.a.mto } : state.b })} />
          Compare</label>
        <span className="spacer" />
        <button type="button" aria-label="theme" onClick={() => setState({ ...state, theme: state.theme === 'dark' ? 'light' : 'dark' }, false)}>
          {state.theme === 'dark' ? 'Light theme' : 'Dark theme'}
        </button>
      </header>
      <ErrorBox error={error} />
      {types && types.length === 0 && (
        <div className="empty" role="status">No profiles are stored yet. Push some to this server (docs/push.md), or let parca-agent or the scrape worker collect them.</div>
      )}
      {!state.type && types && types.length > 0 && <div className="hint" role="status">Choose a profile type above to see its series over time.</div>}
      {state.type && (
        <>
          <div className={state.compare ? 'sides compare' : 'sides'}>
            {sideKeys.map((k) => (
              <SidePanel key={k} name={k === 'b' ? 'base' : 'compared'} state={state} side={state[k]} data={sides[k]} now={now}
                onChange={changeSide(k)} onError={setError} onPoint={onPoint(k)} />
            ))}
          </div>
          <div className="filters">
            <label>Only stacks through function <input aria-label="keep function" defaultValue={state.keep} key={'k' + state.keep}
              onKeyDown={(e) => e.key === 'Enter' && setState({ ...state, keep: (e.target as HTMLInputElement).value })} /></label>
            <label>Without stacks through <input aria-label="drop function" defaultValue={state.drop} key={'d' + state.drop}
              onKeyDown={(e) => e.key === 'Enter' && setState({ ...state, drop: (e.target as HTMLInputElement).value })} /></label>
            {download && <a className="download" href={download} download="profile.pb.gz">Download pprof</a>}
          </div>
          <ErrorBox error={flameError} />
          {flameLoading && !icicle && <div className="loading">Loading the flame graph…</div>}
          {icicle && icicle.label.length === 0 && !flameError && (
            <div className="empty" role="status">Nothing to draw: no samples in this selection.</div>
          )}
          {icicle && icicle.label.length > 0 && (
            <>
              <div className="summary" role="status">
                {icicle.valueRight ? 'Diff' : 'Total'}: <strong data-total={icicle.total}>{format(icicle.total)}</strong>
                {' '}({icicle.type}){icicle.trimmed && (
                  <span className="trimmed"> · showing the {icicle.label.length} heaviest nodes of the call tree;
                    the rest are in [trimmed] nodes, every function keeps its exact self value{' '}
                    {maxNodes < 100000 && <button type="button" onClick={() => setState({ ...state, nodes: state.nodes * 4 })}>More nodes</button>}</span>
                )}
              </div>
              <Flame icicle={icicle} theme={state.theme} />
            </>
          )}
        </>
      )}
    </div>
  );
}

window.addEventListener('error', (e) => { (window as unknown as { parcaError?: string }).parcaError = String(e.message); });
createRoot(document.getElementById('root')!).render(<App />);
