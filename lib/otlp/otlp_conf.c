/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_conf.c — the settings of request tracing, from the environment (the
 * reference's MS_TRACE_ENABLE family and the OpenTelemetry SDK variables)
 * and the config file's keys (trace_export, trace_endpoint: live, as every
 * key is read again when the file changes).
 *
 * Precedence: the config's trace_export = 1 turns tracing on whatever the
 * environment says; MS_TRACE_ENABLE=1 turns it on when the config does not
 * say 0 (trace_export -1, the default, leaves it to the environment). The
 * endpoint: trace_endpoint, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as
 * given), else OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces", else
 * http://localhost:4318/v1/traces (the OTel default). A bad value is logged
 * once and its default used; tracing is never refused for a typo.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "otlp.h"

static int flag_env(const char *name)
{
    const char *s = getenv(name);
    return s && !strcmp(s, "1");
}

/* Logs "what" once per process per distinct text (the config is re-read on
 * every edit; the same warning each time would be noise). */
static void warn_once(const char *fmt, const char *name, const char *val, const char *deflt)
{
    static char last[8][256];
    static int n;
    char key[256];
    snprintf(key, sizeof key, "%s=%s", name, val);
    for (int i = 0; i < n && i < 8; i++)
        if (!strcmp(last[i], key))
            return;
    snprintf(last[n++ % 8], sizeof last[0], "%s", key);
    sp_log(SP_LOG_WARNING, fmt, name, val, deflt);
}

static long int_env(const char *name, long deflt, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return deflt;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) {
        char d[32];
        snprintf(d, sizeof d, "%ld", deflt);
        warn_once("otlp: %s=\"%s\" is not an integer in range; using %s", name, s, d);
        return deflt;
    }
    return v;
}

static void str_env(const char *name, char *out, size_t len)
{
    const char *s = getenv(name);
    snprintf(out, len, "%s", s ? s : "");
}

static void sampler(sp_otlp_conf *o)
{
    const char *s = getenv("OTEL_TRACES_SAMPLER");
    static const struct { const char *name; int v; } t[] = {
        {"always_on", SP_SMP_ALWAYS_ON},
        {"always_off", SP_SMP_ALWAYS_OFF},
        {"traceidratio", SP_SMP_RATIO},
        {"parentbased_always_on", SP_SMP_PB_ALWAYS_ON},
        {"parentbased_always_off", SP_SMP_PB_ALWAYS_OFF},
        {"parentbased_traceidratio", SP_SMP_PB_RATIO},
    };
    o->sampler = SP_SMP_PB_ALWAYS_ON; /* the OTel default */
    o->ratio = 1;
    if (s && *s) {
        size_t i;
        for (i = 0; i < sizeof t / sizeof t[0]; i++)
            if (!strcmp(s, t[i].name))
                break;
        if (i == sizeof t / sizeof t[0])
            warn_once("otlp: %s=\"%s\" is not a sampler servprof knows; using %s", "OTEL_TRACES_SAMPLER",
                      s, "parentbased_always_on");
        else
            o->sampler = t[i].v;
    }
    const char *a = getenv("OTEL_TRACES_SAMPLER_ARG");
    if ((o->sampler == SP_SMP_RATIO || o->sampler == SP_SMP_PB_RATIO) && a && *a) {
        char *end;
        double r = strtod(a, &end);
        if (*end || !(r >= 0 && r <= 1))
            warn_once("otlp: %s=\"%s\" is not a ratio 0..1; using %s", "OTEL_TRACES_SAMPLER_ARG", a, "1");
        else
            o->ratio = r;
    }
}

void sp_otlp_conf_read(const sp_config *c, sp_otlp_conf *o)
{
    memset(o, 0, sizeof *o);
    int cfg = c ? c->trace_export : -1;
    o->on = cfg == 1 || (cfg == -1 && flag_env("MS_TRACE_ENABLE"));
    const char *traces = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    const char *base = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    if (c && c->trace_endpoint[0])
        snprintf(o->url, sizeof o->url, "%s", c->trace_endpoint);
    else if (traces && *traces)
        snprintf(o->url, sizeof o->url, "%s", traces);
    else if (base && *base) {
        size_t n = strlen(base);
        snprintf(o->url, sizeof o->url, "%.*s/v1/traces", (int)(n && base[n - 1] == '/' ? n - 1 : n), base);
    } else
        snprintf(o->url, sizeof o->url, "http://localhost:4318/v1/traces");
    const char *proto = getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    if (!proto || !*proto)
        proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL");
    if (proto && *proto && strcmp(proto, "http/protobuf"))
        warn_once("otlp: %s=\"%s\": servprof sends %s only (docs/tracing.md says why not gRPC)",
                  "OTEL_EXPORTER_OTLP_PROTOCOL", proto, "http/protobuf");
    str_env("OTEL_EXPORTER_OTLP_TRACES_HEADERS", o->headers, sizeof o->headers);
    if (!o->headers[0])
        str_env("OTEL_EXPORTER_OTLP_HEADERS", o->headers, sizeof o->headers);
    o->timeout_ms = (int)int_env(getenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"
                                                                            : "OTEL_EXPORTER_OTLP_TIMEOUT",
                                 10000, 1, 3600000);
    char comp[32];
    str_env(getenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION") ? "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"
                                                            : "OTEL_EXPORTER_OTLP_COMPRESSION",
            comp, sizeof comp);
    if (!strcmp(comp, "gzip"))
        o->gzip = 1;
    else if (comp[0] && strcmp(comp, "none"))
        warn_once("otlp: %s=\"%s\" is not gzip or none; using %s", "OTEL_EXPORTER_OTLP_COMPRESSION", comp, "none");
    str_env(getenv("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE") ? "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"
                                                            : "OTEL_EXPORTER_OTLP_CERTIFICATE",
            o->ca_file, sizeof o->ca_file);
    str_env("OTEL_SERVICE_NAME", o->service, sizeof o->service);
    str_env("OTEL_RESOURCE_ATTRIBUTES", o->resource, sizeof o->resource);
    sampler(o);
    /* MS_PROFILER_AUTO_TRACE=1: a request without a trace context gets one.
     * Also when an OTEL sampler is named: an OTel user expects root spans. */
    o->auto_trace = flag_env("MS_PROFILER_AUTO_TRACE") ||
                    (getenv("OTEL_TRACES_SAMPLER") && *getenv("OTEL_TRACES_SAMPLER")) ||
                    (c && c->trace_export == 1);
    const char *rate = getenv("MS_PROFILER_SAMPLE_RATE");
    if (rate && *rate) {
        char *end;
        long n = strtol(rate, &end, 10);
        if (*end || n <= 0)
            warn_once("otlp: %s=\"%s\" is not a positive integer; %s", "MS_PROFILER_SAMPLE_RATE", rate,
                      "every request with a made trace id is sampled");
        else
            o->sample_rate_n = n > 1000000000 ? 1000000000 : (int)n;
    }
    o->error_only = flag_env("MS_PROFILER_SAMPLE_ERROR");
    o->delay_ms = (int)int_env("OTEL_BSP_SCHEDULE_DELAY", 5000, 1, 3600000);
    o->max_queue = (int)int_env("OTEL_BSP_MAX_QUEUE_SIZE", 2048, 1, 10000000);
    o->max_batch = (int)int_env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1, 10000000);
    if (o->max_batch > o->max_queue)
        o->max_batch = o->max_queue; /* the SDKs' rule */
    o->flush_ms = (int)int_env("OTEL_BSP_EXPORT_TIMEOUT", 30000, 1, 3600000);
    if (o->flush_ms > 5000)
        o->flush_ms = 5000; /* an exit waits at most 5 s on a collector (docs/tracing.md) */
}
