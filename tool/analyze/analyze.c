/* SPDX-License-Identifier: Apache-2.0 */
/*
 * analyze.c — the library entry: options, thresholds and sa_analyze()
 * (load the profile, build the document, free the profile).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

static const char *const th_names[SA_NTHRESH] = {
#define SA_NAME(id, name, def, doc) name,
    SA_THRESHOLDS(SA_NAME)
#undef SA_NAME
};

void sa_opts_init(sa_opts *o)
{
    memset(o, 0, sizeof *o);
    o->nwindows = 10;
    o->max_requests = 10000;
#define SA_DEF(id, name, def, doc) o->threshold[SA_T_##id] = (def);
    SA_THRESHOLDS(SA_DEF)
#undef SA_DEF
}

int sa_opts_threshold(sa_opts *o, const char *nv)
{
    const char *eq = strchr(nv, '=');
    if (!eq)
        return -1;
    for (int i = 0; i < SA_NTHRESH; i++)
        if (strlen(th_names[i]) == (size_t)(eq - nv) && !strncmp(nv, th_names[i], (size_t)(eq - nv))) {
            char *end;
            double v = strtod(eq + 1, &end);
            if (end == eq + 1 || *end || v != v)
                return -1;
            o->threshold[i] = v;
            return 0;
        }
    return -1;
}

const char *sa_threshold_names(void)
{
    static char buf[512];
    if (!buf[0])
        for (int i = 0; i < SA_NTHRESH; i++) {
            size_t n = strlen(buf);
            snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", th_names[i]);
        }
    return buf;
}

json_t *sa_analyze(const sa_opts *o, char *err, size_t errcap)
{
    sa_profile *p = sa_profile_load(o, err, errcap);
    if (!p)
        return NULL;
    json_t *d = sa_document(p, o);
    sa_profile_free(p);
    return d;
}
