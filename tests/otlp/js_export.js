// SPDX-License-Identifier: Apache-2.0
// js_export.js — sends one span of llm_request's shape with the official
// OpenTelemetry JS exporter (@opentelemetry/exporter-trace-otlp-proto) to the
// URL given, for the differential test (test_otlp_js.py): same names, same
// value types, a parent from a traceparent, status ERROR and an event.
//   node js_export.js URL TRACEPARENT
const api = require('@opentelemetry/api');
const { BasicTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { Resource } = require('@opentelemetry/resources');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');

const [url, traceparent] = process.argv.slice(2);
const [, traceId, spanId, flags] = traceparent.split('-');
const exporter = new OTLPTraceExporter({ url });
const provider = new BasicTracerProvider({
  resource: new Resource({ 'service.name': 'js-emit', 'host.name': 'h', 'process.pid': process.pid }),
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
const tracer = provider.getTracer('servprof-diff', '1');
const parent = api.trace.setSpanContext(api.context.active(), {
  traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true,
  traceState: api.createTraceState('vendor=x'),
});
const t0 = Date.now();
const span = tracer.startSpan('llm_request', { kind: api.SpanKind.SERVER, startTime: t0 }, parent);
span.setAttributes({
  'gen_ai.request.id': 'req-0',
  'gen_ai.response.model': 'tiny-model',
  'gen_ai.request.temperature': 0.7,
  'gen_ai.request.top_p': 0.9,
  'gen_ai.request.max_tokens': 16,
  'gen_ai.request.n': 1,
  'gen_ai.usage.prompt_tokens': 8,
  'gen_ai.usage.completion_tokens': 3,
  'gen_ai.latency.time_in_queue': 0.0012,
  'gen_ai.latency.time_to_first_token': 0.0123,
  'gen_ai.latency.e2e': 0.0456,
  'servprof.outcome': 'error',
});
span.addEvent('error', { 'servprof.outcome': 'error' }, t0 + 40);
span.setStatus({ code: api.SpanStatusCode.ERROR, message: 'error' });
span.end(t0 + 45);
provider.forceFlush().then(() => provider.shutdown()).then(() => process.exit(0),
  (e) => { console.error(e); process.exit(1); });
