// The flame graph, top table and sandwich: Grafana's own component
// (@grafana/flamegraph), fed the data frame that parca_icicle's rows make,
// as Grafana's flame graph panel is (test/grafana checks the same frame).
import React from 'react';
import type { Icicle } from './api';

// Grafana's packages are required, not imported: their CommonJS builds
// interoperate with the CommonJS packages they use as webpack's would
// (see test/grafana/flamegraph.jsx)
declare const require: (name: string) => any; // eslint-disable-line @typescript-eslint/no-explicit-any
const data = require('@grafana/data');
const { FlameGraph } = require('@grafana/flamegraph');

const units: Record<string, string> = {
  nanoseconds: 'ns', microseconds: 'µs', milliseconds: 'ms', seconds: 's', bytes: 'bytes', count: 'short',
};

// the Grafana unit of a profile type's values: its sample unit (third
// field), or for samples:count the period's unit, as parca_query and
// parca_query_range report them (docs/query.md, "Units")
export function unitOf(type: string | null): string {
  const f = (type || '').split(':');
  if (f[1] === 'samples' && f[2] === 'count' && units[f[4]]) return units[f[4]];
  return units[f[2]] || 'short';
}

export function themeOf(mode: 'dark' | 'light') {
  return data.createTheme({ colors: { mode } });
}

export function formatter(unit: string, mode: 'dark' | 'light'): (v: number) => string {
  const display = data.getDisplayProcessor({
    field: { type: data.FieldType.number, config: { unit } }, theme: themeOf(mode),
  });
  return (v: number) => data.formattedValueToString(display(v));
}

export function frameOf(ic: Icicle, mode: 'dark' | 'light') {
  const theme = themeOf(mode);
  const unit = unitOf(ic.type);
  const columns = ic.valueRight ? ['level', 'value', 'self', 'valueRight', 'selfRight', 'label']
    : ['level', 'value', 'self', 'label'];
  const frame = data.createDataFrame({
    refId: 'A',
    fields: columns.map((name) => ({
      name,
      type: name === 'label' ? data.FieldType.string : data.FieldType.number,
      values: (ic as unknown as Record<string, unknown[]>)[name],
      config: name === 'label' || name === 'level' ? {} : { unit },
    })),
  });
  const [applied] = data.applyFieldOverrides({
    data: [frame], fieldConfig: { defaults: {}, overrides: [] }, replaceVariables: (s: string) => s, theme,
  });
  return applied;
}

type Props = { icicle: Icicle; theme: 'dark' | 'light'; extra?: React.ReactNode };

export function Flame(p: Props) {
  const frame = React.useMemo(() => frameOf(p.icicle, p.theme), [p.icicle, p.theme]);
  const theme = React.useMemo(() => themeOf(p.theme), [p.theme]);
  React.useEffect(() => {
    // drawn: the canvas paints in an effect; a frame later it is on screen (the tests and bench wait for this)
    const w = window as unknown as { parcaDrawn?: number; parcaDrawnAt?: number };
    requestAnimationFrame(() => requestAnimationFrame(() => {
      w.parcaDrawn = (w.parcaDrawn || 0) + 1;
      w.parcaDrawnAt = performance.now();
    }));
  }, [frame]);
  return (
    <div className="flame" data-rows={p.icicle.label.length}>
      <FlameGraph data={frame} getTheme={() => theme} extraHeaderElements={p.extra} keepFocusOnDataChange={false}
        showAnalyzeWithAssistant={false} />
    </div>
  );
}
