// The SQL Grafana sends for the dashboard: each panel's query and each
// variable's query, with the variables interpolated by Grafana's own code,
// as a dashboard does it: @grafana/scenes' interpolation (formats, "All",
// multi-value) with the SQL datasource's default format from @grafana/sql
// (values quoted the way the PostgreSQL datasource's query model quotes
// them).  The time macros ($__timeFrom() ...) are left for the backend.
//
// Reads window.PARCA_DASHBOARD (the dashboard JSON) and window.PARCA_STATES
// ([{name, values: {variable: value or [values] or "$__all"}, options:
// {variable: [values]}}]); sets window.PARCA_SQL = [{state, target, sql}].
'use strict';
const { EmbeddedScene, SceneFlexLayout, SceneVariableSet, QueryVariable, CustomVariable, TextBoxVariable,
  sceneGraph } = require('@grafana/scenes');
const { SqlDatasource } = require('@grafana/sql');

// The query model of Grafana's PostgreSQL datasource quotes a literal by
// doubling its single quotes; that is all the SQL datasource asks of it.
class PostgresLikeDatasource extends SqlDatasource {
  getQueryModel() {
    return { quoteLiteral: (value) => "'" + String(value).replace(/'/g, "''") + "'" };
  }

  getDB() {
    return {};                  // the query editor's database, not needed here
  }
}

function variableFor(model, state) {
  const value = state.values[model.name] ?? model.current?.value ?? '';
  const options = (state.options[model.name] ?? []).map((v) => ({ label: v, value: v }));
  const common = {
    name: model.name,
    value,
    text: value,
    options,
    isMulti: Boolean(model.multi),
    includeAll: Boolean(model.includeAll),
    allValue: model.allValue,
  };
  switch (model.type) {
    case 'query':
      return new QueryVariable({ ...common, query: model.query });
    case 'custom':
      return new CustomVariable({ ...common, query: model.query });
    case 'textbox':
      return new TextBoxVariable({ name: model.name, value });
    default:
      throw new Error('variable type ' + model.type);
  }
}

function interpolateAll(dashboard, states) {
  const out = [];
  for (const state of states) {
    const scene = new EmbeddedScene({
      $variables: new SceneVariableSet({ variables: dashboard.templating.list.map((v) => variableFor(v, state)) }),
      body: new SceneFlexLayout({ children: [] }),
    });
    // what Grafana's TemplateSrv does for a dashboard made of scenes
    const templateSrv = {
      replace: (text, scopedVars, format) => sceneGraph.interpolate(scene, text, scopedVars, format),
      getVariables: () => [],
      containsTemplate: () => true,
      updateTimeRange: () => {},
    };
    const ds = new PostgresLikeDatasource({ id: 1, uid: 'parca-postgres', type: 'grafana-postgresql-datasource',
      name: 'parca', jsonData: {}, meta: {}, access: 'proxy', readOnly: true }, templateSrv);
    // the query runner's interval variables
    const scopedVars = { __interval: { text: '1m', value: '1m' }, __interval_ms: { text: '60000', value: 60000 } };
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        const q = ds.applyTemplateVariables({ ...target }, scopedVars);
        out.push({ state: state.name, target: `panel ${panel.id} ${target.refId}`, sql: q.rawSql });
      }
    }
    for (const v of dashboard.templating.list) {
      if (v.type === 'query') {
        out.push({ state: state.name, target: `variable ${v.name}`,
          sql: templateSrv.replace(v.query, scopedVars, ds.interpolateVariable) });
      }
    }
  }
  return out;
}

try {
  window.PARCA_SQL = interpolateAll(window.PARCA_DASHBOARD, window.PARCA_STATES);
} catch (e) {
  window.PARCA_ERROR = String(e.stack || e);
}
