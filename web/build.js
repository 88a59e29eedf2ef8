// Bundles the web UI with esbuild: web/src/main.tsx and what it imports,
// React and Grafana's flame graph included, into OUT_DIR/app.js, beside
// index.html and app.css.  Nothing is fetched at run time.
//
// usage: node build.js INSTALL_DIR OUT_DIR   (INSTALL_DIR: where web/npm.sh installed package.json)
'use strict';
const fs = require('fs');
const path = require('path');

const install = path.resolve(process.argv[2]);
const out = path.resolve(process.argv[3]);
const modules = path.join(install, 'node_modules');
const esbuild = require(path.join(modules, 'esbuild'));

fs.mkdirSync(out, { recursive: true });
esbuild.build({
  entryPoints: [path.join(__dirname, 'src/main.tsx')],
  outfile: path.join(out, 'app.js'),
  bundle: true,
  minify: true,
  format: 'iife',
  target: 'es2020',
  jsx: 'automatic',
  nodePaths: [modules],
  logLevel: 'error',
  legalComments: 'linked',
  alias: { '@grafana/assistant': path.join(__dirname, 'src/no-assistant.ts') },
  define: { 'process.env.NODE_ENV': '"production"', global: 'window' },
  // Grafana's component library's own stylesheets, fonts and images: the
  // flame graph styles itself with emotion (inline), and icons are drawn
  // from the bundle's SVG sources or left out
  loader: { '.js': 'jsx', '.css': 'empty', '.ttf': 'empty', '.woff': 'empty', '.woff2': 'empty',
    '.svg': 'empty', '.png': 'empty' },
}).then(() => {
  fs.copyFileSync(path.join(__dirname, 'index.html'), path.join(out, 'index.html'));
  fs.copyFileSync(path.join(__dirname, 'style.css'), path.join(out, 'app.css'));
  // the icons Grafana's components load by URL (@grafana/ui's getIconRoot: public/build/img/icons/)
  fs.cpSync(path.join(modules, '@grafana/ui/dist/public/img/icons'), path.join(out, 'public/build/img/icons'),
    { recursive: true });
}, (err) => { console.error(err.message); process.exit(1); });
