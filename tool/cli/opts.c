/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opts.c — the shared option parser of the servprof tool (see opts.h for
 * the conventions it enforces and how a verb uses it).
 *
 * Design: cli_next() looks at one word at a time and keeps only two bits of
 * state between calls: a CLI_LIST option still taking values, and whether
 * "--" ended the options. Every error goes through fail(), which prints the
 * one line and sets the usage status, so no verb can print a second line or
 * exit with another status by mistake.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "servprof.h"

void cli_init(cli_parser *p, const cli_verb *v, int argc, char **argv)
{
    memset(p, 0, sizeof *p);
    p->verb = v;
    p->argc = argc;
    p->argv = argv;
    p->i = 1;
    /* --help wins wherever it is: `servprof config junk --help` is help,
     * not a complaint about junk. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            p->help = 1;
}

void cli_print_version(void)
{
    printf("servprof %s\n", SERVPROF_VERSION);
}

static void vline(const cli_verb *v, const char *fmt, va_list ap)
{
    fprintf(stderr, "servprof %s: ", v->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_error(const cli_verb *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(v, fmt, ap);
    va_end(ap);
    return 2;
}

static int fail(cli_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(cli_parser *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(p->verb, fmt, ap);
    va_end(ap);
    p->status = 2;
    return CLI_STOP;
}

/* "a, b, c" of a NULL-terminated list. */
static void join(const char *const *list, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (; *list && n < len; list++)
        n += (size_t)snprintf(out + n, len - n, "%s%s", n ? ", " : "", *list);
}

/* "-i/--input-path, -o/--output-path, --format, ..." */
static void option_names(const cli_verb *v, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (const cli_opt *o = v->opts; o && o->id && n < len; o++) {
        if (o->short_name)
            n += (size_t)snprintf(out + n, len - n, "%s-%c/--%s", n ? ", " : "", o->short_name,
                                  o->name);
        else
            n += (size_t)snprintf(out + n, len - n, "%s--%s", n ? ", " : "", o->name);
    }
    if (n < len)
        snprintf(out + n, len - n, "%s-h/--help, --version", n ? ", " : "");
}

static int in_choices(const cli_opt *o, const char *s)
{
    if (!o->choices)
        return 1;
    for (const char *const *c = o->choices; *c; c++)
        if (!strcmp(*c, s))
            return 1;
    return 0;
}

int cli_bad_value(const cli_parser *p, const char *accepted)
{
    return cli_error(p->verb, "%s '%s' is not accepted; %s", p->opt_text, p->value, accepted);
}

int cli_number(const cli_parser *p, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(p->value, &end);
    if (errno || end == p->value || *end || !(v >= lo && v <= hi))
        return cli_error(p->verb, "%s '%s' is not a number from %g to %g", p->opt_text, p->value,
                         lo, hi);
    *out = v;
    return 0;
}

int cli_integer(const cli_parser *p, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(p->value, &end, 10);
    if (errno || end == p->value || *end || v < lo || v > hi)
        return cli_error(p->verb, "%s '%s' is not a whole number from %ld to %ld", p->opt_text,
                         p->value, lo, hi);
    *out = v;
    return 0;
}

/* The entry of o->choices spelled by s[0..n), or NULL. Returned values
 * point into the table, so a piece of a comma list outlives argv's word. */
static const char *choice_of(const cli_opt *o, const char *s, size_t n)
{
    for (const char *const *c = o->choices; *c; c++)
        if (strlen(*c) == n && !strncmp(*c, s, n))
            return *c;
    return NULL;
}

/* The next piece of a comma list (p->comma points at it): sets p->value to
 * its choice and moves p->comma past it (NULL after the last). */
static void next_piece(cli_parser *p)
{
    const char *s = p->comma, *c = strchr(s, ',');
    size_t n = c ? (size_t)(c - s) : strlen(s);
    p->value = choice_of(p->comma_opt, s, n);
    p->comma = c ? c + 1 : NULL;
}

/* `--format csv,json`: every piece must be a choice (checked at once, so a
 * bad piece is one error before anything is taken). */
static int take_comma_list(cli_parser *p, const cli_opt *o)
{
    char list[512];
    for (const char *s = p->value;;) {
        const char *c = strchr(s, ',');
        size_t n = c ? (size_t)(c - s) : strlen(s);
        if (!choice_of(o, s, n)) {
            join(o->choices, list, sizeof list);
            return fail(p, "%s '%s': '%.*s' is not one of: %s", p->opt_text, p->value, (int)n, s,
                        list);
        }
        if (!c)
            break;
        s = c + 1;
    }
    p->comma_opt = o;
    p->comma = p->value;
    next_piece(p);
    p->list = o;
    return o->id;
}

/* Checks and returns an option's value (p->value is set). */
static int take_value(cli_parser *p, const cli_opt *o)
{
    if (!p->value)
        return fail(p, "%s needs a value (%s)", p->opt_text, o->metavar ? o->metavar : "VALUE");
    if (!*p->value)
        return fail(p, "%s needs a value (%s), got an empty one", p->opt_text,
                    o->metavar ? o->metavar : "VALUE");
    if (o->kind == CLI_LIST && o->choices && strchr(p->value, ','))
        return take_comma_list(p, o);
    if (!in_choices(o, p->value)) {
        char list[512];
        join(o->choices, list, sizeof list);
        return fail(p, "%s '%s' is not one of: %s", p->opt_text, p->value, list);
    }
    if (o->kind == CLI_LIST)
        p->list = o;
    return o->id;
}

static int long_option(cli_parser *p, const char *word)
{
    const char *name = word + 2, *eq = strchr(name, '=');
    size_t n = eq ? (size_t)(eq - name) : strlen(name);
    if ((n == 4 && !strncmp(name, "help", 4)) || (n == 7 && !strncmp(name, "version", 7))) {
        if (eq)
            return fail(p, "--%.*s takes no value", (int)n, name);
        if (name[0] == 'h')
            cli_usage(p->verb, stdout);
        else
            cli_print_version();
        return CLI_STOP; /* status 0 */
    }
    for (const cli_opt *o = p->verb->opts; o && o->id; o++) {
        if (strlen(o->name) != n || strncmp(o->name, name, n) != 0)
            continue;
        snprintf(p->opt_buf, sizeof p->opt_buf, "--%s", o->name);
        p->opt_text = p->opt_buf;
        if (o->kind == CLI_FLAG) {
            if (eq)
                return fail(p, "--%s takes no value (got '%s')", o->name, eq + 1);
            p->value = NULL;
            return o->id;
        }
        p->value = eq ? eq + 1 : (p->i < p->argc ? p->argv[p->i++] : NULL);
        return take_value(p, o);
    }
    char names[1024];
    option_names(p->verb, names, sizeof names);
    return fail(p, "unknown option '--%.*s' (options: %s)", (int)n, name, names);
}

static int short_option(cli_parser *p, const char *word)
{
    char c = word[1];
    if (c == 'h' && !word[2]) {
        cli_usage(p->verb, stdout);
        return CLI_STOP;
    }
    snprintf(p->opt_buf, sizeof p->opt_buf, "-%c", c);
    p->opt_text = p->opt_buf;
    for (const cli_opt *o = p->verb->opts; o && o->id; o++) {
        if (!o->short_name || o->short_name != c)
            continue;
        if (o->kind == CLI_FLAG) {
            if (word[2])
                return fail(p, "-%c takes no value (got '%s')", c, word + 2);
            p->value = NULL;
            return o->id;
        }
        p->value = word[2] ? word + 2 : (p->i < p->argc ? p->argv[p->i++] : NULL);
        return take_value(p, o);
    }
    char names[1024];
    option_names(p->verb, names, sizeof names);
    return fail(p, "unknown option '%s' (options: %s)", word, names);
}

int cli_next(cli_parser *p)
{
    if (p->help) {
        cli_usage(p->verb, stdout);
        p->status = 0;
        return CLI_STOP;
    }
    if (p->comma) {
        next_piece(p);
        return p->comma_opt->id;
    }
    if (p->list) {
        const cli_opt *o = p->list;
        const char *w = p->i < p->argc ? p->argv[p->i] : NULL;
        int more = w && w[0] != '-' && (o->choices ? in_choices(o, w) : 1);
        if (more) {
            p->i++;
            p->value = w;
            return o->id;
        }
        p->list = NULL;
    }
    if (p->i >= p->argc)
        return CLI_END;
    const char *w = p->argv[p->i++];
    if (p->positional_only || w[0] != '-' || !w[1]) {
        p->value = w;
        return CLI_ARG;
    }
    if (!strcmp(w, "--")) {
        p->positional_only = 1;
        return cli_next(p);
    }
    return w[1] == '-' ? long_option(p, w) : short_option(p, w);
}

void cli_usage(const cli_verb *v, FILE *out)
{
    fprintf(out, "usage: servprof %s %s\n", v->name, v->synopsis ? v->synopsis : "");
    if (v->about)
        fprintf(out, "\n%s\n", v->about);
    fprintf(out, "\noptions:\n");
    for (const cli_opt *o = v->opts; o && o->id; o++) {
        char left[96];
        int n = o->short_name ? snprintf(left, sizeof left, "-%c, --%s", o->short_name, o->name)
                              : snprintf(left, sizeof left, "    --%s", o->name);
        if (o->kind != CLI_FLAG && n > 0 && (size_t)n < sizeof left)
            snprintf(left + n, sizeof left - (size_t)n, "=%s%s", o->metavar ? o->metavar : "VALUE",
                     o->kind == CLI_LIST ? "..." : "");
        /* at least two spaces before the help, so a long option stays readable */
        int width = (int)strlen(left) < 28 ? 28 : (int)strlen(left) + 1;
        fprintf(out, "  %-*s %s", width, left, o->help ? o->help : "");
        if (o->choices) {
            char list[512];
            join(o->choices, list, sizeof list);
            fprintf(out, " (%s)", list);
        }
        fputc('\n', out);
    }
    fprintf(out, "  %-28s %s\n  %-28s %s\n", "-h, --help", "this help", "    --version",
            "the version of servprof");
}
