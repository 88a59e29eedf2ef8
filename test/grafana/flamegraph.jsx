// The flame graph panel as Grafana draws it: the data frame of one query
// (rows as the PostgreSQL datasource returns them), the unit that the
// dashboard's "Config from query results" transformation puts on its
// number fields, Grafana's field defaults applied, then @grafana/flamegraph's
// own component, the one the panel renders.
//
// Reads window.PARCA_FRAME = {rows: [{level, value, self, [valueRight,
// selfRight,] label}], unit}; sets window.PARCA_READY when drawn, and
// window.PARCA_TRANSFORM to what the panel's data transform
// (FlameGraphDataContainer) makes of the frame.  window.parcaDisplay(v)
// formats a value as the panel does with this unit.
//
// Grafana's packages are required, not imported: their CommonJS builds
// interoperate with the CommonJS packages they use as webpack (Grafana's
// bundler) does, where esbuild follows Node's rules for their .mjs builds.
import React from 'react';
import { createRoot } from 'react-dom/client';

const { applyFieldOverrides, createDataFrame, createTheme, FieldType, getDisplayProcessor,
  formattedValueToString } = require('@grafana/data');
const { FlameGraph } = require('@grafana/flamegraph');
// not exported by the package's index: build.js points this name at the file
const { FlameGraphDataContainer } = require('grafana-flamegraph-data-transform');

const input = window.PARCA_FRAME;
const theme = createTheme();
const columns = Object.keys(input.rows[0] || { level: 0, value: 0, self: 0, label: '' });
const frame = createDataFrame({
  refId: 'A',
  fields: columns.map((name) => ({
    name,
    type: name === 'label' ? FieldType.string : FieldType.number,
    values: input.rows.map((row) => row[name]),
    // what configFromData sets on the number fields (its default matcher)
    config: name === 'label' || !input.unit ? {} : { unit: input.unit },
  })),
});
const [data] = applyFieldOverrides({
  data: [frame],
  fieldConfig: { defaults: {}, overrides: [] },
  replaceVariables: (s) => s,
  theme,
});

const transform = new FlameGraphDataContainer(data, { collapsing: true }, theme);
const root = transform.getLevels()[0]?.[0];
window.PARCA_TRANSFORM = {
  isDiff: transform.isDiffFlamegraph(),
  fields: data.fields.map((f) => f.name),
  rootValue: root?.value,
  rootValueRight: root?.valueRight,
  unitTitle: transform.getUnitTitle(),
};
const display = getDisplayProcessor({ field: { type: FieldType.number, config: { unit: input.unit } }, theme });
window.parcaDisplay = (v) => formattedValueToString(display(v));

function Panel() {
  React.useEffect(() => {
    // the canvas draws in an effect; give it a frame before reading it
    requestAnimationFrame(() => requestAnimationFrame(() => { window.PARCA_READY = true; }));
  }, []);
  return (
    <div style={{ width: '1200px', height: '900px' }}>
      <FlameGraph data={data} getTheme={() => theme} />
    </div>
  );
}

window.addEventListener('error', (e) => { window.PARCA_ERROR = String(e.message); });
createRoot(document.getElementById('root')).render(<Panel />);
