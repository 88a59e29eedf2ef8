// Bundles the two browser pages of test/grafana with esbuild, from the
// packages installed in a directory outside the tree.
//
// usage: node build.js INSTALL_DIR OUT_DIR    (writes flamegraph.js, interpolate.js)
'use strict';
const path = require('path');

const install = path.resolve(process.argv[2]);
const out = path.resolve(process.argv[3]);
const modules = path.join(install, 'node_modules');
const esbuild = require(path.join(modules, 'esbuild'));

const common = {
  bundle: true,
  format: 'iife',
  jsx: 'automatic',
  nodePaths: [modules],
  logLevel: 'error',
  define: { 'process.env.NODE_ENV': '"production"', global: 'window' },
  // the component library's stylesheets, fonts and icons: not needed to measure
  loader: { '.js': 'jsx', '.css': 'empty', '.ttf': 'empty', '.woff': 'empty', '.woff2': 'empty',
    '.svg': 'empty', '.png': 'empty' },
};

Promise.all([
  esbuild.build({
    ...common,
    entryPoints: [path.join(__dirname, 'flamegraph.jsx')],
    outfile: path.join(out, 'flamegraph.js'),
    alias: {
      'grafana-flamegraph-data-transform':
        path.join(modules, '@grafana/flamegraph/dist/cjs/FlameGraph/dataTransform.cjs'),
    },
  }),
  esbuild.build({
    ...common,
    entryPoints: [path.join(__dirname, 'interpolate.js')],
    outfile: path.join(out, 'interpolate.js'),
    // scenes is written for react-router 6, which Grafana 13 provides as
    // react-router-dom-v5-compat beside react-router-dom 5 (@grafana/ui's)
    alias: { 'react-router-dom': 'react-router-dom-v5-compat' },
  }),
]).then(() => {}, (err) => { console.error(err.message); process.exit(1); });
