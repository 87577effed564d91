/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opts.h — the option parser every verb of the servprof tool uses, so that
 * all of them follow the same conventions:
 *
 *   -h / --help          usage on stdout, exit 0 (also `servprof help VERB`)
 *   --version            "servprof X.Y.Z" on stdout, exit 0
 *   --opt=value          as well as --opt value; -o value and -ovalue
 *   --                   what follows is positional, even "-x"
 *   a bad option/value   ONE line on stderr naming the option and the
 *                        accepted values, exit 2
 *
 * Design: a verb describes itself in a table (cli_verb with its cli_opt
 * rows, as curl's tool_getparam.c aliases[] does) and walks its arguments
 * with cli_next(), getopt-style, handling only its own option ids and the
 * positional arguments. The usage text is generated from the same table,
 * so what --help shows is what the parser accepts, and tests can walk it.
 *
 *     static const cli_opt opts[] = {
 *         {OPT_OUT, "output-path", 'o', CLI_VALUE, "DIR", NULL, "where to write"},
 *         {0},
 *     };
 *     static const cli_verb verb = {"report", "[options] DIR", "Writes ...", opts};
 *     cli_parser p;
 *     cli_init(&p, &verb, argc, argv);
 *     for (int id; (id = cli_next(&p)) != CLI_END;) {
 *         if (id == CLI_STOP) return p.status;      // help, version, or error
 *         if (id == OPT_OUT) out = p.value;
 *         else if (id == CLI_ARG) dir = p.value;    // a positional argument
 *     }
 *
 * Not thread-safe (a parser is used by one thread); holds no memory.
 */
#ifndef SERVPROF_CLI_OPTS_H
#define SERVPROF_CLI_OPTS_H

#include <stdio.h>

typedef enum cli_kind {
    CLI_FLAG,  /* --quiet: no value; --quiet=x is an error */
    CLI_VALUE, /* --output-path DIR or --output-path=DIR: one value */
    CLI_LIST,  /* --format csv json: one or more values; each is returned
                  with the option's id. Following words are taken while
                  they are in `choices` (or, without choices, until the
                  next word starting with '-'). With choices, a value may
                  also be a comma list (--format csv,json), each piece
                  returned in turn and checked first */
} cli_kind;

typedef struct cli_opt {
    int id;                      /* > 0, returned by cli_next */
    const char *name;            /* long name without "--" */
    char short_name;             /* 'o' for -o, or 0 */
    cli_kind kind;
    const char *metavar;         /* "DIR", shown in usage (values only) */
    const char *const *choices;  /* NULL-terminated accepted values, or NULL */
    const char *help;            /* one line for the usage text */
} cli_opt;

typedef struct cli_verb {
    const char *name;     /* "parse", or "config check" for a sub-verb */
    const char *synopsis; /* what follows the name: "[options] [DIR]" */
    const char *about;    /* a paragraph (may hold \n); may be NULL */
    const cli_opt *opts;  /* ends with a row whose id is 0 */
} cli_verb;

enum {
    CLI_END = 0,   /* no more arguments */
    CLI_ARG = -1,  /* a positional argument in p->value */
    CLI_STOP = -2, /* stop now and return p->status: help or version was
                      printed (0), or a usage error was (2) */
};

typedef struct cli_parser {
    const cli_verb *verb;
    int argc;
    char **argv;
    int i;                /* next argument to look at */
    const cli_opt *list;  /* a CLI_LIST option taking more values */
    const char *comma;    /* the rest of a comma list still to return, or NULL */
    const cli_opt *comma_opt; /* the option that comma list belongs to */
    int positional_only;  /* "--" was seen */
    int help;             /* -h/--help is among the options: only that counts */
    const char *value;    /* the value of the last option or argument */
    const char *opt_text; /* how the user spelled the last option */
    int status;           /* exit status when CLI_STOP is returned */
    char opt_buf[80];     /* opt_text's storage: "--output-path" or "-o" */
} cli_parser;

/* argv[0] is the verb's name; options start at argv[1]. */
void cli_init(cli_parser *p, const cli_verb *v, int argc, char **argv);

/* The next option id, CLI_ARG, CLI_STOP or CLI_END (see above). */
int cli_next(cli_parser *p);

/* The usage text of a verb (generated from its table). */
void cli_usage(const cli_verb *v, FILE *out);

/* One line on stderr: "servprof VERB: <message>"; returns 2 (the usage
 * status), so a verb writes `return cli_error(&verb, "...", ...);`. */
int cli_error(const cli_verb *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The value of option `o` (as last returned) is not acceptable: one line
 * naming the option, the value and what is accepted; returns 2. */
int cli_bad_value(const cli_parser *p, const char *accepted);

/* Reads p->value as a number in [lo, hi] into *out: 0, or the one-line
 * message and 2. */
int cli_number(const cli_parser *p, double lo, double hi, double *out);

/* The same for a whole number (no fraction, no exponent): "20", not "20.5". */
int cli_integer(const cli_parser *p, long lo, long hi, long *out);

/* "servprof X.Y.Z" on stdout. */
void cli_print_version(void);

#endif
