/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export.c — `servprof export`'s driver: picks the module for the URL's
 * scheme and feeds it a whole in-process parse through the tap (export.h
 * says why that path and not SQLite).
 *
 * Every parse output is off (nothing is written next to INPUT); the tap's
 * restart is NULL, so the parse runs exact and never takes back a row the
 * module may already have sent.
 */
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "parse.h"
#include "plog.h"
#include "tap.h"

/* One row per scheme; the OTLP exporter adds its own (tool/export/otlp.c). */
static const exp_module *const modules[] = {&exp_clickhouse, &exp_otlp_http, &exp_otlp_https, NULL};

const exp_module *exp_module_for(const char *url, const char **known)
{
    static char names[256];
    names[0] = 0;
    for (int i = 0; modules[i]; i++) {
        size_t n = strlen(modules[i]->scheme);
        if (!strncmp(url, modules[i]->scheme, n) && !strncmp(url + n, "://", 3))
            return modules[i];
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s://", i ? ", " : "",
                 modules[i]->scheme);
    }
    if (known)
        *known = names;
    return NULL;
}

typedef struct feed {
    const exp_module *mod;
    void *m;
} feed;

static void on_row(void *ctx, const prs_table *t, const prs_val *vals)
{
    feed *f = ctx;
    f->mod->row(f->m, t, vals);
}

static void on_record(void *ctx, const prs_rec *r)
{
    feed *f = ctx;
    f->mod->record(f->m, r);
}

static void on_quality(void *ctx, const prs_quality *q)
{
    feed *f = ctx;
    if (f->mod->quality)
        f->mod->quality(f->m, q);
}

int exp_run(const exp_opts *o)
{
    const char *known = "";
    const exp_module *mod = exp_module_for(o->url, &known);
    if (!mod) {
        fprintf(stderr, "servprof export: --to %s: unknown scheme (known: %s)\n", o->url, known);
        return 2;
    }
    char err[1024] = "";
    feed f = {mod, mod->open(o, err, sizeof err)};
    if (!f.m) {
        fprintf(stderr, "servprof export: %s\n", err);
        return 1;
    }
    prs_opts po = {0};
    po.input = o->input;
    po.output = "."; /* every output is off: nothing is written there */
    po.progress = o->progress;
    po.session = o->session;
    po.tap_counters = mod->counters;
    po.clock_hosts = o->clock_hosts; /* the fleet's offsets, so every exporter writes one clock */
    po.clock_ns = o->clock_ns;
    po.nclock = o->nclock;
    int level = prs_log_level();
    if (!o->verbose && level < PRS_WARNING)
        prs_log_set_level(PRS_WARNING);
    prs_tap tap = {.row = on_row, .record = on_record, .restart = NULL, .quality = on_quality, .ctx = &f};
    po.tap = &tap;
    int rc = prs_run(&po);
    prs_log_set_level(level);
    int frc = mod->finish(f.m, rc);
    mod->close(f.m);
    if (rc == 2)
        return 2;
    return frc == 0 ? 0 : 1;
}
