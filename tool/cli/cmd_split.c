/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_split.c — `servprof split`: reads the options and hands them to the
 * split (tool/analyze/split.c), which writes the reference's prefill.csv /
 * decode.csv. The options are the reference's (--prefill-batch-size,
 * --prefill-number, --prefill-rid and the decode ones) with the tool's
 * conventions (opts.h): DIR as the argument or -i, -o OUT, one line per
 * usage error, exit status 2, --log-level with parse's names and meaning
 * (debug also writes the reference's debug files).
 */
#include <string.h>

#include "commands.h"
#include "opts.h"
#include "plog.h"
#include "split.h"

enum {
    OPT_INPUT = 1, OPT_OUTPUT, OPT_PBS, OPT_PNUM, OPT_PRID, OPT_DBS, OPT_DNUM, OPT_DRID, OPT_PROGRESS,
    OPT_NO_PROGRESS, OPT_LOG_LEVEL,
};

/* parse's names (cmd_parse.c); fatal and critical, the reference's, are error */
static const char *const levels[] = {"debug", "info", "warning", "error", "fatal", "critical", "none", NULL};

static const cli_opt opts[] = {
    {OPT_INPUT, "input-path", 'i', CLI_VALUE, "DIR", NULL,
     "raw stores, a session folder or a parse output folder (or give DIR as the argument)"},
    {OPT_OUTPUT, "output-path", 'o', CLI_VALUE, "OUT", NULL, "where to write prefill.csv / decode.csv (default ./output)"},
    {OPT_PBS, "prefill-batch-size", 0, CLI_VALUE, "N", NULL, "pick Prefill steps of N requests"},
    {OPT_PNUM, "prefill-number", 0, CLI_VALUE, "N", NULL, "the statistics cover the first N of them (default 1)"},
    {OPT_PRID, "prefill-rid", 0, CLI_VALUE, "RID", NULL, "or pick the Prefill steps of request RID"},
    {OPT_DBS, "decode-batch-size", 0, CLI_VALUE, "N", NULL, "pick Decode steps of N requests"},
    {OPT_DNUM, "decode-number", 0, CLI_VALUE, "N", NULL, "the statistics cover the first N of them (default 1)"},
    {OPT_DRID, "decode-rid", 0, CLI_VALUE, "RID", NULL, "or pick the Decode steps that run request RID"},
    {OPT_PROGRESS, "progress", 0, CLI_FLAG, NULL, NULL,
     "show the parse's progress on stderr (default: on a terminal, for a large input)"},
    {OPT_NO_PROGRESS, "no-progress", 0, CLI_FLAG, NULL, NULL, "never show progress"},
    {OPT_LOG_LEVEL, "log-level", 0, CLI_VALUE, "LEVEL", levels,
     "messages shown, as parse's (default info); debug also writes the reference's debug files"},
    {0},
};

static const cli_verb verb = {
    "split",
    "[-i|--input-path] DIR [-o|--output-path OUT]\n"
    "                      [--prefill-batch-size N | --prefill-rid RID] [--prefill-number N]\n"
    "                      [--decode-batch-size N | --decode-rid RID] [--decode-number N]\n"
    "                      [--progress|--no-progress] [--log-level LEVEL]",
    "Writes the reference's prefill.csv and decode.csv into OUT: the spans of one scheduling\n"
    "step of the picked kind (its process's spans until the next step, the gaps between them,\n"
    "for a prefill its request's HTTP spans, and AllTime, the step to the next), each with the\n"
    "max / min / mean / std of that span over the first N picked steps. A step is picked by\n"
    "its batch size or by a request id in its rid list; give at least one of the four.\n"
    "DIR: raw stores or a session folder (parsed in-process, nothing written beside them) or a\n"
    "parse output folder (profiler.db). Exit status: 0 every file asked for written, 1 a pick\n"
    "found no step (the batch sizes there are named) or a file was not written, 2 usage or\n"
    "an unreadable input. See docs/split.md.",
    opts};

/* A request id as the reference accepts it: letters, digits, '_' and '-',
 * at most 100 of them. */
static int rid_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 100)
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

int cmd_split(int argc, char **argv)
{
    sa_split_opts o = {.output = "output", .progress = -1, .log_level = -1};
    o.sel[SA_SPLIT_PREFILL].number = o.sel[SA_SPLIT_DECODE].number = 1;
    cli_parser p;
    cli_init(&p, &verb, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        long n;
        sa_split_select *sel = id >= OPT_DBS && id <= OPT_DRID ? &o.sel[SA_SPLIT_DECODE] : &o.sel[SA_SPLIT_PREFILL];
        switch (id) {
        case CLI_STOP: return p.status;
        case CLI_ARG:
        case OPT_INPUT:
            if (o.input)
                return cli_error(&verb, "one input only (got '%s' and '%s')", o.input, p.value);
            o.input = p.value;
            break;
        case OPT_OUTPUT: o.output = p.value; break;
        case OPT_PBS:
        case OPT_DBS:
            if (cli_integer(&p, 1, 1L << 30, &n) != 0)
                return 2;
            sel->batch_size = n;
            break;
        case OPT_PNUM:
        case OPT_DNUM:
            if (cli_integer(&p, 1, 1L << 30, &n) != 0)
                return 2;
            sel->number = n;
            break;
        case OPT_PRID:
        case OPT_DRID:
            if (!rid_ok(p.value))
                return cli_bad_value(&p, "a request id of letters, digits, '_' and '-', at most 100");
            sel->rid = p.value;
            break;
        case OPT_PROGRESS: o.progress = 1; break;
        case OPT_NO_PROGRESS: o.progress = 0; break;
        case OPT_LOG_LEVEL: o.log_level = prs_log_level_from_name(p.value); break;
        }
    }
    if (!o.input)
        return cli_error(&verb, "the input is missing: servprof split DIR (or -i/--input-path DIR)");
    for (int k = 0; k < SA_SPLIT_NSEL; k++)
        if (o.sel[k].batch_size > 0 && o.sel[k].rid)
            return cli_error(&verb, "--%s-batch-size and --%s-rid pick the same steps two ways: give one",
                             k ? "decode" : "prefill", k ? "decode" : "prefill");
    if (!o.sel[SA_SPLIT_PREFILL].batch_size && !o.sel[SA_SPLIT_PREFILL].rid && !o.sel[SA_SPLIT_DECODE].batch_size &&
        !o.sel[SA_SPLIT_DECODE].rid)
        return cli_error(&verb, "nothing to pick: give --prefill-batch-size N, --prefill-rid RID, "
                                "--decode-batch-size N or --decode-rid RID");
    return sa_split_run(&o);
}
