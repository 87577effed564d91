/*
 * cmd_parse.c — `servprof parse`: reads the options and hands them to the
 * parser (src/parse). Usage errors exit 2 with a message naming the bad
 * option; the parse itself exits 0, or 1 when nothing could be parsed or
 * some output could not be written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "parse.h"

static void usage(FILE *f)
{
    fputs("usage: servprof parse --input-path DIR [--output-path OUT] [--format csv json db ...]\n"
          "                      [--span NAME ...] [--log-level debug|info|warning|error]\n"
          "                      [--flows key|all] [--progress | --no-progress] [--quiet]\n"
          "  Reads every raw store (ms_service_*.db) under DIR, recursively, and writes\n"
          "  request.csv, batch.csv, forward.csv, kvcache.csv, request_status.csv,\n"
          "  chrome_tracing.json and profiler.db into OUT (default ./output).\n", f);
}

/* Collects the values following an option up to the next "--" option. */
static int take_list(int argc, char **argv, int i, const char ***list, int *n)
{
    int j = i + 1;
    while (j < argc && strncmp(argv[j], "--", 2) != 0) {
        *list = realloc(*list, (size_t)(*n + 1) * sizeof **list);
        (*list)[(*n)++] = argv[j];
        j++;
    }
    return j - 1;
}

int cmd_parse(int argc, char **argv)
{
    spp_opts o = {0};
    o.output = "./output";
    o.progress = -1;
    o.summary = 1;
    const char **formats = NULL;
    int nformats = 0, rc = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            rc = 0;
            goto out;
        } else if (!strcmp(a, "--input-path") && i + 1 < argc) {
            o.input = argv[++i];
        } else if (!strcmp(a, "--output-path") && i + 1 < argc) {
            o.output = argv[++i];
        } else if (!strcmp(a, "--format")) {
            int before = nformats;
            i = take_list(argc, argv, i, &formats, &nformats);
            if (nformats == before) {
                fprintf(stderr, "servprof parse: --format needs one or more of csv, json, db\n");
                goto out;
            }
        } else if (!strcmp(a, "--span")) {
            int before = o.nspans;
            i = take_list(argc, argv, i, &o.spans, &o.nspans);
            if (o.nspans == before) {
                fprintf(stderr, "servprof parse: --span needs one or more span names\n");
                goto out;
            }
        } else if (!strcmp(a, "--log-level") && i + 1 < argc) {
            int lv = spp_log_level_from_name(argv[++i]);
            if (lv < 0) {
                fprintf(stderr, "servprof parse: --log-level '%s' is not one of debug, info, warning, error, "
                                "none; using info\n", argv[i]);
                lv = SPP_INFO;
            }
            spp_log_set_level(lv);
        } else if (!strcmp(a, "--flows") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "all"))
                o.flows_all = 1;
            else if (strcmp(v, "key") != 0) {
                fprintf(stderr, "servprof parse: --flows '%s' is not 'key' or 'all'\n", v);
                goto out;
            }
        } else if (!strcmp(a, "--progress")) {
            o.progress = 1;
        } else if (!strcmp(a, "--no-progress")) {
            o.progress = 0;
        } else if (!strcmp(a, "--quiet")) {
            o.summary = 0;
        } else {
            fprintf(stderr, "servprof parse: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            goto out;
        }
    }
    if (!o.input) {
        fprintf(stderr, "servprof parse: --input-path DIR is required\n");
        usage(stderr);
        goto out;
    }
    if (nformats == 0) {
        o.csv = o.json = o.db = 1;
    }
    for (int i = 0; i < nformats; i++) {
        if (!strcmp(formats[i], "csv"))
            o.csv = 1;
        else if (!strcmp(formats[i], "json"))
            o.json = 1;
        else if (!strcmp(formats[i], "db"))
            o.db = 1;
        else {
            fprintf(stderr, "servprof parse: --format '%s' is not one of csv, json, db\n", formats[i]);
            goto out;
        }
    }
    rc = spp_run(&o);
out:
    free(formats);
    free(o.spans);
    return rc;
}
