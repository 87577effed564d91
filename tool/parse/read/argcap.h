/* SPDX-License-Identifier: Apache-2.0 */
/*
 * argcap.h — a record's args bounded as it is read (argcap.c), so that one
 * huge record cannot make every later stage (the reorder window, the
 * decode cache, the timeline, profiler.db) hold a copy of it.
 */
#ifndef SERVPROF_PARSE_ARGCAP_H
#define SERVPROF_PARSE_ARGCAP_H

/* The most bytes of args a record keeps (docs/parse.md, "Limits"). */
#define PRS_ARGS_MAX (1 << 20)
/* The most entries a record's rid list keeps. */
#define PRS_RIDS_MAX 16384
/* Args at least this long are checked for a rid list over PRS_RIDS_MAX
 * (an entry takes at least 4 bytes: `"a",`). */
#define PRS_RIDS_CHECK (PRS_RIDS_MAX * 4)

typedef struct prs_argcap {
    char *buf;            /* the cut text (owned; free()) */
    int cap;
    long long cut_args;   /* records whose args were over PRS_ARGS_MAX */
    long long cut_rids;   /* records whose rid list was over PRS_RIDS_MAX */
    long long max_len;    /* the longest args met, bytes */
    long long max_rids;   /* the longest rid list met, entries (0: none was cut) */
} prs_argcap;

/* When args (len bytes) is longer than PRS_ARGS_MAX or its top-level "rid"
 * array has more than PRS_RIDS_MAX entries, writes a bounded version into
 * c->buf and points *args / *len at it; else leaves them. The cut text is
 * a JSON object: the top-level members that fit, whole, in their order; a
 * rid list (or the array crossing the limit) keeps its first entries; and
 * a member "servprof_cut" {"bytes": original length, "rid_entries":
 * original count} says what happened. A text that is not a JSON object
 * is cut at the limit (on a UTF-8 boundary) and stays not-JSON. Returns 1
 * when it cut. Not thread-safe: one per store. */
int prs_argcap_apply(prs_argcap *c, const char **args, int *len);
void prs_argcap_free(prs_argcap *c);

#endif
