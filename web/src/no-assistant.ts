// @grafana/flamegraph's optional peer @grafana/assistant (Grafana's AI
// assistant, a Grafana Cloud service) does not exist outside Grafana: its
// one button renders nothing here.
export const OpenAssistantButton = () => null;
